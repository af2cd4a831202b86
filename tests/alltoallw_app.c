/* An ordinary MPI application that knows nothing of the testbed: one MPI_Alltoallw with a
 * strided send type and a contiguous receive type, checked element by element. The PMPI tests
 * run it under LD_PRELOAD=libtb_alltoallw.so. Prints "alltoallw_app: OK" and exits 0 on success.
 * With --thread-multiple it asks MPI_Init_thread for MPI_THREAD_MULTIPLE and prints on rank 0 the
 * level granted and the one MPI_Query_thread reports. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* level_name(int level) {
  return level == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
         : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED" : "MPI_THREAD_MULTIPLE";
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--thread-multiple") == 0) {
    int provided = -1, queried = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Query_thread(&queried);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0) printf("alltoallw_app: provided %s, queried %s\n", level_name(provided), level_name(queried));
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = 5; /* elements per peer */
  /* Send: peer p's elements are every other int of block p (stride 2). */
  int* send = malloc(sizeof(int) * 2 * n * size);
  int* recv = malloc(sizeof(int) * n * size);
  for (int i = 0; i < 2 * n * size; ++i) send[i] = (i % 2 == 0) ? rank * 100000 + i / 2 : -7;
  MPI_Datatype strided;
  MPI_Type_vector(n, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int* scounts = malloc(sizeof(int) * size);
  int* sdispls = malloc(sizeof(int) * size);
  int* rcounts = malloc(sizeof(int) * size);
  int* rdispls = malloc(sizeof(int) * size);
  MPI_Datatype* stypes = malloc(sizeof(MPI_Datatype) * size);
  MPI_Datatype* rtypes = malloc(sizeof(MPI_Datatype) * size);
  for (int p = 0; p < size; ++p) {
    scounts[p] = 1;
    sdispls[p] = p * 2 * n * (int)sizeof(int);
    stypes[p] = strided;
    rcounts[p] = n;
    rdispls[p] = p * n * (int)sizeof(int);
    rtypes[p] = MPI_INT;
  }
  for (int i = 0; i < n * size; ++i) recv[i] = -1;
  int rc = MPI_Alltoallw(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, MPI_COMM_WORLD);
  int bad = rc != MPI_SUCCESS;
  for (int p = 0; p < size; ++p)
    for (int k = 0; k < n; ++k)
      if (recv[p * n + k] != p * 100000 + rank * n + k) ++bad;
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("alltoallw_app: %s (%d ranks, %d wrong elements)\n", total ? "FAILED" : "OK", size, total);
  MPI_Type_free(&strided);
  free(send); free(recv); free(scounts); free(sdispls); free(rcounts); free(rdispls); free(stypes); free(rtypes);
  MPI_Finalize();
  return total ? 1 : 0;
}
