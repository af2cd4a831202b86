/* What a node-staged Alltoallw of the 256^3 slab could cost on this host if the staging stayed in
 * cache: the question behind issue 15's slab goal (the patched MPICH 3x faster than Debian's
 * native, private arrays), which asks for about 0.7-0.8 memcpy floors when Debian's native is only
 * 2-2.5 floors away (docs/results/2026-12-03-mpich-16-patches-amd.md).
 * Two ranks of one node redistribute an N^3 array of 16-byte elements from slabs along axis 0 to
 * slabs along axis 2 (tb-redistribute's default direction): each rank sends the other N/2 x N
 * pieces of N/2 elements (2 KiB at N = 256) and receives them as one contiguous run. Each rank at
 * once, the slowest rank's time, median of REPS, the methods interleaved:
 *   memcpy     memcpy of the whole local array (tb-redistribute's "memcpy floor");
 *   streaming  the same with streaming stores (its "streaming-store copy");
 *   staged     node_leader's design in MPICH (patch 4, 6, 16): the own block and the packing of
 *              the partner's pieces into a shared segment, both with streaming stores; a barrier;
 *              the partner's segment unpacked with streaming stores. The partner's bytes go to
 *              memory and back: four passes of memory traffic per byte against two for the own;
 *   pipelined  the same pieces through a ring of RING slots of SLOT bytes per direction in the
 *              shared window: pack a slot with ordinary stores (it stays in cache), publish it,
 *              unpack the partner's slot with streaming stores, release it; the own block's pieces
 *              copied with streaming stores in step with the chunks.
 * Each redistribution's output is checked element by element against the global index it must
 * hold.
 *
 *   mpicc.mpich -O2 -o /tmp/pipelined_staging experiments/probes/pipelined_staging.c
 *   mpiexec.mpich -n 2 /tmp/pipelined_staging [N]       (N even, default 256)
 */
#include <emmintrin.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "pipelined_staging"
#include "probe.h"

#define REPS 7
#ifndef RING
#define RING 4            /* -DRING=K, -DSLOT=BYTES to try other rings */
#endif
#ifndef SLOT
#define SLOT (128 << 10)
#endif
#define ELEMENT 16

typedef struct {
    _Alignas(64) atomic_long produced;  /* slots this rank has packed for its partner */
    _Alignas(64) atomic_long consumed;  /* slots of the partner's ring this rank has unpacked */
} Counters;

typedef struct {
    size_t n, half;        /* N and N/2 */
    size_t piece;          /* bytes of one piece: N/2 elements */
    size_t part;           /* bytes for one rank: N/2 x N pieces */
    int rank;
    char *in, *out;        /* [N/2][N][N] and [N][N][N/2] elements, private */
    char *segment;         /* this rank's shared part: the staged segment, or the ring */
    const char *partner;   /* the partner's shared part */
    Counters *mine, *theirs;
} Slab;

/* dst and src 16-byte aligned, bytes a multiple of 64; the caller fences. */
static void stream_copy(char *dst, const char *src, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 64) {
        __m128i a = _mm_load_si128((const __m128i *) (src + i));
        __m128i b = _mm_load_si128((const __m128i *) (src + i + 16));
        __m128i c = _mm_load_si128((const __m128i *) (src + i + 32));
        __m128i d = _mm_load_si128((const __m128i *) (src + i + 48));
        _mm_stream_si128((__m128i *) (dst + i), a);
        _mm_stream_si128((__m128i *) (dst + i + 16), b);
        _mm_stream_si128((__m128i *) (dst + i + 32), c);
        _mm_stream_si128((__m128i *) (dst + i + 48), d);
    }
}

/* The k-th piece (in (i, j) order) of this rank's input destined for rank `to`. */
static const char *piece_for(const Slab *s, size_t k, int to)
{
    return s->in + (k * s->n + (size_t) to * s->half) * ELEMENT;
}

/* Where the k-th piece from rank `from` lands in this rank's output. */
static char *piece_from(const Slab *s, size_t k, int from)
{
    return s->out + (size_t) from * s->part + k * s->piece;
}

/* Spin until the partner's counter reaches value; the acquire pairs with its release store. */
static void wait_at_least(atomic_long *counter, long value)
{
    while (atomic_load_explicit(counter, memory_order_acquire) < value)
        _mm_pause();
}

/* node_leader's design in MPICH: everything through the shared segment, one barrier. */
static void staged(Slab *s)
{
    const int peer = 1 - s->rank;
    const size_t pieces = s->part / s->piece;
    for (size_t k = 0; k < pieces; k++) {
        stream_copy(piece_from(s, k, s->rank), piece_for(s, k, s->rank), s->piece);
        stream_copy(s->segment + k * s->piece, piece_for(s, k, peer), s->piece);
    }
    _mm_sfence();
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    stream_copy(piece_from(s, 0, peer), s->partner, s->part);
    _mm_sfence();
}

/* The partner's pieces a slot at a time; `round` numbers the calls, as the counters never reset. */
static void pipelined(Slab *s, long round)
{
    const int peer = 1 - s->rank;
    const size_t per_slot = SLOT / s->piece, pieces = s->part / s->piece;
    const long slots = (long) (pieces / per_slot), base = round * slots;
    for (long c = 0; c < slots; c++) {
        const size_t first = (size_t) c * per_slot;
        wait_at_least(&s->theirs->consumed, base + c - RING + 1);  /* our slot is free again */
        char *slot = s->segment + (size_t) (c % RING) * SLOT;
        for (size_t k = 0; k < per_slot; k++)
            memcpy(slot + k * s->piece, piece_for(s, first + k, peer), s->piece);
        atomic_store_explicit(&s->mine->produced, base + c + 1, memory_order_release);
        for (size_t k = 0; k < per_slot; k++)
            stream_copy(piece_from(s, first + k, s->rank), piece_for(s, first + k, s->rank), s->piece);
        wait_at_least(&s->theirs->produced, base + c + 1);
        stream_copy(piece_from(s, first, peer), s->partner + (size_t) (c % RING) * SLOT, SLOT);
        atomic_store_explicit(&s->mine->consumed, base + c + 1, memory_order_release);
    }
    _mm_sfence();
}

/* Each element's first 8 bytes hold its global index (the rest stays as allocated). */
static void fill_input(Slab *s)
{
    for (size_t i = 0; i < s->half; i++)
        for (size_t j = 0; j < s->n; j++)
            for (size_t k = 0; k < s->n; k++) {
                uint64_t global = ((s->rank * s->half + i) * s->n + j) * s->n + k;
                memcpy(s->in + ((i * s->n + j) * s->n + k) * ELEMENT, &global, sizeof global);
            }
}

/* Every element of the output holds its global index; the output is cleared after the check. */
static void check_output(Slab *s, const char *method)
{
    for (size_t g0 = 0; g0 < s->n; g0++)
        for (size_t j = 0; j < s->n; j++)
            for (size_t k = 0; k < s->half; k++) {
                uint64_t want = (g0 * s->n + j) * s->n + s->rank * s->half + k, got;
                memcpy(&got, s->out + ((g0 * s->n + j) * s->half + k) * ELEMENT, sizeof got);
                if (got != want) {
                    fprintf(stderr, "pipelined_staging: %s: rank %d element (%zu,%zu,%zu) holds %llu, not %llu\n",
                            method, s->rank, g0, j, k, (unsigned long long) got, (unsigned long long) want);
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
            }
    memset(s->out, 0, 2 * s->part);
}

enum { MEMCPY, STREAMING, STAGED, PIPELINED, METHODS };
static const char *const names[METHODS] = {"memcpy", "streaming", "staged", "pipelined"};

/* One call of a method, the slowest rank's seconds. */
static double run(Slab *s, int method, long round)
{
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    if (method == MEMCPY)
        memcpy(s->out, s->in, 2 * s->part);
    else if (method == STREAMING) {
        stream_copy(s->out, s->in, 2 * s->part);
        _mm_sfence();
    } else if (method == STAGED)
        staged(s);
    else
        pipelined(s, round);
    t = MPI_Wtime() - t;
    return slowest_rank(t);
}

int main(int argc, char **argv)
{
    int size;
    Slab s = {0};
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    s.n = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    s.half = s.n / 2;
    s.piece = s.half * ELEMENT;
    s.part = s.half * s.n * s.piece;
    MPI_Comm node;
    int node_size;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK(MPI_Comm_size(node, &node_size));
    if (size != 2 || node_size != 2 || s.n < 8 || s.n % 8 || SLOT % s.piece || (s.part / s.piece) % (SLOT / s.piece)) {
        if (s.rank == 0)
            fprintf(stderr, "pipelined_staging: 2 ranks of one node, N a multiple of 8 whose pieces of "
                            "N/2 elements divide a %d KiB slot and fill whole slots\n", SLOT >> 10);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t shared = 4096 + (s.part > (size_t) RING * SLOT ? s.part : (size_t) RING * SLOT);
    char *base, *partner_base;
    MPI_Win win;
    CHECK(MPI_Win_allocate_shared(shared, 1, MPI_INFO_NULL, node, &base, &win));
    MPI_Aint partner_size;
    int unit;
    CHECK(MPI_Win_shared_query(win, 1 - s.rank, &partner_size, &unit, &partner_base));
    /* Counters at the first cache line, the data 2 KiB on (the window base may be unaligned). */
    char *mine_aligned = (char *) (((uintptr_t) base + 63) & ~(uintptr_t) 63);
    char *theirs_aligned = (char *) (((uintptr_t) partner_base + 63) & ~(uintptr_t) 63);
    s.mine = (Counters *) mine_aligned;
    s.theirs = (Counters *) theirs_aligned;
    s.segment = mine_aligned + 2048;
    s.partner = theirs_aligned + 2048;
    atomic_init(&s.mine->produced, 0);
    atomic_init(&s.mine->consumed, 0);
    s.in = checked_aligned_alloc(64, 2 * s.part);
    s.out = checked_aligned_alloc(64, 2 * s.part);
    fill_input(&s);
    memset(s.out, 0, 2 * s.part);
    memset(s.segment, 0, shared - 4096);
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double times[METHODS][REPS];
    long pipelined_rounds = 0;
    for (int r = 0; r < REPS; r++)
        for (int m = 0; m < METHODS; m++) {
            times[m][r] = run(&s, m, m == PIPELINED ? pipelined_rounds++ : 0);
            if (m == STAGED || m == PIPELINED)  /* the floors copy, they do not redistribute */
                check_output(&s, names[m]);
            else
                memset(s.out, 0, 2 * s.part);  /* so that a redistribution never finds their bytes */
        }
    if (s.rank == 0) {
        printf("pipelined_staging: %zu^3 x %d B, 2 ranks, pieces of %zu B, ring %d x %d KiB; ms, median of %d, slowest rank\n",
               s.n, ELEMENT, s.piece, RING, SLOT >> 10, REPS);
        const double floor = median(times[MEMCPY], REPS);
        for (int m = 0; m < METHODS; m++) {
            const double t = median(times[m], REPS);  /* the floor's own again: already sorted */
            printf("%10s %10.2f ms  %5.2f memcpy floors\n", names[m], t * 1e3, t / floor);
        }
    }
    free(s.in);
    free(s.out);
    CHECK(MPI_Win_free(&win));
    CHECK(MPI_Comm_free(&node));
    CHECK(MPI_Finalize());
    return 0;
}
