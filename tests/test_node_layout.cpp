// Node discovery and the virtual-node emulation. The expected layout is computed here from the
// environment independently of the implementation: on this single host every rank shares
// memory, so the nodes are exactly the virtual ones the TB_* variables describe.
#include "collectives/node_layout.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace tb {
namespace {

// The node of each rank expected from TB_RANKS_PER_NODE / TB_NUM_NODES (one real host).
std::vector<int> expected_nodes(int size) {
  std::vector<int> node(static_cast<std::size_t>(size), 0);
  const char* rpn = std::getenv("TB_RANKS_PER_NODE");
  const char* num = std::getenv("TB_NUM_NODES");
  const char* order = std::getenv("TB_NODE_ORDER");
  // MPICH's own emulation (the test variants set it on MPICH builds only).
  const char* cliques = std::getenv("MPIR_CVAR_NUM_CLIQUES");
  const char* nolocal = std::getenv("MPIR_CVAR_NOLOCAL");
  for (int r = 0; r < size; ++r) {
    if (nolocal && std::string(nolocal) == "1") {
      node[r] = r;
    } else if (cliques) {
      node[r] = r % std::atoi(cliques);
    } else if (rpn) {
      node[r] = r / std::atoi(rpn);
    } else if (num && order && std::string(order) == "round-robin") {
      node[r] = r % std::atoi(num);
    } else if (num) {  // blocks, the first size mod K one rank larger: listed explicitly
      const int k = std::atoi(num);
      std::vector<int> sizes(static_cast<std::size_t>(k), size / k);
      for (int i = 0; i < size % k; ++i) ++sizes[i];
      int first = 0, n = 0;
      while (r >= first + sizes[n]) first += sizes[n++];
      node[r] = n;
    }
  }
  return node;
}

bool cliques_or_nolocal() { return std::getenv("MPIR_CVAR_NUM_CLIQUES") || std::getenv("MPIR_CVAR_NOLOCAL"); }

TEST(NodeLayout, MatchesTheRealOrVirtualNodes) {
  const int size = test::world_size(), rank = test::world_rank();
  const auto expect = expected_nodes(size);
  const NodeLayout& layout = node_layout(MPI_COMM_WORLD);
  int nodes = 0, node_size = 0;
  for (int r = 0; r < size; ++r) {
    nodes = std::max(nodes, expect[r] + 1);
    node_size += expect[r] == expect[rank];
  }
  EXPECT_EQ(layout.node, expect[rank]) << layout.source;
  EXPECT_EQ(layout.nodes, nodes);
  EXPECT_EQ(layout.node_size, node_size);
  int check = 0;
  MPI_Comm_size(layout.node_comm, &check);
  EXPECT_EQ(check, node_size);
  EXPECT_EQ(layout.leader_comm != MPI_COMM_NULL, layout.node_rank == 0);
  if (layout.leader_comm != MPI_COMM_NULL) {
    MPI_Comm_size(layout.leader_comm, &check);
    EXPECT_EQ(check, nodes);
  }
  EXPECT_EQ(test::sum_over_ranks(layout.node_rank == 0 ? 1 : 0), nodes);
  EXPECT_EQ(&node_layout(MPI_COMM_WORLD), &layout) << "the layout is cached on the communicator";
  if (std::getenv("TB_RANKS_PER_NODE") || std::getenv("TB_NUM_NODES")) {
    EXPECT_NE(layout.source.find("TB_"), std::string::npos) << layout.source;
  }
  if (cliques_or_nolocal()) {
    EXPECT_NE(layout.source.find("MPIR_CVAR_"), std::string::npos) << layout.source;
  }
}

TEST(NodeLayout, FreedWithItsCommunicatorAndRebuiltOnANewOne) {
  for (int i = 0; i < 20; ++i) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    const NodeLayout& layout = node_layout(dup);
    EXPECT_EQ(layout.nodes, node_layout(MPI_COMM_WORLD).nodes);
    MPI_Comm_free(&dup);
  }
}

TEST(NodeLayout, MalformedSettingsAreNamed) {
  test::ScopedEnv bad("TB_RANKS_PER_NODE", "two");
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  try {
    node_layout(dup);
    ADD_FAILURE() << "TB_RANKS_PER_NODE=two accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TB_RANKS_PER_NODE"), std::string::npos) << e.what();
  }
  MPI_Comm_free(&dup);
}

}  // namespace
}  // namespace tb
