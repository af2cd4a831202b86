/* What every probe in experiments/probes shares. The probes are standalone MPI C programs, run by
 * hand and built by no target (each one's header comment gives its compile and run commands), so
 * each stays a single .c file; this header holds what they all repeated. It is found next to the
 * probe (#include "probe.h" needs no -I), so those commands work unchanged. A probe #defines
 * PROBE_NAME, the name its messages start with, before it includes this header:
 *   CHECK(call)    an MPI call that must return MPI_SUCCESS: otherwise "<PROBE_NAME>: <call> failed"
 *                  on stderr and MPI_Abort(MPI_COMM_WORLD, 1);
 *   checked_malloc(bytes), checked_aligned_alloc(alignment, bytes)
 *                  malloc and aligned_alloc that never return NULL for a size above 0:
 *                  "<PROBE_NAME>: out of memory" on stderr and MPI_Abort(MPI_COMM_WORLD, 1) instead;
 *   compare        qsort's ascending order of doubles;
 *   slowest_rank(seconds)  the largest of every rank's `seconds` (MPI_MAX over MPI_COMM_WORLD):
 *                  a timed section's time as the probes report it;
 *   median(t, n)   sorts t[0] to t[n - 1] in place and returns t[n / 2]: the median for the odd
 *                  repetition counts the probes use;
 *   paired_sendrecv(send, recv, bytes, partner)
 *                  seconds of one MPI_Sendrecv of `bytes` each way with `partner` after a barrier,
 *                  the slowest rank's;
 *   start_pair(&argc, &argv, where)
 *                  MPI_Init for a probe of exactly 2 ranks: returns this rank, or (another count)
 *                  "<PROBE_NAME>: run on 2 ranks<where>, not N" from rank 0 and MPI_Abort.
 * The functions are static inline, so a probe that does not use one gets no unused-function
 * warning: ctest probes.compile (and probes.compile.smpi for smpi_*.c) compiles every probe with
 * -Wall -Wextra -Werror, so that none of them rots (tests/CMakeLists.txt).
 */
#ifndef TB_PROBES_PROBE_H
#define TB_PROBES_PROBE_H

#ifndef PROBE_NAME
#error "#define PROBE_NAME \"<the probe's name>\" before #include \"probe.h\""
#endif

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call_)                                                    \
    do {                                                                \
        if ((call_) != MPI_SUCCESS) {                                   \
            fprintf(stderr, PROBE_NAME ": %s failed\n", #call_);        \
            MPI_Abort(MPI_COMM_WORLD, 1);                               \
        }                                                               \
    } while (0)

static inline void *checked(void *p, size_t bytes)
{
    if (!p && bytes > 0) {
        fprintf(stderr, PROBE_NAME ": out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static inline void *checked_malloc(size_t bytes)
{
    return checked(malloc(bytes), bytes);
}

static inline void *checked_aligned_alloc(size_t alignment, size_t bytes)
{
    return checked(aligned_alloc(alignment, bytes), bytes);
}

static inline int compare(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static inline double slowest_rank(double seconds)
{
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return seconds;
}

static inline double median(double *t, int n)
{
    qsort(t, (size_t) n, sizeof *t, compare);
    return t[n / 2];
}

static inline double paired_sendrecv(const char *send, char *recv, size_t bytes, int partner)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    CHECK(MPI_Sendrecv(send, (int) bytes, MPI_BYTE, partner, 0, recv, (int) bytes, MPI_BYTE, partner, 0,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    t = MPI_Wtime() - t;
    return slowest_rank(t);
}

static inline int start_pair(int *argc, char ***argv, const char *where)
{
    int rank, size;
    CHECK(MPI_Init(argc, argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, PROBE_NAME ": run on 2 ranks%s, not %d\n", where, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return rank;
}

#endif /* TB_PROBES_PROBE_H */
