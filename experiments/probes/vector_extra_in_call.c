/* Does tb-beff's way of timing a non-contiguous message's extra price the extra a real Alltoallw
 * pays? tb-model's noncontiguous_messages term reads x(L, B): tb-beff times max(1, 1 MiB / L)
 * MPI_Sendrecv exchanges back to back, right after filling the buffers, with the send side a
 * vector of B-byte blocks at stride 2B, and subtracts the same loop contiguous. The validation
 * over-predicts native and pairwise on tb-bench's vector64 layout at 64-256 KiB per peer, where
 * the extra alone priced more than the whole measured call. Per size L, interleaved, on 2 ranks:
 *   loop     tb-beff's way: fill, barrier, the loop of Sendrecvs, time per exchange;
 *   settled  the same loop without the fill first (buffers as the previous repetition left them);
 *   single   one Sendrecv per barrier on buffers left as the previous repetition left them;
 *   call     one native MPI_Alltoallw per barrier with tb-bench's layout (each peer's block, the
 *            rank's own included, a vector of B-byte blocks at stride 2B; received contiguous);
 * each as vector minus contiguous, the median of REPS (slowest rank per repetition), in us.
 * The call's extra covers two vector sends (the peer's and the rank's own); the self message's
 * extra alone is also timed (an Alltoallw on MPI_COMM_SELF) so that the peer's part can be read
 * as call - self. Beside them, contiguous: the single message, the self call and the 2-rank call,
 * and the call over the sum of the other two, which is how tb-model prices native (the peer's
 * message plus the self message). Every received byte is checked.
 *
 *   mpicc.mpich -O2 -o /tmp/vector_extra_in_call experiments/probes/vector_extra_in_call.c
 *   mpiexec.mpich -n 2 /tmp/vector_extra_in_call [BLOCK]   (default 64)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "vector_extra_in_call"
#include "probe.h"

#define REPS 11
#define LOOP_BYTES (1 << 20)
#define LARGEST (8 << 20)

static int block = 64;
static long long wrong = 0;

/* Seconds per exchange of `loops` Sendrecvs with the partner after a barrier, the send side
 * `vector` (from `strided`) or contiguous (from `send`); `fill` first writes the buffers as
 * tb-beff does. */
static double exchange(char *send, char *strided, char *recv, int bytes, MPI_Datatype vector, int loops,
                       int fill, int partner)
{
    if (fill) {
        memset(send, 1, bytes);
        memset(recv, 0, bytes);
        for (int i = 0; i < 2 * bytes; i++)
            strided[i] = (i / block) % 2 ? 0 : 1;
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    for (int k = 0; k < loops; k++)
        CHECK(MPI_Sendrecv(vector != MPI_DATATYPE_NULL ? strided : send, vector != MPI_DATATYPE_NULL ? 1 : bytes,
                           vector != MPI_DATATYPE_NULL ? vector : MPI_BYTE, partner, 0, recv, bytes, MPI_BYTE,
                           partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    const double t = (MPI_Wtime() - t0) / loops;
    for (int i = 0; i < bytes; i++)
        wrong += recv[i] != 1;
    return slowest_rank(t);
}

/* Seconds of one MPI_Alltoallw on `comm` (size p) with every block a vector from `strided` at
 * stride 2 * bytes per peer, or contiguous from `send`; received contiguously. */
static double call(MPI_Comm comm, char *send, char *strided, char *recv, int bytes, MPI_Datatype vector)
{
    int p;
    CHECK(MPI_Comm_size(comm, &p));
    int counts[2], sdispls[2], rcounts[2], rdispls[2];
    MPI_Datatype stypes[2], rtypes[2];
    for (int i = 0; i < p; i++) {
        counts[i] = vector != MPI_DATATYPE_NULL ? 1 : bytes;
        sdispls[i] = vector != MPI_DATATYPE_NULL ? 2 * bytes * i : bytes * i;
        stypes[i] = vector != MPI_DATATYPE_NULL ? vector : MPI_BYTE;
        rcounts[i] = bytes, rdispls[i] = bytes * i, rtypes[i] = MPI_BYTE;
    }
    memset(recv, 0, (size_t) bytes * p);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    CHECK(MPI_Alltoallw(vector != MPI_DATATYPE_NULL ? strided : send, counts, sdispls, stypes, recv, rcounts,
                        rdispls, rtypes, comm));
    const double t = MPI_Wtime() - t0;
    for (int i = 0; i < bytes * p; i++)
        wrong += recv[i] != 1;
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    block = argc > 1 ? atoi(argv[1]) : block;
    if (size != 2 || block < 1 || block > 16384 || (block & (block - 1)) != 0) {
        if (rank == 0)
            fprintf(stderr, "vector_extra_in_call: run on 2 ranks with [BLOCK: a power of two up to 16384], "
                    "not %d ranks%s\n", size, argc > 1 ? " and that argument" : "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int partner = 1 - rank;
    char *send = checked_malloc(2 * LARGEST), *recv = checked_malloc(2 * LARGEST);
    char *strided = checked_malloc(4 * LARGEST);
    memset(send, 1, 2 * LARGEST);
    for (int i = 0; i < 4 * LARGEST; i++)
        strided[i] = (i / block) % 2 ? 0 : 1;
    if (rank == 0)
        printf("%8s %6s %9s %9s %9s %9s %9s %9s | %9s %9s %9s %6s (us; x = vector - contiguous; %d B blocks; median of %d)\n",
               "L KiB", "loops", "loop x", "settled x", "single x", "call x", "self x", "call-self", "single", "self", "call",
               "ratio", block, REPS);
    const int sizes[] = {16384, 65536, 131072, 262144, 1 << 20, 2 << 20, 4 << 20, 8 << 20};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int bytes = sizes[s], loops = bytes < LOOP_BYTES ? LOOP_BYTES / bytes : 1;
        MPI_Datatype vector;
        CHECK(MPI_Type_vector(bytes / block, block, 2 * block, MPI_BYTE, &vector));
        CHECK(MPI_Type_commit(&vector));
        double t[10][REPS];
        for (int r = 0; r < REPS; r++) {
            t[0][r] = exchange(send, strided, recv, bytes, MPI_DATATYPE_NULL, loops, 1, partner);
            t[1][r] = exchange(send, strided, recv, bytes, vector, loops, 1, partner);
            t[2][r] = exchange(send, strided, recv, bytes, MPI_DATATYPE_NULL, 1, 0, partner);
            t[3][r] = exchange(send, strided, recv, bytes, vector, 1, 0, partner);
            t[4][r] = call(MPI_COMM_WORLD, send, strided, recv, bytes, MPI_DATATYPE_NULL);
            t[5][r] = call(MPI_COMM_WORLD, send, strided, recv, bytes, vector);
            t[6][r] = call(MPI_COMM_SELF, send, strided, recv, bytes, MPI_DATATYPE_NULL);
            t[7][r] = call(MPI_COMM_SELF, send, strided, recv, bytes, vector);
            t[8][r] = exchange(send, strided, recv, bytes, MPI_DATATYPE_NULL, loops, 0, partner);
            t[9][r] = exchange(send, strided, recv, bytes, vector, loops, 0, partner);
        }
        double m[10];
        for (int i = 0; i < 10; i++)
            m[i] = median(t[i], REPS) * 1e6;
        if (rank == 0)
            printf("%8d %6d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f | %9.1f %9.1f %9.1f %6.2f\n", bytes / 1024,
                   loops, m[1] - m[0], m[9] - m[8], m[3] - m[2], m[5] - m[4], m[7] - m[6], (m[5] - m[4]) - (m[7] - m[6]), m[2], m[6],
                   m[4], m[4] / (m[2] + m[6]));
        CHECK(MPI_Type_free(&vector));
    }
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0 && wrong)
        fprintf(stderr, "vector_extra_in_call: %lld bytes arrived wrong\n", wrong);
    free(send), free(recv), free(strided);
    CHECK(MPI_Finalize());
    return wrong != 0;
}
