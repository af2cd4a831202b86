// pairwise: MPI_Alltoallw as P-1 exchanges with one peer each, on the user's datatypes.
//
// Step k = 1..P-1: send to rank+k, receive from rank-k (mod P), one MPI_Sendrecv with the
// user's own (count, type) pairs: no packing by the testbed (MPI may still pack non-contiguous
// types internally). The self block is a local copy driven by the flattened block lists.
// Per rank: P-1 messages sent and received, volume = the user's data, one peer in flight at a
// time. The step pattern is the classic contention-avoiding schedule (MPICH's pairwise
// Alltoall/Alltoallv): every step is a permutation, so no rank receives from two at once.
// Wins: large messages and many ranks, where posting all P-1 transfers at once (native)
// overloads the network or the receive queues; loses on small messages (P-1 latencies).
//
// MPI_IN_PLACE: steps pair rank r with (k - r) mod P, so each step sends and receives the same
// region, with MPI_Sendrecv_replace. Traffic runs on a cached duplicate of the communicator.
//
// Prepared (persistent) form: the schedule, one persistent receive and send request per step
// (MPI_Recv_init/MPI_Send_init on the duplicate, a tag of its own) and the self block's flattened
// layouts are made once; a start copies the self block and runs the steps with MPI_Startall and
// MPI_Waitall. In place, a start runs the precomputed steps' MPI_Sendrecv_replace. Moved to other
// arrays (rebind), it keeps the request sets of the last four pairs of arrays, so a plan that
// alternates among a few makes each set once.
#pragma once

#include "collectives/alltoallw.hpp"

namespace tb {

class PairwiseAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "pairwise"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
  std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
};

// How many sets of persistent requests pairwise's prepared forms have made in this process (one
// per prepared call not in place, and one per rebind to arrays whose set is not kept): for tests.
std::int64_t pairwise_request_sets();

}  // namespace tb
