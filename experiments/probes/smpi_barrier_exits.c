/* When each rank leaves MPI_Barrier under SimGrid SMPI: the figures behind tb-model's
 * timing_barrier term (docs/cost-model.md, "The cluster network"). SMPI 3.32's default barrier is
 * linear (rank 0 gathers a zero-byte message from every rank, then sends each one back at once),
 * so its releases reach other nodes later than rank 0's own node, and rank 0 itself leaves with
 * its last send. The testbed's timing starts its clock right after such a barrier. Prints, for
 * three barriers, every rank's exit time less the earliest, in microseconds.
 *
 *   smpicc -O2 -o /tmp/smpi_barrier_exits experiments/probes/smpi_barrier_exits.c
 *   python3 -c 'import sys; sys.path.insert(0, "experiments"); import launch; \
 *     open("/tmp/hosts-64", "w").write(launch.smpi_hostfile("experiments/platforms/xc40-dragonfly.xml", 64))'
 *   TB_SMPI_PLATFORM=experiments/platforms/xc40-dragonfly.xml TB_SMPI_HOSTFILE=/tmp/hosts-64 \
 *     build/smpi/bin/tb-smpirun --cfg=smpi/simulate-computation:no -np 64 /tmp/smpi_barrier_exits
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PROBE_NAME "smpi_barrier_exits"
#include "probe.h"

int main(int argc, char** argv) {
    CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    double* exits = rank == 0 ? checked_malloc(sizeof(double) * (size_t)size) : NULL;
    if (rank == 0 && !exits) {
        fprintf(stderr, "smpi_barrier_exits: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int barrier = 0; barrier < 3; ++barrier) {
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        const double exit = MPI_Wtime();
        CHECK(MPI_Gather(&exit, 1, MPI_DOUBLE, exits, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        if (rank != 0) continue;
        double first = exits[0];
        for (int r = 1; r < size; ++r)
            if (exits[r] < first) first = exits[r];
        printf("barrier %d, us after the first exit, by rank:", barrier);
        for (int r = 0; r < size; ++r) printf(" %.3f", (exits[r] - first) * 1e6);
        printf("\n");
    }
    free(exits);
    CHECK(MPI_Finalize());
    return 0;
}
