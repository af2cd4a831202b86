#include "collectives/every_rank.hpp"

#include <algorithm>

namespace tb {
namespace {

constexpr int kMostValues = 2;

// The element-wise maximum of `count` values over every rank of comm (both groups of an
// intercommunicator: a second round with this rank's own values folded in; `values` is
// overwritten on an intercommunicator).
int max_of_values_over_every_rank(std::int64_t* values, int count, MPI_Comm comm, std::int64_t* result) {
  int inter = 0;
  if (const int rc = PMPI_Comm_test_inter(comm, &inter); rc != MPI_SUCCESS) return rc;
  if (const int rc = PMPI_Allreduce(values, result, count, MPI_INT64_T, MPI_MAX, comm); rc != MPI_SUCCESS || !inter)
    return rc;
  for (int v = 0; v < count; ++v)  // this group's rank now holds the other group's maximum too
    values[v] = std::max(values[v], result[v]);
  if (const int rc = PMPI_Allreduce(values, result, count, MPI_INT64_T, MPI_MAX, comm); rc != MPI_SUCCESS) return rc;
  for (int v = 0; v < count; ++v) result[v] = std::max(values[v], result[v]);
  return MPI_SUCCESS;
}

}  // namespace

int max_over_every_rank(std::int64_t value, MPI_Comm comm, std::int64_t* result) {
  return max_of_values_over_every_rank(&value, 1, comm, result);
}

int range_over_every_rank(std::int64_t value, MPI_Comm comm, std::int64_t* low, std::int64_t* high) {
  std::int64_t values[kMostValues] = {value, -value}, result[kMostValues] = {0, 0};
  const int rc = max_of_values_over_every_rank(values, kMostValues, comm, result);
  *high = result[0];
  *low = -result[1];
  return rc;
}

}  // namespace tb
