#include "collectives/every_rank.hpp"

#include <algorithm>

namespace tb {

int max_over_every_rank(std::int64_t value, MPI_Comm comm, std::int64_t* result) {
  int inter = 0;
  if (const int rc = PMPI_Comm_test_inter(comm, &inter); rc != MPI_SUCCESS) return rc;
  if (const int rc = PMPI_Allreduce(&value, result, 1, MPI_INT64_T, MPI_MAX, comm); rc != MPI_SUCCESS || !inter)
    return rc;
  value = std::max(value, *result);  // this group's rank now holds the other group's maximum too
  if (const int rc = PMPI_Allreduce(&value, result, 1, MPI_INT64_T, MPI_MAX, comm); rc != MPI_SUCCESS) return rc;
  *result = std::max(value, *result);
  return MPI_SUCCESS;
}

}  // namespace tb
