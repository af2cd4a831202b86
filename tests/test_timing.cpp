// The timing method: MAX over ranks, fastest and median per operation, the time budget.
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tb
