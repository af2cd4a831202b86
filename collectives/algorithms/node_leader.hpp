// node_leader: a node-aware MPI_Alltoallw. On-node data moves through shared memory; the data
// between two nodes travels as ONE aggregated message between their leaders.
//
// Each node (real, or virtual: see node_layout.hpp) keeps, cached on the communicator, a
// control window (each rank's per-peer sizes, layouts' block counts and, where its arrays lie in
// a NodeSharedBuffer the peer maps, their addresses; double-buffered by call parity) and a
// staging window that grows to the largest call seen and is then reused. One call:
//   1. publish: every rank publishes both sides of every peer; node barrier (B1);
//   2. plan: from that, every rank derives the same plan: for each on-node pair, a DIRECT copy
//      when the arrays allow it - the side whose own layout is more fragmented copies, walking
//      its own array in address order: the sender PUSHES into a shared receive array, or the
//      receiver PULLS from a shared send array - otherwise STAGED through the staging window;
//   3. stage: every rank packs (straight from its send layout, flattened once and cached on the
//      type) its staged on-node slots and its data for other nodes into the staging region of
//      that node, and publishes the block lists its direct partners need; node barrier (B2);
//   4. exchange: the leader(s) send each other node its region as one message (with a small
//      per-pair size header, checked on arrival) and receive one from each other node, while
//      every rank does its pushes, pulls and unpacks of on-node staged slots; node barrier (B3)
//      when there are other nodes;
//   5. unpack: every rank unpacks what its leader received for it; a last node barrier (B4) only
//      when direct copies must finish before the partners return.
// Copies are grouped into streams ordered by the address in the rank's own array (several
// destinations fed from one front-to-back pass over the source, or the reverse), and large
// streams use streaming stores (pack.hpp): a strided array is then read in one pass instead of
// one pass per peer.
//
// Messages per call, with N nodes and P ranks: N-1 sends and N-1 receives per node (by its
// leaders), against P-1 per rank for a flat Alltoallw; the bytes between nodes are the user's
// bytes plus a header of 8 * (ranks on the sending node) * (ranks on the receiving node) bytes
// per node pair, each slot padded to 64 bytes. Copies per byte: on-node direct 1, on-node
// staged 2, inter-node 2 plus the network, self 1.
//
// Prepared form (prepare(), as MPI_Alltoallw_init): done ONCE, at prepare (collective): steps
// 1-2 (publish, B1, plan; the sizes were checked on every rank by prepare()), the staging
// layout, a staging area of the call's own (lent from a pool kept with the node state, below),
// the size headers (written into the area once; not checked at starts, as prepare() checked
// the sizes), the block lists direct partners walk (and a barrier), the copy lists of every
// step (each copy's pieces merged once into address order; 24 bytes per contiguous run, kept as
// long as the call) and the leaders' persistent sends and receives (MPI_Send_init/Recv_init). Per START: pack the staged data; node barrier S1; the leaders start their
// messages while every rank pushes, pulls and unpacks its on-node staged slots; the leaders
// wait and flag failures; node barrier S2 unless one node stages everything; unpack what came
// from other nodes. Barriers per start: 1 on one node with everything staged (two staging
// buffers used by start parity: a rank writes start N into buffer N%2 after S1 of start N-1,
// which its peers reach only after reading start N-2's data from that buffer), 2 with direct
// copies (S2 keeps the partners' arrays in use until the copies are done; one buffer) or with
// several nodes (S2 after the leaders' messages; two buffers), 0 on a node of one rank. The
// path says so: "node_leader (persistent; on-node: staged; inter-node: 0 aggregated messages; 1
// node barrier per start)". On one node, where every block between two ranks is under 8 KiB,
// the prepared form stages even arrays in shared memory: the second copy of a small block costs
// less than the second barrier of a direct copy, so such calls keep to 1 barrier per start.
// Rebinding (PreparedAlltoallw::rebind): where no rank of the communicator copies directly (an
// allreduce at prepare says so), each rank's copy lists touch only the staging area and its own
// two arrays, so a rebound start moves those pieces by how far its arrays moved; with direct
// copies a partner's lists hold this rank's addresses, and the form does not rebind.
// The areas: the node state keeps them and frees them with the communicator; a prepared call
// holds one through a shared_ptr, so dropping it is local (it frees its persistent requests,
// which is local too). A prepare lends the smallest area that no rank of the node holds any more
// (one MPI_Allreduce on the node decides, since ranks drop their calls in different orders),
// grows one, or makes a new one: as many areas as prepared calls were alive at once, each as
// large as the largest call it served. Blocking calls stage in the node's window and other
// prepared calls in their own areas, so interleaving them with starts cannot disturb a start;
// the node barrier count and the leaders' message order are shared and stay consistent because
// every call is collective and completes its messages before returning. A failed leader message
// (or one that could not be created) is flagged in the area: every rank of the node passes both
// barriers, unpacks nothing from other nodes, and raises. MPI_IN_PLACE stages; arrays in a
// NodeSharedBuffer take the direct push/pull as above. The communicator must not be freed before
// the last start (dropping the prepared call after it is fine).
//
// Leaders: TB_NODE_LEADERS=1 (default: the node's first rank), an integer k (k ranks spread over
// the node; the node pairs are dealt out among them), or "numa" (the first rank bound inside
// each NUMA domain, found with hwloc; unbound ranks count as one domain).
// Copy path: TB_NODE_LEADER_COPY=auto (default: direct where the arrays are shared, staged
// otherwise) or staged. last_path() names what this rank did, e.g.
// "node_leader (on-node: single-copy push; inter-node: 1 aggregated message)".
//
// Where it wins: many ranks per node and small or medium messages between nodes (P^2 messages
// become N^2); on one node, arrays in shared memory (one copy, in address order). Staging costs a
// second copy of on-node data, which the ordered streams mostly hide at large sizes. MPI_IN_PLACE
// is supported (always staged); intercommunicators are delegated to the native algorithm.
// Origin: the node-aware Alltoall(v) of MPI Advance (Bienz et al.) and leader-based aggregation;
// the shared-window protocol follows MPI-3 shared-memory practice.
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/pack.hpp"
#include "collectives/type_layout.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class NodeLeaderAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "node_leader"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
  // The prepared form (see above). Collective over args.comm; the result's destruction is local.
  std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;

 private:
  struct Call;      // one call: its arguments, the node's state, the plan and the steps (.cpp)
  class Prepared;   // one prepared call: its area, copy lists and leader messages (.cpp)

  // Tables a call fills, kept between calls so that a warm call allocates nothing.
  std::vector<std::shared_ptr<const TypeLayout>> send_layouts_, recv_layouts_;  // per peer
  std::vector<std::int64_t> staged_bytes_;  // [local rank * nodes + node]: what it stages for that node
  std::vector<std::int64_t> out_offset_, out_bytes_;  // per node: the staging region my node sends it
  std::vector<std::int64_t> in_offset_, in_bytes_;    // per node: the staging region its message fills
  std::vector<std::int64_t> list_offsets_;  // [local rank * ranks on node + partner]: its block lists
  std::vector<MPI_Request> requests_;       // this rank's leader messages
  std::vector<std::int64_t> expected_bytes_;  // per request: what a receive must bring; -1 for a send
  std::vector<MPI_Status> statuses_;
  MergedCopy by_source_, by_dest_;  // copy streams in source / destination address order
};

// Facts about the node state node_leader keeps on `comm` (for tests and tools); all -1 before
// the first call on comm.
struct NodeLeaderStats {
  std::int64_t window_allocations = -1;  // how often the staging window was (re)allocated
  std::int64_t window_bytes = -1;        // its current capacity
  bool shared_windows = false;           // MPI shared windows; a node of one rank uses private memory
  int leaders_on_my_node = -1;
  std::string leader_rule;  // e.g. "first rank", "2 per node", "numa (hwloc)"
  int prepared_areas = -1;  // staging areas kept for prepared calls (live ones and idle ones)
  int prepared_areas_held = -1;          // ... of which prepared calls of this process hold
  std::int64_t prepared_area_bytes = -1;  // their capacity in all
};
NodeLeaderStats node_leader_stats(MPI_Comm comm);

// How many communicators of this process hold node_leader state (windows, duplicated
// communicators) right now; it drops when such a communicator is freed.
int node_leader_live_states();

#if defined(TB_SMPI)
// Under SMPI: how many node barrier mutex and condition variable pairs this rank created and has
// not destroyed (local rank 0 of each node of a communicator with node_leader state makes one).
int node_leader_live_node_syncs();
#endif

}  // namespace tb
