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
//
// Persistent calls (MPI-4's MPI_Alltoallw_init): prepare() binds one call's arguments and does
// the set-up once; the PreparedAlltoallw it returns runs the call at each start(). An algorithm
// with a cheaper prepared form (flattening, matching, per-peer tables, size exchanges and
// registrations done once) overrides prepare_exchange(); the others run their blocking exchange at
// every start, and the prepared call's path says so. A prepared form in which no rank holds
// another rank's buffer addresses can be rebound to other buffers of the same layout, each rank
// alone: the testbed's extension, for callers whose arrays move (docs/design.md).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

class PreparedAlltoallw;

// The part of a prepared call an algorithm supplies: what it set up once, run at every start.
class PreparedExchange {
 public:
  virtual ~PreparedExchange() = default;
  // Runs the prepared call: collective over the call's communicator, blocking. Throws
  // tb::MpiError as AlltoallwAlgorithm::run() does.
  virtual void start() = 0;
  // The path the starts take, beginning with the algorithm's name, e.g. "pairwise (persistent)".
  virtual std::string path() const = 0;
  // Whether rebind() can point this call at other buffers. A property of the algorithm's prepared
  // form, so the same on every rank. The default: no (the form holds the buffers' addresses in
  // requests, registrations or a peer's copy lists).
  virtual bool rebinds() const { return false; }
  // Points the next starts at these buffers; `sendbuf` is MPI_IN_PLACE exactly where the prepared
  // call's was. Local: a rebind that throws leaves this rank's call on the buffers it had, while
  // its peers' may have moved, so a caller whose rebind failed should not start the call again.
  virtual void rebind(const void* sendbuf, void* recvbuf);
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

  // Prepares one call for repeated starts, as MPI_Alltoallw_init does. Collective over args.comm.
  // The argument arrays are copied; the buffers and datatypes must stay valid, and the buffers in
  // place (or rebound: PreparedAlltoallw::rebind), until the prepared call is destroyed; the data
  // in them may change between starts. This algorithm object must outlive the prepared call.
  // Every problem run() can find, including a mismatch between any sender and receiver, is found
  // here on every rank before anything moves (TB_CHECKED's check, paid once): every rank throws
  // the same tb::MpiError, so that no rank is left to wait in a start its peer never makes.
  std::unique_ptr<PreparedAlltoallw> prepare(const AlltoallwArgs& args);

 protected:
  // The algorithm proper: arguments already checked, and an intracommunicator unless
  // handles_intercommunicators() says otherwise.
  virtual void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) = 0;

  // Algorithms that run intercommunicators themselves (native) return true.
  virtual bool handles_intercommunicators() const { return false; }

  // The algorithm's prepared form of one call: arguments already checked on every rank, `args`
  // pointing into arrays the prepared call owns (valid as long as it lives), an intracommunicator
  // unless handles_intercommunicators(). Collective. nullptr (the default) means no cheaper form:
  // every start then runs exchange(), and the path says "not prepared" (and the call rebinds).
  // Whether it returns nullptr, and the form's rebinds(), must be the same on every rank: callers
  // decide on communication by them.
  virtual std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args,
                                                             const AlltoallwComm& comm);

  // Runs `other`'s exchange() on checked arguments: for algorithms that choose another per call.
  static void exchange_with(AlltoallwAlgorithm& other, const AlltoallwArgs& args, const AlltoallwComm& comm) {
    other.path_ = std::string(other.name());
    other.exchange(args, comm);
  }

  // Names the path this call takes; run() has set it to name() before exchange().
  void set_path(std::string&& path) { path_ = std::move(path); }
  void set_path(const std::string& path) { path_ = path; }  // reuses path_'s storage: no allocation per call

 private:
  friend class PreparedAlltoallw;
  std::string path_;
};

// One prepared Alltoallw (see AlltoallwAlgorithm::prepare). Owns copies of the argument arrays.
class PreparedAlltoallw {
 public:
  PreparedAlltoallw(const PreparedAlltoallw&) = delete;
  PreparedAlltoallw& operator=(const PreparedAlltoallw&) = delete;
  ~PreparedAlltoallw();

  // Runs the call with the data the buffers hold now. Collective, blocking.
  void start();
  // Whether rebind() works: the algorithm's prepared form can move to other buffers, or it has
  // none (each start runs the blocking call). The same on every rank. MPI's persistent calls have
  // no such thing; callers whose arrays move between calls (the redistribution) use it to keep one
  // prepared call without agreeing with their peers on every call.
  bool rebinds() const;
  // Points the next starts at other buffers of the same layout (counts, displacements and types as
  // prepared), each rank its own. Local. Throws std::logic_error where !rebinds(), and
  // std::invalid_argument where `sendbuf` is MPI_IN_PLACE and the prepared call's was not, or the
  // other way round.
  void rebind(const void* sendbuf, void* recvbuf);
  // The path the starts take: the algorithm's prepared form, e.g. "pairwise (persistent)", or
  // "<name> (not prepared: each start runs the blocking call)".
  const std::string& last_path() const { return path_; }
  std::string_view algorithm() const { return algorithm_.name(); }
  const AlltoallwArgs& args() const { return args_; }
  std::int64_t starts() const { return starts_; }

 private:
  friend class AlltoallwAlgorithm;
  PreparedAlltoallw(AlltoallwAlgorithm& algorithm, const AlltoallwArgs& args, const AlltoallwComm& comm);

  // One side's argument arrays, copied.
  struct SideCopy {
    std::vector<int> counts, displs;
    std::vector<MPI_Datatype> types;
    // Copies `peers` entries of each array and points the caller's arrays at the copies.
    void take(std::size_t peers, const int*& counts_in, const int*& displs_in, const MPI_Datatype*& types_in);
  };

  AlltoallwAlgorithm& algorithm_;
  AlltoallwComm comm_;
  SideCopy send_, recv_;
  AlltoallwArgs args_;
  std::unique_ptr<PreparedExchange> exchange_;  // null: each start runs the algorithm's exchange()
  std::string fallback_path_;                   // the delegation for an intercommunicator, if any
  std::int64_t starts_ = 0;
  std::string path_;
  std::string path_now() const;
};

// Checks what MPI_Alltoallw would reject (null communicator: MPI_ERR_COMM; null argument arrays:
// MPI_ERR_ARG; negative counts: MPI_ERR_COUNT; MPI_DATATYPE_NULL with a non-zero count:
// MPI_ERR_TYPE) and throws tb::MpiError with that class, naming the argument and the algorithm.
// Local: no communication. Returns the communicator's size, rank and kind. (An uncommitted type
// is not detected here: MPI has no call that tells; native's library checks it.)
AlltoallwComm check_alltoallw_args(const AlltoallwArgs& args, std::string_view algorithm);

}  // namespace tb
