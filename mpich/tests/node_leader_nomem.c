/*
 * node_leader when one node cannot allocate its data segment, or its control area: every
 * process must return an error, none may wait forever.
 *
 *   node_leader_nomem VICTIM [data|control]
 *
 * Run with MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader and MPIR_CVAR_NUM_CLIQUES=2 at 3 ranks
 * (two emulated nodes: ranks {0,2} share a segment from MPIDU_shm_alloc, rank 1 is alone and
 * uses private memory). Rank VICTIM caps its address space (RLIMIT_AS) a few MiB above what it
 * has mapped, so the data segment of its node (as large as everything the node sends and
 * receives, here 2-3 times BLOCK per process) cannot be mapped there; on the shared node
 * MPIDU_shm_alloc makes the other process fail alike. Then one MPI_Alltoallw of BLOCK bytes per
 * pair, with MPI_ERRORS_RETURN. With `control` the victim caps its address space at what it has
 * mapped, with nothing to spare, so that already the control area of the first call (one page
 * from MPIDU_shm_alloc, before any data segment) cannot be mapped: only on the shared node
 * (victim 0 or 2), since the lone process takes its small control area from the heap. Every pair
 * of processes first exchanges a message, so that the transport's connections (UCX maps shared
 * memory for them on first use) exist before the cap, and the blocks are small (CONTROL_BLOCK),
 * so that the leaders' messages go eagerly through those connections (a rendezvous would map the
 * sender's memory): a leader that cannot reach the other node at all could tell it nothing.
 * Either way:
 *   - the victim returns MPI_ERR_NO_MEM, and so does the other process of the shared node,
 *     unless MPIDU_shm_alloc reported the failure there as an error of its own (class
 *     MPI_ERR_OTHER, seen at times when the victim is rank 2): that one must fail, in any class;
 *   - the other node returns an error too (the victim's leader sends it an empty message that
 *     carries the error) instead of waiting for data that never comes.
 * Each rank prints its error class and exits 0 when it got the error expected of it; a hang is
 * caught by the ctest timeout.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define BLOCK (16 << 20)
#define CONTROL_BLOCK 64

static long mapped_bytes(void)
{
    long pages = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1)
            pages = -1;
        fclose(f);
    }
    return pages < 0 ? -1 : pages * 4096;
}

int main(int argc, char **argv)
{
    int rank, size, victim, err, class, p, control;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    victim = argc > 1 ? atoi(argv[1]) : -1;
    control = argc > 2 && strcmp(argv[2], "control") == 0;
    if (size != 3 || victim < 0 || victim >= size ||
        (argc > 2 && !control && strcmp(argv[2], "data") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 3 node_leader_nomem VICTIM (0-2) [data|control]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    char *sendbuf = malloc((size_t) size * BLOCK), *recvbuf = malloc((size_t) size * BLOCK);
    int counts[3], displs[3];
    MPI_Datatype types[3];
    if (!sendbuf || !recvbuf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sendbuf, rank, (size_t) size * BLOCK);
    memset(recvbuf, 0xff, (size_t) size * BLOCK);
    for (p = 0; p < size; p++) {
        counts[p] = control ? CONTROL_BLOCK : BLOCK;
        displs[p] = p * BLOCK;
        types[p] = MPI_BYTE;
    }

    if (control) {
        char out = 0, in;
        for (p = 1; p < size; p++)
            MPI_Sendrecv(&out, 1, MPI_CHAR, (rank + p) % size, 0, &in, 1, MPI_CHAR,
                         (rank - p + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == victim) {
        long now = mapped_bytes();
        rlim_t spare = control ? 0 : 8 << 20;
        struct rlimit cap = { (rlim_t) now + spare, (rlim_t) now + spare };
        if (now < 0 || setrlimit(RLIMIT_AS, &cap) != 0) {
            fprintf(stderr, "node_leader_nomem: rank %d: cannot cap the address space\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    err = MPI_Alltoallw(sendbuf, counts, displs, types, recvbuf, counts, displs, types,
                        MPI_COMM_WORLD);
    MPI_Error_class(err, &class);
    int ok = rank == victim ? class == MPI_ERR_NO_MEM : err != MPI_SUCCESS;
    printf("node_leader_nomem: rank %d (victim %d, %s): error class %d%s: %s\n", rank, victim,
           control ? "control" : "data", class,
           err == MPI_SUCCESS ? " (success)" : class == MPI_ERR_NO_MEM ? " (MPI_ERR_NO_MEM)" : "",
           ok ? "as expected" : "WRONG");
    fflush(stdout);
    free(recvbuf);
    free(sendbuf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
