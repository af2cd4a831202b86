// Plans free every MPI object they create. This test binary interposes the MPI calls that
// create and free communicators and datatypes (the PMPI profiling interface: these definitions
// win over the library's weak MPI_ symbols) and counts live handles across many plan lifetimes.
#include "mpi_test_support.hpp"
#include "redistribute/global_pattern.hpp"
#include "redistribute/redistribution.hpp"

#include <gtest/gtest.h>

namespace {

long live_types = 0;
long live_comms = 0;

int count_type(int rc) {
  if (rc == MPI_SUCCESS) ++live_types;
  return rc;
}
int count_comm(int rc, const MPI_Comm* c) {
  if (rc == MPI_SUCCESS && *c != MPI_COMM_NULL) ++live_comms;
  return rc;
}

}  // namespace

extern "C" {
int MPI_Type_create_subarray(int n, const int sizes[], const int subsizes[], const int starts[], int order,
                             MPI_Datatype old, MPI_Datatype* t) {
  return count_type(PMPI_Type_create_subarray(n, sizes, subsizes, starts, order, old, t));
}
int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype* t) {
  return count_type(PMPI_Type_contiguous(count, old, t));
}
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype old, MPI_Datatype* t) {
  return count_type(PMPI_Type_vector(count, blocklength, stride, old, t));
}
int MPI_Type_create_resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent, MPI_Datatype* t) {
  return count_type(PMPI_Type_create_resized(old, lb, extent, t));
}
int MPI_Type_dup(MPI_Datatype old, MPI_Datatype* t) { return count_type(PMPI_Type_dup(old, t)); }
int MPI_Type_free(MPI_Datatype* t) {
  const int rc = PMPI_Type_free(t);
  if (rc == MPI_SUCCESS) --live_types;
  return rc;
}
int MPI_Cart_create(MPI_Comm old, int n, const int dims[], const int periods[], int reorder, MPI_Comm* c) {
  return count_comm(PMPI_Cart_create(old, n, dims, periods, reorder, c), c);
}
int MPI_Cart_sub(MPI_Comm old, const int keep[], MPI_Comm* c) { return count_comm(PMPI_Cart_sub(old, keep, c), c); }
int MPI_Comm_dup(MPI_Comm old, MPI_Comm* c) { return count_comm(PMPI_Comm_dup(old, c), c); }
int MPI_Comm_split(MPI_Comm old, int color, int key, MPI_Comm* c) {
  return count_comm(PMPI_Comm_split(old, color, key, c), c);
}
int MPI_Comm_split_type(MPI_Comm old, int type, int key, MPI_Info info, MPI_Comm* c) {
  return count_comm(PMPI_Comm_split_type(old, type, key, info, c), c);
}
int MPI_Comm_free(MPI_Comm* c) {
  const int rc = PMPI_Comm_free(c);
  if (rc == MPI_SUCCESS) --live_comms;
  return rc;
}
}

namespace tb {
namespace {

TEST(Handles, PlansAndGridsFreeEverythingTheyCreate) {
  const long types_before = live_types, comms_before = live_comms;
  long most_types = 0, most_comms = 0;
  for (int life = 0; life < 50; ++life) {
    auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
    Pencil p2(grid, {9, 7, 5}, 2);
    for (int axis : {0, 1}) {
      Pencil q = p2.realigned(axis);
      for (const char* method : {"native", "local_remap"}) {
        auto plan = make_redistribution(p2, q, ElementType::c32, method);
        std::vector<std::byte> in(static_cast<std::size_t>(p2.local_size()) * 8), out(
                                                                                     static_cast<std::size_t>(q.local_size()) * 8);
        fill_global_pattern(p2, ElementType::c32, in.data());
        plan->forward(in.data(), out.data());
        EXPECT_EQ(test::sum_over_ranks(count_pattern_mismatches(q, ElementType::c32, out.data())), 0);
        most_types = std::max(most_types, live_types - types_before);
        most_comms = std::max(most_comms, live_comms - comms_before);
      }
    }
  }
  EXPECT_EQ(live_types, types_before) << "datatypes leaked";
  EXPECT_EQ(live_comms, comms_before) << "communicators leaked";
  // The counters see what plans create, or the checks above could not fail: a 2-D grid is one
  // Cartesian and two sub-communicators; a subarray plan builds a type per non-empty peer box.
  EXPECT_EQ(most_comms, 3);
  EXPECT_GT(most_types, 0);
}

TEST(Handles, AFailedPlanLeaksNothing) {
  const long types_before = live_types, comms_before = live_comms;
  {
    auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
    Pencil in(grid, {4, 4, 4}, 2);
    EXPECT_THROW(SubarrayRedistribution(in, in.realigned(0), ElementType::f64, "no_such_algorithm"),
                 std::invalid_argument);
  }
  EXPECT_EQ(live_types, types_before);
  EXPECT_EQ(live_comms, comms_before);
}

}  // namespace
}  // namespace tb
