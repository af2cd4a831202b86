#include "microbench/run_metadata.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/simulated_datatype_engine.hpp"
#include "microbench/machine_state.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string_view>

extern char** environ;

namespace tb {
namespace {

nlohmann::json hwloc_summary() {
  nlohmann::json j;
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return {{"error", "hwloc_topology_init failed"}};
  if (hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    return {{"error", "hwloc_topology_load failed"}};
  }
  j["cores"] = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  j["pus"] = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
  j["numa_nodes"] = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  j["packages"] = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE);
  hwloc_topology_destroy(topology);
  return j;
}

// hwloc_summary() of rank 0's host, on every rank. Only rank 0 loads a topology: under SMPI all
// ranks share one process, and each load and destroy opens and closes hwloc's plugins (and their
// libraries) again, which the dynamic loader pays for with every rank's privatised copy loaded so
// far: at 4096 simulated ranks that was most of a run's wall time.
nlohmann::json root_hwloc_summary(MPI_Comm comm) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string text = rank == 0 ? hwloc_summary().dump() : std::string();
  int length = static_cast<int>(text.size());
  TB_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, comm));
  text.resize(static_cast<std::size_t>(length));
  TB_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm));
  return nlohmann::json::parse(text);
}

nlohmann::json relevant_environment() {
  static constexpr std::string_view prefixes[] = {"MPIR_CVAR_", "MPICH_", "HYDRA_", "UCX_", "OMPI_MCA_", "TB_"};
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    for (auto prefix : prefixes)
      if (entry.substr(0, prefix.size()) == prefix) env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return env;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[32];
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  TB_MPI_CHECK(MPI_Get_library_version(text, &length));
  const std::string full(text, static_cast<std::size_t>(length));
  // The value after "key:" on its own line of the version text, trimmed.
  auto field = [&](std::string_view key) -> std::string {
    const auto at = full.find(key);
    if (at == std::string::npos) return {};
    auto begin = full.find_first_not_of(" \t", at + key.size());
    auto end = full.find('\n', at);
    return begin == std::string::npos ? std::string() : full.substr(begin, end - begin);
  };
  if (const std::string version = field("MPICH Version:"); !version.empty())
    return "MPICH " + version + " (" + field("MPICH Device:") + ")";
  std::string first = full.substr(0, full.find_first_of(",\n"));  // "Open MPI v4.1.4"
  return first;
}

nlohmann::json run_metadata(MPI_Comm comm) {
  nlohmann::json j;
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  TB_MPI_CHECK(MPI_Get_library_version(text, &length));
  j["mpi_library"] = mpi_library_version();
  j["mpi_library_full"] = std::string(text, static_cast<std::size_t>(length));
  int version = 0, subversion = 0;
  TB_MPI_CHECK(MPI_Get_version(&version, &subversion));
  j["mpi_standard"] = std::to_string(version) + "." + std::to_string(subversion);

  int ranks = 0;
  TB_MPI_CHECK(MPI_Comm_size(comm, &ranks));
  MPI_Comm node = MPI_COMM_NULL;
  TB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_rank = 0, node_size = 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int leader = node_rank == 0 ? 1 : 0, nodes = 0, max_per_node = 0;
  TB_MPI_CHECK(MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm));
  TB_MPI_CHECK(MPI_Allreduce(&node_size, &max_per_node, 1, MPI_INT, MPI_MAX, comm));
  j["ranks"] = ranks;
  j["nodes"] = nodes;
  j["max_ranks_per_node"] = max_per_node;
  // The nodes the node-aware algorithms see: MPI's, split further by TB_RANKS_PER_NODE /
  // TB_NUM_NODES when set (virtual nodes on one host).
  const NodeLayout& layout = node_layout(comm);
  j["node_layout"] = {{"nodes", layout.nodes}, {"source", layout.source}};

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  j["host"] = host;
  j["hwloc"] = root_hwloc_summary(comm);
  j["environment"] = relevant_environment();
  j["cross_core_handoff"] = cross_core_handoff(comm);
  j["vector_path"] = vector_path(comm);
#if defined(TB_SMPI)
  // What the simulation charges that SMPI itself does not: the library's datatype engine.
  j["smpi_datatype_engine"] = simulated_datatype_engine_summary();
#endif
  j["git_commit"] = git_commit();
  j["compiler"] = std::string("g++ ") + __VERSION__;
  j["timestamp_utc"] = utc_now();
  return j;
}

std::string relevant_environment_text(const nlohmann::json& metadata) {
  std::string text;
  for (const auto& [name, value] : metadata.at("environment").items())
    text += (text.empty() ? "" : ";") + name + "=" + value.get<std::string>();
  return text;
}

}  // namespace tb
