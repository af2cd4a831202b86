/* What a zero-copy UCX get of L bytes from the other rank of the node costs, against an MPI
 * message of the same bytes and a memcpy: the question behind ucx_zcopy's under-prediction by
 * tb-model, which priced each get at the MPI message's time. Two ranks, every rank at once:
 *   get:      ucp_get_nbx of the partner's registered array into its own registered array, in
 *             gets of at most 1 MiB (ucx_zcopy's largest), wait for all of them and for the
 *             partner's (progressing UCX meanwhile);
 *   sendrecv: MPI_Sendrecv of the same bytes, contiguous;
 *   memcpy:   a copy of the same bytes within the rank.
 * Median of 9 per size, the slowest rank's, interleaved; a barrier before each.
 *
 *   mpicc.mpich -O2 -o /tmp/zero_copy_get experiments/probes/zero_copy_get.c -lucp -lucs
 *   mpiexec.mpich -n 2 /tmp/zero_copy_get
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define PROBE_NAME "zero_copy_get"
#include "probe.h"

#define CHECK_UCX(call_)                                                \
    do {                                                                \
        ucs_status_t status_ = (call_);                                 \
        if (status_ != UCS_OK) {                                        \
            fprintf(stderr, PROBE_NAME ": %s: %s\n", #call_,            \
                    ucs_status_string(status_));                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                               \
        }                                                               \
    } while (0)

#define REPS 9
#define LARGEST (16 << 20)
#define MAX_GET (1 << 20)

static double slowest(double t)
{
    return slowest_rank(t);
}

struct ucx {
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h peer;
    ucp_mem_h local, remote_memh;
    ucp_rkey_h rkey;
    uint64_t remote;
};

/* A context with RMA and TAG (UCX 1.13 adds its cma lanes only with TAG, as ucx_zcopy does),
 * an endpoint to the partner, both arrays registered, the partner's rkey. */
static void start(struct ucx *u, int partner, char *send, char *recv, size_t bytes)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_TAG};
    ucp_config_t *config;
    CHECK_UCX(ucp_config_read(NULL, NULL, &config));
    CHECK_UCX(ucp_init(&params, config, &u->context));
    ucp_config_release(config);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    CHECK_UCX(ucp_worker_create(u->context, &wp, &u->worker));
    ucp_address_t *address;
    size_t length, peer_length;
    CHECK_UCX(ucp_worker_get_address(u->worker, &address, &length));
    CHECK(MPI_Sendrecv(&length, sizeof length, MPI_BYTE, partner, 0, &peer_length, sizeof peer_length, MPI_BYTE,
                       partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    char *peer_address = checked_malloc(peer_length);
    CHECK(MPI_Sendrecv(address, (int) length, MPI_BYTE, partner, 0, peer_address, (int) peer_length, MPI_BYTE,
                       partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    ucp_worker_release_address(u->worker, address);
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                          .address = (ucp_address_t *) peer_address};
    CHECK_UCX(ucp_ep_create(u->worker, &ep, &u->peer));
    free(peer_address);

    ucp_mem_map_params_t map = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                                .address = send, .length = bytes};
    CHECK_UCX(ucp_mem_map(u->context, &map, &u->remote_memh));
    map.address = recv;
    CHECK_UCX(ucp_mem_map(u->context, &map, &u->local));
    void *packed;
    size_t packed_size, peer_size;
    CHECK_UCX(ucp_rkey_pack(u->context, u->remote_memh, &packed, &packed_size));
    CHECK(MPI_Sendrecv(&packed_size, sizeof packed_size, MPI_BYTE, partner, 1, &peer_size, sizeof peer_size,
                       MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    char *peer_rkey = checked_malloc(peer_size);
    CHECK(MPI_Sendrecv(packed, (int) packed_size, MPI_BYTE, partner, 1, peer_rkey, (int) peer_size, MPI_BYTE,
                       partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    ucp_rkey_buffer_release(packed);
    CHECK_UCX(ucp_ep_rkey_unpack(u->peer, peer_rkey, &u->rkey));
    free(peer_rkey);
    uint64_t mine = (uint64_t) (uintptr_t) send;
    CHECK(MPI_Sendrecv(&mine, 1, MPI_UINT64_T, partner, 2, &u->remote, 1, MPI_UINT64_T, partner, 2,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* Gets `bytes` of the partner's array into `recv`, at most MAX_GET per get, and waits. */
static void get(struct ucx *u, char *recv, size_t bytes)
{
    ucs_status_ptr_t requests[LARGEST / MAX_GET + 1];
    int n = 0;
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH, .memh = u->local};
    for (size_t done = 0; done < bytes; done += MAX_GET) {
        size_t piece = bytes - done < MAX_GET ? bytes - done : MAX_GET;
        ucs_status_ptr_t r = ucp_get_nbx(u->peer, recv + done, piece, u->remote + done, u->rkey, &param);
        if (UCS_PTR_IS_ERR(r)) CHECK_UCX(UCS_PTR_STATUS(r));
        if (r != NULL) requests[n++] = r;
    }
    for (int i = 0; i < n; ++i) {
        while (ucp_request_check_status(requests[i]) == UCS_INPROGRESS) ucp_worker_progress(u->worker);
        ucp_request_free(requests[i]);
    }
    /* A get that UCX emulates with active messages needs the partner's worker to progress: keep
     * progressing until both ranks are done (ucx_zcopy's completion does the same). */
    MPI_Request done;
    int finished = 0;
    CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &done));
    while (!finished) {
        ucp_worker_progress(u->worker);
        CHECK(MPI_Test(&done, &finished, MPI_STATUS_IGNORE));
    }
}

int main(int argc, char **argv)
{
    const int rank = start_pair(&argc, &argv, " of one node");
    char *send = checked_aligned_alloc(4096, LARGEST), *recv = checked_aligned_alloc(4096, LARGEST);
    memset(send, rank + 1, LARGEST);
    memset(recv, 0, LARGEST);
    struct ucx u;
    start(&u, 1 - rank, send, recv, LARGEST);
    if (rank == 0) printf("%10s %12s %12s %12s %8s %8s   (us, median of %d)\n", "bytes", "get", "sendrecv",
                          "memcpy", "get/msg", "get/cpy", REPS);
    for (size_t bytes = 4096; bytes <= LARGEST; bytes *= 4) {
        double g[REPS], m[REPS], c[REPS];
        for (int r = 0; r < REPS; ++r) {
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            double t = MPI_Wtime();
            get(&u, recv, bytes);
            g[r] = slowest(MPI_Wtime() - t);
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            t = MPI_Wtime();
            CHECK(MPI_Sendrecv(send, (int) bytes, MPI_BYTE, 1 - rank, 3, recv, (int) bytes, MPI_BYTE, 1 - rank, 3,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            m[r] = slowest(MPI_Wtime() - t);
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            t = MPI_Wtime();
            memcpy(recv, send, bytes);
            c[r] = slowest(MPI_Wtime() - t);
        }
        const double get_us = 1e6 * median(g, REPS), msg_us = 1e6 * median(m, REPS),
                     copy_us = 1e6 * median(c, REPS);
        if (rank == 0)
            printf("%10zu %12.2f %12.2f %12.2f %8.2f %8.2f\n", bytes, get_us, msg_us, copy_us, get_us / msg_us,
                   get_us / copy_us);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    ucp_rkey_destroy(u.rkey);
    ucp_mem_unmap(u.context, u.local);
    ucp_mem_unmap(u.context, u.remote_memh);
    ucp_ep_destroy(u.peer);
    ucp_worker_destroy(u.worker);
    ucp_cleanup(u.context);
    free(send);
    free(recv);
    CHECK(MPI_Finalize());
    return 0;
}
