/* The state of MPICH's path for a non-contiguous message, watched over time: what a 64 KiB
 * message whose send side is a vector of 1 KiB blocks at stride 2 KiB costs beyond the same bytes
 * contiguous. On the 2-core VM of docs/results/README.md that extra is sometimes a few
 * microseconds (the fast state) and sometimes several times more (the slow state), and tb-beff's
 * non-contiguous extras and tb-redistribute's native and pairwise times follow it, switching
 * even within one launch (docs/results/2026-12-06-smpi-noncontiguous-extras.md); this shows how
 * long each state lasts.
 * Two ranks exchange with MPI_Sendrecv, each timing 16 exchanges back to back, the slowest rank's
 * time, contiguous and vector interleaved, median of 5 of each, every INTERVAL seconds, COUNT
 * times; the received bytes are checked once per sample. BYTES (a multiple of 1 KiB) sizes the
 * message: the states show at 64 and 256 KiB, and a run under UCX_RNDV_THRESH=inf (the message
 * sent eagerly, not by rendezvous) finds no slow state
 * (docs/results/2026-12-06-vector-state-rendezvous.md).
 *
 *   mpicc.mpich -O2 -o /tmp/vector_state experiments/probes/vector_state.c
 *   mpiexec.mpich -n 2 /tmp/vector_state [INTERVAL COUNT [BYTES]]   (default 3 s, 40 samples, 64 KiB)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_NAME "vector_state"
#include "probe.h"

#define BLOCK 1024
#define LOOPS 16
#define REPS 5

static int message_bytes = 65536;

/* Seconds per exchange of LOOPS exchanges back to back, the send side `vector` or contiguous. */
static double exchange(const char *send, const char *strided, char *recv, MPI_Datatype vector, int partner)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    for (int k = 0; k < LOOPS; k++)
        CHECK(MPI_Sendrecv(vector != MPI_DATATYPE_NULL ? strided : send,
                           vector != MPI_DATATYPE_NULL ? 1 : message_bytes,
                           vector != MPI_DATATYPE_NULL ? vector : MPI_BYTE, partner, 0, recv, message_bytes,
                           MPI_BYTE, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return slowest_rank((MPI_Wtime() - t0) / LOOPS);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const int interval = argc > 1 ? atoi(argv[1]) : 3, count = argc > 2 ? atoi(argv[2]) : 40;
    message_bytes = argc > 3 ? atoi(argv[3]) : message_bytes;
    if (size != 2 || interval < 0 || count < 1 || message_bytes < BLOCK || message_bytes % BLOCK != 0 || message_bytes > (1 << 28)) {
        if (rank == 0)
            fprintf(stderr, "vector_state: run on 2 ranks with [INTERVAL >= 0 COUNT >= 1 [BYTES: a multiple of %d "
                    "up to 256 MiB]], not %d ranks%s\n", BLOCK, size, argc > 3 ? " and those arguments" : "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *send = checked_malloc(message_bytes), *recv = checked_malloc(message_bytes), *strided = checked_malloc(2 * message_bytes);
    memset(send, 1, message_bytes);
    for (int i = 0; i < 2 * message_bytes; i++)
        strided[i] = (i / BLOCK) % 2 ? 0 : 1;  /* the blocks sent hold 1, as `send` does */
    MPI_Datatype vector;
    CHECK(MPI_Type_vector(message_bytes / BLOCK, BLOCK, 2 * BLOCK, MPI_BYTE, &vector));
    CHECK(MPI_Type_commit(&vector));
    if (rank == 0)
        printf("%8s %14s %10s %8s (%d KiB, 1 KiB blocks at stride 2 KiB, median of %d)\n", "seconds",
               "contiguous us", "vector us", "extra us", message_bytes / 1024, REPS);
    const double start = MPI_Wtime();
    for (int sample = 0; sample < count; sample++) {
        double contiguous[REPS], strided_s[REPS];
        for (int rep = 0; rep < REPS; rep++) {
            contiguous[rep] = exchange(send, strided, recv, MPI_DATATYPE_NULL, 1 - rank);
            memset(recv, 0, message_bytes);
            strided_s[rep] = exchange(send, strided, recv, vector, 1 - rank);
        }
        for (int i = 0; i < message_bytes; i++)
            if (recv[i] != 1) {
                fprintf(stderr, "vector_state: byte %d of the vector message arrived as %d, not 1\n", i, recv[i]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        const double c = median(contiguous, REPS), v = median(strided_s, REPS);
        if (rank == 0) {
            printf("%8.1f %14.1f %10.1f %8.1f\n", MPI_Wtime() - start, c * 1e6, v * 1e6, (v - c) * 1e6);
            fflush(stdout);
        }
        if (sample + 1 < count)
            sleep((unsigned) interval);
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK(MPI_Type_free(&vector));
    free(send);
    free(recv);
    free(strided);
    CHECK(MPI_Finalize());
    return 0;
}
