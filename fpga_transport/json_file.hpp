// The JSON document in an input file, for every reader of the models' files (networks, the b_eff
// reference, --memory, --overheads, --iec). A missing, unreadable or non-JSON file, or a
// directory, is an std::invalid_argument that names the file as the caller's `what` names it:
// "network file x.json: not JSON: ...", "--memory dir: is a directory".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tb::fpga {

nlohmann::json read_json_file(const std::string& what, const std::string& path);

}  // namespace tb::fpga
