#include "collectives/algorithms/pairwise.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"

#include <algorithm>
#include <cstdint>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "pairwise",
    .summary = "P-1 Sendrecv steps on the user's datatypes, self block copied locally",
    .make = &make_algorithm<PairwiseAlltoallw>,
    .cost_schedule = "pairwise",
    .not_modelled = "",
});

// The calls made on a communicator: each call's messages carry a tag of their own (cycling over
// up to 2^20 tags), so that a message a mismatched call left unreceived cannot land in the next
// call's receive.
struct PairwiseCalls {
  std::int64_t calls = 0;
  int span = 1;
};
PairwiseCalls* create_calls(MPI_Comm comm) {
  auto* calls = new PairwiseCalls;
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found));
  const int tag_ub = found ? *static_cast<int*>(value) : 32767;
  calls->span = std::max(1, std::min(tag_ub - tags::pairwise + 1, 1 << 20));
  return calls;
}
int next_tag(MPI_Comm comm) {
  PairwiseCalls& calls = CommCache<PairwiseCalls>::get(comm, create_calls);
  return tags::pairwise + static_cast<int>(calls.calls++ % calls.span);
}

// A receive's outcome: an MPI error (a truncation: the sender sent more) or a short message,
// kept for after the last step so that every peer's step still happens.
void check_receive(int code, const MPI_Status& status, int src, int me, std::int64_t expected, CallError& error) {
  if (code != MPI_SUCCESS) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(code, &error_class);
    error.note(error_class, error_class == MPI_ERR_TRUNCATE
                                ? "pairwise: rank " + std::to_string(src) + " sends more than the " +
                                      std::to_string(expected) + " bytes rank " + std::to_string(me) +
                                      " expects (truncated): " + mpi_error_string(code)
                                : "pairwise: the receive from rank " + std::to_string(src) + " on rank " +
                                      std::to_string(me) + " (expecting " + std::to_string(expected) +
                                      " bytes) failed: " + mpi_error_string(code));
    return;
  }
  int arrived = 0;
  PMPI_Get_count(&status, MPI_BYTE, &arrived);
  if (arrived != MPI_UNDEFINED && arrived != expected)
    error.note(mismatch_class(arrived, expected), mismatch_text("pairwise", src, arrived, me, expected));
}

// Step k exchanges the same region with peer (k - rank) mod P, in place.
void exchange_in_place(const AlltoallwArgs& a, int size, int rank, MPI_Comm comm, int tag, CallError& error) {
  for (int k = 0; k < size; ++k) {
    const int peer = ((k - rank) % size + size) % size;
    const std::int64_t bytes = bytes_of(a.recvcounts[peer], a.recvtypes[peer]);
    if (peer == rank || bytes == 0) continue;
    MPI_Status status;
    const int code = PMPI_Sendrecv_replace(at(a.recvbuf, a.rdispls[peer]), a.recvcounts[peer], a.recvtypes[peer],
                                           peer, tag, peer, tag, comm, &status);
    check_receive(code, status, peer, rank, bytes, error);
  }
}

}  // namespace

// A failed or mismatched receive does not end the call: the remaining steps run, so that no
// peer waits for this rank, and the first problem is thrown at the end (its class:
// algorithm_support.hpp). What remains (as with MPICH's and Open MPI's own Alltoallw): a block
// that one side thinks empty and the other not is skipped by the empty side; a message sent to a
// rank expecting nothing stays unreceived (its tag keeps it out of later calls), and a rank that
// expects a message its peer never sends waits for it. TB_CHECKED=1 catches both before anything
// moves.
void PairwiseAlltoallw::exchange(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const int size = c.size, rank = c.rank;
  const MPI_Comm comm = size > 1 ? private_comm(a.comm) : a.comm;
  const int tag = size > 1 ? next_tag(comm) : tags::pairwise;
  CallError error;
  if (a.sendbuf == MPI_IN_PLACE) {
    set_path("pairwise (in place)");
    exchange_in_place(a, size, rank, comm, tag, error);
    if (!error.empty()) error.raise();
    return;
  }
  const std::int64_t self_sent = bytes_of(a.sendcounts[rank], a.sendtypes[rank]);
  const std::int64_t self_expected = bytes_of(a.recvcounts[rank], a.recvtypes[rank]);
  if (self_sent != self_expected)
    error.note(mismatch_class(self_sent, self_expected),
               mismatch_text("pairwise", rank, self_sent, rank, self_expected) + " [the self block]");
  if (self_sent > 0 && self_expected > 0)
    copy_typed_prefix(at(a.sendbuf, a.sdispls[rank]), a.sendcounts[rank], *type_layout(a.sendtypes[rank]),
                      at(a.recvbuf, a.rdispls[rank]), a.recvcounts[rank], *type_layout(a.recvtypes[rank]));
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size, src = (rank - k + size) % size;
    // A zero-byte block on one side is a zero-byte block on the other (matching signatures):
    // both skip it, and each Sendrecv degenerates to a plain send or receive.
    const bool sends = bytes_of(a.sendcounts[dst], a.sendtypes[dst]) > 0;
    const std::int64_t expected = bytes_of(a.recvcounts[src], a.recvtypes[src]);
    const bool recvs = expected > 0;
    MPI_Status status;
    const int code = PMPI_Sendrecv(at(a.sendbuf, a.sdispls[dst]), sends ? a.sendcounts[dst] : 0,
                                   sends ? a.sendtypes[dst] : MPI_BYTE, sends ? dst : MPI_PROC_NULL, tag,
                                   at(a.recvbuf, a.rdispls[src]), recvs ? a.recvcounts[src] : 0,
                                   recvs ? a.recvtypes[src] : MPI_BYTE, recvs ? src : MPI_PROC_NULL, tag, comm,
                                   &status);
    if (recvs || code != MPI_SUCCESS) check_receive(code, status, src, rank, expected, error);
  }
  if (!error.empty()) error.raise();
}

}  // namespace tb
