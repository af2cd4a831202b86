// The element-wise maximum of a few int64 over the ranks of one node, through shared memory:
// MPI_Allreduce(MPI_MAX) without the library.
//
// auto agrees on every call's class with such a maximum (collectives/algorithms/auto.hpp). Between
// two ranks of one node the library's MPI_Allreduce costs about as much as a small Alltoallw
// itself; this one is a cache line written by each rank and read by the others, the cost of
// node_leader's node barrier.
//
// Layout: one 64-byte record per rank in a window from MPI_Win_allocate_shared, written only by
// its rank: a call number and the values, in two slots by the call number's parity. A rank
// writes its slot, then its call number (release); it reads a peer's slot once that peer's call
// number has reached its own (acquire). A peer can be at most one call ahead (the next call
// waits for this rank's next number), so it writes the other slot and the one read stays valid.
// The window must be in MPI's unified memory model (every MPI library's shared-memory windows
// are; create() checks): the atomics then are the synchronisation, with no MPI_Win_sync.
//
// Waiting spins a while, then gives the core away (sched_yield), so oversubscribed ranks still
// progress, and probes a duplicate communicator of its own, so that the MPI library progresses
// too (see wait_for_node_peers). Not for SimGrid SMPI, where a spinning rank never lets another
// run: create() returns nullptr there, as it does wherever the ranks do not share memory.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>

namespace tb {

// One wait of a rank whose node peers have not yet arrived: a pause instruction for the first
// spins, then sched_yield and one MPI_Iprobe on `progress`, a communicator of the testbed's own
// that carries no point-to-point messages (a probe that finds one does not progress). The probe
// keeps this rank's MPI library progressing: a node peer may be blocked in an MPI_Send into a
// receive this rank posted before the call, and Open MPI may finish a send that MPI_Alltoallw
// already reported complete only while its sender calls MPI. (node_leader's node barrier waits
// the same way.) A failed probe is not reported: the wait must go on, since leaving it would
// strand the node peers that wait for this rank, and the next MPI call of the algorithm meets
// the same failure.
void wait_for_node_peers(int spin, MPI_Comm progress);

class NodeMax {
 public:
  static constexpr int kValues = 3;
  using Values = std::array<std::int64_t, kValues>;

  // Collective over `comm`. A NodeMax for its ranks when all of them share memory (one
  // MPI_COMM_TYPE_SHARED node) and the window is unified; else nullptr, and the caller reduces
  // with MPI. Throws tb::MpiError when an MPI call fails.
  static std::unique_ptr<NodeMax> create(MPI_Comm comm);

  NodeMax(const NodeMax&) = delete;
  NodeMax& operator=(const NodeMax&) = delete;
  ~NodeMax();  // frees the window and the duplicate: collective, as MPI_Win_free is

  // The element-wise maximum of every rank's `mine`. Collective: every rank of the communicator
  // calls it the same number of times.
  Values max(const Values& mine);

  std::int64_t calls() const { return calls_; }

 private:
  struct Record;
  NodeMax(MPI_Comm probed, MPI_Win window, Record* records, int rank, int size);

  MPI_Comm probed_ = MPI_COMM_NULL;  // a duplicate of the communicator, for the waits' probes only
  MPI_Win window_ = MPI_WIN_NULL;
  Record* records_ = nullptr;  // per rank, in rank order, contiguous
  int rank_ = 0, size_ = 0;
  std::int64_t calls_ = 0;
};

}  // namespace tb
