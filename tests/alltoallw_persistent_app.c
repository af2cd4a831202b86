/* An ordinary MPI application using a persistent MPI_Alltoallw (MPI_Alltoallw_init on MPI 4
 * libraries, MPIX_Alltoallw_init on Open MPI 4.1): a strided send type and a contiguous receive
 * type, started 3 times with new send data each time, the receive buffer cleared between starts,
 * once through MPI_Startall beside a persistent receive of the library's own, then freed, and a
 * second one made on the same communicator, started once ("again"). Then a call whose
 * sizes do not match (rank 0 expects one element more from every peer) must fail on every rank at
 * init, with MPI_ERRORS_RETURN, and not hang (with the argument --mismatch: MPI libraries do not
 * check this). Checked element by element; prints
 * "alltoallw_persistent_app: OK" and exits 0 on success. The PMPI tests run it under
 * LD_PRELOAD=libtb_alltoallw.so; run bare, it checks the library's own persistent Alltoallw. */
#include <mpi.h>
#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define ALLTOALLW_INIT MPI_Alltoallw_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALLW_INIT MPIX_Alltoallw_init
#endif

enum { N = 5 }; /* elements per peer */

static int value(int start, int sender, int index) { return start * 1000000 + sender * 10000 + index; }

#ifdef ALLTOALLW_INIT
/* Wrong elements in recv after start `start`. */
static int check(const int* recv, int start, int rank, int size) {
  int bad = 0;
  for (int p = 0; p < size; ++p)
    for (int k = 0; k < N; ++k)
      if (recv[p * N + k] != value(start, p, rank * N + k)) ++bad;
  return bad;
}

/* Ranks on which an init with mismatched sizes did not fail (0 expected on every rank). */
static int mismatched_init_succeeds(int* send, int* recv, int* counts, int* displs, MPI_Datatype* types, int rank,
                                    int size) {
  int* rcounts = malloc(sizeof(int) * size);
  for (int p = 0; p < size; ++p) rcounts[p] = rank == 0 ? N + 1 : N;
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = ALLTOALLW_INIT(send, counts, displs, types, recv, rcounts, displs, types, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &request);
  if (rc == MPI_SUCCESS) MPI_Request_free(&request);
  free(rcounts);
  return rc == MPI_SUCCESS;
}
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifndef ALLTOALLW_INIT
  if (rank == 0) printf("alltoallw_persistent_app: SKIP (the library has no persistent Alltoallw)\n");
  MPI_Finalize();
  return 0;
#else
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int* send = malloc(sizeof(int) * 2 * N * size);
  int* recv = malloc(sizeof(int) * (N + 1) * size);
  MPI_Datatype strided;
  MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int *scounts = malloc(sizeof(int) * size), *sdispls = malloc(sizeof(int) * size);
  int *rcounts = malloc(sizeof(int) * size), *rdispls = malloc(sizeof(int) * size);
  MPI_Datatype *stypes = malloc(sizeof(MPI_Datatype) * size), *rtypes = malloc(sizeof(MPI_Datatype) * size);
  for (int p = 0; p < size; ++p) {
    scounts[p] = 1, sdispls[p] = p * 2 * N * (int)sizeof(int), stypes[p] = strided;
    rcounts[p] = N, rdispls[p] = p * N * (int)sizeof(int), rtypes[p] = MPI_INT;
  }
  MPI_Request alltoallw = MPI_REQUEST_NULL;
  int bad = ALLTOALLW_INIT(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &alltoallw) != MPI_SUCCESS;
  /* A persistent receive of the library's own, started with the Alltoallw by MPI_Startall. */
  int token = -1, one = 1;
  MPI_Request pair[2];
  MPI_Recv_init(&token, 1, MPI_INT, (rank + 1) % size, 99, MPI_COMM_WORLD, &pair[0]);
  pair[1] = alltoallw;
  for (int start = 1; start <= 3 && !bad; ++start) {
    for (int i = 0; i < 2 * N * size; ++i) send[i] = (i % 2 == 0) ? value(start, rank, i / 2) : -7;
    for (int i = 0; i < N * size; ++i) recv[i] = -1;
    if (start == 2) {
      MPI_Request token_send;
      MPI_Status statuses[2];
      MPI_Isend(&one, 1, MPI_INT, (rank + size - 1) % size, 99, MPI_COMM_WORLD, &token_send);
      bad += MPI_Startall(2, pair) != MPI_SUCCESS;
      bad += MPI_Waitall(2, pair, statuses) != MPI_SUCCESS;
      bad += MPI_Wait(&token_send, MPI_STATUS_IGNORE) != MPI_SUCCESS;
      bad += token != 1;
    } else {
      bad += MPI_Start(&alltoallw) != MPI_SUCCESS;
      bad += MPI_Wait(&alltoallw, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    }
    bad += check(recv, start, rank, size);
  }
  MPI_Request_free(&pair[0]);
  if (alltoallw != MPI_REQUEST_NULL) MPI_Request_free(&alltoallw);
  /* Again: a second persistent Alltoallw on the communicator, after the first was freed. */
  if (!bad) {
    bad += ALLTOALLW_INIT(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &alltoallw) != MPI_SUCCESS;
    for (int i = 0; i < 2 * N * size; ++i) send[i] = (i % 2 == 0) ? value(4, rank, i / 2) : -7;
    for (int i = 0; i < N * size; ++i) recv[i] = -1;
    bad += MPI_Start(&alltoallw) != MPI_SUCCESS;
    bad += MPI_Wait(&alltoallw, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    bad += check(recv, 4, rank, size);
    MPI_Request_free(&alltoallw);
  }
  const int mismatch = argc > 1 && strcmp(argv[1], "--mismatch") == 0;
  const int mismatch_ok = mismatch && size > 1 ? mismatched_init_succeeds(send, recv, rcounts, rdispls, rtypes, rank, size) : 0;
  int totals[2] = {bad, mismatch_ok}, sums[2];
  MPI_Allreduce(totals, sums, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("alltoallw_persistent_app: %s (%d ranks, %d wrong elements or failed calls, %d ranks accepted a "
           "mismatched init)\n",
           sums[0] || sums[1] ? "FAILED" : "OK", size, sums[0], sums[1]);
  MPI_Type_free(&strided);
  free(send), free(recv), free(scounts), free(sdispls), free(rcounts), free(rdispls), free(stypes), free(rtypes);
  MPI_Finalize();
  return sums[0] || sums[1] ? 1 : 0;
#endif
}
