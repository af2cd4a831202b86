/* What native's self block costs inside its 2-rank MPI_Alltoallw, contiguous, against tb-beff's
 * self message: tb-model prices the call as its self message (tb-beff's curve s(L), plus the cold
 * self extra) beside its peer message. Per size L, one call per barrier, three ways interleaved:
 * both blocks, the self block alone (the peer's counts 0) and the peer's alone (the self counts
 * 0); and an MPI_Sendrecv of the self block to itself from the same buffers (tb-beff's self
 * message, but after the calls' traffic rather than back to back). Printed in us, median of REPS,
 * the slowest rank's; "self + peer" is the two one-block calls' sum. Compare the self columns
 * with s(L) of a calibration made beside it (tb-beff --fit-out, host.self_message_seconds_by_bytes).
 * Every received byte is checked.
 *
 *   mpicc.mpich -O2 -o /tmp/native_self_in_call experiments/probes/native_self_in_call.c
 *   mpiexec.mpich -n 2 /tmp/native_self_in_call
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define PROBE_NAME "native_self_in_call"
#include "probe.h"
#define REPS 9
static long long wrong;

/* The received blocks of a call (or of the self Sendrecv, `self` alone) hold 1. */
static void check(const char *recv, int bytes, int self, int peer, int rank)
{
    for (int i = 0; i < 2; i++)
        if (i == rank ? self : peer)
            for (int k = 0; k < bytes; k++)
                wrong += recv[(size_t) bytes * i + k] != 1;
}

/* Seconds of one MPI_Alltoallw with the self block (`self`) and the peer's (`peer`) of `bytes`. */
static double call(const char *send, char *recv, int bytes, int self, int peer, int rank)
{
    int counts[2], displs[2];
    MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE};
    for (int i = 0; i < 2; i++)
        counts[i] = (i == rank ? self : peer) ? bytes : 0, displs[i] = bytes * i;
    memset(recv, 0, (size_t) 2 * bytes);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    CHECK(MPI_Alltoallw(send, counts, displs, types, recv, counts, displs, types, MPI_COMM_WORLD));
    const double t = MPI_Wtime() - t0;
    check(recv, bytes, self, peer, rank);
    return slowest_rank(t);
}

/* Seconds of one MPI_Sendrecv of the self block to itself, every rank at once. */
static double self_sendrecv(const char *send, char *recv, int bytes, int rank)
{
    const size_t at = (size_t) bytes * rank;
    memset(recv, 0, (size_t) 2 * bytes);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    CHECK(MPI_Sendrecv(send + at, bytes, MPI_BYTE, rank, 0, recv + at, bytes, MPI_BYTE, rank, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    const double t = MPI_Wtime() - t0;
    check(recv, bytes, 1, 0, rank);
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, "");
    if (rank == 0)
        printf("%8s %10s %10s %10s %12s %12s (us, median of %d)\n", "L KiB", "both", "self", "peer", "self + peer",
               "self sendrecv", REPS);
    for (int bytes = 128 << 10; bytes <= 8 << 20; bytes *= 2) {
        char *send = checked_malloc((size_t) 2 * bytes), *recv = checked_malloc((size_t) 2 * bytes);
        memset(send, 1, (size_t) 2 * bytes);
        double t[4][REPS];
        for (int r = 0; r < REPS; r++) {
            t[0][r] = call(send, recv, bytes, 1, 1, rank);
            t[1][r] = call(send, recv, bytes, 1, 0, rank);
            t[2][r] = call(send, recv, bytes, 0, 1, rank);
            t[3][r] = self_sendrecv(send, recv, bytes, rank);
        }
        double med[4];
        for (int m = 0; m < 4; m++)
            med[m] = median(t[m], REPS) * 1e6;
        if (rank == 0)
            printf("%8d %10.1f %10.1f %10.1f %12.1f %12.1f\n", bytes >> 10, med[0], med[1], med[2], med[1] + med[2],
                   med[3]);
        free(send);
        free(recv);
    }
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0 && wrong)
        fprintf(stderr, "native_self_in_call: %lld bytes arrived wrong\n", wrong);
    CHECK(MPI_Finalize());
    return wrong != 0;
}
