#include "collectives/comm_cache.hpp"

#include "collectives/mpi_error.hpp"

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

MPI_Comm private_comm(MPI_Comm comm) {
  if (g_private_key == MPI_KEYVAL_INVALID)
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &g_private_key, nullptr));
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, g_private_key, &value, &found));
  if (found) return *static_cast<MPI_Comm*>(value);
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  try {
    TB_MPI_CHECK(PMPI_Comm_dup(comm, dup));
    TB_MPI_CHECK(PMPI_Comm_set_attr(comm, g_private_key, dup));
  } catch (...) {
    if (*dup != MPI_COMM_NULL) PMPI_Comm_free(dup);
    delete dup;
    throw;
  }
  return *dup;
}

}  // namespace tb
