/* Which block of native's 2-rank MPI_Alltoallw pays the extra of a non-contiguous send side:
 * tb-model prices native's call as its own block's extra (tb-beff's self messages) plus its peer's
 * (tb-beff's pairs); this times them inside the call. Per size L, one call per barrier, four
 * ways interleaved: no block, the rank's own block, the peer's block, or both sent as a vector of
 * 64-byte blocks at stride 128 B, every block received contiguously; each region of the send
 * buffer spans 2L and a contiguous block sends its region's first L bytes. Printed: the call with
 * no vector block, then each other way's extra over it, and beside them tb-beff's self extra (an
 * MPI_Sendrecv of the own region to itself, vector over contiguous, every rank at once) with its
 * source in three states: as the interleaved calls left it, rewritten right before (as tb-beff
 * times it), and evicted (the rank wrote SCRATCH bytes of other memory right before); and the
 * evicted contiguous self message's extra over the rewritten one. Median of REPS, the slowest
 * rank's. Every received byte is checked.
 *
 *   mpicc.mpich -O2 -o /tmp/native_block_extras experiments/probes/native_block_extras.c
 *   mpiexec.mpich -n 2 /tmp/native_block_extras
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define PROBE_NAME "native_block_extras"
#include "probe.h"
#define REPS 11
#define OWN 1
#define PEER 2
#define SCRATCH (8 << 20)
enum source { AS_LEFT, REWRITTEN, EVICTED };
static long long wrong;
static int block = 64;

/* The send buffer of way `mask` (OWN, PEER or both): a vector block's region strided, holding 1
 * in its blocks; a contiguous block's region 1 in its first `bytes` bytes. */
static void fill(char *buf, int bytes, int mask, int rank)
{
    for (int i = 0; i < 2; i++) {
        const int vector = mask & (i == rank ? OWN : PEER);
        char *region = buf + (size_t) 2 * bytes * i;
        for (int k = 0; k < 2 * bytes; k++)
            region[k] = vector ? ((k / block) % 2 ? 0 : 1) : (k < bytes ? 1 : 0);
    }
}

/* Seconds of one MPI_Alltoallw from the buffer of way `mask`; the received bytes are checked. */
static double call(char *buf, char *recv, int bytes, int mask, MPI_Datatype vector, int rank)
{
    int counts[2], sdispls[2], rcounts[2], rdispls[2];
    MPI_Datatype stypes[2], rtypes[2];
    for (int i = 0; i < 2; i++) {
        const int v = mask & (i == rank ? OWN : PEER);
        counts[i] = v ? 1 : bytes, sdispls[i] = 2 * bytes * i, stypes[i] = v ? vector : MPI_BYTE;
        rcounts[i] = bytes, rdispls[i] = bytes * i, rtypes[i] = MPI_BYTE;
    }
    memset(recv, 0, (size_t) 2 * bytes);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    CHECK(MPI_Alltoallw(buf, counts, sdispls, stypes, recv, rcounts, rdispls, rtypes, MPI_COMM_WORLD));
    const double t = MPI_Wtime() - t0;
    for (int i = 0; i < 2 * bytes; i++)
        wrong += recv[i] != 1;
    return slowest_rank(t);
}

/* Seconds of one MPI_Sendrecv of the rank's own region of `buf` (way `mask`) to itself (tb-beff's
 * self message), a vector or contiguous, every rank at once, its source in state `source`; the
 * received bytes are checked. */
static double self_sendrecv(char *buf, int mask, char *recv, char *scratch, int bytes, MPI_Datatype type,
                            enum source source, int rank)
{
    static unsigned char stamp;
    if (source == REWRITTEN)
        fill(buf, bytes, mask, rank);
    if (source == EVICTED) {
        memset(scratch, ++stamp, SCRATCH);
        __asm__ volatile("" : : "r"(scratch) : "memory"); /* the writes happen: the scratch is never read */
    }
    memset(recv, 0, (size_t) bytes);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    CHECK(MPI_Sendrecv(buf + (size_t) 2 * bytes * rank, type == MPI_BYTE ? bytes : 1, type, rank, 0, recv, bytes,
                       MPI_BYTE, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    const double t = MPI_Wtime() - t0;
    for (int i = 0; i < bytes; i++)
        wrong += recv[i] != 1;
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, "");
    const int largest = 1 << 20;
    char *buf[4], *recv = checked_malloc(2 * largest), *scratch = checked_malloc(SCRATCH);
    for (int m = 0; m < 4; m++)
        buf[m] = checked_malloc(4 * largest);  /* one send buffer per way: 0 none, 1 own, 2 peer, 3 both */
    if (rank == 0)
        printf("%8s %10s %10s %10s %10s %10s %10s %10s %10s (us: the call with no vector block, then each "
               "other way's extra over it; self x: MPI_Sendrecv to itself, vector over contiguous, the source as "
               "the calls left it, rewritten, evicted; self c ev: contiguous, evicted over rewritten; %d B blocks, "
               "median of %d)\n",
               "L KiB", "none", "own x", "peer x", "both x", "self x", "self x hot", "self x ev", "self c ev",
               block, REPS);
    const int sizes[] = {16384, 65536, 131072, 262144, 1 << 20};
    for (int s = 0; s < 5; s++) {
        const int bytes = sizes[s];
        MPI_Datatype vector;
        CHECK(MPI_Type_vector(bytes / block, block, 2 * block, MPI_BYTE, &vector));
        CHECK(MPI_Type_commit(&vector));
        for (int m = 0; m < 4; m++)
            fill(buf[m], bytes, m, rank);
        double t[10][REPS];
        for (int r = 0; r < REPS; r++) {
            for (int m = 0; m < 4; m++)
                t[m][r] = call(buf[m], recv, bytes, m, vector, rank);
            for (int source = AS_LEFT; source <= EVICTED; source++) {
                t[4 + 2 * source][r] = self_sendrecv(buf[0], 0, recv, scratch, bytes, MPI_BYTE, source, rank);
                t[5 + 2 * source][r] = self_sendrecv(buf[OWN], OWN, recv, scratch, bytes, vector, source, rank);
            }
        }
        double med[10];
        for (int m = 0; m < 10; m++)
            med[m] = median(t[m], REPS) * 1e6;
        if (rank == 0)
            printf("%8d %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", bytes / 1024, med[0],
                   med[1] - med[0], med[2] - med[0], med[3] - med[0], med[5] - med[4], med[7] - med[6],
                   med[9] - med[8], med[8] - med[6]);
        CHECK(MPI_Type_free(&vector));
    }
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0 && wrong)
        fprintf(stderr, "native_block_extras: %lld bytes arrived wrong\n", wrong);
    for (int m = 0; m < 4; m++)
        free(buf[m]);
    free(recv);
    free(scratch);
    CHECK(MPI_Finalize());
    return wrong != 0;
}
