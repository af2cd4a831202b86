// PTRANS through one Alltoallw of derived datatypes: C = B + A^T exactly (residual 0), with every
// registered algorithm, on a P x P grid; other rank counts are a clear error.
#include "collectives/registry.hpp"
#include "fpga_transport/ptrans.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace tb::fpga {
namespace {

bool square(int n) {
  const int p = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n))));
  return p * p == n;
}

TEST(Ptrans, EveryAlgorithmTransposesExactly) {
  const int n = test::world_size();
  if (!square(n)) {
    EXPECT_THROW(Ptrans(MPI_COMM_WORLD, 64, 8, "native"), std::invalid_argument);
    return;
  }
  const int p = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n))));
  for (const auto& info : alltoallw_algorithms()) {
    Ptrans pt(MPI_COMM_WORLD, 24 * p, 3, std::string(info.name));  // 8 blocks of 3 per rank and axis
    pt.fill();
    pt.run();
    EXPECT_EQ(pt.residual(), 0.0) << info.name;
    pt.run();  // again on the same plan
    EXPECT_EQ(pt.residual(), 0.0) << info.name << " (second run)";
  }
}

TEST(Ptrans, BlockCyclicIndexing) {
  const int n = test::world_size();
  if (!square(n)) {  // PTRANS needs a square rank count
    EXPECT_THROW(Ptrans(MPI_COMM_WORLD, 8, 4, "native"), std::invalid_argument);
    return;
  }
  const int p = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n))));
  Ptrans pt(MPI_COMM_WORLD, 8 * p, 4, "native");
  const int rank = test::world_rank();
  // local row 4 is the first row of this rank's second block row: global block row p + rank / p
  EXPECT_EQ(pt.global_row(4), (p + rank / p) * 4);
  EXPECT_EQ(pt.global_col(5), (p + rank % p) * 4 + 1);
  EXPECT_EQ(pt.partner(), (rank % p) * p + rank / p);
}

TEST(Ptrans, BadSizesAreClearErrors) {
  EXPECT_THROW(Ptrans(MPI_COMM_WORLD, 10, 3, "native"), std::invalid_argument);
  EXPECT_THROW(Ptrans(MPI_COMM_WORLD, 0, 1, "native"), std::invalid_argument);
}

}  // namespace
}  // namespace tb::fpga
