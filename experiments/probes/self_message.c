/* How an MPI library moves a message from a rank to itself, against memcpy and MPI_Pack: the
 * measurement behind tb-model's self_messages term (docs/cost-model.md). Every rank at once sends
 * itself one message per size (MPI_Irecv + MPI_Isend to itself, MPI_Waitall), contiguous, from a
 * vector of 64-byte blocks (stride 128) into contiguous bytes, and vector to vector; then the
 * same bytes by memcpy and by MPI_Pack of the vector. Fastest of 30 (MPI_Pack: 10), rank 0's.
 *
 *   mpicc.mpich -O2 -o /tmp/self_message experiments/probes/self_message.c
 *   mpiexec.mpich -n 2 /tmp/self_message
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "self_message"
#include "probe.h"

static double self_message(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                           int rcount, MPI_Datatype rtype, int rank)
{
    double best = 1e30;
    for (int i = 0; i < 30; i++) {
        MPI_Request req[2];
        MPI_Status status[2];
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t = MPI_Wtime();
        CHECK(MPI_Irecv(rbuf, rcount, rtype, rank, 0, MPI_COMM_WORLD, &req[0]));
        CHECK(MPI_Isend(sbuf, scount, stype, rank, 0, MPI_COMM_WORLD, &req[1]));
        CHECK(MPI_Waitall(2, req, status));
        t = MPI_Wtime() - t;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (rank == 0)
        printf("%d ranks; us per message (fastest): bytes, contiguous, vector->contiguous, "
               "vector->vector, memcpy, MPI_Pack(vector)\n", size);
    for (int total = 65536; total <= (4 << 20); total *= 4) {
        char *a = checked_malloc(2 * (size_t) total), *b = checked_malloc(2 * (size_t) total);
        memset(a, 1, 2 * (size_t) total);
        memset(b, 0, 2 * (size_t) total);
        MPI_Datatype vector;
        CHECK(MPI_Type_vector(total / 64, 64, 128, MPI_BYTE, &vector));
        CHECK(MPI_Type_commit(&vector));
        double contiguous = self_message(a, total, MPI_BYTE, b, total, MPI_BYTE, rank);
        double to_contiguous = self_message(a, 1, vector, b, total, MPI_BYTE, rank);
        double to_vector = self_message(a, 1, vector, b, 1, vector, rank);
        double copy = 1e30, pack = 1e30;
        for (int i = 0; i < 30; i++) {
            double t = MPI_Wtime();
            memcpy(b, a, (size_t) total);
            t = MPI_Wtime() - t;
            copy = t < copy ? t : copy;
        }
        for (int i = 0; i < 10; i++) {
            int position = 0;
            double t = MPI_Wtime();
            CHECK(MPI_Pack(a, 1, vector, b, total, &position, MPI_COMM_SELF));
            t = MPI_Wtime() - t;
            pack = t < pack ? t : pack;
        }
        if (rank == 0)
            printf("%8d %10.1f %10.1f %10.1f %10.1f %10.1f\n", total, contiguous * 1e6,
                   to_contiguous * 1e6, to_vector * 1e6, copy * 1e6, pack * 1e6);
        CHECK(MPI_Type_free(&vector));
        free(a);
        free(b);
    }
    CHECK(MPI_Finalize());
    return 0;
}
