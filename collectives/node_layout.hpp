// Which ranks of a communicator share a node, real or emulated - the first piece of the
// node-aware algorithms (issue: node_leader).
//
// Real nodes come from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). For experiments on one host
// the testbed can split them further into virtual nodes:
//   TB_RANKS_PER_NODE=R          consecutive blocks of R ranks (rank / R)
//   TB_NUM_NODES=K               K virtual nodes, TB_NODE_ORDER=block (default) or round-robin
// A virtual node never spans two real nodes (the split is by real node and virtual id), so
// shared-memory windows stay possible on every virtual node. The layout is cached on the
// communicator with an attribute keyval and freed with it.
#pragma once

#include <mpi.h>

#include <string>

namespace tb {

struct NodeLayout {
  MPI_Comm node_comm = MPI_COMM_NULL;    // the ranks of my node, ordered as in the communicator
  MPI_Comm leader_comm = MPI_COMM_NULL;  // rank 0 of every node; MPI_COMM_NULL on other ranks
  int node = 0;        // my node's index, 0..nodes-1, in order of the nodes' lowest ranks
  int nodes = 1;       // how many nodes the communicator spans
  int node_rank = 0;   // my rank in node_comm
  int node_size = 1;   // ranks on my node
  std::string source;  // how the nodes were found, e.g. "shared memory" or "TB_RANKS_PER_NODE=2"
};

// The node layout of an intracommunicator (collective on first use, cached afterwards).
// Throws std::invalid_argument for malformed TB_* settings, naming the variable.
const NodeLayout& node_layout(MPI_Comm comm);

}  // namespace tb
