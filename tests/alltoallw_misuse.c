/* Misuse of MPI_Alltoallw under the PMPI library: a peer that sends more than the receive block
 * holds, one that sends less, a mismatched self block, a negative count on one rank. Each is
 * followed by a correct call, which must return correct data everywhere. Checks, per case:
 *   TB_CHECKED=1: every rank gets the case's class and no receive buffer is touched;
 *   otherwise:    the rank that can know (the receiver; the rank with the bad count) gets the
 *                 class, other ranks MPI_SUCCESS or the same class, and nothing is written past
 *                 what the receive layout holds or past what arrived.
 * native is the MPI library's own: only its argument errors (checked by the testbed first) and,
 * on MPICH, its truncations are required; Open MPI's skips the self case (see below). Run on 1 rank or more; prints "alltoallw_misuse: OK". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STRIDE = 8, MAX_RANKS = 64 };

static int rank, size, failures, mpich, checked, native;
static int send[STRIDE * MAX_RANKS], recv[STRIDE * MAX_RANKS];
static int sendcounts[MAX_RANKS], recvcounts[MAX_RANKS], displs[MAX_RANKS];
static MPI_Datatype types[MAX_RANKS];

static void reset(void) {
  for (int p = 0; p < size; ++p) {
    sendcounts[p] = recvcounts[p] = 2;
    displs[p] = p * STRIDE * (int)sizeof(int);
    types[p] = MPI_INT;
    for (int i = 0; i < STRIDE; ++i) {
      send[p * STRIDE + i] = rank * 1000 + p * 10 + i;
      recv[p * STRIDE + i] = -1;
    }
  }
}

static void fail(const char* what, const char* detail) {
  fprintf(stderr, "alltoallw_misuse: rank %d: %s: %s\n", rank, what, detail);
  ++failures;
}

static int call(void) {
  const int code = MPI_Alltoallw(send, sendcounts, displs, types, recv, recvcounts, displs, types, MPI_COMM_WORLD);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(code, &error_class);
  return error_class;
}

/* The correct call after each misuse. */
static void correct_call(const char* after) {
  reset();
  const int error_class = call();
  if (error_class != MPI_SUCCESS) fail(after, "the next correct call failed");
  for (int p = 0; p < size; ++p)
    for (int i = 0; i < STRIDE; ++i) {
      const int want = i < 2 ? p * 1000 + rank * 10 + i : -1;
      if (recv[p * STRIDE + i] != want) {
        fail(after, "the next correct call returned wrong data");
        return;
      }
    }
}

/* One misuse: `receiver` can know; `strict` says whether its class is required there;
 * elements [first_guard, STRIDE) of block `block` on `receiver` must stay untouched. */
static void check(const char* name, int expected, int receiver, int strict, int block, int first_guard) {
  const int got = call();
  char detail[160];
  snprintf(detail, sizeof detail, "error class %d, expected %d", got, expected);
  printf("alltoallw_misuse: %s: rank %d got error class %d\n", name, rank, got);
  fflush(stdout);
  if (checked) {
    if (got != expected) fail(name, detail);
    for (int i = 0; i < STRIDE * size; ++i)
      if (recv[i] != -1) {
        fail(name, "TB_CHECKED moved data");
        break;
      }
  } else if (rank == receiver) {
    if (strict && got != expected) fail(name, detail);
    for (int i = first_guard; i < STRIDE; ++i)
      if (recv[block * STRIDE + i] != -1) {
        fail(name, "written past what the receive layout holds or what arrived");
        break;
      }
  } else if (got != MPI_SUCCESS && got != expected) {
    fail(name, detail);
  }
  correct_call(name);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > MAX_RANKS) {
    if (rank == 0) fprintf(stderr, "alltoallw_misuse: at most %d ranks\n", MAX_RANKS);
    MPI_Finalize();
    return 2;
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  mpich = strstr(version, "MPICH") != NULL;
  const char* c = getenv("TB_CHECKED");
  checked = c != NULL && strcmp(c, "1") == 0;
  const char* a = getenv("TB_ALLTOALLW");
  /* auto runs native on calls this small (its built-in rule), so it gives native's answers. */
  native = a == NULL || *a == '\0' || strcmp(a, "native") == 0 || strcmp(a, "auto") == 0;
  const int last = size - 1;

  correct_call("the first call");

  /* Rank 0 sends `last` 3 ints where 2 are expected (with 1 rank: its self block). */
  reset();
  if (rank == 0) sendcounts[last] = 3;
  check("larger", MPI_ERR_TRUNCATE, last, !native || mpich, 0, 2);

  /* Rank 0 sends `last` 1 int where 2 are expected: nothing past it may be written. */
  reset();
  if (rank == 0) sendcounts[last] = 1;
  check("smaller", MPI_ERR_COUNT, last, !native, 0, 1);

  /* Rank 0 sends itself 3 ints where 2 are expected. Not with Open MPI's own Alltoallw without
   * TB_CHECKED: it returns at the self copy's truncation without exchanging with its peers,
   * which then wait for rank 0 (docs/known-problems.md). */
  reset();
  if (rank == 0) sendcounts[0] = 3;
  if (native && !mpich && !checked) {
    if (rank == 0) printf("alltoallw_misuse: self: skipped (Open MPI's own Alltoallw leaves its peers waiting)\n");
  } else {
    check("self", MPI_ERR_TRUNCATE, 0, !native || mpich, 0, 2);
  }

  /* Rank 0 has recvcounts[last] = -1; `last` sends rank 0 nothing. */
  reset();
  if (rank == 0) recvcounts[last] = -1;
  if (rank == last) sendcounts[0] = 0;
  check("negative", MPI_ERR_COUNT, 0, 1, last, 0);

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total == 0 ? "alltoallw_misuse: OK (%d ranks)\n" : "alltoallw_misuse: FAILED (%d ranks)\n", size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
