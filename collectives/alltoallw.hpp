// The Alltoallw algorithm interface.
//
// Every algorithm in collectives/ implements MPI_Alltoallw with exactly MPI's semantics: the
// arguments below are MPI_Alltoallw's, displacements are in bytes, and each (count, type) pair
// sent to a peer must match the peer's receive pair in type signature. Algorithms may keep state
// between calls (buffers, caches) and are therefore objects; a plan owns the algorithm it runs.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>

namespace tb {

// MPI_Alltoallw's argument list, as one value.
struct AlltoallwArgs {
  const void* sendbuf = nullptr;
  const int* sendcounts = nullptr;
  const int* sdispls = nullptr;  // bytes
  const MPI_Datatype* sendtypes = nullptr;
  void* recvbuf = nullptr;
  const int* recvcounts = nullptr;
  const int* rdispls = nullptr;  // bytes
  const MPI_Datatype* recvtypes = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
};

class AlltoallwAlgorithm {
 public:
  virtual ~AlltoallwAlgorithm() = default;

  // The registry name ("native", "pairwise", ...).
  virtual std::string_view name() const = 0;

  // Performs one Alltoallw. Collective over args.comm. Throws tb::MpiError (or
  // std::invalid_argument for arguments MPI would reject) on failure.
  virtual void run(const AlltoallwArgs& args) = 0;

  // Which path the last run() took: the algorithm's name when it ran itself, otherwise what it
  // delegated to and why (e.g. "native (intercommunicator)"). Tools print it; tests assert it.
  virtual std::string last_path() const { return std::string(name()); }
};

struct AlltoallwComm {
  int size = 0;
  int rank = 0;
  bool inter = false;
};

// Checks what MPI_Alltoallw would reject (null communicator, null argument arrays, negative
// counts, MPI_DATATYPE_NULL with a non-zero count) and throws std::invalid_argument naming the
// argument and the algorithm. Returns the communicator's size, rank and kind.
AlltoallwComm check_alltoallw_args(const AlltoallwArgs& args, std::string_view algorithm);

}  // namespace tb
