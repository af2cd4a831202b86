// State cached on a user's communicator with an attribute keyval, as MPI libraries do: created
// on first use, destroyed by the attribute's delete callback when the communicator is freed.
#pragma once

#include <mpi.h>

namespace tb {

// A duplicate of `comm` for the testbed's own point-to-point traffic, so that it can never
// match the user's messages. Created once per communicator.
MPI_Comm private_comm(MPI_Comm comm);

}  // namespace tb
