// The smpi variant's charge for the MPI library's datatype engine
// (collectives/simulated_datatype_engine.hpp), on 2 simulated ranks of one host: native and
// pairwise, blocking and prepared, each timed (in simulated time) once with contiguous blocks and
// once with the same bytes as a vector of 64-byte blocks. SMPI itself charges the two the same,
// so their difference is the charge: one engine pass over the block sent to the peer and one over
// the block received from it (the self blocks are empty, so no copy the testbed times adds to
// either), each at the platform's bandwidth at that size.
// TB_TEST_ENGINE (read only) says what the ctest's platform and options make of it: "charged"
// (this host's platform written with experiments/host_platform.py --datatype-engine: its table
// has an entry at 262144 bytes, the size this test uses, so no interpolation is involved) or
// "not charged" (the shipped this-host.xml has no engine; computation not simulated).
#include "collectives/registry.hpp"
#include "collectives/simulated_datatype_engine.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace tb {
namespace {

constexpr int kBytes = 262144;  // per peer
constexpr int kBlock = 64;

// The bandwidth the summary's table gives at exactly `bytes` ("charged: B:R;B:R;... (zone)").
double table_bandwidth_at(const std::string& summary, double bytes) {
  std::istringstream entries(summary.substr(summary.find(' ') + 1, summary.find(" (") - summary.find(' ') - 1));
  for (std::string entry; std::getline(entries, entry, ';');)
    if (std::stod(entry.substr(0, entry.find(':'))) == bytes) return std::stod(entry.substr(entry.find(':') + 1));
  ADD_FAILURE() << "the platform's table has no entry at " << bytes << " bytes: " << summary;
  return 1.0;
}

// One call's buffers: to and from the peer kBytes, as one contiguous block or as a vector of
// kBlock-byte blocks every 2 kBlock bytes; nothing to or from itself.
struct Exchange {
  int rank = 0, peer = 0;
  MPI_Datatype vector = MPI_DATATYPE_NULL;
  std::vector<char> send = std::vector<char>(2 * kBytes, 's'), recv = std::vector<char>(2 * kBytes, 'r');
  int sendcounts[2] = {}, recvcounts[2] = {}, displs[2] = {};
  MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE};

  Exchange(MPI_Comm comm, bool fragmented) {
    MPI_Comm_rank(comm, &rank);
    peer = 1 - rank;
    MPI_Type_vector(kBytes / kBlock, kBlock, 2 * kBlock, MPI_BYTE, &vector);
    MPI_Type_commit(&vector);
    sendcounts[peer] = recvcounts[peer] = fragmented ? 1 : kBytes;
    types[peer] = fragmented ? vector : MPI_BYTE;
  }
  ~Exchange() { MPI_Type_free(&vector); }
  AlltoallwArgs args(MPI_Comm comm) const {
    return {send.data(), sendcounts, displs, types, const_cast<char*>(recv.data()), recvcounts, displs, types, comm};
  }
};

// The fastest of a few calls, in simulated seconds, blocking or prepared.
double fastest_call_s(const std::string& algorithm, bool fragmented, bool prepared) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  Exchange x(comm, fragmented);
  auto alltoallw = make_alltoallw(algorithm);
  const AlltoallwArgs args = x.args(comm);
  auto call = prepared ? alltoallw->prepare(args) : nullptr;
  double best = std::numeric_limits<double>::max();
  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (call) {
      call->start();
    } else {
      alltoallw->run(args);
    }
    best = std::min(best, MPI_Wtime() - t0);
  }
  return best;
}

class SimulatedEngine : public testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(SimulatedEngine, ChargesOnePassPerNonContiguousSide) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) GTEST_SKIP() << "the expected charge is worked out for 2 ranks";
  const char* expect = std::getenv("TB_TEST_ENGINE");
  ASSERT_NE(expect, nullptr) << "TB_TEST_ENGINE (charged or not charged) is set by the ctest";
  const std::string summary = simulated_datatype_engine_summary();
  ASSERT_EQ(summary.rfind(expect, 0), 0u) << "the run's engine: " << summary;
  const auto [algorithm, prepared] = GetParam();
  const double contiguous = fastest_call_s(algorithm, false, prepared);
  const double fragmented = fastest_call_s(algorithm, true, prepared);
  const bool charged = std::string(expect) == "charged";
  const double expected = charged ? 2.0 * kBytes / table_bandwidth_at(summary, kBytes) : 0.0;
  // Allowance: the testbed's own code between MPI calls, which SMPI times on the real CPU when
  // computation is simulated (microseconds).
  const double allowance = 0.03 * expected + 20e-6;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("%s%s: contiguous %.3f us, vector %.3f us, difference %.3f us, expected %.3f us\n", algorithm.c_str(),
                prepared ? " (prepared)" : "", contiguous * 1e6, fragmented * 1e6, (fragmented - contiguous) * 1e6,
                expected * 1e6);
  EXPECT_NEAR(fragmented - contiguous, expected, allowance)
      << algorithm << (prepared ? " (prepared)" : "") << ": contiguous " << contiguous * 1e6 << " us, vector "
      << fragmented * 1e6 << " us; " << summary;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SimulatedEngine,
                         testing::Combine(testing::Values("native", "pairwise"), testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_prepared" : "_blocking");
                         });

}  // namespace
}  // namespace tb
