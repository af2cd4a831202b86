/* What a non-contiguous side costs a message, against MPI_Pack of the same datatype: the
 * measurement behind tb-model's noncontiguous_messages term (docs/cost-model.md). Two ranks
 * exchange L bytes at once with MPI_Sendrecv, contiguous, with the send side a vector of B-byte
 * blocks at stride 2B, with the receive side such a vector, and with both sides vectors (each its
 * own strided array: whether the two sides' extras add up, as tb-model adds them, or overlap in
 * the library's one pipeline); then rank 0 packs and unpacks the
 * same vectors alone (MPI_Pack, MPI_Unpack) beside a memcpy of L bytes. Median of 5, rank 0's.
 *
 *   mpicc.mpich -O2 -o /tmp/noncontiguous_message experiments/probes/noncontiguous_message.c
 *   mpiexec.mpich -n 2 /tmp/noncontiguous_message
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "noncontiguous_message"
#include "probe.h"

#define REPS 5
#define LARGEST (64 << 20)

enum { VECTOR_SEND = 1, VECTOR_RECV = 2 };

/* Median seconds of a Sendrecv of `bytes` with the partner, `vector` on the sides chosen
 * (VECTOR_SEND, VECTOR_RECV, both or neither): sent from `strided`, received into `strided_in`. */
static double exchange(char *strided, char *strided_in, char *send, char *recv, int bytes,
                       MPI_Datatype vector, int sides, int partner)
{
    const int vector_send = sides & VECTOR_SEND, vector_recv = sides & VECTOR_RECV;
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        CHECK(MPI_Sendrecv(vector_send ? strided : send, vector_send ? 1 : bytes,
                           vector_send ? vector : MPI_BYTE, partner, 0,
                           vector_recv ? strided_in : recv, vector_recv ? 1 : bytes,
                           vector_recv ? vector : MPI_BYTE, partner, 0, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        t[i] = MPI_Wtime() - t0;
    }
    return median(t, REPS);
}

/* Median seconds of MPI_Pack (unpack == 0) or MPI_Unpack of the vector. */
static double pack(char *strided, char *packed, int bytes, MPI_Datatype vector, int unpack)
{
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        int position = 0;
        double t0 = MPI_Wtime();
        if (unpack)
            CHECK(MPI_Unpack(packed, bytes, &position, strided, 1, vector, MPI_COMM_SELF));
        else
            CHECK(MPI_Pack(strided, 1, vector, packed, bytes, &position, MPI_COMM_SELF));
        t[i] = MPI_Wtime() - t0;
    }
    return median(t, REPS);
}

int main(int argc, char **argv)
{
    static const int blocks[] = { 64, 1024, 4096, 16384, 512 << 10 };
    const int rank = start_pair(&argc, &argv, "");
    char *strided = checked_malloc(2 * (size_t) LARGEST), *strided_in = checked_malloc(2 * (size_t) LARGEST);
    char *send = checked_malloc(LARGEST), *recv = checked_malloc(LARGEST);
    memset(strided, 1, 2 * (size_t) LARGEST);
    memset(strided_in, 0, 2 * (size_t) LARGEST);
    memset(send, 2, LARGEST);
    memset(recv, 0, LARGEST);
    if (rank == 0)
        printf("%10s %8s %10s %10s %10s %10s %10s %10s %10s (us)\n", "bytes", "block", "contiguous",
               "vec send", "vec recv", "vec both", "MPI_Pack", "MPI_Unpack", "memcpy");
    for (int bytes = 64 << 10; bytes <= LARGEST; bytes *= 4) {
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            if (blocks[b] > bytes / 2)
                continue;
            MPI_Datatype vector;
            CHECK(MPI_Type_vector(bytes / blocks[b], blocks[b], 2 * blocks[b], MPI_BYTE, &vector));
            CHECK(MPI_Type_commit(&vector));
            const double contiguous = exchange(strided, strided_in, send, recv, bytes, vector, 0, 1 - rank);
            const double vector_send = exchange(strided, strided_in, send, recv, bytes, vector, VECTOR_SEND, 1 - rank);
            const double vector_recv = exchange(strided, strided_in, send, recv, bytes, vector, VECTOR_RECV, 1 - rank);
            const double vector_both =
                exchange(strided, strided_in, send, recv, bytes, vector, VECTOR_SEND | VECTOR_RECV, 1 - rank);
            if (rank == 0) {
                const double packed = pack(strided, recv, bytes, vector, 0);
                const double unpacked = pack(strided, recv, bytes, vector, 1);
                double t0 = MPI_Wtime();
                memcpy(recv, send, bytes);
                const double copy = MPI_Wtime() - t0;
                printf("%10d %8d %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", bytes, blocks[b],
                       contiguous * 1e6, vector_send * 1e6, vector_recv * 1e6, vector_both * 1e6,
                       packed * 1e6, unpacked * 1e6, copy * 1e6);
            }
            CHECK(MPI_Type_free(&vector));
        }
    }
    free(strided);
    free(strided_in);
    free(send);
    free(recv);
    CHECK(MPI_Finalize());
    return 0;
}
