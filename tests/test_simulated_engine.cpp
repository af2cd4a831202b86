// The smpi variant's charge for the MPI library's datatype engine
// (collectives/simulated_datatype_engine.hpp) and native's own-block copy, on 2 simulated ranks of
// one host. native and pairwise, blocking and prepared, are each timed (in simulated time) once
// with contiguous blocks to and from the peer and once with the same bytes as a vector of 64-byte
// blocks. SMPI itself charges the two the same, so their difference is the charge for the block
// sent to the peer and the block received from it (the own blocks are contiguous or empty, the
// same work in both). The own block: native copies it in timed code, and the engine charges it
// only the extras of a message to itself, where the platform has them. And a type SMPI builds as
// a contiguous run at an offset: the testbed finds its bytes there.
// TB_TEST_ENGINE (read only) says what the ctest's platform and options make of it:
// - "charged: measured": the platform written with experiments/host_platform.py
//   --noncontiguous-extras from the calibration TB_TEST_CALIBRATION; each side costs its measured
//   extra for 64-byte blocks, read here from that file by hand (its sizes 65536 and 262144), and
//   where that file has the extras of a message to itself, so does native's own block;
// - "charged:" (the MPI_Pack pass, --datatype-engine): each side costs one pass at the
//   platform's bandwidth at that size (its table has entries at 65536 and 262144 bytes);
// - "not charged" (the shipped this-host.xml has neither; computation not simulated).
#include "collectives/registry.hpp"
#include "collectives/simulated_datatype_engine.hpp"
#include "collectives/type_layout.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <nlohmann/json.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tb {
namespace {

constexpr int kBytes = 262144;  // per peer: an entry of the engine's table
constexpr int kBlock = 64;

// The summary's table ("charged: B:R;B:R;... (zone)") as (bytes, bandwidth) pairs.
std::vector<std::pair<double, double>> summary_table(const std::string& summary) {
  std::vector<std::pair<double, double>> table;
  std::istringstream entries(summary.substr(summary.find(' ') + 1, summary.find(" (") - summary.find(' ') - 1));
  for (std::string entry; std::getline(entries, entry, ';');)
    table.emplace_back(std::stod(entry.substr(0, entry.find(':'))), std::stod(entry.substr(entry.find(':') + 1)));
  return table;
}

// The bandwidth at `bytes`, which must lie between two entries of the table: the straight line
// in log(bytes) between them.
double table_bandwidth_at(const std::string& summary, double bytes) {
  const auto table = summary_table(summary);
  for (std::size_t i = 1; i < table.size(); ++i)
    if (table[i - 1].first <= bytes && bytes <= table[i].first) {
      const double w = std::log(bytes / table[i - 1].first) / std::log(table[i].first / table[i - 1].first);
      return table[i - 1].second + w * (table[i].second - table[i - 1].second);
    }
  ADD_FAILURE() << "the platform's table does not span " << bytes << " bytes: " << summary;
  return 1.0;
}

// One call's buffers: `bytes` to and from the peer, as one contiguous block or as a vector of
// kBlock-byte blocks every 2 kBlock bytes, and with `self` as many contiguous bytes to itself.
struct Exchange {
  int rank = 0, peer = 0;
  MPI_Datatype vector = MPI_DATATYPE_NULL;
  std::vector<char> send, recv;
  int sendcounts[2] = {}, recvcounts[2] = {}, displs[2] = {};
  MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE};

  Exchange(MPI_Comm comm, int bytes, bool fragmented, bool self)
      : send(4 * static_cast<std::size_t>(bytes), 's'), recv(4 * static_cast<std::size_t>(bytes), 'r') {
    MPI_Comm_rank(comm, &rank);
    peer = 1 - rank;
    MPI_Type_vector(bytes / kBlock, kBlock, 2 * kBlock, MPI_BYTE, &vector);
    MPI_Type_commit(&vector);
    for (int p : {peer, rank}) displs[p] = p * 2 * bytes;
    sendcounts[peer] = recvcounts[peer] = fragmented ? 1 : bytes;
    types[peer] = fragmented ? vector : MPI_BYTE;
    if (self) sendcounts[rank] = recvcounts[rank] = bytes;  // contiguous: the same work either way
  }
  ~Exchange() { MPI_Type_free(&vector); }
  AlltoallwArgs args(MPI_Comm comm) const {
    return {send.data(), sendcounts, displs, types, const_cast<char*>(recv.data()), recvcounts, displs, types, comm};
  }
};

// The fastest of a few calls, in simulated seconds, blocking or prepared.
double fastest_call_s(const std::string& algorithm, int bytes, bool fragmented, bool prepared, bool self = false) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  Exchange x(comm, bytes, fragmented, self);
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

// The calibration's measured extra for 64-byte blocks at `bytes` in its table host.<key>, which
// must lie between two of the row's sizes: linear in bytes between them.
double calibration_extra_s(const std::string& key, double bytes) {
  const char* path = std::getenv("TB_TEST_CALIBRATION");
  if (path == nullptr) {
    ADD_FAILURE() << "TB_TEST_CALIBRATION (the platform's calibration) is set by the ctest";
    return 0.0;
  }
  std::ifstream file(path);
  const auto rows = nlohmann::json::parse(file)["host"][key];
  for (const auto& row : rows) {
    if (row["block_bytes"].get<double>() != kBlock) continue;
    const auto& points = row["seconds_by_bytes"];
    for (std::size_t i = 1; i < points.size(); ++i) {
      const double x0 = points[i - 1][0], y0 = points[i - 1][1], x1 = points[i][0], y1 = points[i][1];
      if (x0 <= bytes && bytes <= x1) return y0 + (bytes - x0) / (x1 - x0) * (y1 - y0);
    }
  }
  ADD_FAILURE() << path << " has no " << key << " for " << kBlock << "-byte blocks around " << bytes << " bytes";
  return 0.0;
}

// The charge the ctest expects, from TB_TEST_ENGINE and the run's own summary; skips below 2 ranks.
struct Expectation {
  enum class Price { none, pass, extras } price = Price::none;
  std::string summary;

  // What a message of `bytes` in 64-byte blocks on both sides costs beyond a contiguous one.
  double both_sides_s(double bytes) const {
    switch (price) {
      case Price::pass: return 2.0 * bytes / table_bandwidth_at(summary, bytes);
      case Price::extras:
        return calibration_extra_s("noncontiguous_send_extra_seconds", bytes) +
               calibration_extra_s("noncontiguous_recv_extra_seconds", bytes);
      case Price::none: break;
    }
    return 0.0;
  }
  // What native's own block of `bytes` in 64-byte blocks on both sides is charged: the extras of a
  // message to itself, where the calibration behind the platform has them; else nothing.
  double own_block_s(double bytes) const {
    if (price != Price::extras || !calibration_has_self_extras()) return 0.0;
    return calibration_extra_s("self_noncontiguous_send_extra_seconds", bytes) +
           calibration_extra_s("self_noncontiguous_recv_extra_seconds", bytes);
  }
  static bool calibration_has_self_extras() {
    const char* path = std::getenv("TB_TEST_CALIBRATION");
    if (path == nullptr) return false;
    std::ifstream file(path);
    return nlohmann::json::parse(file)["host"].contains("self_noncontiguous_send_extra_seconds");
  }
};
Expectation expectation() {
  const char* expect = std::getenv("TB_TEST_ENGINE");
  EXPECT_NE(expect, nullptr) << "TB_TEST_ENGINE (charged: measured, charged: or not charged) is set by the ctest";
  const std::string summary = simulated_datatype_engine_summary();
  EXPECT_EQ(summary.rfind(expect ? expect : "?", 0), 0u) << "the run's engine: " << summary;
  const std::string mode = expect ? expect : "";
  if (mode == "charged:") {
    EXPECT_NE(summary.rfind("charged: measured", 0), 0u) << "expected the pass: " << summary;
  }
  using Price = Expectation::Price;
  return {mode == "charged: measured" ? Price::extras : mode == "charged:" ? Price::pass : Price::none, summary};
}

void check_difference(const std::string& what, double contiguous, double fragmented, double expected) {
  // Allowance: the testbed's own code between MPI calls, which SMPI times on the real CPU when
  // computation is simulated (microseconds).
  const double allowance = 0.03 * expected + 20e-6;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("%s: contiguous %.3f us, vector %.3f us, difference %.3f us, expected %.3f us\n", what.c_str(),
                contiguous * 1e6, fragmented * 1e6, (fragmented - contiguous) * 1e6, expected * 1e6);
  EXPECT_NEAR(fragmented - contiguous, expected, allowance) << what;
}

bool two_ranks() {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return ranks == 2;
}

class SimulatedEngine : public testing::TestWithParam<std::tuple<std::string, bool>> {};

// The block sent and the block received are each charged, at kBytes: an entry of the tables.
TEST_P(SimulatedEngine, ChargesEachNonContiguousSide) {
  if (!two_ranks()) GTEST_SKIP() << "the expected charge is worked out for 2 ranks";
  const Expectation e = expectation();
  const auto [algorithm, prepared] = GetParam();
  const double expected = e.both_sides_s(kBytes);
  check_difference(algorithm + (prepared ? " (prepared)" : ""), fastest_call_s(algorithm, kBytes, false, prepared),
                   fastest_call_s(algorithm, kBytes, true, prepared), expected);
}

// Beside an own block (contiguous, so the same work either way), at a size between two entries
// of the tables: the pass's bandwidth is interpolated in log(bytes), the extras linearly in bytes.
TEST(SimulatedEngineNative, ChargesBetweenTwoSizesBesideAnOwnBlock) {
  if (!two_ranks()) GTEST_SKIP() << "the expected charge is worked out for 2 ranks";
  const Expectation e = expectation();
  constexpr int bytes = 131072;
  const double expected = e.both_sides_s(bytes);
  check_difference("native beside its own block", fastest_call_s("native", bytes, false, false, true),
                   fastest_call_s("native", bytes, true, false, true), expected);
}

// The fastest of a few native calls that move `bytes` (contiguous) from each rank to itself only;
// each call's own block must arrive whole.
double fastest_own_block_call_s(int bytes) {
  Exchange x(MPI_COMM_WORLD, std::max(bytes, 1), false, bytes > 0);
  x.sendcounts[x.peer] = x.recvcounts[x.peer] = 0;
  auto native = make_alltoallw("native");
  double best = std::numeric_limits<double>::max();
  for (int i = 0; i < 3; ++i) {
    std::fill(x.recv.begin(), x.recv.end(), 'r');
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    native->run(x.args(MPI_COMM_WORLD));
    best = std::min(best, MPI_Wtime() - t0);
    const auto own = x.recv.begin() + x.displs[x.rank];
    EXPECT_EQ(std::count(own, own + bytes, 's'), bytes) << "the own block of " << bytes << " bytes, call " << i;
  }
  return best;
}

// SMPI's own Alltoallw copies a rank's block to itself outside simulated time; native copies it in
// the testbed's code instead, so that the copy costs what it takes here when computation is
// simulated (4 MiB: more than its bytes at 100 GB/s, far above this host's copy speed) and
// nothing when it is not.
TEST(SimulatedEngineNative, TheOwnBlockIsCopiedInTimedCode) {
  if (!two_ranks()) GTEST_SKIP() << "worked out for 2 ranks";
  constexpr int bytes = 4 << 20;
  const double none = fastest_own_block_call_s(0), own = fastest_own_block_call_s(bytes);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("native, own block only: 0 B %.3f us, %d B %.3f us\n", none * 1e6, bytes, own * 1e6);
  if (simgrid::config::get_value<bool>("smpi/simulate-computation"))
    EXPECT_GT(own - none, bytes / 100e9);
  else
    EXPECT_NEAR(own - none, 0.0, 1e-9);
}

// A call whose one block is a vector to itself costs the extras of a message to itself where the
// platform has them (with the measured extras), and else no charge (a pass would be about 180 us
// at 256 KiB, the fixture's extras to the peer 163 us), only the few microseconds of looking at
// the arguments. Those microseconds are real CPU time when computation is simulated, so a loaded
// machine stretches them: the fastest of three calls is checked, against the self extras plus
// half of one side's charge to the peer at that size where the platform prices one (a side
// would exceed it whatever the load), else 20 us, and above the self extras.
TEST(SimulatedEngineNative, TheOwnBlockIsChargedOnlyTheExtrasOfAMessageToItself) {
  if (!two_ranks()) GTEST_SKIP() << "worked out for 2 ranks";
  const Expectation e = expectation();
  Exchange x(MPI_COMM_WORLD, kBytes, true, false);
  std::swap(x.sendcounts[x.peer], x.sendcounts[x.rank]);
  std::swap(x.recvcounts[x.peer], x.recvcounts[x.rank]);
  std::swap(x.types[x.peer], x.types[x.rank]);
  const AlltoallwArgs args = x.args(MPI_COMM_WORLD);
  const AlltoallwComm comm{2, x.rank, false};
  double fastest = 1e9;
  for (int i = 0; i < 3; ++i) {
    const double t0 = MPI_Wtime();
    charge_alltoallw_sends(args, comm);
    charge_alltoallw_receives(args, comm);
    fastest = std::min(fastest, MPI_Wtime() - t0);
  }
  const double own = e.own_block_s(kBytes);
  const double bound = own + (e.price == Expectation::Price::none ? 20e-6 : 0.25 * e.both_sides_s(kBytes));
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("native's own vector block alone: charged %.3f us, its self extras %.3f us\n",
                             fastest * 1e6, own * 1e6);
  EXPECT_LT(fastest, bound) << "the bound: " << bound * 1e6 << " us (the self extras " << own * 1e6
                            << " us, and half of one side's charge to the peer where the platform has one)";
  EXPECT_GE(fastest, own) << "the self extras of the calibration behind the platform";
}

// SimGrid 3.32 builds an indexed type whose blocks form one run as a contiguous type with the run's
// start as its lower bound; the flattening puts the run there, and native and pairwise copy an own
// block of that type to the right bytes.
TEST(SimulatedTypes, AnIndexedRunAtAnOffsetStartsAtItsLowerBound) {
  int length = 4, displacement = 3;
  MPI_Datatype run = MPI_DATATYPE_NULL;
  MPI_Type_indexed(1, &length, &displacement, MPI_INT, &run);
  MPI_Type_commit(&run);
  const auto layout = type_layout(run);
  ASSERT_EQ(layout->blocks.size(), 1u);
  EXPECT_EQ(layout->blocks[0].offset, 3 * static_cast<std::int64_t>(sizeof(int)));
  EXPECT_EQ(layout->blocks[0].length, 4 * static_cast<std::int64_t>(sizeof(int)));
  int ranks = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const char* algorithm : {"native", "pairwise"}) {
    std::vector<int> send(8 * ranks), recv(8 * ranks, -1), counts(ranks, 0), displs(ranks, 0);
    for (int i = 0; i < 8 * ranks; ++i) send[i] = 100 * rank + i;
    std::vector<MPI_Datatype> types(ranks, run);
    counts[rank] = 1;
    displs[rank] = 8 * rank * static_cast<int>(sizeof(int));
    make_alltoallw(algorithm)->run({send.data(), counts.data(), displs.data(), types.data(), recv.data(), counts.data(),
                                    displs.data(), types.data(), MPI_COMM_WORLD});
    for (int i = 0; i < 8; ++i) {
      const bool in_run = i >= 3 && i < 7;
      EXPECT_EQ(recv[8 * rank + i], in_run ? 100 * rank + 8 * rank + i : -1) << algorithm << ", element " << i;
    }
  }
  MPI_Type_free(&run);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SimulatedEngine,
                         testing::Combine(testing::Values("native", "pairwise"), testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_prepared" : "_blocking");
                         });

}  // namespace
}  // namespace tb
