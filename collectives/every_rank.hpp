// Reductions whose result reaches every rank of a communicator, both groups of an
// intercommunicator included. MPI_Allreduce on an intercommunicator gives each group the result
// over the OTHER group; a second round with each rank's own value folded in gives every rank the
// result over both. The testbed's agreements (a failed attribute, a problem found by one rank)
// must be the same on every rank, whichever kind of communicator the user passed.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace tb {

// The maximum of `value` over every rank of comm: one MPI_Allreduce, two on an
// intercommunicator. Collective. Returns MPI_SUCCESS or the failed call's error code (then
// *result is not meaningful and no rank can know what the others saw).
int max_over_every_rank(std::int64_t value, MPI_Comm comm, std::int64_t* result);

// The smallest and the largest `value` over every rank of comm: the maximum of (value, -value),
// so one MPI_Allreduce (two on an intercommunicator). Whether all ranks hold the same value
// (*low == *high), whether all or any hold a flag. Collective; returns as max_over_every_rank.
int range_over_every_rank(std::int64_t value, MPI_Comm comm, std::int64_t* low, std::int64_t* high);

}  // namespace tb
