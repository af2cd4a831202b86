// What the algorithms in collectives/algorithms/ share beyond the interface: byte addressing of
// the user's buffers, the size of a (count, type) pair, the send side of a call (the receive
// side under MPI_IN_PLACE), and the message tags of the algorithms that send point to point.
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/mpi_error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tb {

// The address `displ` bytes from `buf` (MPI_Alltoallw's displacements are in bytes; a 64-bit
// offset may be an absolute address where `buf` is MPI_BOTTOM). Computed on integers, as MPI
// computes its addresses: pointer arithmetic from a null MPI_BOTTOM, or to a base shifted before
// an array, would be undefined in C++.
inline std::byte* at(void* buf, std::int64_t displ) {
  return reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(buf) + static_cast<std::uintptr_t>(displ));
}
inline const std::byte* at(const void* buf, std::int64_t displ) { return at(const_cast<void*>(buf), displ); }

// The bytes of `count` instances of `type`; 0 for a zero count whatever the type.
inline std::int64_t bytes_of(int count, MPI_Datatype type) {
  if (count == 0) return 0;
  int size = 0;
  TB_MPI_CHECK(PMPI_Type_size(type, &size));
  return static_cast<std::int64_t>(count) * size;
}

// What a rank sends: the send arguments, or under MPI_IN_PLACE what the receive layout holds.
struct SendSide {
  const void* buf;
  const int* counts;
  const int* displs;
  const MPI_Datatype* types;
};
inline SendSide send_side(const AlltoallwArgs& a) {
  if (a.sendbuf == MPI_IN_PLACE) return {a.recvbuf, a.recvcounts, a.rdispls, a.recvtypes};
  return {a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes};
}

// Errors: the MPI error class of every failure an algorithm reports (one place, for all of them).
//
//   what went wrong                                    class              thrown as
//   a null communicator                                MPI_ERR_COMM       tb::MpiError, at once
//   a null argument array                              MPI_ERR_ARG        tb::MpiError, at once
//   a negative count                                   MPI_ERR_COUNT      tb::MpiError
//   MPI_DATATYPE_NULL with a non-zero count            MPI_ERR_TYPE       tb::MpiError
//   a peer sends MORE than the receive block holds     MPI_ERR_TRUNCATE   tb::MpiError (as MPI's p2p)
//   a peer sends LESS than the receive block holds     MPI_ERR_COUNT      tb::MpiError (kShortMessageClass)
//
// A shorter message is erroneous in a collective (the type signatures must match) but legal in
// point to point, where MPI delivers it and the status tells. The testbed's rule: nothing is
// written past what arrived or past the receive block (pairwise and pack_alltoallv deliver what
// arrived, as point to point does; node_leader and ucx_zcopy, which compare sizes before data
// moves, leave a mismatched block as it was; under TB_CHECKED nothing moves), and every rank
// that learns of the mismatch raises kShortMessageClass once the call has completed (the same
// ranks raise MPI_ERR_TRUNCATE for a longer message). Who learns: the receiver (pairwise,
// pack_alltoallv), every rank of the receiver's node (node_leader), every rank (ucx_zcopy, and
// every algorithm under TB_CHECKED=1). native returns what the MPI library returns (MPICH and Open
// MPI: success). A count/type problem is found on its own rank; run() lets that rank still take
// part in the exchange with the bad blocks treated as empty, so that peers whose blocks with it
// are empty too complete, and raises afterwards (under TB_CHECKED every rank raises). An
// algorithm that finds a problem in the middle of its protocol finishes the protocol first, so
// that no rank is left waiting for it.
inline constexpr int kShortMessageClass = MPI_ERR_COUNT;

// MPI_ERR_TRUNCATE when the sender sends more than the receiver expects, else kShortMessageClass.
inline int mismatch_class(std::int64_t sent, std::int64_t expected) {
  return sent > expected ? MPI_ERR_TRUNCATE : kShortMessageClass;
}

// "<algorithm>: rank S sends N bytes to rank R, which expects M (type signatures differ)".
std::string mismatch_text(std::string_view algorithm, int sender, std::int64_t sent, int receiver,
                          std::int64_t expected);
inline MpiError size_mismatch(std::string_view algorithm, int sender, std::int64_t sent, int receiver,
                              std::int64_t expected) {
  return MpiError(mismatch_class(sent, expected), mismatch_text(algorithm, sender, sent, receiver, expected));
}

// The first problem of a call, kept until the protocol has completed (first one wins).
struct CallError {
  int error_class = MPI_SUCCESS;
  std::string text;
  void note(int klass, const std::string& what) {
    if (error_class == MPI_SUCCESS) {
      error_class = klass;
      text = what;
    }
  }
  bool empty() const { return error_class == MPI_SUCCESS; }
  [[noreturn]] void raise() const { throw MpiError(error_class, text); }
};

// A problem as a fixed record that a reduction can carry, so that every rank of a communicator
// learns the worst one found anywhere (what checked mode and ucx_zcopy agree on). The worst is
// the highest severity (an argument error, then a truncation, then a short message, by their
// reporting rank when equal); every rank then raises the same class, naming both sides' figures.
struct ProblemRecord {
  std::int64_t severity = 0;  // 0: none; 1 short message; 2 truncation; 3 argument or other error
  std::int64_t error_class = MPI_SUCCESS;
  std::int64_t reporter = -1;  // the rank that found it (in its group, for an intercommunicator)
  std::int64_t sender = -1, receiver = -1;  // a size mismatch: who sends to whom; -1 otherwise
  std::int64_t sent = 0, expected = 0;
};
ProblemRecord mismatch_record(int reporter, int sender, std::int64_t sent, int receiver, std::int64_t expected);
ProblemRecord error_record(int reporter, int error_class);

// The worst record over every rank of `comm`. Collective: one MPI_Allreduce of a flag (two on an
// intercommunicator, so that both groups see both); only when some rank found a problem, the
// records themselves in a second reduction (two on an intercommunicator).
ProblemRecord agree_on_problem(const ProblemRecord& mine, MPI_Comm comm);

// The text of an agreed record for a rank that did not find it (`algorithm: ...`).
std::string problem_text(std::string_view algorithm, const ProblemRecord& record);

// Point-to-point tags, one per algorithm. Each algorithm sends on its own cached duplicate of
// the user's communicator, so the tags only need to be distinct within an algorithm; distinct
// values still make a message in a trace say whose it is.
namespace tags {
inline constexpr int pairwise = 7701;
inline constexpr int node_leader = 4242;
}  // namespace tags

}  // namespace tb
