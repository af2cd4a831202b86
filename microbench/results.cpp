#include "microbench/results.hpp"

#include "collectives/mpi_error.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tb {

void check_writable(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  errno = 0;
  std::ofstream f(path, std::ios::app);
  if (!f) {
    const std::string why = errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : "";
    throw std::invalid_argument(option + " " + path + ": cannot be written" + why);
  }
  f.close();
  if (!existed) std::filesystem::remove(path, ec);
}

void check_writable(MPI_Comm comm, const std::string& option, const std::string& path) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string error;
  if (rank == 0) {
    try {
      check_writable(option, path);
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
  }
  int length = static_cast<int>(error.size());
  TB_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, comm));
  error.resize(static_cast<std::size_t>(length));
  if (length > 0) TB_MPI_CHECK(MPI_Bcast(error.data(), length, MPI_CHAR, 0, comm));
  if (!error.empty()) throw std::invalid_argument(error);
}

namespace {
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal()) return true;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}
}  // namespace

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (!outputs[i].second.empty() && !outputs[k].second.empty() && same_file(outputs[i].second, outputs[k].second))
        throw std::invalid_argument(outputs[k].first + " and " + outputs[i].first + " name the same file " +
                                    outputs[i].second + "; each output needs its own");
}

nlohmann::json timing_fields(const Timing& timing, bool samples) {
  nlohmann::json j = {{"inner", timing.inner},
                      {"outer", timing.seconds_per_op.size()},
                      {"fastest_s", timing.fastest()},
                      {"median_s", timing.median()}};
  if (samples) j["samples_s"] = timing.seconds_per_op;
  return j;
}

void write_results_json(const std::string& path, const nlohmann::json& metadata, const nlohmann::json& rows) {
  if (!rows.is_array()) throw std::logic_error("write_results_json: the results must be an array of rows");
  for (const auto& row : rows)
    if (!row.is_object()) throw std::logic_error("write_results_json: every result row must be an object");
  std::ofstream f(path);
  f << nlohmann::json{{"metadata", metadata}, {"results", rows}}.dump(2) << "\n";
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path);
}

void write_results_csv(const std::string& path, const nlohmann::json& rows, const std::vector<std::string>& columns,
                       const nlohmann::json& meta) {
  std::ofstream f(path);
  for (const auto& c : columns) f << c << ",";
  f << "ranks,nodes,mpi_library,cores,numa_nodes,environment,git_commit\n";
  for (const auto& row : rows) {
    for (const auto& c : columns) {
      const auto& v = row.at(c);
      f << (v.is_string() ? v.get<std::string>() : v.dump()) << ",";
    }
    f << meta["ranks"] << "," << meta["nodes"] << ",\"" << meta["mpi_library"].get<std::string>() << "\","
      << meta["hwloc"].value("cores", 0) << "," << meta["hwloc"].value("numa_nodes", 0) << ",\""
      << relevant_environment_text(meta) << "\"," << meta["git_commit"].get<std::string>() << "\n";
  }
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace tb
