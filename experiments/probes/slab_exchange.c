/* What MPICH charges a 2-rank slab redistribution's message for its non-contiguous send side, on
 * arrays out of cache as in tb-redistribute: the question behind issue 17's SMPI-against-this-host
 * gap for native and pairwise, whose simulated message is priced as tb-beff's contiguous exchange
 * from buffers just used. Each rank holds a (n0/2, n1, n2) block of complex<double>, aligned in
 * axis 2, and sends its partner the subarray (n0/2, n1, n2/2) that the partner's (n0, n1, n2/2)
 * output, aligned in axis 0, takes contiguously: blocks of n2/2 elements at a stride of n2.
 * Both ranks at once, MPI_Sendrecv with the partner, the slowest rank's time, median of 7:
 *   subarray  the send side a subarray type of the input array, received contiguous (pairwise);
 *   packed    the same bytes sent contiguous from a packed buffer (pack_alltoallv's message);
 *   pack      the testbed's way to that buffer: one memcpy per block;
 *   hot       `packed` again at once, its buffers just used (what tb-beff's curve measures);
 *   sub-hot   `subarray` again at once, its buffers just used;
 *   vector    the same blocks as an MPI_Type_vector of MPI_BYTE, the send type tb-beff calibrates
 *             its non-contiguous extras with: whether MPICH charges the subarray's constructor or
 *             element more than the layout itself;
 *   self      the rank's own half of the slab to itself the same way (the subarray type, received
 *             contiguous), out of cache: native's self part;
 *   alltoallw the whole redistribution as native does it, MPI_Alltoallw with both parts at once.
 * Before every cold repetition each rank writes 64 MiB of scratch memory. The element is
 * MPI_C_DOUBLE_COMPLEX, as tb-redistribute's c64 (SLAB_ELEMENT=bytes: 16 contiguous MPI_BYTEs).
 *
 *   mpicc.mpich -O2 -o /tmp/slab_exchange experiments/probes/slab_exchange.c
 *   mpiexec.mpich -n 2 /tmp/slab_exchange 64 64 64 128 128 64 128 128 256
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "slab_exchange"
#include "probe.h"

#define REPS 7
#define SCRATCH ((size_t) 64 << 20)
#define ELEMENT 16

/* An array whose pages are touched: allocated memory, not the zero page. */
static void *touched_malloc(size_t bytes)
{
    void *p = checked_malloc(bytes);
    memset(p, 1, bytes);
    return p;
}

/* Seconds of one MPI_Sendrecv after a barrier, the slowest rank's: one `type` from `send` to
 * `peer` (the partner or this rank), `bytes` received contiguous from it. */
static double typed_sendrecv(const char *send, MPI_Datatype type, int peer, char *recv, size_t bytes)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    CHECK(MPI_Sendrecv(send, 1, type, peer, 0, recv, (int) bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    return slowest_rank(MPI_Wtime() - t);
}

static void evict(char *scratch, int rep)
{
    memset(scratch, rep, SCRATCH);
}

int main(int argc, char **argv)
{
    CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size != 2 || argc < 4 || (argc - 1) % 3 != 0) {
        if (rank == 0) fprintf(stderr, "slab_exchange: run on 2 ranks with n0 n1 n2 [n0 n1 n2 ...] (even n0, n2)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int partner = 1 - rank;
    char *scratch = touched_malloc(SCRATCH);
    if (rank == 0)
        printf("%-14s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n", "shape", "per peer", "subarray", "packed", "pack", "hot",
               "sub-hot", "vector", "self", "alltoallw");
    for (int a = 1; a + 2 < argc; a += 3) {
        const int n0 = atoi(argv[a]), n1 = atoi(argv[a + 1]), n2 = atoi(argv[a + 2]);
        if (n0 < 2 || n1 < 1 || n2 < 2 || n0 % 2 || n2 % 2) {
            if (rank == 0) fprintf(stderr, "slab_exchange: bad shape %s %s %s\n", argv[a], argv[a + 1], argv[a + 2]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const size_t local = (size_t) n0 / 2 * n1 * n2 * ELEMENT, bytes = local / 2;
        const size_t block = (size_t) n2 / 2 * ELEMENT, blocks = (size_t) n0 / 2 * n1;
        char *in = touched_malloc(local), *out = touched_malloc(local), *packed = touched_malloc(bytes);
        int sizes[3] = {n0 / 2, n1, n2}, sub[3] = {n0 / 2, n1, n2 / 2}, starts[3] = {0, 0, partner * n2 / 2};
        MPI_Datatype element, send, vector, own;
        const char *kind = getenv("SLAB_ELEMENT");
        if (kind && strcmp(kind, "bytes") == 0)
            CHECK(MPI_Type_contiguous(ELEMENT, MPI_BYTE, &element));
        else
            CHECK(MPI_Type_dup(MPI_C_DOUBLE_COMPLEX, &element));
        CHECK(MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, element, &send));
        CHECK(MPI_Type_commit(&send));
        int own_starts[3] = {0, 0, rank * n2 / 2};
        CHECK(MPI_Type_create_subarray(3, sizes, sub, own_starts, MPI_ORDER_C, element, &own));
        CHECK(MPI_Type_commit(&own));
        MPI_Datatype send_types[2], recv_types[2] = {MPI_BYTE, MPI_BYTE};
        send_types[rank] = own;
        send_types[partner] = send;
        int send_counts[2] = {1, 1}, send_displs[2] = {0, 0}, recv_counts[2] = {(int) bytes, (int) bytes},
            recv_displs[2] = {0, (int) bytes};
        CHECK(MPI_Type_vector((int) blocks, (int) block, (int) (2 * block), MPI_BYTE, &vector));
        CHECK(MPI_Type_commit(&vector));
        char *recv = out + (size_t) partner * bytes;  /* the partner's rows of the output, contiguous */
        const char *first = in + (size_t) partner * block;
        double t[8][REPS];
        for (int r = 0; r < REPS; ++r) {
            evict(scratch, r);
            t[0][r] = typed_sendrecv(in, send, partner, recv, bytes);
            t[4][r] = typed_sendrecv(in, send, partner, recv, bytes);
            evict(scratch, r);
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            double s = MPI_Wtime();
            for (size_t b = 0; b < blocks; ++b) memcpy(packed + b * block, first + b * 2 * block, block);
            t[2][r] = slowest_rank(MPI_Wtime() - s);
            evict(scratch, r);
            t[1][r] = paired_sendrecv(packed, recv, bytes, partner);
            t[3][r] = paired_sendrecv(packed, recv, bytes, partner);
            evict(scratch, r);
            t[5][r] = typed_sendrecv(first, vector, partner, recv, bytes);
            evict(scratch, r);
            t[6][r] = typed_sendrecv(in, own, rank, out + (size_t) rank * bytes, bytes);
            evict(scratch, r);
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            s = MPI_Wtime();
            CHECK(MPI_Alltoallw(in, send_counts, send_displs, send_types, out, recv_counts, recv_displs, recv_types,
                                MPI_COMM_WORLD));
            t[7][r] = slowest_rank(MPI_Wtime() - s);
        }
        if (rank == 0) {
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%dx%d", n0, n1, n2);
            printf("%-14s %7zu KiB", shape, bytes >> 10);
            for (int c = 0; c < 8; ++c) printf(" %7.0f us", median(t[c], REPS) * 1e6);
            printf("\n");
        }
        CHECK(MPI_Type_free(&send));
        CHECK(MPI_Type_free(&vector));
        CHECK(MPI_Type_free(&own));
        CHECK(MPI_Type_free(&element));
        free(in);
        free(out);
        free(packed);
    }
    free(scratch);
    CHECK(MPI_Finalize());
    return 0;
}
