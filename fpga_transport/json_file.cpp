#include "fpga_transport/json_file.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tb::fpga {

nlohmann::json read_json_file(const std::string& what, const std::string& path) {
  const std::string name = what + " " + path;
  std::error_code ec;
  // A directory opens as a stream on Linux and fails only when read, with the stream's message.
  if (std::filesystem::is_directory(path, ec)) throw std::invalid_argument(name + ": is a directory");
  std::ifstream f(path);
  if (!f) throw std::invalid_argument(name + ": cannot be read");
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(name + ": not JSON: " + e.what());
  }
}

}  // namespace tb::fpga
