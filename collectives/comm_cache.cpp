#include "collectives/comm_cache.hpp"

#include "collectives/every_rank.hpp"
#include "collectives/mpi_error.hpp"

#include <cstdint>

namespace tb {
namespace {

int g_private_key = MPI_KEYVAL_INVALID;

int free_private(MPI_Comm, int, void* value, void*) {
  auto* dup = static_cast<MPI_Comm*>(value);
  PMPI_Comm_free(dup);
  delete dup;
  return MPI_SUCCESS;
}

}  // namespace

void check_attached(int code) {
  if (code != MPI_SUCCESS)
    throw MpiError(code, "caching the testbed's state on the communicator failed, on this rank or another: " + mpi_error_string(code));
}

int set_attr_on_every_rank(MPI_Comm comm, int key, void* value, bool* caller_frees) {
  const int rc = PMPI_Comm_set_attr(comm, key, value);
  const int set_here = rc == MPI_SUCCESS ? 1 : 0;
  *caller_frees = set_here == 0;  // otherwise the attribute holds it, or its delete callback has freed it
  std::int64_t failed_somewhere = 0;
  const int agreed = max_over_every_rank(1 - set_here, comm, &failed_somewhere);
  if (agreed != MPI_SUCCESS) return agreed;  // what the others did is unknown: leave it as it is
  if (failed_somewhere == 0) return MPI_SUCCESS;
  if (set_here == 0) return rc;
  PMPI_Comm_delete_attr(comm, key);  // its delete callback frees value, as the failed ranks' callers do theirs
  return MPI_ERR_OTHER;              // only another rank failed
}

MPI_Comm private_comm(MPI_Comm comm) {
  if (g_private_key == MPI_KEYVAL_INVALID)
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &g_private_key, nullptr));
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, g_private_key, &value, &found));
  if (found) return *static_cast<MPI_Comm*>(value);
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  const int rc = PMPI_Comm_dup(comm, dup);
  if (rc != MPI_SUCCESS) {
    delete dup;
    check_mpi(rc, "MPI_Comm_dup");
  }
  bool caller_frees = false;
  const int attached = set_attr_on_every_rank(comm, g_private_key, dup, &caller_frees);
  if (attached != MPI_SUCCESS && caller_frees) free_private(comm, g_private_key, dup, nullptr);
  check_attached(attached);
  return *dup;
}

}  // namespace tb
