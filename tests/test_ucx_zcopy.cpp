// ucx_zcopy beyond the random conformance suite: which path ran (direct gets or staged gets),
// the registration cache across calls on the same buffers, rkeys sent once, zero-size peers,
// the state's life with its communicator, and a clear error for a transport that cannot work.
// Run under several TB_UCX_TLS settings (see CMakeLists.txt).
#include "collectives/algorithms/native.hpp"
#include "collectives/algorithms/ucx_zcopy.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tb {
namespace {

// Every peer gets `n` doubles. Send side: every other double of block p (vector, stride 2)
// or contiguous; receive side: contiguous, or every other double (strided).
struct Case {
  int P = 0, me = 0, n = 0;
  MPI_Datatype strided = MPI_DATATYPE_NULL;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<MPI_Datatype> stypes, rtypes;
  std::vector<double> send, recv;
  Case(MPI_Comm comm, int per_peer, bool strided_send, bool strided_recv, int empty_peer = -1) : n(per_peer) {
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    send.assign(static_cast<std::size_t>(2 * n) * P, -7.0);
    recv.assign(static_cast<std::size_t>(2 * n) * P, -1.0);
    for (int p = 0; p < P; ++p) {
      const bool empty = p == empty_peer || me == empty_peer;
      for (int k = 0; k < n; ++k) send[static_cast<std::size_t>(2 * n) * p + (strided_send ? 2 * k : k)] = me * 1e6 + p * 1e3 + k;
      scounts.push_back(empty ? 0 : strided_send ? 1 : n);
      stypes.push_back(strided_send ? strided : MPI_DOUBLE);
      sdispls.push_back(p * 2 * n * static_cast<int>(sizeof(double)));
      rcounts.push_back(empty ? 0 : strided_recv ? 1 : n);
      rtypes.push_back(strided_recv ? strided : MPI_DOUBLE);
      rdispls.push_back(p * 2 * n * static_cast<int>(sizeof(double)));
    }
  }
  ~Case() { MPI_Type_free(&strided); }
  AlltoallwArgs args(MPI_Comm comm) {
    return {send.data(), scounts.data(), sdispls.data(), stypes.data(), recv.data(), rcounts.data(), rdispls.data(),
            rtypes.data(), comm};
  }
};

// The same call through native, for comparison.
std::vector<double> reference(Case& c, MPI_Comm comm) {
  const std::vector<double> keep = c.recv;
  native_alltoallw(c.args(comm));
  std::vector<double> out = c.recv;
  c.recv = keep;
  return out;
}

TEST(UcxZcopy, EachPathRunsWhereItShould) {
  const int peers = test::world_size() - 1;
  const std::string n = std::to_string(peers);
  struct Expect {
    bool strided_send, strided_recv;
    const char* pack_below;
    std::string path;
  };
  // 300 doubles per peer. A strided send (300 blocks of 8 B) is packed by the sender under the
  // default threshold and then got in one piece; with packing off it is got block by block.
  // A contiguous send into a strided receive would be 300 gets: the receiver gets it whole
  // into staging instead and unpacks.
  const Expect cases[] = {
      {true, false, "4096", n + " peers packed by the sender; " + n + " peers direct, 0 by staged get; " + n + " gets"},
      {true, false, "0", "0 peers packed by the sender; " + n + " peers direct, 0 by staged get; " +
                             std::to_string(300 * peers) + " gets"},
      {false, true, "4096", "0 peers packed by the sender; 0 peers direct, " + n + " by staged get; " + n + " gets"},
  };
  for (const Expect& e : cases) {
    test::ScopedEnv setting("TB_UCX_PACK_BELOW", e.pack_below);
    Case c(MPI_COMM_WORLD, 300, e.strided_send, e.strided_recv);
    const auto expect = reference(c, MPI_COMM_WORLD);
    UcxZcopyAlltoallw algorithm;
    algorithm.run(c.args(MPI_COMM_WORLD));
    EXPECT_EQ(test::sum_over_ranks(c.recv == expect ? 0 : 1), 0) << e.path;
    const std::string path = algorithm.last_path();
    EXPECT_NE(path.find(e.path), std::string::npos) << path << " (expected " << e.path << ")";
  }
}

TEST(UcxZcopy, RepeatedCallsReuseTheRegistrationAndSendEachRkeyOnce) {
  test::ScopedEnv direct("TB_UCX_PACK_BELOW", "0");  // the user's send array itself is registered and read
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  EXPECT_EQ(ucx_zcopy_stats(comm).registrations, -1);
  Case c(comm, 100, true, false);
  const auto expect = reference(c, comm);
  UcxZcopyAlltoallw algorithm;
  for (int i = 0; i < 10; ++i) {
    std::fill(c.recv.begin(), c.recv.end(), -1.0);
    algorithm.run(c.args(comm));
    ASSERT_EQ(test::sum_over_ranks(c.recv == expect ? 0 : 1, comm), 0) << "call " << i;
  }
  const UcxZcopyStats stats = ucx_zcopy_stats(comm);
  const std::int64_t peers = test::world_size() - 1;
  // The send and the receive array, each registered once for ten calls.
  EXPECT_EQ(stats.registrations, peers > 0 ? 2 : 0) << "registered per call, not once";
  EXPECT_EQ(stats.rkeys_sent, peers) << "each peer gets the rkey once";
  // Different arrays: registered (send and receive) and the send rkey announced once more.
  Case d(comm, 100, true, false);
  const auto expect_d = reference(d, comm);
  algorithm.run(d.args(comm));
  EXPECT_EQ(test::sum_over_ranks(d.recv == expect_d ? 0 : 1, comm), 0);
  EXPECT_EQ(ucx_zcopy_stats(comm).registrations, peers > 0 ? 4 : 0);
  EXPECT_EQ(ucx_zcopy_stats(comm).rkeys_sent, 2 * peers);
  MPI_Comm_free(&comm);
}

TEST(UcxZcopy, ZeroSizePeersAndFreshCommunicators) {
  for (int life = 0; life < 3; ++life) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    Case c(comm, 17, true, false, /*empty_peer=*/0);
    const auto expect = reference(c, comm);
    UcxZcopyAlltoallw algorithm;
    algorithm.run(c.args(comm));
    EXPECT_EQ(test::sum_over_ranks(c.recv == expect ? 0 : 1, comm), 0);
    MPI_Comm_free(&comm);  // endpoints, worker and context go with it
  }
}

TEST(UcxZcopy, ReportsTheTransportSetting) {
  Case c(MPI_COMM_WORLD, 4, false, false);
  UcxZcopyAlltoallw algorithm;
  algorithm.run(c.args(MPI_COMM_WORLD));
  const std::string transports = ucx_zcopy_stats(MPI_COMM_WORLD).transports;
  const char* tls = std::getenv("TB_UCX_TLS");
  if (tls != nullptr) {
    EXPECT_EQ(transports, std::string("TB_UCX_TLS=") + tls);
  } else {
    EXPECT_FALSE(transports.empty());
  }
}

}  // namespace
}  // namespace tb
