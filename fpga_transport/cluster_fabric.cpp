#include "fpga_transport/cluster_fabric.hpp"

#include "fpga_transport/link_models.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tb::fpga {

// At or below the lowest threshold no factor applies (1), as in SimGrid; SMPI's own start at 0.
double SizeFactor::at(double payload_bytes) const {
  double factor = 1.0;
  for (const auto& [threshold, value] : by_bytes)
    if (payload_bytes > threshold) factor = value;
  return factor;
}

namespace {

// Link ids: kind in the top bits, then the two ends (lower first) and the direction.
enum LinkKind : std::uint64_t { kNode = 1, kGreen = 2, kBlack = 3, kBlue = 4, kBackbone = 5 };
std::uint64_t link_id(LinkKind kind, std::uint64_t a, std::uint64_t b, bool up) {
  return kind << 60 | a << 32 | b << 1 | (up ? 0 : 1);
}

struct Coords {
  int group, chassis, router, node;
};

}  // namespace

// Dragonfly routes follow DragonflyZone::get_local_route of SimGrid 3.32, including its
// same-group case: after the green link it continues from the router of the same position in
// chassis 0 (the chassis is dropped), so a route may take a black link 0 <-> destination chassis
// that a textbook minimal route would not, or none where it should. The model mirrors the
// simulator, not the textbook. Green and black links go "up" from the lower router index.
std::vector<ClusterFabric::Link> ClusterFabric::route(int src, int dst) const {
  std::vector<Link> links;
  links.push_back({link_id(kNode, static_cast<std::uint64_t>(src), 0, true), bandwidth_bytes_per_s, latency_s});
  if (topology == "FLAT") {
    if (backbone_bandwidth_bytes_per_s > 0)
      links.push_back({link_id(kBackbone, 0, 0, true), backbone_bandwidth_bytes_per_s, backbone_latency_s});
  } else {
    const int chassis = topo_parameters[1][0], routers = topo_parameters[2][0], per_router = topo_parameters[3][0];
    auto coords = [&](int id) {
      return Coords{id / (chassis * routers * per_router), id / (routers * per_router) % chassis,
                    id / per_router % routers, id % per_router};
    };
    auto router_index = [&](int g, int c, int b) { return (g * chassis + c) * routers + b; };
    auto hop = [&](LinkKind kind, std::uint64_t from, std::uint64_t to, int count) {
      links.push_back({link_id(kind, std::min(from, to), std::max(from, to), from < to),
                       bandwidth_bytes_per_s * count, latency_s});
    };
    const Coords s = coords(src), d = coords(dst);
    const int green = topo_parameters[2][1], black = topo_parameters[1][1], blue = topo_parameters[0][1];
    if (s.group == d.group && s.chassis == d.chassis && s.router == d.router) {
      // the shared router only
    } else if (s.group == d.group) {
      if (s.router == d.router) {
        hop(kBlack, router_index(s.group, s.chassis, s.router), router_index(s.group, d.chassis, s.router), black);
      } else {
        hop(kGreen, router_index(s.group, s.chassis, s.router), router_index(s.group, s.chassis, d.router), green);
        if (d.chassis != 0)
          hop(kBlack, router_index(s.group, 0, d.router), router_index(s.group, d.chassis, d.router), black);
      }
    } else {
      int c = s.chassis, b = s.router;
      if (b != d.group) {
        hop(kGreen, router_index(s.group, c, b), router_index(s.group, c, d.group), green);
        b = d.group;
      }
      if (c != 0) hop(kBlack, router_index(s.group, c, b), router_index(s.group, 0, b), black);
      hop(kBlue, static_cast<std::uint64_t>(s.group), static_cast<std::uint64_t>(d.group), blue);
      if (d.router != s.group)
        hop(kGreen, router_index(d.group, 0, s.group), router_index(d.group, 0, d.router), green);
      if (d.chassis != 0) hop(kBlack, router_index(d.group, 0, d.router), router_index(d.group, d.chassis, d.router), black);
    }
  }
  links.push_back({link_id(kNode, static_cast<std::uint64_t>(dst), 0, false), bandwidth_bytes_per_s, latency_s});
  return links;
}

// One message alone: lat_factor(P) L, then P at bw_factor(P) x min(slowest link, gamma / 2L)
// (NetworkCm02Model::communicate, P = bytes + the 16-byte envelope of smpi Request::start).
double ClusterFabric::on_node_message_s(double bytes) const {
  const double p = bytes + envelope_bytes;
  const double rate = std::min(loopback_bandwidth_bytes_per_s, tcp_gamma_bytes / (2 * loopback_latency_s));
  return latency_factor.at(p) * loopback_latency_s + p / (bandwidth_factor.at(p) * rate);
}

double ClusterFabric::between_nodes_s(const std::vector<std::pair<std::pair<int, int>, double>>& messages) const {
  std::unordered_map<std::uint64_t, std::pair<double, double>> load;  // id -> (bytes at bw_factor, bandwidth)
  double alone = 0.0, longest_latency = 0.0;
  for (const auto& [ends, bytes] : messages) {
    const double p = bytes + envelope_bytes, units = p / bandwidth_factor.at(p);
    const auto path = route(ends.first, ends.second);
    double latency = 0.0, slowest = path.front().bandwidth_bytes_per_s;
    for (const Link& l : path) {
      latency += l.latency_s;
      slowest = std::min(slowest, l.bandwidth_bytes_per_s);
      auto& [used, bandwidth] = load[l.id];
      used += units;
      bandwidth = l.bandwidth_bytes_per_s;
    }
    for (const Link& l : route(ends.second, ends.first)) {  // crosstraffic: the acknowledgements
      auto& [used, bandwidth] = load[l.id];
      used += crosstraffic * units;
      bandwidth = l.bandwidth_bytes_per_s;
    }
    const double factored_latency = latency_factor.at(p) * latency;
    longest_latency = std::max(longest_latency, factored_latency);
    alone = std::max(alone, factored_latency + units / std::min(slowest, tcp_gamma_bytes / (2 * latency)));
  }
  double bottleneck = 0.0;
  for (const auto& [id, l] : load) bottleneck = std::max(bottleneck, l.first / l.second);
  return messages.empty() ? 0.0 : std::max(alone, bottleneck + longest_latency);
}

// The release's messages carry the 16-byte envelope each. On rank 0's node each takes the loopback
// alone (FATPIPE). To another node a message first waits out its route's factored latency (in
// SimGrid's CM02 an action moves no bytes before its latency has passed) and then shares its
// links: each directed link serves the messages that have reached it in the order their
// latencies end, those of one latency as one batch, and a message arrives when the last of its
// links has served its batch. A batch that reaches a busy link waits for it, where max-min
// shares the link (weighted by each flow's route): the link's last byte leaves at the same time
// either way, so rank 0's exit (the last release) is kept, but once batches overlap the earlier
// ones arrive too early here. Crosstraffic (on the reverse links) and TCP-gamma (far above 16
// bytes) are left out.
std::vector<double> ClusterFabric::linear_barrier_exits_s(const std::vector<int>& node_of_rank) const {
  const double units = envelope_bytes / bandwidth_factor.at(envelope_bytes);
  const int root = node_of_rank.empty() ? 0 : node_of_rank.front();
  std::map<int, int> ranks_on;  // node other than the root's -> ranks the release reaches there
  for (std::size_t r = 1; r < node_of_rank.size(); ++r)
    if (node_of_rank[r] != root) ++ranks_on[node_of_rank[r]];
  // per directed link: latency end -> bytes (at bw_factor) of the messages reaching it then
  std::unordered_map<std::uint64_t, std::map<double, double>> batches;
  std::unordered_map<std::uint64_t, double> bandwidth;
  std::map<int, double> start;  // node -> its messages' factored latency
  for (const auto& [node, count] : ranks_on) {
    double latency = 0.0;
    for (const Link& l : route(root, node)) latency += l.latency_s;
    start[node] = latency_factor.at(envelope_bytes) * latency;
    for (const Link& l : route(root, node)) {
      batches[l.id][start[node]] += count * units;
      bandwidth[l.id] = l.bandwidth_bytes_per_s;
    }
  }
  std::unordered_map<std::uint64_t, std::map<double, double>> served;  // link -> latency end -> batch served
  for (const auto& [id, by_start] : batches) {
    double free_at = 0.0;
    for (const auto& [begin, bytes] : by_start) served[id][begin] = free_at = std::max(begin, free_at) + bytes / bandwidth[id];
  }
  std::vector<double> exits(node_of_rank.size(), 0.0);
  for (std::size_t r = 1; r < node_of_rank.size(); ++r) {
    const int node = node_of_rank[r];
    if (node == root) {
      exits[r] = on_node_message_s(0.0);
      continue;
    }
    for (const Link& l : route(root, node)) exits[r] = std::max(exits[r], served[l.id][start[node]]);
  }
  if (!exits.empty()) exits[0] = *std::max_element(exits.begin(), exits.end());
  return exits;
}

std::string ClusterFabric::describe() const {
  std::ostringstream s;
  s << "SimGrid cluster " << topology << ", " << nodes << " nodes x " << cores_per_node << " cores, links "
    << bandwidth_bytes_per_s / 1e9 << " GB/s " << latency_s * 1e6 << " us, loopback "
    << loopback_bandwidth_bytes_per_s / 1e9 << " GB/s " << loopback_latency_s * 1e6 << " us, SMPI factors at 1 MiB: bw "
    << bandwidth_factor.at(1 << 20) << " lat " << latency_factor.at(1 << 20);
  if (!barrier.empty()) s << ", barrier " << barrier;
  if (!source.empty()) s << " [" << source << "]";
  return s.str();
}

void ClusterFabric::check() const {
  auto positive = [](double v) { return v > 0; };
  if (!positive(bandwidth_bytes_per_s) || latency_s < 0 || !positive(loopback_bandwidth_bytes_per_s) ||
      !(loopback_latency_s > 0) || backbone_bandwidth_bytes_per_s < 0 || backbone_latency_s < 0)
    throw std::invalid_argument("cluster: bandwidths must be positive, latencies >= 0 (the loopback's > 0)");
  if (nodes < 1 || cores_per_node < 1) throw std::invalid_argument("cluster: nodes and cores_per_node must be >= 1");
  if (envelope_bytes < 0 || crosstraffic < 0 || !positive(tcp_gamma_bytes))
    throw std::invalid_argument("cluster: envelope_bytes and crosstraffic must be >= 0, tcp_gamma_bytes positive");
  for (const SizeFactor* f : {&bandwidth_factor, &latency_factor})
    for (const auto& [threshold, value] : f->by_bytes)
      if (threshold < 0 || !positive(value)) throw std::invalid_argument("cluster: factors need thresholds >= 0, values > 0");
  if (!barrier.empty() && barrier != "ompi_basic_linear")
    throw std::invalid_argument("cluster: barrier '" + barrier + "' is not modelled (known: ompi_basic_linear)");
  if (topology == "FLAT") return;
  if (topology != "DRAGONFLY")
    throw std::invalid_argument("cluster: topology must be FLAT or DRAGONFLY, got '" + topology +
                                "' (FAT_TREE and TORUS routes are not modelled)");
  const auto& t = topo_parameters;
  if (t.size() != 4 || t[0].size() != 2 || t[1].size() != 2 || t[2].size() != 2 || t[3].size() != 1)
    throw std::invalid_argument("cluster: DRAGONFLY topo_parameters must be [[groups, blue links], [chassis, black "
                                "links], [routers, green links], [nodes per router]]");
  for (const auto& level : t)
    for (int v : level)
      if (v < 1) throw std::invalid_argument("cluster: every DRAGONFLY parameter must be >= 1");
  if (t[0][0] * t[1][0] * t[2][0] * t[3][0] != nodes)
    throw std::invalid_argument("cluster: DRAGONFLY parameters give " + std::to_string(t[0][0] * t[1][0] * t[2][0] * t[3][0]) +
                                " nodes, the cluster has " + std::to_string(nodes));
}

void from_json(const nlohmann::json& j, SizeFactor& f) {
  try {
    j.get_to(f.by_bytes);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("size factor: expected [[threshold bytes, factor], ...], got " + std::string(j.type_name()));
  }
  std::sort(f.by_bytes.begin(), f.by_bytes.end());
}

void from_json(const nlohmann::json& j, ClusterFabric& c) {
  check_keys(j, "", {"topology", "topo_parameters", "nodes", "cores_per_node", "bandwidth_bytes_per_s", "latency_s",
                     "loopback_bandwidth_bytes_per_s", "loopback_latency_s", "backbone_bandwidth_bytes_per_s",
                     "backbone_latency_s", "bandwidth_factor", "latency_factor", "envelope_bytes", "crosstraffic",
                     "tcp_gamma_bytes", "source", "barrier"});
  read_key(j, "", "topology", c.topology, true);
  read_key(j, "", "topo_parameters", c.topo_parameters);
  read_key(j, "", "nodes", c.nodes, true);
  read_key(j, "", "cores_per_node", c.cores_per_node, true);
  read_key(j, "", "bandwidth_bytes_per_s", c.bandwidth_bytes_per_s, true);
  read_key(j, "", "latency_s", c.latency_s, true);
  read_key(j, "", "loopback_bandwidth_bytes_per_s", c.loopback_bandwidth_bytes_per_s, true);
  read_key(j, "", "loopback_latency_s", c.loopback_latency_s, true);
  read_key(j, "", "backbone_bandwidth_bytes_per_s", c.backbone_bandwidth_bytes_per_s);
  read_key(j, "", "backbone_latency_s", c.backbone_latency_s);
  for (auto [key, factor] : {std::pair{"bandwidth_factor", &c.bandwidth_factor}, std::pair{"latency_factor", &c.latency_factor}}) {
    if (!j.contains(key)) throw std::invalid_argument(std::string("missing required key '") + key + "'");
    try {
      j.at(key).get_to(*factor);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("in '") + key + "': " + e.what());
    }
  }
  read_key(j, "", "envelope_bytes", c.envelope_bytes);
  read_key(j, "", "crosstraffic", c.crosstraffic);
  read_key(j, "", "tcp_gamma_bytes", c.tcp_gamma_bytes);
  read_key(j, "", "source", c.source);
  read_key(j, "", "barrier", c.barrier);
  c.check();
}

}  // namespace tb::fpga
