#include "fpga_transport/network.hpp"

#include "fpga_transport/hpcc_reference.hpp"
#include "fpga_transport/json_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <queue>
#include <sstream>
#include <stdexcept>

namespace tb::fpga {

Network Network::from_file(const std::string& path, int ranks) {
  nlohmann::json spec = read_json_file("network file", path);
  try {
    if (!spec.is_object()) throw std::invalid_argument("the document must be a JSON object");
    // A calibration reference named relative to the network file.
    if (spec.contains("pcie_mpi") && spec["pcie_mpi"].is_object() && spec["pcie_mpi"].contains("calibrate_from") &&
        spec["pcie_mpi"]["calibrate_from"].is_object()) {
      auto& from = spec["pcie_mpi"]["calibrate_from"];
      if (from.contains("reference") && from["reference"].is_string()) {
        const std::filesystem::path ref = from["reference"].get<std::string>();
        if (ref.is_relative())
          from["reference"] = (std::filesystem::path(path).parent_path() / ref).lexically_normal().string();
      }
    }
    return from_json(spec, ranks);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("network file " + path + ": " + e.what());
  }
}

namespace {
// spec[key] read into `value` when present; errors inside it name the section.
template <class T>
void read_section(const nlohmann::json& spec, const char* key, T& value) {
  if (!spec.contains(key)) return;
  try {
    spec.at(key).get_to(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("in '") + key + "': " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("in '") + key + "': " + e.what());
  }
}
}  // namespace

Network Network::from_json(const nlohmann::json& spec, int ranks) {
  if (ranks < 1) throw std::invalid_argument("network: at least one rank");
  check_keys(spec, "", {"name", "comment", "kind", "topology", "torus_dims", "links", "channels_per_fpga", "ranks_per_node",
                        "iec", "pcie_mpi", "host", "cluster", "library", "calibration"});
  Network n;
  n.ranks_ = ranks;
  n.name_ = "unnamed";
  read_key(spec, "", "name", n.name_);
  std::string kind, comment;
  read_key(spec, "", "comment", comment);
  read_key(spec, "", "kind", kind, /*required=*/true);
  if (kind == "iec") n.kind_ = NetworkKind::iec;
  else if (kind == "pcie_mpi") n.kind_ = NetworkKind::pcie_mpi;
  else if (kind == "host") n.kind_ = NetworkKind::host;
  else if (kind == "cluster") n.kind_ = NetworkKind::cluster;
  else throw std::invalid_argument("network " + n.name_ + ": kind must be iec, pcie_mpi, host or cluster, got '" + kind + "'");
  if (n.kind_ == NetworkKind::cluster && !spec.contains("cluster"))
    throw std::invalid_argument("network " + n.name_ + ": kind cluster needs the key 'cluster' "
                                "(experiments/platform_network.py writes it from a SimGrid platform)");
  if (n.kind_ == NetworkKind::host && !spec.contains("host"))
    throw std::invalid_argument("network " + n.name_ + ": kind host needs the key 'host' (alpha_s, beta_s_per_byte, "
                                "optionally message_seconds_by_bytes)");
  if (n.kind_ == NetworkKind::pcie_mpi && !spec.contains("pcie_mpi"))
    throw std::invalid_argument("network " + n.name_ + ": kind pcie_mpi needs the key 'pcie_mpi'");
  read_section(spec, "iec", n.iec_);
  if (spec.contains("pcie_mpi")) {
    try {
      n.read_pcie_mpi(spec.at("pcie_mpi"));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("in 'pcie_mpi': ") + e.what());
    }
  }
  read_section(spec, "host", n.host_);
  read_section(spec, "cluster", n.cluster_);
  if (spec.contains("library")) {
    read_section(spec, "library", n.library_);
    try {
      require_copy_costs(spec.at("library"));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("in 'library': ") + e.what());
    }
    n.has_library_ = true;
  }
  if (spec.contains("calibration")) require_object(spec.at("calibration"), "'calibration'");
  n.topology_ = n.kind_ == NetworkKind::iec ? "ring" : "switch";
  read_key(spec, "", "topology", n.topology_);
  n.ranks_per_node_ = n.kind_ == NetworkKind::host ? 0 : n.kind_ == NetworkKind::cluster ? n.cluster_.cores_per_node : 1;
  read_key(spec, "", "ranks_per_node", n.ranks_per_node_);
  if (n.ranks_per_node_ < 0)
    throw std::invalid_argument("network " + n.name_ + ": ranks_per_node must be >= 0 (0: all ranks on one node)");
  n.place_ranks(n.ranks_per_node_ == 0 ? ranks : n.ranks_per_node_);
  n.adjacency_.assign(static_cast<std::size_t>(ranks), {});
  if (n.kind_ == NetworkKind::iec) {
    n.wire_iec_links(spec);
    n.build_routes();
  }
  return n;
}

// The PCIe+MPI path: data-sheet figures, or measured curves derived from published b_eff runs.
void Network::read_pcie_mpi(const nlohmann::json& p) {
  p.get_to(pcie_);
  if (!p.contains("calibrate_from")) return;
  const auto& c = p.at("calibrate_from");
  check_keys(c, "calibrate_from.", {"reference", "pcie_run", "cpu_run", "host_network_run", "node_pcie_run", "node_cpu_run"});
  auto text = [&](const char* key) {
    if (!c.contains(key) || !c.at(key).is_string())
      throw std::invalid_argument("network " + name_ + ": pcie_mpi.calibrate_from needs the string '" + key + "'");
    return c.at(key).get<std::string>();
  };
  const BeffReference ref = load_beff_reference(text("reference"));
  const PcieMpiPath cal = calibrate_base_path(ref, text("pcie_run"), text("cpu_run"), text("host_network_run"));
  pcie_.pcie_transfer = cal.pcie_transfer;
  pcie_.host_exchange = cal.host_exchange;
  pcie_.calibration = cal.calibration;
  if (!c.contains("node_pcie_run") && !c.contains("node_cpu_run")) return;
  const NodeContention node =
      calibrate_node_contention(ref, text("node_pcie_run"), text("node_cpu_run"), text("pcie_run"), text("cpu_run"));
  if (node.fpgas_per_node != pcie_.fpgas_per_node)
    throw std::invalid_argument("network " + name_ + ": the node runs use " + std::to_string(node.fpgas_per_node) +
                                " FPGAs of one node, but fpgas_per_node is " + std::to_string(pcie_.fpgas_per_node));
  pcie_.node_contention = node.extra_per_transfer;
  pcie_.calibration += "; " + node.calibration;
}

// The IEC channels between FPGAs for the topology (ring, torus or explicit links), merged per
// undirected pair into adjacency_.
void Network::wire_iec_links(const nlohmann::json& spec) {
  const int ranks = ranks_;
  int per_fpga = 4;
  read_key(spec, "", "channels_per_fpga", per_fpga);
  if (per_fpga < 1) throw std::invalid_argument("network " + name_ + ": channels_per_fpga must be >= 1");
  std::map<std::pair<int, int>, int> channels;  // undirected, merged
  auto wire = [&](int u, int v, int c) {
    if (u < 0 || v < 0 || u >= ranks || v >= ranks)
      throw std::invalid_argument("network " + name_ + ": link " + std::to_string(u) + "-" + std::to_string(v) +
                                  " names an FPGA outside 0.." + std::to_string(ranks - 1));
    if (u == v || c <= 0) return;
    channels[{std::min(u, v), std::max(u, v)}] += c;
  };
  if (topology_ == "ring") {
    if (ranks == 2) wire(0, 1, per_fpga);  // both ports of each side go to the one neighbour
    else if (ranks > 2)
      for (int i = 0; i < ranks; ++i) wire(i, (i + 1) % ranks, per_fpga / 2);
  } else if (topology_ == "torus") {
    std::vector<int> dims;
    read_key(spec, "", "torus_dims", dims);
    if (dims.empty()) {  // the most nearly square R x C with R <= C
      int r = static_cast<int>(std::sqrt(static_cast<double>(ranks)));
      while (r > 1 && ranks % r != 0) --r;
      dims = {std::max(r, 1), ranks / std::max(r, 1)};
    }
    if (dims.size() != 2 || dims[0] < 1 || dims[1] < 1 || dims[0] * dims[1] != ranks)
      throw std::invalid_argument("network " + name_ + ": torus_dims [R, C] must multiply to the " +
                                  std::to_string(ranks) + " ranks");
    const int rows = dims[0], columns = dims[1];
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < columns; ++j) {
        const int me = i * columns + j;
        if (columns > 1) wire(me, i * columns + (j + 1) % columns, per_fpga / 4);
        if (rows > 1) wire(me, ((i + 1) % rows) * columns + j, per_fpga / 4);
      }
  } else if (topology_ == "links") {
    std::vector<std::vector<int>> links;
    read_key(spec, "", "links", links, /*required=*/true);
    for (const auto& l : links) {
      if (l.size() < 2 || l.size() > 3)
        throw std::invalid_argument("network " + name_ + ": every entry of 'links' is [u, v] or [u, v, channels]");
      wire(l[0], l[1], l.size() > 2 ? l[2] : 1);
    }
  } else {
    throw std::invalid_argument("network " + name_ + ": topology must be ring, torus or links, got '" + topology_ + "'");
  }
  for (const auto& [uv, c] : channels) {
    adjacency_[uv.first].push_back({uv.second, c});
    adjacency_[uv.second].push_back({uv.first, c});
  }
  for (auto& a : adjacency_) std::sort(a.begin(), a.end(), [](const Edge& x, const Edge& y) { return x.to < y.to; });
}

void Network::build_routes() {
  next_hop_.assign(static_cast<std::size_t>(ranks_), std::vector<int>(static_cast<std::size_t>(ranks_), -1));
  for (int dst = 0; dst < ranks_; ++dst) {
    // BFS from dst: the next hop from u towards dst is u's parent in the tree.
    std::vector<int> parent(static_cast<std::size_t>(ranks_), -1);
    std::queue<int> q;
    parent[dst] = dst;
    q.push(dst);
    while (!q.empty()) {
      const int u = q.front();
      q.pop();
      for (const Edge& e : adjacency_[u])
        if (parent[e.to] < 0) {
          parent[e.to] = u;
          q.push(e.to);
        }
    }
    for (int src = 0; src < ranks_; ++src) next_hop_[src][dst] = parent[src];
  }
}

std::vector<int> Network::route(int src, int dst) const {
  if (kind_ != NetworkKind::iec || src == dst) return src == dst ? std::vector<int>{src} : std::vector<int>{src, dst};
  std::vector<int> path{src};
  int u = src;
  while (u != dst) {
    const int next = next_hop_[u][dst];
    if (next < 0)
      throw std::invalid_argument("network " + name_ + ": FPGA " + std::to_string(dst) + " cannot be reached from " +
                                  std::to_string(src) + " (the topology is not connected)");
    path.push_back(next);
    u = next;
  }
  return path;
}

void Network::place_ranks(int per_node) {
  if (per_node < 1) throw std::invalid_argument("network " + name_ + ": ranks per node must be >= 1");
  if (kind_ == NetworkKind::cluster) {
    if (per_node > cluster_.cores_per_node)
      throw std::invalid_argument("network " + name_ + ": " + std::to_string(per_node) + " ranks per node, but its nodes have " +
                                  std::to_string(cluster_.cores_per_node) + " cores");
    if (static_cast<std::int64_t>(per_node) * cluster_.nodes < ranks_)
      throw std::invalid_argument("network " + name_ + ": " + std::to_string(ranks_) + " ranks do not fit on its " +
                                  std::to_string(cluster_.nodes) + " nodes at " + std::to_string(per_node) + " per node");
  }
  ranks_per_node_ = per_node;
}

// Ranks r and s share node r / ranks_per_node; on-node messages each take the loopback alone.
double Network::cluster_phase_s(const std::vector<Message>& messages) const {
  double on_node = 0.0;
  std::vector<std::pair<std::pair<int, int>, double>> between;
  for (const Message& m : messages) {
    if (m.src == m.dst || m.bytes <= 0) continue;
    const int a = m.src / ranks_per_node_, b = m.dst / ranks_per_node_;
    if (a == b) on_node = std::max(on_node, cluster_.on_node_message_s(m.bytes));
    else between.push_back({{a, b}, m.bytes});
  }
  return std::max(on_node, cluster_.between_nodes_s(between));
}

// Per rank its sent and its received messages one after another, the larger of the two; the
// phase takes the slowest rank. Hockney: n_sent alpha + max(bytes out, bytes in) beta. Cold
// messages add their extras to either, per side.
double Network::host_phase_s(const std::vector<Message>& messages, const std::vector<double>* traffic_bytes) const {
  std::vector<double> out(static_cast<std::size_t>(ranks_)), in(out.size()), sent(out.size());
  std::vector<double> sending_s(out.size()), receiving_s(out.size()), cold_sent_s(out.size()), cold_received_s(out.size());
  const ColdMessageExtra* cold = traffic_bytes ? cold_messages() : nullptr;
  auto cold_s = [&](int rank, double bytes) {
    return cold && static_cast<std::size_t>(rank) < traffic_bytes->size() ? cold->extra_s(bytes, (*traffic_bytes)[rank])
                                                                          : 0.0;
  };
  for (const Message& m : messages) {
    if (m.src == m.dst || m.bytes <= 0) continue;
    out[m.src] += m.bytes;
    in[m.dst] += m.bytes;
    sent[m.src] += 1;
    cold_sent_s[m.src] += cold_s(m.src, m.bytes);
    cold_received_s[m.dst] += cold_s(m.dst, m.bytes);
    if (host_.is_measured()) {
      sending_s[m.src] += host_.message_time_s(m.bytes);
      receiving_s[m.dst] += host_.message_time_s(m.bytes);
    }
  }
  double slowest = 0.0;
  for (int r = 0; r < ranks_; ++r)
    slowest = std::max(slowest, host_.is_measured()
                                    ? std::max(sending_s[r] + cold_sent_s[r], receiving_s[r] + cold_received_s[r])
                                    : sent[r] * host_.fit.alpha_s + std::max(out[r], in[r]) * host_.fit.beta_s_per_byte +
                                          std::max(cold_sent_s[r], cold_received_s[r]));
  return slowest;
}

double Network::phase_time_s(const std::vector<Message>& messages, const std::vector<double>& traffic_bytes) const {
  return kind_ == NetworkKind::host ? host_phase_s(messages, &traffic_bytes) : phase_time_s(messages);
}

double Network::gets_phase_time_s(const std::vector<Message>& messages, const std::vector<double>& traffic_bytes) const {
  const MeasuredCurve* gets = zero_copy_gets();
  if (!gets) return phase_time_s(messages, traffic_bytes);
  std::vector<double> getting_s(static_cast<std::size_t>(ranks_), 0.0);
  for (const Message& m : messages)
    if (m.src != m.dst && m.bytes > 0) getting_s[m.dst] += gets->time_s(m.bytes);
  return *std::max_element(getting_s.begin(), getting_s.end());
}

IecLink Network::link_model(int u, int v) const {
  IecLink m = iec_;
  for (const Edge& e : adjacency_[u])
    if (e.to == v) m.channels_per_link = e.channels;
  return m;
}

std::vector<double> Network::barrier_exits_s() const {
  if (kind_ != NetworkKind::cluster || cluster_.barrier.empty()) return {};
  std::vector<int> node_of_rank(static_cast<std::size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) node_of_rank[r] = r / ranks_per_node_;
  std::vector<double> exits = cluster_.linear_barrier_exits_s(node_of_rank);
  const double first = *std::min_element(exits.begin(), exits.end());
  for (double& e : exits) e -= first;
  return exits;
}

double Network::message_time_s(int src, int dst, double bytes) const {
  if (src == dst) return 0.0;
  return phase_time_s({{src, dst, bytes}});
}

// Per rank: whether another FPGA of its node (fpgas_per_node consecutive ranks) has PCIe traffic
// in the same stage, given each rank's bytes in that stage.
std::vector<bool> Network::shares_node(const std::vector<double>& bytes) const {
  const int per_node = std::max(1, pcie_.fpgas_per_node);
  std::vector<int> busy(static_cast<std::size_t>((ranks_ + per_node - 1) / per_node), 0);
  for (int r = 0; r < ranks_; ++r) busy[static_cast<std::size_t>(r / per_node)] += bytes[r] > 0;
  std::vector<bool> shared(bytes.size(), false);
  for (int r = 0; r < ranks_; ++r) shared[r] = bytes[r] > 0 && busy[static_cast<std::size_t>(r / per_node)] > 1;
  return shared;
}

double Network::phase_time_s(const std::vector<Message>& messages) const {
  switch (kind_) {
    case NetworkKind::cluster:
      return cluster_phase_s(messages);
    case NetworkKind::iec: {
      std::map<std::pair<int, int>, double> chunks;  // directed link -> chunks
      int longest = 0;
      for (const Message& m : messages) {
        if (m.src == m.dst || m.bytes <= 0) continue;
        const auto path = route(m.src, m.dst);
        longest = std::max(longest, static_cast<int>(path.size()) - 1);
        for (std::size_t h = 0; h + 1 < path.size(); ++h) {
          const IecLink link = link_model(path[h], path[h + 1]);
          chunks[{path[h], path[h + 1]}] += std::ceil(m.bytes / link.chunk_bytes());
        }
      }
      double worst = 0.0;
      for (const auto& [link, c] : chunks) worst = std::max(worst, c / iec_.clock_hz);
      return worst + longest * iec_.latency_s;
    }
    case NetworkKind::host:
      return host_phase_s(messages);
    case NetworkKind::pcie_mpi: {
      // Per rank: its PCIe reads (out), host MPI, PCIe writes (in); each stage takes its slowest rank.
      // The Hockney host carries the larger of a rank's sent and received bytes; a measured host
      // curve is one Sendrecv per message, so a rank's host time is the larger of its sent and its
      // received messages' times.
      std::vector<double> out(static_cast<std::size_t>(ranks_)), in(out.size()), sent(out.size());
      std::vector<double> pcie_out(out.size()), pcie_in(out.size()), host_out(out.size()), host_in(out.size());
      for (const Message& m : messages) {
        if (m.src == m.dst || m.bytes <= 0) continue;
        out[m.src] += m.bytes;
        in[m.dst] += m.bytes;
      }
      const auto shared_out = shares_node(out), shared_in = shares_node(in);
      for (const Message& m : messages) {
        if (m.src == m.dst || m.bytes <= 0) continue;
        sent[m.src] += 1;
        pcie_out[m.src] += pcie_.pcie_time_s(m.bytes) + (shared_out[m.src] ? pcie_.node_contention_s(m.bytes) : 0.0);
        pcie_in[m.dst] += pcie_.pcie_time_s(m.bytes) + (shared_in[m.dst] ? pcie_.node_contention_s(m.bytes) : 0.0);
        if (!pcie_.host_exchange.empty()) {
          host_out[m.src] += pcie_.host_exchange.time_s(m.bytes);
          host_in[m.dst] += pcie_.host_exchange.time_s(m.bytes);
        }
      }
      double t_out = 0.0, t_host = 0.0, t_in = 0.0;
      for (int r = 0; r < ranks_; ++r) {
        t_out = std::max(t_out, pcie_out[r]);
        t_in = std::max(t_in, pcie_in[r]);
        t_host = std::max(t_host, pcie_.host_exchange.empty()
                                      ? sent[r] * pcie_.host.alpha_s + std::max(out[r], in[r]) * pcie_.host.beta_s_per_byte
                                      : std::max(host_out[r], host_in[r]));
      }
      return t_out + t_host + t_in;
    }
  }
  return 0.0;
}

namespace {

std::string bytes_text(double bytes) {
  const auto b = static_cast<long long>(bytes);
  if (b >= (1 << 20) && b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1 << 10) && b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// A table's extra at `bytes`: at `key` where given (above 0), else at each of its measured keys.
void add_table_values(std::vector<Network::TermValue>& out, const std::string& term, const std::string& what,
                      const NoncontiguousExtra& table, double bytes, double key, const std::string& key_name) {
  if (table.empty()) return;
  if (key > 0) {
    out.push_back({term, what + ", " + key_name + " " + bytes_text(key), table.extra_s(bytes, key)});
    return;
  }
  for (const auto& [measured, curve] : table.by_block)
    out.push_back({term, what + ", " + key_name + " " + bytes_text(measured), table.extra_s(bytes, measured)});
}

}  // namespace

std::vector<Network::TermValue> Network::host_values_at(double bytes, double traffic_bytes, double block_bytes) const {
  std::vector<TermValue> out;
  if (kind_ != NetworkKind::host) return out;
  const HostMessage& h = host_;
  out.push_back({h.is_measured() ? "measured_messages" : "(Hockney fit)", "message m(L)", h.message_time_s(bytes)});
  if (!h.self_measured.empty()) out.push_back({"self_messages", "self message s(L)", h.self_measured.time_s(bytes)});
  add_table_values(out, "noncontiguous_messages", "extra sent non-contiguous", h.send_extra, bytes, block_bytes,
                   "block");
  add_table_values(out, "noncontiguous_messages", "extra received non-contiguous", h.recv_extra, bytes, block_bytes,
                   "block");
  add_table_values(out, "noncontiguous_self_messages", "extra of a self message sent non-contiguous",
                   h.self_send_extra, bytes, block_bytes, "block");
  add_table_values(out, "noncontiguous_self_messages", "extra of a self message received non-contiguous",
                   h.self_recv_extra, bytes, block_bytes, "block");
  if (!h.node_handoff.empty()) out.push_back({"node_handoff", "extra of a handoff copy", h.node_handoff_s(bytes)});
  if (!h.node_handoff.empty() && !h.node_handoff_pieces.empty())
    out.push_back({"node_handoff_pieces", "extra of a handoff copy in 64 B pieces", h.node_handoff_s(bytes, bytes)});
  if (!h.fresh.empty()) out.push_back({"fresh_messages", "extra of a fresh message", h.fresh_message_s(bytes)});
  if (!h.gets.empty()) out.push_back({"zero_copy_gets", "one zero-copy get", h.gets.time_s(bytes)});
  add_table_values(out, "cold_messages", "extra of a cold message", h.cold.table, bytes, traffic_bytes, "traffic");
  if (!h.self_measured.empty())  // the model prices no cold extra on a self message it takes for a memcpy
    add_table_values(out, "cold_self_messages", "extra of a cold self message", h.self_cold.table, bytes,
                     traffic_bytes, "traffic");
  if (has_library_) {  // the engine's pass over the bytes, as the model charges it without measured extras
    const double blocks = block_bytes > 0 ? std::max(1.0, bytes / block_bytes) : 1.0;
    out.push_back({"library_engine",
                   block_bytes > 0 ? "the library's pack, block " + bytes_text(block_bytes) : "the library's pack",
                   library_.copy_time_s(bytes, blocks, bytes)});
  }
  return out;
}

// The host network's line: its message model, then each measured term it prices.
void Network::describe_host(std::ostream& s) const {
  if (host_.is_measured()) {
    const double last = host_.measured.seconds_by_bytes.back().first;
    s << "host measured messages (tb-beff exchange medians / 2, " << host_.measured.seconds_by_bytes.size()
      << " sizes): " << host_.message_time_s(1) * 1e6 << " us at 1 B, " << host_.message_time_s(1 << 20) * 1e6
      << " us at 1 MiB; beyond " << static_cast<long long>(last) << " B the Hockney fit's "
      << host_.fit.bandwidth_bytes_per_s() / 1e9 << " GB/s";
  } else {
    s << "host Hockney, alpha " << host_.fit.alpha_s * 1e6 << " us, " << host_.fit.bandwidth_bytes_per_s() / 1e9
      << " GB/s";
  }
  if (!host_.self_measured.empty())
    s << "; measured self messages (tb-beff self exchange medians, " << host_.self_measured.seconds_by_bytes.size()
      << " sizes): " << host_.self_measured.time_s(1) * 1e6 << " us at 1 B, "
      << host_.self_measured.time_s(1 << 20) * 1e6 << " us at 1 MiB";
  if (noncontiguous_messages())
    s << "; non-contiguous messages measured (tb-beff, " << host_.send_extra.by_block.size()
      << " block sizes): 1 MiB in 64 B blocks " << host_.send_extra.extra_s(1 << 20, 64) * 1e6 << " us extra sent, "
      << host_.recv_extra.extra_s(1 << 20, 64) * 1e6 << " us received";
  if (noncontiguous_self_messages())
    s << "; non-contiguous self messages measured (tb-beff, " << host_.self_send_extra.by_block.size()
      << " block sizes): 1 MiB in 64 B blocks " << host_.self_send_extra.extra_s(1 << 20, 64) * 1e6
      << " us extra sent, " << host_.self_recv_extra.extra_s(1 << 20, 64) * 1e6 << " us received";
  if (node_handoff())
    s << "; node handoffs measured (tb-beff, " << host_.node_handoff.seconds_by_bytes.size()
      << " sizes): 256 KiB " << host_.node_handoff_s(256 << 10) * 1e6 << " us extra";
  if (node_handoff() && !host_.node_handoff_pieces.empty())
    s << "; node handoffs in 64 B pieces measured (tb-beff, " << host_.node_handoff_pieces.seconds_by_bytes.size()
      << " sizes): 256 KiB " << host_.node_handoff_s(256 << 10, 256 << 10) * 1e6 << " us extra";
  if (fresh_messages())
    s << "; fresh messages measured (tb-beff, " << host_.fresh.seconds_by_bytes.size()
      << " sizes): 1 MiB " << host_.fresh_message_s(1 << 20) * 1e6 << " us extra";
  if (zero_copy_gets())
    s << "; zero-copy gets measured (tb-beff, " << host_.gets.seconds_by_bytes.size()
      << " sizes): 64 KiB " << host_.gets.time_s(64 << 10) * 1e6 << " us, 1 MiB " << host_.gets.time_s(1 << 20) * 1e6
      << " us per get";
  if (cold_messages())
    s << "; cold messages measured (tb-beff, " << host_.cold.table.by_block.size()
      << " traffic sizes): 1 MiB after 64 MiB of traffic " << host_.cold.extra_s(1 << 20, 64 << 20) * 1e6
      << " us extra";
  if (cold_self_messages() && self_messages())
    s << "; cold self messages measured (tb-beff, " << host_.self_cold.table.by_block.size()
      << " traffic sizes): 1 MiB after 64 MiB of traffic " << host_.self_cold.extra_s(1 << 20, 64 << 20) * 1e6
      << " us extra";
  if (has_library_)
    s << "; MPI datatype engine " << library_.copy_bandwidth_bytes_per_s / 1e9 << " GB/s + " << library_.per_block_s * 1e9
      << " ns per block";
}

std::string Network::describe() const {
  std::ostringstream s;
  s << name_ << ": ";
  switch (kind_) {
    case NetworkKind::iec:
      s << "IEC " << topology_ << ", " << iec_.channel_width_bytes << " B x " << iec_.clock_hz / 1e6 << " MHz per channel, "
        << iec_.latency_s * 1e9 << " ns latency";
      if (ranks_ > 1 && !adjacency_[0].empty())
        s << ", " << adjacency_[0][0].channels << " channel(s) per link from FPGA 0";
      break;
    case NetworkKind::pcie_mpi:
      s << "PCIe+MPI, ";
      if (pcie_.pcie_transfer.empty())
        s << "PCIe " << pcie_.pcie_bandwidth_bytes_per_s / 1e9 << " GB/s + " << pcie_.pcie_latency_s * 1e6 << " us per transfer";
      else
        s << "PCIe transfer measured: " << pcie_.pcie_time_s(1) * 1e6 << " us at 1 B, " << pcie_.pcie_time_s(1 << 20) * 1e6
          << " us at 1 MiB";
      if (pcie_.host_exchange.empty())
        s << ", host alpha " << pcie_.host.alpha_s * 1e6 << " us, " << pcie_.host.bandwidth_bytes_per_s() / 1e9 << " GB/s";
      else
        s << "; host Sendrecv measured: " << pcie_.host_time_s(1) * 1e6 << " us at 1 B, " << pcie_.host_time_s(1 << 20) * 1e6
          << " us at 1 MiB";
      if (!pcie_.node_contention.empty())
        s << "; node contention (" << pcie_.fpgas_per_node << " FPGAs per node): +" << pcie_.node_contention_s(1) * 1e6
          << " us per transfer at 1 B, +" << pcie_.node_contention_s(1 << 20) * 1e6 << " us at 1 MiB";
      if (!pcie_.calibration.empty()) s << " [" << pcie_.calibration << "]";
      break;
    case NetworkKind::cluster:
      s << cluster_.describe() << "; " << ranks_per_node_ << " ranks per node";
      break;
    case NetworkKind::host:
      describe_host(s);
      break;
  }
  return s.str();
}

}  // namespace tb::fpga
