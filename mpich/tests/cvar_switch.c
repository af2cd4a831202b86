/*
 * Which MPI_Alltoallw algorithm did MPICH run? Evidence that MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM
 * reaches the algorithms the patch series adds, from behaviour MPICH already has (no counters or
 * prints added to the library):
 *
 *   cvar_switch truncate   Rank 0 posts a receive from rank 1 that is one int too short, so the
 *                          collective fails with MPI_ERR_TRUNCATE (MPI_ERRORS_RETURN). MPICH's
 *                          error stack names every function that set or passed on the error;
 *                          MPI_Error_string cuts it at MPI_MAX_ERROR_STRING (512 bytes, before
 *                          the algorithm's frame), so rank 0 hands the error to
 *                          MPI_ERRORS_ARE_FATAL, which prints the whole stack (up to 4096 bytes)
 *                          and aborts: the run ends with a failure by design. The test expects
 *                          the forced algorithm's function (MPIR_Alltoallw_intra_pairwise,
 *                          ..._pack_alltoallv) in it, and with scattered forced, that one
 *                          instead (a control).
 *   cvar_switch truncate-self   The same with rank 0's receive from itself one int too short: the
 *                          own block, which every added algorithm copies apart from the others
 *                          (node_leader in its unpacking phase), must fail the same way.
 *   cvar_switch truncate-self-strided   The same, rank 0 sending itself its two ints as a strided
 *                          vector (two pieces against one): node_leader copies such an own block
 *                          in its packing phase, which must fail the same way.
 *   cvar_switch truncate-self-return   The same as truncate-self, but rank 0 does not abort: every
 *                          rank must return from MPI_Alltoallw (the others with an error or not,
 *                          as the algorithm carries the error to them), then meet in MPI_Barrier.
 *                          An algorithm that gave up on its exchanges after the failed own copy
 *                          left the others waiting (the test's timeout).
 *   cvar_switch truncate-all, truncate-all-return   The same as truncate and truncate-self-return,
 *                          with every receive of rank 0 one int too short (its own and every
 *                          peer's): one call records several errors, each a code of its own (an
 *                          algorithm that chained a new error onto one it had already recorded
 *                          made MPICH's error chain a loop, in which MPI_Alltoallw or the printing
 *                          of its stack never returned).
 *   cvar_switch inplace    MPI_IN_PLACE with an algorithm restricted to out-of-place buffers: with
 *                          MPIR_CVAR_COLLECTIVE_FALLBACK=print, MPICH says on stderr which forced
 *                          algorithm "cannot be applied" (the check generated from
 *                          coll_algorithms.txt for that algorithm) and falls back; the result must
 *                          still be right.
 *   cvar_switch version    prints MPI_Get_library_version (which install ran) and the CVAR's value
 *                          as MPI_T reports it.
 *
 * Every mode prints "cvar_switch: ok" on rank 0 when its own checks pass.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void fail(const char *what)
{
    fprintf(stderr, "cvar_switch: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Every rank sends two ints to every rank; rank 0 expects only one from rank `short_peer` (from
 * every rank when it is -1).
 * With `strided_self`, rank 0 sends itself ints 0 and 2 of its send buffer as one strided vector. */
static int run_truncate(int short_peer, int strided_self, int fatal)
{
    int *sendbuf = malloc(2 * size * sizeof(int)), *recvbuf = malloc(2 * size * sizeof(int));
    int *counts = malloc(4 * size * sizeof(int));
    int *scounts = counts, *sdispls = counts + size, *rcounts = counts + 2 * size,
        *rdispls = counts + 3 * size;
    MPI_Datatype *types = malloc(size * sizeof(MPI_Datatype));
    for (int p = 0; p < size; p++) {
        sendbuf[2 * p] = sendbuf[2 * p + 1] = rank;
        scounts[p] = rcounts[p] = 2;
        sdispls[p] = rdispls[p] = 2 * p * (int) sizeof(int);
        types[p] = MPI_INT;
    }
    if (size < 2)
        fail("truncate needs at least 2 ranks");
    for (int p = 0; p < size && rank == 0; p++)
        if (p == short_peer || short_peer < 0)
            rcounts[p] = 1;
    MPI_Datatype stypes_self = MPI_INT, *stypes = malloc(size * sizeof(MPI_Datatype));
    for (int p = 0; p < size; p++)
        stypes[p] = MPI_INT;
    if (strided_self && rank == 0) {
        MPI_Type_vector(2, 1, 2, MPI_INT, &stypes_self);
        MPI_Type_commit(&stypes_self);
        stypes[0] = stypes_self;
        scounts[0] = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int err = MPI_Alltoallw(sendbuf, scounts, sdispls, stypes, recvbuf, rcounts, rdispls, types,
                            MPI_COMM_WORLD);
    if (rank == 0) {
        int class;
        if (err == MPI_SUCCESS)
            fail("a truncated receive in MPI_Alltoallw returned MPI_SUCCESS");
        MPI_Error_class(err, &class);
        if (class != MPI_ERR_TRUNCATE)
            printf("cvar_switch: rank 0: error class %d, not MPI_ERR_TRUNCATE\n", class);
        else
            printf("cvar_switch: ok: rank 0: MPI_Alltoallw returned MPI_ERR_TRUNCATE%s\n",
                   fatal ? "; MPI_ERRORS_ARE_FATAL prints its whole error stack and aborts" : "");
        fflush(stdout);
        if (fatal) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            MPI_Comm_call_errhandler(MPI_COMM_WORLD, err);
        }
    }
    if (!fatal && MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
        fail("MPI_Barrier after the failed MPI_Alltoallw");
    if (stypes_self != MPI_INT)
        MPI_Type_free(&stypes_self);
    free(stypes);
    free(types);
    free(counts);
    free(recvbuf);
    free(sendbuf);
    return 0;
}

/* In place: block p of rank r holds 100*r + p and must come back as 100*p + r. */
static int run_inplace(void)
{
    int *buf = malloc(size * sizeof(int)), *counts = malloc(2 * size * sizeof(int));
    MPI_Datatype *types = malloc(size * sizeof(MPI_Datatype));
    for (int p = 0; p < size; p++) {
        buf[p] = 100 * rank + p;
        counts[p] = 1;
        counts[size + p] = p * (int) sizeof(int);
        types[p] = MPI_INT;
    }
    MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, counts + size, types,
                  MPI_COMM_WORLD);
    for (int p = 0; p < size; p++)
        if (buf[p] != 100 * p + rank)
            fail("MPI_IN_PLACE alltoallw after the fallback gave a wrong result");
    free(types);
    free(counts);
    free(buf);
    return 0;
}

static void print_version(void)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0, ncvars = 0;
    MPI_Get_library_version(text, &length);
    if (rank == 0)
        printf("cvar_switch: MPI_Get_library_version:\n%s\n", text);
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_cvar_get_num(&ncvars);
    for (int i = 0; i < ncvars; i++) {
        char name[256], desc[2048];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope);
        if (strcmp(name, "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM") == 0 && rank == 0) {
            MPI_T_cvar_handle handle;
            int count, value = -1;
            MPI_T_cvar_handle_alloc(i, NULL, &handle, &count);
            MPI_T_cvar_read(handle, &value);
            MPI_T_cvar_handle_free(&handle);
            printf("cvar_switch: MPI_T: MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM = %d (environment: %s)\n",
                   value, getenv("MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM") ?
                   getenv("MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM") : "unset");
            printf("cvar_switch: MPI_T description:\n%s\n", desc);
        }
    }
    MPI_T_finalize();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "version";
    if (strcmp(mode, "truncate") == 0)
        run_truncate(1, 0, 1);
    else if (strcmp(mode, "truncate-self") == 0)
        run_truncate(0, 0, 1);
    else if (strcmp(mode, "truncate-self-strided") == 0)
        run_truncate(0, 1, 1);
    else if (strcmp(mode, "truncate-self-return") == 0)
        run_truncate(0, 0, 0);
    else if (strcmp(mode, "truncate-all") == 0)
        run_truncate(-1, 0, 1);
    else if (strcmp(mode, "truncate-all-return") == 0)
        run_truncate(-1, 0, 0);
    else if (strcmp(mode, "inplace") == 0)
        run_inplace();
    else if (strcmp(mode, "version") == 0)
        print_version();
    else
        fail("unknown mode (truncate, truncate-self, truncate-self-strided, truncate-self-return, "
             "truncate-all, truncate-all-return, inplace or version)");
    if (rank == 0) {
        printf("cvar_switch: ok\n");
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
