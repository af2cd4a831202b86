/* What it costs to hand bytes to another rank of the node through shared memory, against the
 * same two copies within one rank: the question behind node_leader's under-prediction by
 * tb-model (docs/results/2026-12-02-model-validation-noncontiguous.md). Every rank at once:
 *   handoff: copy L bytes from its private array into its slot of a shared window, MPI_Barrier,
 *            copy the partner's slot into its private array (node_leader's staged path);
 *   private: the same two copies and the barrier, but both copies within the rank's own memory
 *            (what the model prices: two copies at memcpy's bandwidth).
 * Median of 9 per size, the slowest rank's, interleaved.
 *
 *   mpicc.mpich -O2 -o /tmp/node_handoff experiments/probes/node_handoff.c
 *   mpiexec.mpich -n 2 /tmp/node_handoff
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "node_handoff"
#include "probe.h"

#define REPS 9
#define LARGEST (16 << 20)

/* Seconds of copy in, barrier, copy out; the slowest rank's. */
static double round_trip(char *out_to, const char *out_from, char *in_to, const char *in_from, size_t bytes)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    memcpy(out_to, out_from, bytes);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    memcpy(in_to, in_from, bytes);
    t = MPI_Wtime() - t;
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Comm node;
    int node_size;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK(MPI_Comm_size(node, &node_size));
    if (size != 2 || node_size != 2) {
        if (rank == 0)
            fprintf(stderr, "node_handoff: run on 2 ranks of one node\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *slot, *partner;
    MPI_Win win;
    CHECK(MPI_Win_allocate_shared(LARGEST, 1, MPI_INFO_NULL, node, &slot, &win));
    MPI_Aint partner_size;
    int unit;
    CHECK(MPI_Win_shared_query(win, 1 - rank, &partner_size, &unit, &partner));
    char *mine = checked_malloc(LARGEST), *received = checked_malloc(LARGEST), *scratch = checked_malloc(LARGEST);
    memset(mine, rank + 1, LARGEST);
    memset(received, 0, LARGEST);
    memset(scratch, 0, LARGEST);
    memset(slot, 0, LARGEST);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        printf("%10s %12s %12s %8s (us, median of %d)\n", "bytes", "handoff", "private", "ratio", REPS);
    for (size_t bytes = 4096; bytes <= LARGEST; bytes *= 2) {
        double handoff[REPS], private[REPS];
        for (int i = 0; i < REPS; i++) {
            handoff[i] = round_trip(slot, mine, received, partner, bytes);
            if (received[0] != (char) (2 - rank) || received[bytes - 1] != (char) (2 - rank)) {
                fprintf(stderr, "node_handoff: rank %d received the wrong bytes\n", rank);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            private[i] = round_trip(scratch, mine, received, scratch, bytes);
        }
        const double handoff_s = median(handoff, REPS), private_s = median(private, REPS);
        if (rank == 0)
            printf("%10zu %12.2f %12.2f %8.2f\n", bytes, handoff_s * 1e6, private_s * 1e6, handoff_s / private_s);
    }
    free(mine);
    free(received);
    free(scratch);
    CHECK(MPI_Win_free(&win));
    CHECK(MPI_Comm_free(&node));
    CHECK(MPI_Finalize());
    return 0;
}
