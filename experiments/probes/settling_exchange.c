/* How many repeats an exchange takes to come back to its steady time after its buffers were
 * disturbed: the question behind tb-beff's baseline for the fresh and cold messages' extras,
 * which once was the first repeat. Two ranks, both at once. Per size L and per repetition: the
 * disturbance, then MPI_Sendrecv of L bytes each way from and into the same buffers, 10 times,
 * each timed on its own. The disturbance is
 *   fresh: each rank rewrites its send buffer (memset, a new value each time), as a pack does;
 *   cold:  each rank writes 64 MiB of other memory, as the rest of a call does.
 * Prints, per L, the median over 9 repetitions of each of the 10 exchanges (the slowest rank's):
 * the first is the disturbed one, the later ones show when the time has settled.
 *
 *   mpicc.mpich -O2 -o /tmp/settling_exchange experiments/probes/settling_exchange.c
 *   mpiexec.mpich -n 2 /tmp/settling_exchange
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "settling_exchange"
#include "probe.h"

#define REPS 9
#define EXCHANGES 10
#define LARGEST ((size_t) 16 << 20)
#define TRAFFIC ((size_t) 64 << 20)

/* One disturbance: 0 rewrites the send buffer's first `bytes`, 1 writes the scratch array. */
static void disturb(int kind, char *send, size_t bytes, char *scratch, int repetition)
{
    if (kind == 0) {
        memset(send, 1 + repetition, bytes);
    } else {
        memset(scratch, repetition, TRAFFIC);
        __asm__ volatile("" : : "r"(scratch) : "memory"); /* the writes happen: scratch is never read */
    }
}

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, "");
    char *send = checked_malloc(LARGEST), *recv = checked_malloc(LARGEST), *scratch = checked_malloc(TRAFFIC);
    memset(send, 1, LARGEST);
    memset(recv, 0, LARGEST);
    const char *kinds[] = {"fresh", "cold"};
    for (int kind = 0; kind < 2; ++kind) {
        if (rank == 0)
            printf("%s: us per exchange, 1st (disturbed) to %dth, median of %d\n", kinds[kind], EXCHANGES, REPS);
        for (size_t bytes = 65536; bytes <= LARGEST; bytes *= 4) {
            double t[EXCHANGES][REPS];
            for (int r = 0; r < REPS; ++r) {
                disturb(kind, send, bytes, scratch, r);
                for (int k = 0; k < EXCHANGES; ++k) t[k][r] = paired_sendrecv(send, recv, bytes, 1 - rank);
            }
            if (rank == 0) {
                printf("%10zu", bytes);
                for (int k = 0; k < EXCHANGES; ++k) printf(" %8.1f", 1e6 * median(t[k], REPS));
                printf("\n");
            }
        }
    }
    free(send);
    free(recv);
    free(scratch);
    CHECK(MPI_Finalize());
    return 0;
}
