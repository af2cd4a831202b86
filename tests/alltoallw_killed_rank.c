/* A rank killed in the middle of MPI_Alltoallw: the job must end, not hang (run it under the PMPI
 * library with each algorithm; tests/run_killed_rank.sh times it).
 * Every rank calls MPI_Alltoallw over and over with 256 KiB per peer; after its first call the
 * last rank arms a timer whose handler sends it SIGKILL, so it dies inside a later call while the
 * others wait on it (in MPI, or spinning on node-shared memory, as node_leader does). The
 * launcher must then take the whole job down. Prints "alltoallw_killed_rank: armed" when the
 * timer is set; a job that outlives the victim by 20 s ends itself with exit status 3. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

enum { INTS_PER_PEER = 64 * 1024 };

static void die(int signal_number) {
  (void)signal_number;
  kill(getpid(), SIGKILL);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int* send = malloc(sizeof(int) * INTS_PER_PEER * (size_t)size);
  int* recv = malloc(sizeof(int) * INTS_PER_PEER * (size_t)size);
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * (size_t)size);
  if (!send || !recv || !counts || !displs || !types) MPI_Abort(MPI_COMM_WORLD, 2);
  for (int p = 0; p < size; ++p) {
    counts[p] = INTS_PER_PEER;
    displs[p] = p * INTS_PER_PEER * (int)sizeof(int);
    types[p] = MPI_INT;
  }
  for (size_t i = 0; i < (size_t)INTS_PER_PEER * (size_t)size; ++i) send[i] = rank;
  const double start = MPI_Wtime();
  for (long call = 0; MPI_Wtime() - start < 20.0; ++call) {
    if (MPI_Alltoallw(send, counts, displs, types, recv, counts, displs, types, MPI_COMM_WORLD) != MPI_SUCCESS)
      break;
    if (call == 0 && rank == size - 1) {
      const struct itimerval in_200_ms = {{0, 0}, {0, 200000}};
      signal(SIGALRM, die);
      setitimer(ITIMER_REAL, &in_200_ms, NULL);
      printf("alltoallw_killed_rank: armed (rank %d of %d dies in 200 ms)\n", rank, size);
      fflush(stdout);
    }
  }
  fprintf(stderr, "alltoallw_killed_rank: rank %d still running 20 s after the victim's timer\n", rank);
  return 3;
}
