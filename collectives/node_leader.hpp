// node_leader: a node-aware MPI_Alltoallw. On-node data moves through shared memory; the data
// between two nodes travels as ONE aggregated message between their leaders.
//
// Each node (real, or virtual: see node_layout.hpp) keeps, cached on the communicator, a
// control window (each rank's per-peer byte counts and copy decisions, double-buffered by call
// parity) and a staging window that grows to the largest call seen and is then reused. One call:
//   1. every rank publishes its per-peer send/receive byte counts; node barrier;
//   2. every rank packs, straight from its send layout (flattened once, cached on the type),
//      what goes to other nodes into the staging region of that node, and what goes to a rank
//      of its own node either into a staging slot (staged path) or - when its send buffer lives
//      in a NodeSharedBuffer the receiver maps - it only publishes its block list (single-copy
//      path); the self block is copied directly; node barrier;
//   3. the leader(s) send each other node its region as one message (a small per-pair size
//      header in front, checked on arrival) and receive one from each other node, while every
//      rank copies its on-node data into its receive layout: out of the sender's array
//      (single-copy) or out of the staging slot (staged); node barrier;
//   4. every rank unpacks what its leader received for it, straight into its receive layout;
//      a last node barrier only when a single-copy read must finish before senders return.
//
// Messages per call, with N nodes: N-1 sends and N-1 receives per node (by its leaders), against
// P-1 per rank for a flat Alltoallw; the bytes sent between nodes are the user's bytes plus a
// header of 8 * L_sender * L_receiver bytes per node pair, each slot padded to 64 bytes.
// Copies per byte: on-node staged 2 (pack, unpack), on-node single-copy 1, inter-node 2 plus the
// network, self 1. Three or four node barriers per call (fewer on a 1-rank node).
//
// Leaders: TB_NODE_LEADERS=1 (default: the node's first rank), an integer k (k ranks spread over
// the node; the node pairs are dealt out among them), or "numa" (the first rank bound inside
// each NUMA domain, found with hwloc; unbound ranks count as one domain).
// Copy path: TB_NODE_LEADER_COPY=auto (default: single-copy where the send buffer is shared,
// staged otherwise) or staged. last_path() names what ran, e.g.
// "node_leader (on-node: single-copy; inter-node: 1 aggregated message)".
//
// Where it wins: many ranks per node and small or medium messages between nodes (P^2 messages
// become N^2); on one node, large messages from shared arrays (one copy, like a memcpy). It loses
// where the staging copies dominate: large messages from private arrays. MPI_IN_PLACE is
// supported (always staged); intercommunicators are delegated to the native algorithm.
// Origin: the node-aware Alltoall(v) of MPI Advance and the leader-based schemes of
// Bienz et al.; the shared-window staging follows MPI-3 shared-memory practice.
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/type_layout.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class NodeLeaderAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "node_leader"; }
  void run(const AlltoallwArgs& args) override;
  std::string last_path() const override { return path_; }

 private:
  std::string path_ = "node_leader";
  std::vector<std::shared_ptr<const TypeLayout>> slayout_, rlayout_;
  std::vector<std::int64_t> offsets_;
};

// Facts about the node state node_leader keeps on `comm` (for tests and tools); all -1 before
// the first call on comm.
struct NodeLeaderStats {
  std::int64_t window_allocations = -1;  // how often the staging window was (re)allocated
  std::int64_t window_bytes = -1;        // its current capacity
  int leaders_on_my_node = -1;
  std::string leader_rule;  // e.g. "first rank", "2 per node", "numa (hwloc)"
};
NodeLeaderStats node_leader_stats(MPI_Comm comm);

// How many communicators of this process hold node_leader state (windows, duplicated
// communicators) right now; it drops when such a communicator is freed.
int node_leader_live_states();

}  // namespace tb
