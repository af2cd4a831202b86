#include "fpga_transport/link_models.hpp"

#include "collectives/log_interpolation.hpp"
#include "collectives/measured_curves.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tb::fpga {

double IecLink::message_time_s(double bytes) const { return transfer_time_s(bytes) + latency_s; }

double IecLink::transfer_time_s(double bytes) const {
  if (bytes <= 0) return 0.0;
  return std::ceil(bytes / chunk_bytes()) / clock_hz;
}

Hockney Hockney::fit(const std::vector<std::pair<double, double>>& points) {
  const double n = static_cast<double>(points.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double det = n * sxx - sx * sx;
  if (points.size() < 2 || !(std::abs(det) > 0))
    throw std::invalid_argument("Hockney::fit needs points at two or more different message sizes");
  Hockney h;
  h.beta_s_per_byte = (n * sxy - sx * sy) / det;
  h.alpha_s = (sy - h.beta_s_per_byte * sx) / n;
  // Noisy small-message times can pull the unconstrained line below zero at one end: a negative
  // alpha or beta is no network (the network file refuses it). The least-squares line with that
  // term held at 0 is then the constrained optimum: through the origin, or flat at the mean.
  if (h.alpha_s < 0) {
    h.alpha_s = 0.0;
    h.beta_s_per_byte = sxy / sxx;
  } else if (h.beta_s_per_byte < 0) {
    h.beta_s_per_byte = 0.0;
    h.alpha_s = sy / n;
  }
  return h;
}

double MemoryModel::bandwidth_at(double bytes, bool streaming) const {
  if (streaming && !streaming_bandwidth_by_bytes.empty()) return interpolate_log(streaming_bandwidth_by_bytes, bytes);
  if (bandwidth_by_bytes.empty()) return copy_bandwidth_bytes_per_s;
  return interpolate_log(bandwidth_by_bytes, bytes);
}

double MemoryModel::per_piece_at(double bytes) const {
  return per_piece_by_bytes.empty() ? per_block_at(bytes) : interpolate_log(per_piece_by_bytes, bytes);
}

double MemoryModel::per_block_at(double bytes) const {
  return per_block_by_bytes.empty() ? per_block_s : interpolate_log(per_block_by_bytes, bytes);
}

double MeasuredCurve::time_s(double bytes) const {
  if (seconds_by_bytes.empty()) throw std::logic_error("MeasuredCurve::time_s on an empty curve");
  return curve_at(seconds_by_bytes, bytes);
}

double HostMessage::message_time_s(double bytes) const {
  if (measured.empty()) return fit.message_time_s(bytes);
  const auto& [last_bytes, last_s] = measured.seconds_by_bytes.back();
  if (bytes > last_bytes) return last_s + (bytes - last_bytes) * fit.beta_s_per_byte;
  return measured.time_s(bytes);
}

namespace {
// One curve's extra at `bytes` (extra_curve_at: below its first size scaled down, to 0 at 0 bytes).
double extra_at(const MeasuredCurve& curve, double bytes) { return extra_curve_at(curve.seconds_by_bytes, bytes); }
}  // namespace

double NoncontiguousExtra::extra_s(double bytes, double block_bytes) const {
  if (bytes <= 0) return 0.0;
  return blend_by_size(by_block, block_bytes, [&](const MeasuredCurve& curve) { return extra_at(curve, bytes); });
}

double HostMessage::piece_share(double bytes, double block_bytes) {
  if (block_bytes >= bytes) return 0.0;
  if (block_bytes <= kHandoffPieceBytes) return 1.0;
  return 1.0 - std::log(block_bytes / kHandoffPieceBytes) / std::log(bytes / kHandoffPieceBytes);
}

double HostMessage::node_handoff_s(double bytes, double piece_bytes) const {
  if (node_handoff.empty() || bytes <= 0) return 0.0;
  const double contiguous = extra_at(node_handoff, bytes);
  if (node_handoff_pieces.empty() || piece_bytes <= 0) return contiguous;
  const double share = std::min(1.0, piece_bytes / bytes);
  return share * extra_at(node_handoff_pieces, bytes) + (1.0 - share) * contiguous;
}

double HostMessage::fresh_message_s(double bytes) const {
  return fresh.empty() || bytes <= 0 ? 0.0 : extra_at(fresh, bytes);
}

void NoncontiguousExtra::check(const std::string& what) const {
  for (std::size_t i = 0; i < by_block.size(); ++i) {
    const auto& [block, curve] = by_block[i];
    if (!(block > 0) || (i > 0 && !(block > by_block[i - 1].first)))
      throw std::invalid_argument(what + ": the entries' sizes must be positive and increase strictly (entry " +
                                  std::to_string(i) + ")");
    if (curve.empty()) throw std::invalid_argument(what + ": entry " + std::to_string(i) + " has no points");
    curve.check(what + ", entry " + std::to_string(i) + " (" + std::to_string(static_cast<long long>(block)) + " B)");
  }
}

void MeasuredCurve::check(const std::string& what) const {
  for (std::size_t i = 0; i < seconds_by_bytes.size(); ++i) {
    const auto& [b, t] = seconds_by_bytes[i];
    if (!(b > 0) || !(t >= 0))
      throw std::invalid_argument(what + ": point " + std::to_string(i) + " needs bytes > 0 and seconds >= 0");
    if (i > 0 && !(b > seconds_by_bytes[i - 1].first))
      throw std::invalid_argument(what + ": bytes must increase strictly (point " + std::to_string(i) + ")");
  }
}

void check_keys(const nlohmann::json& j, const std::string& where, std::initializer_list<const char*> known) {
  require_object(j, where.empty() ? "the document" : "'" + where.substr(0, where.size() - 1) + "'");
  for (const auto& [key, value] : j.items()) {
    if (std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw std::invalid_argument("unknown key '" + where + key + "' (known here: " + list + ")");
  }
}

void require_object(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) throw std::invalid_argument(what + " must be a JSON object, got " + std::string(j.type_name()));
}

void to_json(nlohmann::json& j, const IecLink& m) {
  j = {{"channel_width_bytes", m.channel_width_bytes}, {"clock_hz", m.clock_hz}, {"latency_s", m.latency_s},
       {"channels_per_link", m.channels_per_link}};
}
void from_json(const nlohmann::json& j, IecLink& m) {
  check_keys(j, "", {"channel_width_bytes", "clock_hz", "latency_s", "channels_per_link"});
  read_key(j, "", "channel_width_bytes", m.channel_width_bytes);
  read_key(j, "", "clock_hz", m.clock_hz);
  read_key(j, "", "latency_s", m.latency_s);
  read_key(j, "", "channels_per_link", m.channels_per_link);
  if (m.channel_width_bytes <= 0 || m.clock_hz <= 0 || m.latency_s < 0 || m.channels_per_link < 1)
    throw std::invalid_argument("IEC link: channel_width_bytes and clock_hz must be positive, latency_s >= 0, "
                                "channels_per_link >= 1");
}
void to_json(nlohmann::json& j, const Hockney& m) {
  j = {{"alpha_s", m.alpha_s}, {"beta_s_per_byte", m.beta_s_per_byte}};
}
void from_json(const nlohmann::json& j, Hockney& m) {
  check_keys(j, "", {"alpha_s", "beta_s_per_byte", "bandwidth_bytes_per_s"});
  read_key(j, "", "alpha_s", m.alpha_s);
  read_key(j, "", "beta_s_per_byte", m.beta_s_per_byte);
  double bandwidth = 0.0;
  read_key(j, "", "bandwidth_bytes_per_s", bandwidth);
  // A message model with a missing term would be a silent default of 0 (free messages).
  if (!j.contains("alpha_s")) throw std::invalid_argument("missing required key 'alpha_s'");
  if (j.contains("beta_s_per_byte") == j.contains("bandwidth_bytes_per_s"))
    throw std::invalid_argument("give exactly one of 'beta_s_per_byte' and 'bandwidth_bytes_per_s'");
  if (j.contains("bandwidth_bytes_per_s")) {
    if (!(bandwidth > 0)) throw std::invalid_argument("Hockney: bandwidth_bytes_per_s must be positive");
    m.beta_s_per_byte = 1.0 / bandwidth;
  }
  if (m.alpha_s < 0 || m.beta_s_per_byte < 0) throw std::invalid_argument("Hockney: alpha_s and beta_s_per_byte must be >= 0");
}
namespace {
// A table [{<key>: K, "seconds_by_bytes": [...]}, ...] (NoncontiguousExtra's, ColdMessageExtra's)
// into (K, curve) pairs.
void read_extra_table(const nlohmann::json& j, const char* key, std::vector<std::pair<double, MeasuredCurve>>& table) {
  if (!j.is_array())
    throw std::invalid_argument(std::string("expected [{\"") + key + "\": N, \"seconds_by_bytes\": [...]}, ...]");
  table.clear();
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "[" + std::to_string(i) + "].";
    if (!j[i].is_object()) throw std::invalid_argument(where + " expected an object");
    check_keys(j[i], where, {key, "seconds_by_bytes"});
    double first = 0.0;
    read_key(j[i], where, key, first, true);
    if (!j[i].contains("seconds_by_bytes")) throw std::invalid_argument("missing required key '" + where + "seconds_by_bytes'");
    table.emplace_back(first, j[i]["seconds_by_bytes"].get<MeasuredCurve>());
  }
}
}  // namespace

void to_json(nlohmann::json& j, const HostMessage& m) {
  j = m.fit;
  if (m.is_measured()) j["message_seconds_by_bytes"] = m.measured;
  if (!m.self_measured.empty()) j["self_message_seconds_by_bytes"] = m.self_measured;
  if (!m.send_extra.empty()) j["noncontiguous_send_extra_seconds"] = m.send_extra;
  if (!m.recv_extra.empty()) j["noncontiguous_recv_extra_seconds"] = m.recv_extra;
  if (!m.self_send_extra.empty()) j["self_noncontiguous_send_extra_seconds"] = m.self_send_extra;
  if (!m.self_recv_extra.empty()) j["self_noncontiguous_recv_extra_seconds"] = m.self_recv_extra;
  if (!m.node_handoff.empty()) j["node_handoff_extra_seconds_by_bytes"] = m.node_handoff;
  if (!m.node_handoff_pieces.empty()) j["node_handoff_piece_extra_seconds_by_bytes"] = m.node_handoff_pieces;
  if (!m.fresh.empty()) j["fresh_message_extra_seconds_by_bytes"] = m.fresh;
  if (!m.gets.empty()) j["get_seconds_by_bytes"] = m.gets;
  if (!m.cold.empty()) j["cold_message_extra_seconds"] = m.cold;
  if (!m.self_cold.empty()) j["cold_self_message_extra_seconds"] = m.self_cold;
}
void to_json(nlohmann::json& j, const ColdMessageExtra& m) {
  j = nlohmann::json::array();
  for (const auto& [traffic, curve] : m.table.by_block) j.push_back({{"traffic_bytes", traffic}, {"seconds_by_bytes", curve}});
}
void from_json(const nlohmann::json& j, ColdMessageExtra& m) {
  read_extra_table(j, "traffic_bytes", m.table.by_block);
  m.table.check("cold message extra");
}
void to_json(nlohmann::json& j, const NoncontiguousExtra& m) {
  j = nlohmann::json::array();
  for (const auto& [block, curve] : m.by_block) j.push_back({{"block_bytes", block}, {"seconds_by_bytes", curve}});
}
void from_json(const nlohmann::json& j, NoncontiguousExtra& m) {
  read_extra_table(j, "block_bytes", m.by_block);
  m.check("non-contiguous extra");
}
namespace {
// An optional curve under `key`: its errors name the key; present, it must have points.
template <class Curve>
void read_curve(const nlohmann::json& j, const char* key, Curve& curve) {
  if (!j.contains(key)) return;
  try {
    j.at(key).get_to(curve);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("key '") + key + "': " + e.what());
  }
  if (curve.empty()) throw std::invalid_argument(std::string("key '") + key + "': no points (leave the key out instead)");
}
}  // namespace
// The Hockney keys as Hockney reads them; the curve under its own key, its errors naming it.
void from_json(const nlohmann::json& j, HostMessage& m) {
  check_keys(j, "",
             {"alpha_s", "beta_s_per_byte", "bandwidth_bytes_per_s", "message_seconds_by_bytes",
              "self_message_seconds_by_bytes", "noncontiguous_send_extra_seconds", "noncontiguous_recv_extra_seconds",
              "self_noncontiguous_send_extra_seconds", "self_noncontiguous_recv_extra_seconds",
              "node_handoff_extra_seconds_by_bytes", "node_handoff_piece_extra_seconds_by_bytes",
              "fresh_message_extra_seconds_by_bytes", "get_seconds_by_bytes", "cold_message_extra_seconds",
              "cold_self_message_extra_seconds"});
  nlohmann::json fit = j;
  for (const char* key : {"message_seconds_by_bytes", "self_message_seconds_by_bytes", "noncontiguous_send_extra_seconds",
                          "noncontiguous_recv_extra_seconds", "self_noncontiguous_send_extra_seconds",
                          "self_noncontiguous_recv_extra_seconds", "node_handoff_extra_seconds_by_bytes",
                          "node_handoff_piece_extra_seconds_by_bytes", "fresh_message_extra_seconds_by_bytes",
                          "get_seconds_by_bytes", "cold_message_extra_seconds", "cold_self_message_extra_seconds"})
    fit.erase(key);
  fit.get_to(m.fit);
  read_curve(j, "message_seconds_by_bytes", m.measured);
  read_curve(j, "self_message_seconds_by_bytes", m.self_measured);
  read_curve(j, "noncontiguous_send_extra_seconds", m.send_extra);
  read_curve(j, "noncontiguous_recv_extra_seconds", m.recv_extra);
  read_curve(j, "self_noncontiguous_send_extra_seconds", m.self_send_extra);
  read_curve(j, "self_noncontiguous_recv_extra_seconds", m.self_recv_extra);
  read_curve(j, "node_handoff_extra_seconds_by_bytes", m.node_handoff);
  read_curve(j, "node_handoff_piece_extra_seconds_by_bytes", m.node_handoff_pieces);
  if (!m.node_handoff_pieces.empty() && m.node_handoff.empty())
    throw std::invalid_argument("key 'node_handoff_piece_extra_seconds_by_bytes' needs "
                                "'node_handoff_extra_seconds_by_bytes' (tb-beff measures both)");
  read_curve(j, "fresh_message_extra_seconds_by_bytes", m.fresh);
  read_curve(j, "get_seconds_by_bytes", m.gets);
  read_curve(j, "cold_message_extra_seconds", m.cold);
  read_curve(j, "cold_self_message_extra_seconds", m.self_cold);
  if (m.send_extra.empty() != m.recv_extra.empty())
    throw std::invalid_argument("keys 'noncontiguous_send_extra_seconds' and 'noncontiguous_recv_extra_seconds' come "
                                "together (tb-beff measures both); one is missing");
  if (m.self_send_extra.empty() != m.self_recv_extra.empty())
    throw std::invalid_argument("keys 'self_noncontiguous_send_extra_seconds' and 'self_noncontiguous_recv_extra_seconds' "
                                "come together (tb-beff measures both); one is missing");
}
void to_json(nlohmann::json& j, const MeasuredCurve& m) { j = m.seconds_by_bytes; }
void from_json(const nlohmann::json& j, MeasuredCurve& m) {
  auto is_point = [](const nlohmann::json& p) {
    return p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number();
  };
  if (!j.is_array() || !std::all_of(j.begin(), j.end(), is_point)) {
    std::string text = j.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    throw std::invalid_argument("measured curve: expected [[bytes, seconds], ...], got " + text);
  }
  j.get_to(m.seconds_by_bytes);
  m.check("measured curve");
}
void to_json(nlohmann::json& j, const PcieMpiPath& m) {
  j = {{"pcie_bandwidth_bytes_per_s", m.pcie_bandwidth_bytes_per_s}, {"pcie_latency_s", m.pcie_latency_s},
       {"host", m.host}};
  if (!m.pcie_transfer.empty()) j["pcie_transfer_seconds_by_bytes"] = m.pcie_transfer;
  if (!m.host_exchange.empty()) j["host_exchange_seconds_by_bytes"] = m.host_exchange;
  j["fpgas_per_node"] = m.fpgas_per_node;
  if (!m.node_contention.empty()) j["node_contention_seconds_by_bytes"] = m.node_contention;
}
void from_json(const nlohmann::json& j, PcieMpiPath& m) {
  check_keys(j, "", {"pcie_bandwidth_bytes_per_s", "pcie_latency_s", "host", "pcie_transfer_seconds_by_bytes",
                     "host_exchange_seconds_by_bytes", "fpgas_per_node", "node_contention_seconds_by_bytes",
                     "calibrate_from"});
  read_key(j, "", "pcie_bandwidth_bytes_per_s", m.pcie_bandwidth_bytes_per_s);
  read_key(j, "", "pcie_latency_s", m.pcie_latency_s);
  if (j.contains("host")) {
    try {
      j.at("host").get_to(m.host);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("in 'host': ") + e.what());
    }
  }
  if (j.contains("pcie_transfer_seconds_by_bytes")) j.at("pcie_transfer_seconds_by_bytes").get_to(m.pcie_transfer);
  if (j.contains("host_exchange_seconds_by_bytes")) j.at("host_exchange_seconds_by_bytes").get_to(m.host_exchange);
  read_key(j, "", "fpgas_per_node", m.fpgas_per_node);
  if (j.contains("node_contention_seconds_by_bytes")) j.at("node_contention_seconds_by_bytes").get_to(m.node_contention);
  if (m.pcie_bandwidth_bytes_per_s <= 0 || m.pcie_latency_s < 0)
    throw std::invalid_argument("PCIe+MPI path: pcie_bandwidth_bytes_per_s must be positive, pcie_latency_s >= 0");
  if (m.fpgas_per_node < 1) throw std::invalid_argument("PCIe+MPI path: fpgas_per_node must be >= 1");
  if (!m.node_contention.empty() && m.fpgas_per_node < 2)
    throw std::invalid_argument("PCIe+MPI path: node_contention_seconds_by_bytes needs fpgas_per_node >= 2 (FPGAs that "
                                "share a node)");
}
namespace {

// One of MemoryModel's (bytes, value) tables, sorted by bytes as interpolate_log reads them:
// positive sizes, each once (two rows of one size leave no line between them), positive values
// (or >= 0 where zero is allowed).
void read_memory_table(const nlohmann::json& j, const char* key, const char* values,
                       std::vector<std::pair<double, double>>& table, bool zero_allowed) {
  read_key(j, "", key, table);
  std::sort(table.begin(), table.end());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& [bytes, value] = table[i];
    if (!(bytes > 0) || !(zero_allowed ? value >= 0 : value > 0))
      throw std::invalid_argument(std::string("memory model: ") + key + " needs positive bytes and " + values +
                                  (zero_allowed ? " >= 0" : " > 0"));
    if (i > 0 && bytes == table[i - 1].first)
      throw std::invalid_argument((std::ostringstream() << "memory model: " << key << " lists " << bytes
                                                        << " bytes twice")
                                      .str());
  }
}

}  // namespace

void require_copy_costs(const nlohmann::json& j) {
  if (!j.contains("copy_bandwidth_bytes_per_s") && !j.contains("bandwidth_by_bytes"))
    throw std::invalid_argument("a memory model needs its copy bandwidth: 'copy_bandwidth_bytes_per_s' or "
                                "'bandwidth_by_bytes'");
  if (!j.contains("per_block_s") && !j.contains("per_block_seconds_by_bytes"))
    throw std::invalid_argument("a memory model needs its cost per block: 'per_block_s' or "
                                "'per_block_seconds_by_bytes'");
}

void to_json(nlohmann::json& j, const MemoryModel& m) {
  j = {{"copy_bandwidth_bytes_per_s", m.copy_bandwidth_bytes_per_s}, {"per_block_s", m.per_block_s},
       {"streaming_from_bytes", m.streaming_from_bytes}};
  if (!m.bandwidth_by_bytes.empty()) j["bandwidth_by_bytes"] = m.bandwidth_by_bytes;
  if (!m.streaming_bandwidth_by_bytes.empty()) j["streaming_bandwidth_by_bytes"] = m.streaming_bandwidth_by_bytes;
  if (!m.per_piece_by_bytes.empty()) j["per_piece_seconds_by_bytes"] = m.per_piece_by_bytes;
  if (!m.per_block_by_bytes.empty()) j["per_block_seconds_by_bytes"] = m.per_block_by_bytes;
}
void from_json(const nlohmann::json& j, MemoryModel& m) {
  check_keys(j, "", {"copy_bandwidth_bytes_per_s", "per_block_s", "bandwidth_by_bytes", "streaming_bandwidth_by_bytes",
                     "streaming_from_bytes", "per_piece_seconds_by_bytes", "per_block_seconds_by_bytes"});
  read_key(j, "", "copy_bandwidth_bytes_per_s", m.copy_bandwidth_bytes_per_s);
  read_key(j, "", "per_block_s", m.per_block_s);
  read_key(j, "", "streaming_from_bytes", m.streaming_from_bytes);
  read_memory_table(j, "bandwidth_by_bytes", "bandwidths", m.bandwidth_by_bytes, false);
  read_memory_table(j, "streaming_bandwidth_by_bytes", "bandwidths", m.streaming_bandwidth_by_bytes, false);
  read_memory_table(j, "per_piece_seconds_by_bytes", "seconds", m.per_piece_by_bytes, true);
  read_memory_table(j, "per_block_seconds_by_bytes", "seconds", m.per_block_by_bytes, true);
  if (m.copy_bandwidth_bytes_per_s <= 0 || m.per_block_s < 0 || m.streaming_from_bytes < 0)
    throw std::invalid_argument(
        "memory model: copy_bandwidth_bytes_per_s must be positive, per_block_s and streaming_from_bytes >= 0");
}

}  // namespace tb::fpga
