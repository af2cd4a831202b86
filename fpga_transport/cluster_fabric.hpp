// A SimGrid cluster as SMPI simulates it, for tb-model's `cluster` networks: the same nodes, links,
// routes and per-message factors as a `<cluster>` of a SimGrid 3.32 platform file, so that the
// model can be checked against SMPI's times of the same calls without noise (docs/cost-model.md,
// "The cluster network"). experiments/platform_network.py writes the description from the
// platform file; nothing here reads XML.
//
// What SimGrid 3.32 builds and how SMPI times a message (read in its source and checked against
// smpirun; the comments in cluster_fabric.cpp name the functions):
//   - hosts: the cluster's radical in order; ranks fill them `ranks_per_node` at a time;
//   - a message carries bytes + 16 (SMPI's envelope); with route latency L (the sum of its
//     links' latencies) it takes lat_factor(P) L, then moves at bw_factor(P) x its share of the
//     links on its route. The factors are piecewise constant in P (smpi/bw-factor, lat-factor);
//   - two ranks of one node: the node's loopback link, FATPIPE (every message gets the whole
//     bandwidth, concurrent ones do not share);
//   - other nodes: the source node's link up, the topology's links, the destination's link down;
//     each direction of a link is its own shared resource (SPLITDUPLEX, the cluster default),
//     and every message also loads its reverse route with 5 % of its bytes (crosstraffic);
//   - MPI_Barrier, by default SMPI's "ompi_basic_linear": every rank sends rank 0 a zero-byte
//     message, then rank 0 sends every rank one at once and leaves when the last has arrived
//     (its sends complete with their transfers because tb-smpirun sets
//     smpi/send-is-detached-thresh to 0; with SMPI's default they would be detached and rank 0
//     would leave first);
//   - DRAGONFLY "G,g;C,c;B,b;N": node id -> (group, chassis, router, node) in that nesting;
//     green links join the routers of a chassis (b links' bandwidth), black ones the same router
//     position across a group's chassis (c), blue ones the groups (g, from router (s,0,d) to
//     (d,0,s)); FLAT: one shared backbone (bb_bw, bb_lat) or none.
//
// The model of one phase of concurrent messages is a bottleneck bound, not SimGrid's max-min
// solver: the phase takes the longest of (a) each message alone on its route and (b) the most
// loaded directed link's bytes over its bandwidth plus the longest factored latency. Max-min
// shares a saturated link in proportion to 1/(L + 8775 sum 1/bw) per flow; the bound ignores
// that, which is exact when the flows through the bottleneck finish together.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tb::fpga {

// A piecewise constant factor of the message size: the factor of threshold T applies when
// T < P <= the next threshold, and 1 at or below the lowest (SimGrid's smpi/bw-factor syntax
// "T:f;T:f;...").
struct SizeFactor {
  std::vector<std::pair<double, double>> by_bytes;  // (threshold, factor), sorted by threshold
  double at(double payload_bytes) const;
};

struct ClusterFabric {
  std::string topology = "FLAT";  // FLAT or DRAGONFLY
  std::vector<std::vector<int>> topo_parameters;  // DRAGONFLY: [[G, g], [C, c], [B, b], [N]]
  int nodes = 1, cores_per_node = 1;
  double bandwidth_bytes_per_s = 0.0, latency_s = 0.0;                    // every node and router link
  double loopback_bandwidth_bytes_per_s = 0.0, loopback_latency_s = 0.0;  // two ranks of one node
  double backbone_bandwidth_bytes_per_s = 0.0, backbone_latency_s = 0.0;  // FLAT: 0 = no backbone
  SizeFactor bandwidth_factor, latency_factor;
  double envelope_bytes = 16.0;
  double crosstraffic = 0.05;      // share of a message's bytes on its reverse route
  double tcp_gamma_bytes = 4194304;  // network/TCP-gamma: a flow's rate is at most gamma / (2 L)
  std::string source;              // the platform file it was written from
  // MPI_Barrier's algorithm in the simulated library, which sets how unevenly the ranks leave the
  // testbed's timing barrier: "ompi_basic_linear" (SMPI 3.32's default) or empty (not described:
  // no skew is modelled).
  std::string barrier;

  // A directed link and its figures.
  struct Link {
    std::uint64_t id = 0;
    double bandwidth_bytes_per_s = 0.0, latency_s = 0.0;
  };
  // The links from node `src` to node `dst` (src != dst), as SimGrid 3.32 routes them.
  std::vector<Link> route(int src, int dst) const;
  // Seconds for one message of `bytes` between two ranks of one node (the loopback).
  double on_node_message_s(double bytes) const;
  // Seconds for one phase of concurrent messages between nodes: (node src, node dst, bytes).
  double between_nodes_s(const std::vector<std::pair<std::pair<int, int>, double>>& messages) const;
  // Seconds from the release of an "ompi_basic_linear" barrier (rank 0's zero-byte sends to every
  // rank at once) to each rank's exit, rank r on node `node_of_rank[r]`; rank 0 leaves when its
  // last send has arrived.
  std::vector<double> linear_barrier_exits_s(const std::vector<int>& node_of_rank) const;
  std::string describe() const;
  void check() const;  // named std::invalid_argument on an inconsistent description
};

void from_json(const nlohmann::json& j, SizeFactor& f);
void from_json(const nlohmann::json& j, ClusterFabric& c);

}  // namespace tb::fpga
