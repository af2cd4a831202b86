// node_leader beyond the random conformance suite: which path ran (staged or single-copy,
// aggregated inter-node messages), the staging window's caching, leader selection, and errors
// that are reported without hanging. Run on one node and on virtual nodes (see CMakeLists.txt).
#include "collectives/mpi_error.hpp"
#include "collectives/algorithms/native.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/algorithms/node_leader.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace tb {
namespace {

// A strided Alltoallw: to each peer p, `n` doubles taken every other element from block p;
// received contiguously. Values name (sender, receiver, index).
struct StridedCase {
  int P = 0, me = 0, n = 0;
  MPI_Datatype strided = MPI_DATATYPE_NULL;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<MPI_Datatype> stypes, rtypes;
  std::vector<double> recv;

  StridedCase(MPI_Comm comm, int per_peer) : n(per_peer) {
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    for (int p = 0; p < P; ++p) {
      scounts.push_back(1);
      sdispls.push_back(p * 2 * n * static_cast<int>(sizeof(double)));
      stypes.push_back(strided);
      rcounts.push_back(n);
      rdispls.push_back(p * n * static_cast<int>(sizeof(double)));
      rtypes.push_back(MPI_DOUBLE);
    }
    recv.assign(static_cast<std::size_t>(n) * P, -1.0);
  }
  ~StridedCase() { MPI_Type_free(&strided); }
  std::size_t send_elements() const { return static_cast<std::size_t>(2 * n) * P; }
  void fill(double* send) const {
    for (std::size_t i = 0; i < send_elements(); ++i) {
      const std::size_t p = i / (2 * n), k = i % (2 * n);
      send[i] = k % 2 == 0 ? me * 1e6 + p * 1e3 + k / 2.0 : -7.0;
    }
  }
  AlltoallwArgs args(const double* send, MPI_Comm comm) {
    return {send, scounts.data(), sdispls.data(), stypes.data(), recv.data(), rcounts.data(), rdispls.data(),
            rtypes.data(), comm};
  }
  std::int64_t wrong() const {
    std::int64_t bad = 0;
    for (int p = 0; p < P; ++p)
      for (int k = 0; k < n; ++k) bad += recv[static_cast<std::size_t>(p) * n + k] != p * 1e6 + me * 1e3 + k;
    return bad;
  }
};

// What node_leader's path must say on this rank's node, given the node layout.
std::string expected_inter_node(const NodeLayout& node) {
  const int m = node.nodes - 1;
  return "inter-node: " + std::to_string(m) + " aggregated message" + (m == 1 ? "" : "s");
}

TEST(NodeLeader, PrivateArraysAreStagedAndNodesExchangeOneMessagePerPair) {
  StridedCase c(MPI_COMM_WORLD, 37);
  std::vector<double> send(c.send_elements());
  c.fill(send.data());
  NodeLeaderAlltoallw algorithm;
  algorithm.run(c.args(send.data(), MPI_COMM_WORLD));
  EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0);
  const NodeLayout& node = node_layout(MPI_COMM_WORLD);
  const std::string path = algorithm.last_path();
  EXPECT_NE(path.find(node.node_size > 1 ? "on-node: staged" : "on-node: none"), std::string::npos) << path;
  EXPECT_NE(path.find(expected_inter_node(node)), std::string::npos) << path;
}

TEST(NodeLeader, SharedArraysAreReadOnceBySingleCopyAndStagedOnRequest) {
  StridedCase c(MPI_COMM_WORLD, 1000);
  NodeSharedBuffer shared(MPI_COMM_WORLD, c.send_elements() * sizeof(double));
  auto* send = reinterpret_cast<double*>(shared.data());
  c.fill(send);
  const NodeLayout& node = node_layout(MPI_COMM_WORLD);
  for (const char* mode : {"auto", "staged"}) {
    test::ScopedEnv copy("TB_NODE_LEADER_COPY", mode);
    std::fill(c.recv.begin(), c.recv.end(), -1.0);
    NodeLeaderAlltoallw algorithm;
    algorithm.run(c.args(send, MPI_COMM_WORLD));
    EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0) << mode;
    const std::string path = algorithm.last_path();
    const char* expect = node.node_size == 1 ? "on-node: none"
                         : std::string(mode) == "auto" ? "on-node: single-copy pull;"
                                                       : "on-node: staged";
    EXPECT_NE(path.find(expect), std::string::npos) << mode << ": " << path;
    EXPECT_NE(path.find(expected_inter_node(node)), std::string::npos) << path;
  }
  // Receive array shared too: the strided (more fragmented) send side pushes, walking its own
  // array front to back.
  NodeSharedBuffer shared_recv(MPI_COMM_WORLD, c.recv.size() * sizeof(double));
  auto* recv = reinterpret_cast<double*>(shared_recv.data());
  std::fill(recv, recv + c.recv.size(), -1.0);
  AlltoallwArgs args = c.args(send, MPI_COMM_WORLD);
  args.recvbuf = recv;
  NodeLeaderAlltoallw algorithm;
  algorithm.run(args);
  std::copy(recv, recv + c.recv.size(), c.recv.begin());
  EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0);
  const std::string path = algorithm.last_path();
  EXPECT_NE(path.find(node.node_size == 1 ? "on-node: none" : "on-node: single-copy push;"), std::string::npos) << path;
}

TEST(NodeLeader, TheStagingWindowIsCachedGrownAndReused) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  EXPECT_EQ(node_leader_stats(comm).window_allocations, -1) << "no state before the first call";
  NodeLeaderAlltoallw algorithm;
  auto calls = [&](int per_peer, int times) {
    StridedCase c(comm, per_peer);
    std::vector<double> send(c.send_elements());
    c.fill(send.data());
    for (int i = 0; i < times; ++i) algorithm.run(c.args(send.data(), comm));
    EXPECT_EQ(test::sum_over_ranks(c.wrong(), comm), 0);
  };
  const bool stages = test::sum_over_ranks(test::world_size() > 1 ? 1 : 0, comm) > 0;
  calls(100, 5);
  const NodeLeaderStats first = node_leader_stats(comm);
  calls(100, 5);
  calls(10, 5);
  EXPECT_EQ(node_leader_stats(comm).window_allocations, first.window_allocations) << "reallocated per call";
  calls(4000, 3);
  const NodeLeaderStats grown = node_leader_stats(comm);
  if (stages) {
    EXPECT_EQ(grown.window_allocations, first.window_allocations + 1);
    EXPECT_GT(grown.window_bytes, first.window_bytes);
  }
  MPI_Comm_free(&comm);
}

TEST(NodeLeader, StateDiesWithItsCommunicator) {
  // Windows and communicators are freed with the user's communicator (the attribute's delete
  // callback), and a new communicator builds its own.
  const int before = node_leader_live_states();
  for (int life = 0; life < 3; ++life) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    StridedCase c(comm, 3);
    std::vector<double> send(c.send_elements());
    c.fill(send.data());
    NodeLeaderAlltoallw algorithm;
    algorithm.run(c.args(send.data(), comm));
    ASSERT_EQ(c.wrong(), 0);
    EXPECT_EQ(node_leader_live_states(), before + 1);
    MPI_Comm_free(&comm);
    EXPECT_EQ(node_leader_live_states(), before);
  }
}

TEST(NodeLeader, LeadersFollowTbNodeLeaders) {
  const char* setting = std::getenv("TB_NODE_LEADERS");
  StridedCase c(MPI_COMM_WORLD, 5);
  std::vector<double> send(c.send_elements());
  c.fill(send.data());
  NodeLeaderAlltoallw algorithm;
  algorithm.run(c.args(send.data(), MPI_COMM_WORLD));
  EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0);
  const NodeLeaderStats stats = node_leader_stats(MPI_COMM_WORLD);
  const int node_size = node_layout(MPI_COMM_WORLD).node_size;
  // Shared windows only where a node has ranks to share with.
  EXPECT_EQ(stats.shared_windows, node_size > 1) << "node of " << node_size << " rank(s)";
  if (setting == nullptr || std::string(setting) == "1") {
    EXPECT_EQ(stats.leaders_on_my_node, 1);
    EXPECT_EQ(stats.leader_rule, "first rank");
  } else if (std::string(setting) == "numa") {
    EXPECT_GE(stats.leaders_on_my_node, 1);
    EXPECT_EQ(stats.leader_rule, "numa (hwloc)");
  } else {
    EXPECT_EQ(stats.leaders_on_my_node, std::min(std::atoi(setting), node_size));
  }
}

TEST(NodeLeader, MalformedSettingsAreNamed) {
  {
    test::ScopedEnv bad("TB_NODE_LEADERS", "several");
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    StridedCase c(comm, 2);
    std::vector<double> send(c.send_elements());
    NodeLeaderAlltoallw algorithm;
    try {
      algorithm.run(c.args(send.data(), comm));
      ADD_FAILURE() << "TB_NODE_LEADERS=several accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("TB_NODE_LEADERS"), std::string::npos) << e.what();
    }
    MPI_Comm_free(&comm);
  }
  test::ScopedEnv bad("TB_NODE_LEADER_COPY", "zero");
  StridedCase c(MPI_COMM_WORLD, 2);
  std::vector<double> send(c.send_elements());
  NodeLeaderAlltoallw algorithm;
  EXPECT_THROW(algorithm.run(c.args(send.data(), MPI_COMM_WORLD)), std::invalid_argument);
}

TEST(NodeLeader, MismatchedSignaturesAreNamedWithoutHanging) {
  const int P = test::world_size(), me = test::world_rank();
  if (P < 2) GTEST_SKIP() << "needs a peer";
  // Rank P-1 expects 2 doubles from rank 0, which sends 1: on-node or across nodes, the
  // receiver names the pair with the short message's class (MPI_ERR_COUNT), and so does every
  // rank of its node (they all see the sizes); the others complete, and the next call works.
  StridedCase c(MPI_COMM_WORLD, 2);
  std::vector<double> send(c.send_elements());
  c.fill(send.data());
  if (me == 0) c.stypes[P - 1] = MPI_DOUBLE;  // 1 double instead of the strided pair
  NodeLeaderAlltoallw algorithm;
  std::string what;
  int code = MPI_SUCCESS;
  try {
    algorithm.run(c.args(send.data(), MPI_COMM_WORLD));
  } catch (const MpiError& e) {
    what = e.what();
    code = e.code();
  }
  if (me == P - 1) {
    EXPECT_FALSE(what.empty());
  }
  if (!what.empty()) {
    EXPECT_EQ(code, MPI_ERR_COUNT) << what;
    EXPECT_NE(what.find("rank 0 sends 8 bytes to rank " + std::to_string(P - 1)), std::string::npos) << what;
  }
  c.stypes[P - 1] = c.strided;
  std::fill(c.recv.begin(), c.recv.end(), -1.0);
  algorithm.run(c.args(send.data(), MPI_COMM_WORLD));
  EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0);
}

}  // namespace
}  // namespace tb
