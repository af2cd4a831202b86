// A modelled network: which link model carries messages between ranks, over which topology, and
// how concurrent messages share it. One rank per FPGA (IEC, PCIe+MPI) or per host process.
//
// Topologies (the optical circuit switch wires ports point to point, fixed for a run):
//   ring        i <-> i+1 (mod P), each link bundling channels_per_fpga/2 channels;
//   torus RxC   each FPGA to its four neighbours, channels_per_fpga/4 channels per link;
//   links       an explicit list [[u, v, channels], ...].
// Links are full duplex: each direction is a separate resource. A message between FPGAs that are
// not wired together is forwarded along a shortest path (breadth-first, lowest rank first, so
// routes are deterministic) through the intermediate FPGAs.
//
// Sharing (the cost of one phase of concurrent messages), by kind:
//   iec       every directed link serialises the bytes routed over it, in whole chunks of its
//             width; the phase takes the most loaded link's time plus the longest route's
//             latency (hops x channel latency): T = max_link ceil-chunks(load) / f + max_route h*lat.
//   host      Hockney per rank: a rank's messages leave one after another and its NIC carries the
//             larger of its sent and received bytes: T = max_rank (n_sent alpha + max(out, in) beta).
//             With tb-beff's measured message times m(L) (HostMessage, link_models.hpp), the same
//             structure on the measured times: a rank's sent messages one after another, and its
//             received ones, the larger of the two: T = max_rank max(sum_sent m(L), sum_received m(L)).
//             A rank with k equal messages each way takes k m(L); for m(L) = alpha + beta L it is
//             the Hockney formula, except that received messages pay alpha too.
//   pcie_mpi  three stages one after the other (the base path does not overlap them): PCIe out on
//             every FPGA, the host network as for `host`, PCIe in; each stage takes its slowest rank.
//             Node contention: with fpgas_per_node > 1 (ranks numbered node by node), each transfer
//             of a rank whose node has another FPGA transferring in the same stage takes
//             node_contention(L) longer (link_models.hpp, hpcc_reference.hpp).
//   cluster   a SimGrid cluster as SMPI simulates it (cluster_fabric.hpp): ranks fill its nodes
//             ranks_per_node at a time (default: its cores per node); messages within a node
//             each take the loopback alone, the others a bottleneck bound over the directed
//             links of their routes; the phase takes the longer of the two.
// Messages from a rank to itself are local copies, costed by the schedule, never by the network.
#pragma once

#include "fpga_transport/cluster_fabric.hpp"
#include "fpga_transport/link_models.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace tb::fpga {

struct Message {
  int src = 0, dst = 0;
  double bytes = 0.0;
  // Its sender wrote the send buffer just before (it packed it) and its receiver is on the same
  // node, whose copy reads bytes another core has just written (a host network's
  // fresh_messages() prices that; the schedule decides from ScheduleOptions::ranks_per_node).
  bool fresh = false;
};

enum class NetworkKind { iec, pcie_mpi, host, cluster };

class Network {
 public:
  // From a JSON spec: {"name", "kind": "iec"|"pcie_mpi"|"host"|"cluster", "topology":
  // "ring"|"torus"|"links", "torus_dims": [R, C], "links": [[u, v, channels]...],
  // "channels_per_fpga", "iec": {...}, "pcie_mpi": {...}, "host": {...}, "cluster": {...}}.
  // `ranks` is the number of FPGAs / processes.
  static Network from_json(const nlohmann::json& spec, int ranks);
  static Network from_file(const std::string& path, int ranks);

  const std::string& name() const { return name_; }
  NetworkKind kind() const { return kind_; }
  int ranks() const { return ranks_; }
  // Ranks per node for node_leader: "ranks_per_node" in the spec; default one per FPGA for iec
  // and pcie_mpi (each FPGA is its own end point), all ranks on one node for host, and the
  // cores of a node for cluster, where it also places the ranks on the nodes.
  int ranks_per_node() const { return ranks_per_node_; }
  // A cluster's placement: `per_node` ranks on each node (at most its cores; the nodes must hold
  // every rank). Other kinds only record it for node_leader.
  void place_ranks(int per_node);
  std::string describe() const;

  // One measured quantity of a host network at a point (tb-model --values-at): the switchable
  // term that uses it, what it is at which traffic or block size, and its seconds.
  struct TermValue {
    std::string term, what;
    double seconds;
  };
  // Every measured host quantity at a message of `bytes` (empty for other kinds): the message and
  // self-message times, the measured extras (fresh, handoff, per get), the tables' extras at
  // `traffic_bytes` (cold) and `block_bytes` (non-contiguous), where these are above 0, else at
  // each measured traffic or block size, and the library engine's pack of the bytes (in blocks of
  // `block_bytes`, else contiguous). Read as the cost model reads them; a term switched off
  // (Network::drop_*) is left out, or read as the model then reads it (the fit for m(L)).
  std::vector<TermValue> host_values_at(double bytes, double traffic_bytes = 0, double block_bytes = 0) const;

  // Seconds for one phase of concurrent messages (self messages ignored).
  double phase_time_s(const std::vector<Message>& messages) const;
  // The same, where each rank's call moves `traffic_bytes[rank]` through memory: on a host with
  // measured cold messages (cold_messages()), each message also pays the extra of its buffers
  // being out of cache after that much traffic, on its sender's and its receiver's side.
  double phase_time_s(const std::vector<Message>& messages, const std::vector<double>& traffic_bytes) const;
  // Seconds for one phase of one-sided zero-copy gets, each made by its message's receiver: on a
  // host with measured gets (zero_copy_gets()), the slowest rank's gets one after another at
  // their measured time, its senders idle (measured from cache: no cold extra); otherwise
  // phase_time_s with the traffic, as messages like any other.
  double gets_phase_time_s(const std::vector<Message>& messages, const std::vector<double>& traffic_bytes) const;
  // One message alone (ping-pong half round trip on a quiet network).
  double message_time_s(int src, int dst, double bytes) const;

  // The route src -> dst as the list of ranks visited, src first (iec only; others: {src, dst}).
  std::vector<int> route(int src, int dst) const;
  int hops(int src, int dst) const { return static_cast<int>(route(src, dst).size()) - 1; }

  const IecLink& iec() const { return iec_; }
  const PcieMpiPath& pcie_mpi() const { return pcie_; }
  const HostMessage& host() const { return host_; }
  const ClusterFabric& cluster() const { return cluster_; }
  // Switches for comparisons (tb-model --without): the same network without one of its terms.
  void drop_node_contention() { pcie_.node_contention = {}; }
  void drop_measured_messages() { host_.measured = {}; }  // the host's Hockney fit instead
  void drop_library() { has_library_ = false; }
  void drop_self_messages() { host_.self_measured = {}; }  // a self message then costs a plain copy
  // The measured time of a rank's message to itself (host with tb-beff's self exchanges), or null.
  const MeasuredCurve* self_messages() const {
    return kind_ == NetworkKind::host && !host_.self_measured.empty() ? &host_.self_measured : nullptr;
  }
  // The measured extra time of a non-contiguous message (host with tb-beff's non-contiguous
  // exchanges), or null. It prices the library's packing of a message in place of `library()`.
  const HostMessage* noncontiguous_messages() const {
    return kind_ == NetworkKind::host && !host_.send_extra.empty() && !host_.recv_extra.empty() ? &host_ : nullptr;
  }
  void drop_noncontiguous_messages() { host_.send_extra = {}, host_.recv_extra = {}; }
  // Whether a rank's non-contiguous sends and receives of one phase pay the larger of their two
  // measured extras rather than their sum (host with measured non-contiguous messages): with both
  // sides vectors, the library packs and unpacks in the one pipeline of each exchange, and the
  // exchange costs about the larger side's extra (experiments/probes/noncontiguous_message.c).
  bool noncontiguous_sides_overlap() const { return noncontiguous_messages() && sides_overlap_; }
  void drop_noncontiguous_overlap() { sides_overlap_ = false; }  // the two extras then add up
  // The measured extra time of a non-contiguous message from a rank to itself (host with
  // tb-beff's non-contiguous self exchanges), or null: a self message then pays the pairs' extra.
  const HostMessage* noncontiguous_self_messages() const {
    return kind_ == NetworkKind::host && !host_.self_send_extra.empty() && !host_.self_recv_extra.empty() ? &host_
                                                                                                          : nullptr;
  }
  void drop_noncontiguous_self_messages() { host_.self_send_extra = {}, host_.self_recv_extra = {}; }
  // The measured extra time of reading what another rank of the node just wrote (host with
  // tb-beff's node handoffs), or null.
  const HostMessage* node_handoff() const {
    return kind_ == NetworkKind::host && !host_.node_handoff.empty() ? &host_ : nullptr;
  }
  void drop_node_handoff() {
    host_.node_handoff = {};
    host_.node_handoff_pieces = {};
  }
  void drop_node_handoff_pieces() { host_.node_handoff_pieces = {}; }  // copies in blocks pay the contiguous extra
  // The measured time of one zero-copy get (host with tb-beff's gets), or null.
  const MeasuredCurve* zero_copy_gets() const {
    return kind_ == NetworkKind::host && !host_.gets.empty() ? &host_.gets : nullptr;
  }
  void drop_zero_copy_gets() { host_.gets = {}; }
  // The measured extra of a message after other memory traffic (host with tb-beff's cold
  // messages), or null.
  const ColdMessageExtra* cold_messages() const {
    return kind_ == NetworkKind::host && !host_.cold.empty() ? &host_.cold : nullptr;
  }
  void drop_cold_messages() { host_.cold = {}; }
  // The same of a message from a rank to itself (host with tb-beff's cold self messages), or null:
  // a self message then pays no cold extra.
  const ColdMessageExtra* cold_self_messages() const {
    return kind_ == NetworkKind::host && !host_.self_cold.empty() ? &host_.self_cold : nullptr;
  }
  void drop_cold_self_messages() { host_.self_cold = {}; }
  // The measured extra of a message whose bytes its sender has just written (host with tb-beff's
  // fresh messages), or null.
  const HostMessage* fresh_messages() const {
    return kind_ == NetworkKind::host && !host_.fresh.empty() ? &host_ : nullptr;
  }
  void drop_fresh_messages() { host_.fresh = {}; }
  // Seconds from the first rank's exit from an MPI_Barrier over all ranks to each rank's (a cluster
  // whose barrier is described, ClusterFabric::barrier), or empty where the network does not say.
  std::vector<double> barrier_exits_s() const;
  void drop_barrier() { cluster_.barrier.clear(); }
  // The MPI library's own datatype engine, when the spec calibrates it ("library": a memory model).
  const MemoryModel* library() const { return has_library_ ? &library_ : nullptr; }

 private:
  void describe_host(std::ostream& s) const;  // describe()'s text for a host network
  struct Edge {
    int to;
    int channels;
  };
  void read_pcie_mpi(const nlohmann::json& pcie_mpi);
  void wire_iec_links(const nlohmann::json& spec);
  void build_routes();
  std::vector<bool> shares_node(const std::vector<double>& bytes) const;
  double cluster_phase_s(const std::vector<Message>& messages) const;
  double host_phase_s(const std::vector<Message>& messages, const std::vector<double>* traffic_bytes = nullptr) const;
  IecLink link_model(int u, int v) const;  // the IEC model of the link u -> v (its channel count)

  std::string name_;
  NetworkKind kind_ = NetworkKind::host;
  int ranks_ = 1;
  int ranks_per_node_ = 1;
  IecLink iec_;
  PcieMpiPath pcie_;
  HostMessage host_;
  ClusterFabric cluster_;
  MemoryModel library_;
  bool has_library_ = false;
  bool sides_overlap_ = true;
  std::vector<std::vector<Edge>> adjacency_;
  std::vector<std::vector<int>> next_hop_;  // next_hop_[src][dst]
  std::string topology_;
};

}  // namespace tb::fpga
