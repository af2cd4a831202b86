#include "collectives/node_layout.hpp"

#include "collectives/comm_cache.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/settings.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tb {
namespace {

int g_key = MPI_KEYVAL_INVALID;

int free_layout(MPI_Comm, int, void* value, void*) {
  auto* layout = static_cast<NodeLayout*>(value);
  if (layout->leader_comm != MPI_COMM_NULL) PMPI_Comm_free(&layout->leader_comm);
  if (layout->node_comm != MPI_COMM_NULL) PMPI_Comm_free(&layout->node_comm);
  delete layout;
  return MPI_SUCCESS;
}

// The virtual node id of `rank` among `size`, or -1 when no emulation is asked for. (Both
// settings at once are an error that each carries: settings.cpp, refuse_both_node_settings.)
int virtual_node(int rank, int size, std::string& source) {
  const int per_node = settings().ranks_per_node.get();
  const int num_nodes = settings().num_nodes.get();
  if (per_node > 0) {
    source = "TB_RANKS_PER_NODE=" + std::to_string(per_node);
    return rank / per_node;
  }
  if (num_nodes > 0) {
    const bool round_robin = settings().node_order.get() == NodeOrder::round_robin;
    source = "TB_NUM_NODES=" + std::to_string(num_nodes) + (round_robin ? " (round-robin)" : " (block)");
    if (round_robin) return rank % num_nodes;
    // Blocks as even as possible: the first size mod K nodes get one rank more.
    const int base = size / num_nodes, extra = size % num_nodes;
    const int cut = extra * (base + 1);
    return rank < cut ? rank / (base + 1) : extra + (base > 0 ? (rank - cut) / base : 0);
  }
  return -1;
}

// MPICH fakes nodes itself when asked: MPIR_CVAR_NUM_CLIQUES=k deals ranks round-robin into k
// cliques and MPIR_CVAR_NOLOCAL=1 makes every rank its own node; MPI_COMM_TYPE_SHARED then
// reports those nodes. Named in the layout's source so results say how nodes were formed.
std::string mpich_node_emulation() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  PMPI_Get_library_version(version, &len);
  if (std::string(version, static_cast<std::size_t>(len)).find("MPICH") == std::string::npos) return "";
  std::string text;
  for (const char* name : {"MPIR_CVAR_NUM_CLIQUES", "MPIR_CVAR_NOLOCAL", "MPIR_CVAR_ODD_EVEN_CLIQUES"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') text += std::string(", ") + name + "=" + v;
  }
  return text;
}

// The ranks of `comm` that share memory with this one. Under SimGrid SMPI (TB_SMPI), those on the
// same simulated host, split by host name: SMPI 3.32's MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
// gives ranks of one host inconsistent communicators (with 2 ranks per host, rank 0 alone and
// rank 1 with two ranks), which would leave node_leader's node collectives unmatched.
MPI_Comm shared_memory_comm(MPI_Comm comm, int rank) {
  MPI_Comm shared = MPI_COMM_NULL;
#if defined(TB_SMPI)
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  TB_MPI_CHECK(PMPI_Get_processor_name(name, &len));
  int size = 0;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &size));
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  TB_MPI_CHECK(PMPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm));
  int color = rank;  // the lowest rank on this host
  for (int r = 0; r < rank; ++r)
    if (std::strncmp(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME], name, MPI_MAX_PROCESSOR_NAME) == 0) {
      color = r;
      break;
    }
  TB_MPI_CHECK(PMPI_Comm_split(comm, color, rank, &shared));
#else
  TB_MPI_CHECK(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
#endif
  return shared;
}

}  // namespace

const NodeLayout& node_layout(MPI_Comm comm) {
  if (g_key == MPI_KEYVAL_INVALID)
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_layout, &g_key, nullptr));
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, g_key, &value, &found));
  if (found) return *static_cast<NodeLayout*>(value);

  int rank = 0, size = 0;
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &rank));
  TB_MPI_CHECK(PMPI_Comm_size(comm, &size));
  auto* layout = new NodeLayout;
  try {
    layout->source = "shared memory (MPI_COMM_TYPE_SHARED" + mpich_node_emulation() + ")";
    std::string source;
    const int vnode = virtual_node(rank, size, source);
    MPI_Comm shared = shared_memory_comm(comm, rank);
    if (vnode >= 0) {
      layout->source = source + " within shared-memory nodes";
      const int rc = PMPI_Comm_split(shared, vnode, rank, &layout->node_comm);
      PMPI_Comm_free(&shared);
      TB_MPI_CHECK(rc);
    } else {
      layout->node_comm = shared;
    }
    TB_MPI_CHECK(PMPI_Comm_rank(layout->node_comm, &layout->node_rank));
    TB_MPI_CHECK(PMPI_Comm_size(layout->node_comm, &layout->node_size));
    // Leaders (node rank 0) form their own communicator, ordered by their rank in comm, which
    // numbers the nodes; every rank learns its node's number from its leader.
    TB_MPI_CHECK(PMPI_Comm_split(comm, layout->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &layout->leader_comm));
    if (layout->leader_comm != MPI_COMM_NULL) {
      TB_MPI_CHECK(PMPI_Comm_rank(layout->leader_comm, &layout->node));
      TB_MPI_CHECK(PMPI_Comm_size(layout->leader_comm, &layout->nodes));
    }
    int ids[2] = {layout->node, layout->nodes};
    TB_MPI_CHECK(PMPI_Bcast(ids, 2, MPI_INT, 0, layout->node_comm));
    layout->node = ids[0];
    layout->nodes = ids[1];
  } catch (...) {
    free_layout(comm, g_key, layout, nullptr);
    throw;
  }
  bool caller_frees = false;
  const int attached = set_attr_on_every_rank(comm, g_key, layout, &caller_frees);
  if (attached != MPI_SUCCESS && caller_frees) free_layout(comm, g_key, layout, nullptr);
  check_attached(attached);
  return *layout;
}

}  // namespace tb
