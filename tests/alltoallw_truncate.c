/* An MPI_Alltoallw whose peer sends more than the receiver expects: MPI's answer is
 * MPI_ERR_TRUNCATE returned under MPI_ERRORS_RETURN, and the program goes on. Run under the PMPI
 * library, it checks that the library reports the error as MPI does instead of crashing (its
 * error-string handling once overran a buffer on MPICH's long error stacks). Two ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "alltoallw_truncate: run on 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  int send[64] = {0}, recv[64] = {0};
  int sendcounts[2], recvcounts[2], displs[2] = {0, 32 * (int)sizeof(int)};
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  for (int p = 0; p < 2; ++p) {
    sendcounts[p] = 8;
    recvcounts[p] = p == rank ? 8 : 4; /* the peer sends 8 ints, 4 are expected */
  }
  const int code = MPI_Alltoallw(send, sendcounts, displs, types, recv, recvcounts, displs, types, MPI_COMM_WORLD);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(code, &error_class);
  int truncated = error_class == MPI_ERR_TRUNCATE, everywhere = 0;
  MPI_Allreduce(&truncated, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  printf("alltoallw_truncate: rank %d got error class %d\n", rank, error_class);
  if (rank == 0 && everywhere) printf("alltoallw_truncate: MPI_ERR_TRUNCATE on every rank\n");
  MPI_Finalize();
  return 0;
}
