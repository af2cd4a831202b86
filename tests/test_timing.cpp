// The timing method: MAX over ranks, fastest and median per operation, the time budget; the
// metadata every result carries, the machine's cross-core handoff state among it.
#include "microbench/machine_state.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace tb {
namespace {

TEST(Timing, FastestAndMedianOfKnownSamples) {
  Timing t{3, {4.0, 1.0, 3.0, 2.0}};
  EXPECT_DOUBLE_EQ(t.fastest(), 1.0);
  EXPECT_DOUBLE_EQ(t.median(), 2.5);
  t.seconds_per_op = {5.0, 1.0, 3.0};
  EXPECT_DOUBLE_EQ(t.median(), 3.0);
  EXPECT_THROW(Timing{}.fastest(), std::logic_error);
}

TEST(Timing, ReducesWithMaxOverRanksAndCountsInnerOperations) {
  // Only the last rank sleeps; every rank must see its time.
  const bool sleeper = test::world_rank() == test::world_size() - 1;
  int calls = 0;
  const Timing t = time_collective(MPI_COMM_WORLD, {2, 4, 0.0, 1}, [&] {
    ++calls;
    if (sleeper) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_EQ(calls, 8);
  ASSERT_EQ(t.seconds_per_op.size(), 4u);
  EXPECT_GE(t.fastest(), 0.0049);
  double mine = t.fastest(), lowest = 0;
  MPI_Allreduce(&mine, &lowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(lowest, mine) << "all ranks report the same reduced time";
}

TEST(Timing, StopsAtTheTimeBudgetAfterTheMinimum) {
  const Timing t = time_collective(MPI_COMM_WORLD, {1, 50, 0.001, 3},
                                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  EXPECT_EQ(t.seconds_per_op.size(), 3u);
  EXPECT_THROW(time_collective(MPI_COMM_WORLD, {0, 1}, [] {}), std::invalid_argument);
}

TEST(RunMetadata, NamesTheLibraryRanksAndCommit) {
  const auto meta = run_metadata(MPI_COMM_WORLD);
  const std::string lib = meta.at("mpi_library");
  EXPECT_TRUE(lib.find("MPICH") != std::string::npos || lib.find("Open MPI") != std::string::npos) << lib;
  EXPECT_EQ(meta.at("ranks").get<int>(), test::world_size());
  EXPECT_GE(meta.at("nodes").get<int>(), 1);
  EXPECT_GE(meta.at("hwloc").at("cores").get<int>(), 1);
  EXPECT_FALSE(meta.at("git_commit").get<std::string>().empty());
}

// Whether some node of MPI_COMM_WORLD has two ranks (the same on every rank).
bool a_node_has_two_ranks() {
  int node_size = 0, largest = 0;
  MPI_Comm node = MPI_COMM_NULL;
  EXPECT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), MPI_SUCCESS);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  MPI_Allreduce(&node_size, &largest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return largest >= 2;
}

// A measured state: 1 MiB, both times above 0, and the ratio theirs.
void expect_a_state(const nlohmann::json& handoff) {
  ASSERT_TRUE(handoff.is_object()) << handoff.dump();
  EXPECT_EQ(handoff.at("bytes").get<long long>(), 1 << 20);
  const double copied = handoff.at("handoff_us").get<double>(), within = handoff.at("private_us").get<double>();
  EXPECT_GT(copied, 0.0);
  EXPECT_GT(within, 0.0);
  EXPECT_DOUBLE_EQ(handoff.at("ratio").get<double>(), copied / within);
  EXPECT_DOUBLE_EQ(handoff_ratio(handoff), copied / within);
}

TEST(RunMetadata, RecordsTheCrossCoreHandoffStateWhereANodeHasTwoRanks) {
  const auto handoff = run_metadata(MPI_COMM_WORLD).at("cross_core_handoff");
  if (!a_node_has_two_ranks()) {
    EXPECT_TRUE(handoff.is_null()) << handoff.dump();
    EXPECT_EQ(handoff_ratio(handoff), -1.0);
    return;
  }
  expect_a_state(handoff);
}

TEST(HandoffProbe, MeasuresAsOftenAsAskedWithOneWindow) {
  HandoffProbe probe(MPI_COMM_WORLD);
  for (int k = 0; k < 3; ++k) {
    const nlohmann::json state = probe.measure();
    if (a_node_has_two_ranks()) expect_a_state(state);
    else EXPECT_TRUE(state.is_null()) << state.dump();
  }
}

TEST(NodePairs, HandOverThePartnersBytesAndRefuseMoreThanTheirSlots) {
  NodePairs pairs(MPI_COMM_WORLD, 4096);
  EXPECT_EQ(pairs.any(), a_node_has_two_ranks());
  const double handoff = pairs.handoff(4096), own = pairs.own(1);
  if (pairs.any()) {  // alone, a rank only waits in the barriers
    EXPECT_GT(handoff, 0.0);
    EXPECT_GT(own, 0.0);
  }
  EXPECT_EQ(pairs.wrong(), 0);  // every byte read back was the partner's (handoff) or the rank's own
  EXPECT_THROW(pairs.handoff(4097), std::invalid_argument);
  EXPECT_THROW(pairs.own(0), std::invalid_argument);
}

TEST(NodePairs, HandOverInPiecesUpToTheirSlotsAndRefuseUnevenPieces) {
  NodePairs pairs(MPI_COMM_WORLD, 4096);  // received bytes start at 0: a piece left uncopied is wrong
  pairs.handoff(4096, 64);  // the largest size: the private vector spans twice the slot
  pairs.own(4096, 64);
  pairs.handoff(128, 64);
  EXPECT_EQ(pairs.wrong(), 0);  // every piece read back was the partner's (handoff) or the rank's own
  EXPECT_THROW(pairs.handoff(4000, 64), std::invalid_argument);  // 62.5 pieces
  EXPECT_THROW(pairs.own(4096, -64), std::invalid_argument);
  EXPECT_THROW(pairs.handoff(8192, 64), std::invalid_argument);  // more than the slot
}

void expect_a_vector_state(const nlohmann::json& state) {
  ASSERT_TRUE(state.is_object()) << state.dump();
  EXPECT_EQ(state.at("bytes").get<long long>(), 65536);
  EXPECT_EQ(state.at("block_bytes").get<long long>(), 1024);
  const double vector = state.at("vector_us").get<double>(), contiguous = state.at("contiguous_us").get<double>();
  EXPECT_GT(vector, 0.0);
  EXPECT_GT(contiguous, 0.0);
  EXPECT_DOUBLE_EQ(state.at("ratio").get<double>(), vector / contiguous);
  EXPECT_DOUBLE_EQ(handoff_ratio(state), vector / contiguous);
}

// The vector message's bytes are checked inside measure() (it throws when one did not arrive).
TEST(VectorPathProbe, MeasuresAsOftenAsAskedWhereANodeHasTwoRanks) {
  EXPECT_EQ(run_metadata(MPI_COMM_WORLD).at("vector_path").is_object(), a_node_has_two_ranks());
  VectorPathProbe probe(MPI_COMM_WORLD);
  for (int k = 0; k < 3; ++k) {
    const nlohmann::json state = probe.measure();
    if (a_node_has_two_ranks()) {
      expect_a_vector_state(state);
    } else {
      EXPECT_TRUE(state.is_null()) << state.dump();
      EXPECT_EQ(handoff_ratio(state), -1.0);
    }
  }
}

TEST(VectorPathProbe, TextNamesTheSlowStateAboveItsRatio) {
  auto metadata = [](double vector_us) {
    return nlohmann::json{{"vector_path",
                           {{"bytes", 65536}, {"block_bytes", 1024}, {"contiguous_us", 8.0}, {"vector_us", vector_us},
                            {"ratio", vector_us / 8.0}}}};
  };
  EXPECT_EQ(vector_path_text(metadata(12.0)), "vector message of 64 KiB in 1024 B blocks: 12.0 us, 8.0 us contiguous (1.5x)");
  EXPECT_EQ(vector_path_text(metadata(45.0)),
            "vector message of 64 KiB in 1024 B blocks: 45.0 us, 8.0 us contiguous (5.6x) SLOW STATE");
  EXPECT_EQ(vector_path_text({{"vector_path", nullptr}}), "");
  EXPECT_EQ(vector_path_text(nlohmann::json::object()), "");
}

TEST(CrossCoreHandoff, TextNamesTheSlowStateAboveItsRatio) {
  const nlohmann::json usual = {{"cross_core_handoff", {{"bytes", 1 << 20}, {"handoff_us", 52.0}, {"private_us", 50.0}, {"ratio", 1.04}}}};
  const nlohmann::json slow = {{"cross_core_handoff", {{"bytes", 1 << 20}, {"handoff_us", 480.0}, {"private_us", 50.0}, {"ratio", 9.6}}}};
  EXPECT_EQ(cross_core_handoff_text(usual), "cross-core handoff of 1 MiB: 52 us, 50 us within a core (1.0x)");
  EXPECT_EQ(cross_core_handoff_text(slow), "cross-core handoff of 1 MiB: 480 us, 50 us within a core (9.6x) SLOW STATE");
  EXPECT_EQ(cross_core_handoff_text({{"cross_core_handoff", nullptr}}), "");
  EXPECT_EQ(cross_core_handoff_text(nlohmann::json::object()), "");
}

}  // namespace
}  // namespace tb
