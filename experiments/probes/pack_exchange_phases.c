/* Where pack_alltoallv's time goes on 2 ranks of one node: tb-model under-predicts it 2-4x from
 * 16 KiB per peer (docs/results/2026-12-04-row-states.md). Per size L, each phase timed on its
 * own between barriers (the slowest rank's, median of 9), as pack_alltoallv runs them:
 *   pack      copy of the L bytes for the peer from the user's send array into a staging buffer;
 *   self      copy of the rank's own L bytes from the send array into the receive array;
 *   exchange  MPI_Alltoallv of the staging buffers (L bytes to the peer, none to itself), whose
 *             send bytes were just written by the pack;
 *   unpack    memcpy of the L received bytes into the user's receive array;
 *   again     the same MPI_Alltoallv repeated at once (its send bytes no longer fresh);
 *   whole     the four phases back to back without barriers, as one call.
 * With a block size B (the argument), each size is timed twice, repetition by repetition: with
 * a contiguous send side, and with tb-bench's vector<B> send side (B-byte blocks at a 2B stride,
 * each peer's L bytes spread over 2L), which pack and self copy block by block, as the
 * testbed's packer does. The receive side stays contiguous.
 *
 *   mpicc.mpich -O2 -o /tmp/pack_exchange_phases experiments/probes/pack_exchange_phases.c
 *   mpiexec.mpich -n 2 /tmp/pack_exchange_phases [B]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "pack_exchange_phases"
#include "probe.h"

#define REPS 9
#define LARGEST (4 << 20)
enum { PACK, SELF, EXCHANGE, UNPACK, AGAIN, WHOLE, PHASES };
static const char *names[PHASES] = {"pack", "self", "exchange", "unpack", "again", "whole"};

struct arrays {
    char *send, *recv, *staging_out, *staging_in; /* send array of 4L, receive of 2L, staging of L */
    int counts_out[2], counts_in[2], displs[2];
    int peer;
    size_t block; /* 0: each peer's send bytes contiguous; B: B-byte blocks at a 2B stride */
};

/* The send side of peer p: L contiguous bytes at p * L, or L / B blocks from p * 2L. */
static void gather(const struct arrays *a, int p, size_t bytes, char *to)
{
    if (a->block == 0) {
        memcpy(to, a->send + p * bytes, bytes);
        return;
    }
    const char *from = a->send + p * 2 * bytes;
    for (size_t done = 0; done < bytes; done += a->block)
        memcpy(to + done, from + 2 * done, a->block);
}

static void pack(struct arrays *a, size_t bytes) { gather(a, a->peer, bytes, a->staging_out); }
static void self(struct arrays *a, size_t bytes, int rank) { gather(a, rank, bytes, a->recv + rank * bytes); }
static void unpack(struct arrays *a, size_t bytes) { memcpy(a->recv + a->peer * bytes, a->staging_in, bytes); }
static void exchange(struct arrays *a)
{
    CHECK(MPI_Alltoallv(a->staging_out, a->counts_out, a->displs, MPI_BYTE, a->staging_in, a->counts_in, a->displs,
                        MPI_BYTE, MPI_COMM_WORLD));
}

/* Seconds of one phase (or the whole call) between barriers; the slowest rank's. */
static double timed(int phase, struct arrays *a, size_t bytes, int rank)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    switch (phase) {
    case PACK: pack(a, bytes); break;
    case SELF: self(a, bytes, rank); break;
    case EXCHANGE: case AGAIN: exchange(a); break;
    case UNPACK: unpack(a, bytes); break;
    default: pack(a, bytes); self(a, bytes, rank); exchange(a); unpack(a, bytes); break;
    }
    t = MPI_Wtime() - t;
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, "");
    char *end = NULL;
    const long block = argc > 1 ? strtol(argv[1], &end, 10) : 0;
    if (argc > 2 || (argc > 1 && (*end != '\0' || block < 0 || block > 16384 || (block & (block - 1)) != 0))) {
        if (rank == 0)
            fprintf(stderr, "pack_exchange_phases: the block size must be a power of two up to 16384 (got '%s')\n",
                    argv[argc - 1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    struct arrays a = {checked_malloc(4 * LARGEST), checked_malloc(2 * LARGEST), checked_malloc(LARGEST),
                       checked_malloc(LARGEST), {0, 0}, {0, 0}, {0, 0}, 1 - rank, 0};
    memset(a.send, rank + 1, 4 * LARGEST);
    memset(a.recv, 0, 2 * LARGEST);
    memset(a.staging_out, 0, LARGEST);
    memset(a.staging_in, 0, LARGEST);
    const int layouts = block > 0 ? 2 : 1; /* contiguous, then vector<B> */
    if (rank == 0)
        printf("%10s %10s %10s %10s %10s %10s %10s %10s %10s (us, median of %d)\n", "bytes", "send side", names[0],
               names[1], names[2], names[3], names[4], "sum of 4", names[5], REPS);
    for (size_t bytes = 16384; bytes <= LARGEST; bytes *= 4) {
        a.counts_out[a.peer] = a.counts_in[a.peer] = (int) bytes;
        double t[2][PHASES][REPS];
        for (int i = 0; i < REPS; i++)
            for (int l = 0; l < layouts; l++) {
                a.block = l == 0 ? 0 : (size_t) block;
                for (int p = 0; p < PHASES; p++)
                    t[l][p][i] = timed(p, &a, bytes, rank);
            }
        if (a.recv[a.peer * bytes] != (char) (a.peer + 1) || a.recv[(a.peer + 1) * bytes - 1] != (char) (a.peer + 1)) {
            fprintf(stderr, "pack_exchange_phases: rank %d received the wrong bytes\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int l = 0; l < layouts; l++) {
            double m[PHASES];
            for (int p = 0; p < PHASES; p++)
                m[p] = median(t[l][p], REPS) * 1e6;
            char side[32];
            snprintf(side, sizeof side, l == 0 ? "contiguous" : "vector%ld", block);
            if (rank == 0)
                printf("%10zu %10s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", bytes, side, m[PACK], m[SELF],
                       m[EXCHANGE], m[UNPACK], m[AGAIN], m[PACK] + m[SELF] + m[EXCHANGE] + m[UNPACK], m[WHOLE]);
        }
    }
    free(a.send);
    free(a.recv);
    free(a.staging_out);
    free(a.staging_in);
    CHECK(MPI_Finalize());
    return 0;
}
