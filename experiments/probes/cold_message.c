/* What an MPI message costs when its buffers are out of cache, against the same message with
 * buffers just used: the question behind the host model's under-prediction of native and
 * pairwise at 256 KiB - 1 MiB per peer, where tb-beff's message curve (the same buffers in every
 * exchange) is far faster than the same messages inside a tb-bench call. Two ranks, both at once:
 *   hot:  MPI_Sendrecv of L bytes each way, from and into the buffers the previous one used;
 *   cold: the same, from and into parts of two 256 MiB arrays not touched since they were
 *         written at the start (every cold exchange uses parts no other exchange has used).
 * Median of 9 per size, the slowest rank's, interleaved.
 *
 *   mpicc.mpich -O2 -o /tmp/cold_message experiments/probes/cold_message.c
 *   mpiexec.mpich -n 2 /tmp/cold_message
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "cold_message"
#include "probe.h"

#define REPS 9
#define ARRAY ((size_t) 256 << 20)
#define LARGEST ((size_t) 16 << 20)

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, "");
    char *send = checked_malloc(ARRAY), *recv = checked_malloc(ARRAY);
    memset(send, 1, ARRAY);
    memset(recv, 0, ARRAY);
    if (rank == 0) printf("%10s %10s %10s %10s   (us, median of %d)\n", "bytes", "hot", "cold", "cold/hot", REPS);
    size_t offset = LARGEST;  /* the cold parts: past the hot one, each used once (192 MiB in all) */
    for (size_t bytes = 4096; bytes <= LARGEST; bytes *= 4) {
        double hot[REPS], cold[REPS];
        for (int r = 0; r < REPS; ++r) {
            (void) paired_sendrecv(send, recv, bytes, 1 - rank);  /* the hot buffers, just used */
            hot[r] = paired_sendrecv(send, recv, bytes, 1 - rank);
            cold[r] = paired_sendrecv(send + offset, recv + offset, bytes, 1 - rank);
            offset += bytes;
        }
        const double hot_s = median(hot, REPS), cold_s = median(cold, REPS);
        if (rank == 0)
            printf("%10zu %10.2f %10.2f %10.2f\n", bytes, 1e6 * hot_s, 1e6 * cold_s, cold_s / hot_s);
    }
    free(send);
    free(recv);
    CHECK(MPI_Finalize());
    return 0;
}
