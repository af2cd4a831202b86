// The Alltoallw algorithm interface.
//
// Every algorithm in collectives/algorithms/ implements MPI_Alltoallw with exactly MPI's
// semantics: the arguments below are MPI_Alltoallw's, displacements are in bytes, and each
// (count, type) pair sent to a peer must match the peer's receive pair in type signature.
// Algorithms may keep state between calls (buffers, caches) and are therefore objects; a plan
// owns the algorithm it runs.
//
// The base class does what every algorithm shares, once: run() validates the arguments as MPI
// would, under TB_CHECKED=1 checks with every peer that what each sends matches what the other
// expects, hands intercommunicators to the library's own MPI_Alltoallw (unless the algorithm
// handles them), resets the path to the algorithm's name, then calls the algorithm's exchange().
// Every error is a tb::MpiError carrying MPI's error class; the classes, and which ranks learn of
// a mismatch, are in collectives/algorithm_support.hpp.
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

  // Performs one Alltoallw. Collective over args.comm. Throws tb::MpiError with MPI's class on
  // failure (MPI_ERR_COMM, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TYPE for arguments MPI would
  // reject; MPI_ERR_TRUNCATE or MPI_ERR_COUNT for mismatched sizes). A null communicator or a null
  // argument array raises at once; a bad count or type raises after this rank has taken part with
  // that block empty (so peers whose block with it is empty complete). Under TB_CHECKED=1 every
  // rank raises, before any data moves, whenever any rank's arguments or any pair's sizes are
  // wrong (intercommunicators included).
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

// Checks what MPI_Alltoallw would reject (null communicator: MPI_ERR_COMM; null argument arrays:
// MPI_ERR_ARG; negative counts: MPI_ERR_COUNT; MPI_DATATYPE_NULL with a non-zero count:
// MPI_ERR_TYPE) and throws tb::MpiError with that class, naming the argument and the algorithm.
// Local: no communication. Returns the communicator's size, rank and kind. (An uncommitted type
// is not detected here: MPI has no call that tells; native's library checks it.)
AlltoallwComm check_alltoallw_args(const AlltoallwArgs& args, std::string_view algorithm);

}  // namespace tb
