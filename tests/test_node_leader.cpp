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
#include <memory>
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
  // callback), and a new communicator builds its own. Under SMPI the node's barrier mutex and
  // condition variable go with them too.
  const int before = node_leader_live_states();
#if defined(TB_SMPI)
  const int syncs_before = node_leader_live_node_syncs();
  // Local rank 0 of a node of several ranks makes one pair per communicator.
  const NodeLayout& node = node_layout(MPI_COMM_WORLD);
  const int syncs_per_state = node.node_rank == 0 && node.node_size > 1 ? 1 : 0;
#endif
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
#if defined(TB_SMPI)
    EXPECT_EQ(node_leader_live_node_syncs(), syncs_before + syncs_per_state);
#endif
    MPI_Comm_free(&comm);
    EXPECT_EQ(node_leader_live_states(), before);
#if defined(TB_SMPI)
    EXPECT_EQ(node_leader_live_node_syncs(), syncs_before);
#endif
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

// ---- The prepared (persistent) form ----

// One Alltoallw's arguments over byte arrays: to each peer p, a block whose size depends on the
// pair (some empty), sent with `send_type` (MPI_BYTE, or a strided vector of bytes) and received
// contiguously; the arrays may lie in node-shared memory. Every start is checked against native
// on the same send data.
struct PersistentCase {
  MPI_Comm comm;
  int P = 0, me = 0;
  bool in_place;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<MPI_Datatype> stypes, rtypes;
  MPI_Datatype strided = MPI_DATATYPE_NULL;
  std::unique_ptr<NodeSharedBuffer> shared_send, shared_recv;
  std::vector<std::byte> own_send, own_recv, reference, reference_send;
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  std::size_t send_bytes = 0, recv_bytes = 0;

  // unit: bytes per block step; strided: blocks of 1 byte every 2; shared: arrays in a NodeSharedBuffer.
  PersistentCase(MPI_Comm c, int unit, bool strided_send, bool shared, bool place = false)
      : comm(c), in_place(place) {
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    if (strided_send && !in_place) {
      MPI_Datatype vec;
      MPI_Type_vector(unit, 1, 2, MPI_BYTE, &vec);
      MPI_Type_create_resized(vec, 0, 2 * unit, &strided);
      MPI_Type_free(&vec);
      MPI_Type_commit(&strided);
    }
    for (int p = 0; p < P; ++p) {
      const int blocks = (me + p) % 3;  // the same for both sides of a pair; 0 for some pairs
      const int bytes = blocks * unit;
      if (strided_send && !in_place) {
        scounts.push_back(blocks);
        stypes.push_back(strided);
        sdispls.push_back(static_cast<int>(send_bytes));
        send_bytes += static_cast<std::size_t>(2 * bytes);
      } else {
        scounts.push_back(bytes);
        stypes.push_back(MPI_BYTE);
        sdispls.push_back(static_cast<int>(send_bytes));
        send_bytes += static_cast<std::size_t>(bytes);
      }
      rcounts.push_back(bytes);
      rtypes.push_back(MPI_BYTE);
      rdispls.push_back(static_cast<int>(recv_bytes + 8));  // a gap before each block, which must stay
      recv_bytes += static_cast<std::size_t>(bytes) + 8;
    }
    if (in_place) {  // the send layout is the receive layout
      scounts = rcounts, sdispls = rdispls, stypes = rtypes;
      send_bytes = recv_bytes;
    }
    allocate(shared);
  }
  ~PersistentCase() {
    if (strided != MPI_DATATYPE_NULL) MPI_Type_free(&strided);
  }

  void allocate(bool shared) {
    if (shared) {
      shared_send = std::make_unique<NodeSharedBuffer>(comm, send_bytes + 1);
      shared_recv = std::make_unique<NodeSharedBuffer>(comm, recv_bytes + 1);
      send = shared_send->data();
      recv = shared_recv->data();
    } else {
      own_send.resize(send_bytes + 1);
      own_recv.resize(recv_bytes + 1);
      send = own_send.data();
      recv = own_recv.data();
    }
  }

  AlltoallwArgs args() {
    return {in_place ? MPI_IN_PLACE : send, scounts.data(), sdispls.data(), stypes.data(),
            recv, rcounts.data(), rdispls.data(), rtypes.data(), comm};
  }

  // Data for start `round`: every byte names (round, rank, position); the receive array is
  // reset to a pattern (in place: it is the data).
  void fill(int round) {
    for (std::size_t i = 0; i < send_bytes; ++i) send[i] = std::byte(static_cast<unsigned char>(round * 31 + me * 7 + i));
    for (std::size_t i = 0; i < recv_bytes; ++i)
      recv[i] = in_place ? std::byte(static_cast<unsigned char>(round * 13 + me * 5 + i)) : std::byte{0xEE};
    // The reference: native on copies of the same data.
    reference.assign(recv, recv + recv_bytes);
    reference_send.assign(send, send + send_bytes);
    AlltoallwArgs a = args();
    if (!in_place) a.sendbuf = reference_send.data();
    a.recvbuf = reference.data();
    NativeAlltoallw native;
    native.run(a);
  }

  // Bytes of the receive array that differ from native's, summed over ranks.
  std::int64_t wrong_everywhere() const {
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < recv_bytes; ++i) bad += recv[i] != reference[i];
    return test::sum_over_ranks(bad, comm);
  }
};

// The routes this rank's path must name, as in the blocking tests.
void expect_persistent_path(const std::string& path, const char* on_node) {
  EXPECT_EQ(path.rfind("node_leader (persistent;", 0), 0u) << path;
  EXPECT_NE(path.find(on_node), std::string::npos) << path;
  EXPECT_NE(path.find(expected_inter_node(node_layout(MPI_COMM_WORLD))), std::string::npos) << path;
}

// Repeated starts with new data each time, on contiguous and strided layouts, private and
// shared arrays, small and large blocks: each start matches native on the same data.
TEST(NodeLeaderPersistent, RepeatedStartsMatchNativeWithNewDataEachTime) {
  const NodeLayout& node = node_layout(MPI_COMM_WORLD);
  for (const int unit : {1, 100, 10000})
    for (const bool strided : {false, true})
      for (const bool shared : {false, true}) {
        PersistentCase c(MPI_COMM_WORLD, unit, strided, shared);
        NodeLeaderAlltoallw algorithm;
        auto prepared = algorithm.prepare(c.args());
        for (int round = 0; round < 5; ++round) {
          c.fill(round);
          prepared->start();
          ASSERT_EQ(c.wrong_everywhere(), 0) << "unit " << unit << " strided " << strided << " shared " << shared
                                             << " start " << round << ": " << prepared->last_path();
        }
        // Shared arrays are copied directly, except on one node where every block between two
        // ranks is under 8 KiB (a second copy then costs less than the second node barrier).
        const bool direct = shared && (node.nodes > 1 || unit >= 8192);
        const char* on_node = node.node_size == 1 ? "on-node: none" : direct ? "on-node: single-copy" : "on-node: staged";
        expect_persistent_path(prepared->last_path(), on_node);
        EXPECT_EQ(algorithm.last_path(), prepared->last_path());
      }
}

// TB_NODE_LEADER_COPY=staged makes shared arrays go through staging here too.
TEST(NodeLeaderPersistent, StagedOnRequest) {
  test::ScopedEnv copy("TB_NODE_LEADER_COPY", "staged");
  PersistentCase c(MPI_COMM_WORLD, 64, true, true);
  NodeLeaderAlltoallw algorithm;
  auto prepared = algorithm.prepare(c.args());
  for (int round = 0; round < 3; ++round) {
    c.fill(round);
    prepared->start();
    ASSERT_EQ(c.wrong_everywhere(), 0) << round;
  }
  expect_persistent_path(prepared->last_path(),
                         node_layout(MPI_COMM_WORLD).node_size == 1 ? "on-node: none" : "on-node: staged");
}

TEST(NodeLeaderPersistent, InPlace) {
  for (const int unit : {1, 3000}) {
    PersistentCase c(MPI_COMM_WORLD, unit, false, false, true);
    NodeLeaderAlltoallw algorithm;
    auto prepared = algorithm.prepare(c.args());
    for (int round = 0; round < 4; ++round) {
      c.fill(round);
      prepared->start();
      ASSERT_EQ(c.wrong_everywhere(), 0) << "unit " << unit << " start " << round;
    }
    EXPECT_NE(prepared->last_path().find("persistent; in place;"), std::string::npos) << prepared->last_path();
  }
}

// Two prepared calls and blocking calls on one communicator, interleaved: none disturbs
// another's staging (each prepared call has its own area; the blocking call the node's window).
TEST(NodeLeaderPersistent, InterleavedWithBlockingCallsAndAnotherPreparedCall) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  NodeLeaderAlltoallw algorithm;
  PersistentCase a(comm, 40, true, false), b(comm, 7, false, false), blocking(comm, 300, false, false);
  PersistentCase shared(comm, 20, false, true);
  auto first = algorithm.prepare(a.args());
  auto second = algorithm.prepare(b.args());
  auto third = algorithm.prepare(shared.args());
  const char* order = "abAcbBaAcabBcbac";  // lower case: a start; upper case: a blocking call
  for (int i = 0; order[i] != '\0'; ++i) {
    switch (order[i]) {
      case 'a': a.fill(i); first->start(); ASSERT_EQ(a.wrong_everywhere(), 0) << i; break;
      case 'b': b.fill(i); second->start(); ASSERT_EQ(b.wrong_everywhere(), 0) << i; break;
      case 'c': shared.fill(i); third->start(); ASSERT_EQ(shared.wrong_everywhere(), 0) << i; break;
      default: blocking.fill(i); algorithm.run(blocking.args()); ASSERT_EQ(blocking.wrong_everywhere(), 0) << i;
    }
  }
  EXPECT_EQ(first->starts(), std::count(order, order + std::strlen(order), 'a'));
  first.reset();
  second.reset();
  third.reset();
  MPI_Comm_free(&comm);
}

// Dropping a prepared call is local: ranks drop theirs in different orders, a new prepare
// reuses an area no rank holds any more, and prepare after prepare does not grow the list.
TEST(NodeLeaderPersistent, DroppingIsLocalAndAreasAreReused) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  NodeLeaderAlltoallw algorithm;
  PersistentCase a(comm, 50, false, false), b(comm, 60, true, false);
  for (int life = 0; life < 4; ++life) {
    auto first = algorithm.prepare(a.args());
    auto second = algorithm.prepare(b.args());
    a.fill(life);
    first->start();
    b.fill(life);
    second->start();
    ASSERT_EQ(a.wrong_everywhere() + b.wrong_everywhere(), 0) << life;
    if (test::world_rank() % 2 == 0) {  // different orders on different ranks
      first.reset();
      second.reset();
    } else {
      second.reset();
      first.reset();
    }
  }
  const NodeLeaderStats stats = node_leader_stats(comm);
  EXPECT_EQ(stats.prepared_areas, 2) << "an area per live prepared call, reused";
  EXPECT_EQ(stats.prepared_areas_held, 0);
  // A rank that still holds its call keeps its area from being lent: the next prepare gets another.
  auto kept = algorithm.prepare(a.args());
  {
    auto other = algorithm.prepare(b.args());
    b.fill(9);
    other->start();
    EXPECT_EQ(b.wrong_everywhere(), 0);
  }
  a.fill(10);
  kept->start();
  EXPECT_EQ(a.wrong_everywhere(), 0);
  EXPECT_EQ(node_leader_stats(comm).prepared_areas, 2);
  kept.reset();
  MPI_Comm_free(&comm);
}

// Two emulated nodes (within each real one) on a communicator of this test's own, whatever the
// variant's layout: the data between nodes travels as one persistent message per node pair.
TEST(NodeLeaderPersistent, TwoEmulatedNodes) {
  if (test::world_size() < 2) GTEST_SKIP() << "needs two ranks";
  test::ScopedEnv nodes("TB_NUM_NODES", "2");
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  ASSERT_GE(node_layout(comm).nodes, 2);  // 2, or more where the real nodes are several (MPICH cliques)
  for (const bool shared : {false, true})
    for (const bool in_place : {false, true}) {
      PersistentCase c(comm, 500, !in_place, shared, in_place);
      NodeLeaderAlltoallw algorithm;
      auto prepared = algorithm.prepare(c.args());
      for (int round = 0; round < 4; ++round) {
        c.fill(round);
        prepared->start();
        ASSERT_EQ(c.wrong_everywhere(), 0) << "shared " << shared << " in place " << in_place << " start " << round;
        if (round == 1) algorithm.run(c.args());  // a blocking call between two starts
      }
      EXPECT_NE(prepared->last_path().find(expected_inter_node(node_layout(comm))), std::string::npos)
          << prepared->last_path();
    }
  MPI_Comm_free(&comm);
}

}  // namespace
}  // namespace tb
