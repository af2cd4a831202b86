// The Alltoallw algorithm interface.
//
// Every algorithm in collectives/algorithms/ implements MPI_Alltoallw with exactly MPI's
// semantics: the arguments below are MPI_Alltoallw's, displacements are in bytes, and each
// (count, type) pair sent to a peer must match the peer's receive pair in type signature.
// Algorithms may keep state between calls (buffers, caches) and are therefore objects; a plan
// owns the algorithm it runs.
//
// The base class does what every algorithm shares, once: run() validates the arguments as MPI
// would, hands intercommunicators to the library's own MPI_Alltoallw (unless the algorithm
// handles them), resets the path to the algorithm's name, then calls the algorithm's exchange().
#pragma once

#include <mpi.h>

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

// The communicator of a call: its size (the remote group's for an intercommunicator), this
// process's rank, and its kind.
struct AlltoallwComm {
  int size = 0;
  int rank = 0;
  bool inter = false;
};

class AlltoallwAlgorithm {
 public:
  virtual ~AlltoallwAlgorithm() = default;

  // The registry name ("native", "pairwise", ...).
  virtual std::string_view name() const = 0;

  // Performs one Alltoallw. Collective over args.comm. Throws tb::MpiError (or
  // std::invalid_argument for arguments MPI would reject) on failure.
  void run(const AlltoallwArgs& args);

  // Which path the last run() took: the algorithm's name, refined by the algorithm (e.g.
  // "pairwise (in place)"), or what it delegated to and why ("native (intercommunicator)").
  // Tools print it; tests assert it.
  const std::string& last_path() const { return path_; }

 protected:
  // The algorithm proper: arguments already checked, and an intracommunicator unless
  // handles_intercommunicators() says otherwise.
  virtual void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) = 0;

  // Algorithms that run intercommunicators themselves (native) return true.
  virtual bool handles_intercommunicators() const { return false; }

  // Names the path this call takes; run() has set it to name() before exchange().
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  std::string path_;
};

// Checks what MPI_Alltoallw would reject (null communicator, null argument arrays, negative
// counts, MPI_DATATYPE_NULL with a non-zero count) and throws std::invalid_argument naming the
// argument and the algorithm. Returns the communicator's size, rank and kind.
AlltoallwComm check_alltoallw_args(const AlltoallwArgs& args, std::string_view algorithm);

}  // namespace tb
