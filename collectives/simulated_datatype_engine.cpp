#include "collectives/simulated_datatype_engine.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/log_interpolation.hpp"
#include "collectives/measured_curves.hpp"
#include "collectives/type_layout.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <smpi/smpi.h>
#include <xbt/config.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

namespace tb {
namespace {

constexpr const char* kPassProperty = "tb_datatype_engine_bandwidth_by_bytes";
constexpr const char* kExtrasProperty = "tb_noncontiguous_extra_seconds";
constexpr const char* kPassFormat = "BYTES:BYTES_PER_S entries separated by ';', both finite and > 0, bytes ascending";
constexpr const char* kExtrasFormat =
    "a JSON object {\"send\": [{\"block_bytes\": B, \"seconds_by_bytes\": [[BYTES, SECONDS], ...]}, ...], "
    "\"recv\": [...]}, optionally with \"self_send\" and \"self_recv\" of the same form (both or neither), "
    "block sizes and bytes > 0 and ascending, seconds finite and >= 0";

using ExtrasByBlock = std::vector<std::pair<double, SecondsByBytes>>;  // (block bytes, extra curve), ascending

// What this host's platform charges; neither table: nothing.
struct Engine {
  std::vector<std::pair<double, double>> pass_bandwidth_by_bytes;  // kPassProperty, ascending bytes
  ExtrasByBlock send_extra, recv_extra;                            // kExtrasProperty
  ExtrasByBlock self_send_extra, self_recv_extra;                  // its optional tables of a message to itself
  std::string summary;
  bool charges() const { return !pass_bandwidth_by_bytes.empty() || !send_extra.empty(); }
};

// The error for a property the testbed cannot use. A platform is the simulation's input, not one
// call's, and the zones of a platform may differ, so one rank cannot tell the others: the whole
// simulation stops here with the message, on the first rank that reads it. (Not MPI_Abort: SMPI
// ends the ranks with an exception that a caller's catch-all, gtest's among them, can swallow,
// and smpirun then exits 0.)
[[noreturn]] void refuse(const std::string& zone, const char* property, const std::string& what, const char* format) {
  std::fprintf(stderr, "tb: platform zone '%s': property %s %s; it must be %s\n", zone.c_str(), property, what.c_str(),
               format);
  std::fflush(stderr);
  std::abort();
}

double parse_number(const std::string& text, const std::string& zone, const std::string& entry) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) || value <= 0.0)
    refuse(zone, kPassProperty, "has the entry '" + entry + "'", kPassFormat);
  return value;
}

std::vector<std::pair<double, double>> parse_pass_table(const std::string& text, const std::string& zone) {
  std::vector<std::pair<double, double>> table;
  std::istringstream entries(text);
  for (std::string entry; std::getline(entries, entry, ';');) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos) refuse(zone, kPassProperty, "has the entry '" + entry + "'", kPassFormat);
    const double bytes = parse_number(entry.substr(0, colon), zone, entry);
    const double bandwidth = parse_number(entry.substr(colon + 1), zone, entry);
    if (!table.empty() && bytes <= table.back().first)
      refuse(zone, kPassProperty, "has the entry '" + entry + "' out of order", kPassFormat);
    table.emplace_back(bytes, bandwidth);
  }
  if (table.empty()) refuse(zone, kPassProperty, "is empty", kPassFormat);
  return table;
}

// One side's table of the extras property; `where` names it in errors ("send[2]...").
ExtrasByBlock parse_extras_side(const nlohmann::json& rows, const std::string& side, const std::string& zone) {
  const auto wrong = [&](const std::string& where, const std::string& what) {
    refuse(zone, kExtrasProperty, "has " + where + " " + what, kExtrasFormat);
  };
  if (!rows.is_array() || rows.empty()) wrong("'" + side + "'", "not a non-empty array");
  ExtrasByBlock table;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = side + "[" + std::to_string(i) + "]";
    const auto& row = rows[i];
    if (!row.is_object() || !row.contains("block_bytes") || !row["block_bytes"].is_number() ||
        !row.contains("seconds_by_bytes") || !row["seconds_by_bytes"].is_array() || row["seconds_by_bytes"].empty())
      wrong(where, "without a number block_bytes and a non-empty seconds_by_bytes");
    const double block = row["block_bytes"].get<double>();
    if (!(block > 0) || (!table.empty() && !(block > table.back().first))) wrong(where, "out of order or not > 0");
    SecondsByBytes curve;
    for (const auto& point : row["seconds_by_bytes"]) {
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number())
        wrong(where, "with a point that is not [BYTES, SECONDS]");
      const double bytes = point[0].get<double>(), seconds = point[1].get<double>();
      if (!(bytes > 0) || !std::isfinite(bytes) || !(seconds >= 0) || !std::isfinite(seconds) ||
          (!curve.empty() && !(bytes > curve.back().first)))
        wrong(where, "with the point [" + point[0].dump() + ", " + point[1].dump() + "]");
      curve.emplace_back(bytes, seconds);
    }
    table.emplace_back(block, std::move(curve));
  }
  return table;
}

void parse_extras(const std::string& text, const std::string& zone, Engine& engine) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  const bool self = j.is_object() && j.contains("self_send") && j.contains("self_recv");
  if (j.is_discarded() || !j.is_object() || j.size() != (self ? 4U : 2U) || !j.contains("send") || !j.contains("recv"))
    refuse(zone, kExtrasProperty,
           "is not an object of the keys send and recv, with self_send and self_recv or without both", kExtrasFormat);
  engine.send_extra = parse_extras_side(j["send"], "send", zone);
  engine.recv_extra = parse_extras_side(j["recv"], "recv", zone);
  if (!self) return;
  engine.self_send_extra = parse_extras_side(j["self_send"], "self_send", zone);
  engine.self_recv_extra = parse_extras_side(j["self_recv"], "self_recv", zone);
}

// The property's value and its zone: the host's zone, then the zones around it up to the root
// (whose get_parent() must not be called: SimGrid 3.32 dereferences the missing parent).
std::pair<const char*, std::string> find_property(const char* property) {
  const simgrid::s4u::NetZone* root = simgrid::s4u::Engine::get_instance()->get_netzone_root();
  for (const simgrid::s4u::NetZone* zone = simgrid::s4u::Host::current()->get_englobing_zone(); zone != nullptr;
       zone = zone == root ? nullptr : zone->get_parent())
    if (const char* value = zone->get_property(property)) return {value, zone->get_name()};
  return {nullptr, ""};
}

// A malformed property stops the run whether or not computation is simulated.
Engine find_engine() {
  const auto [pass, pass_zone] = find_property(kPassProperty);
  const auto [extras, extras_zone] = find_property(kExtrasProperty);
  if (pass != nullptr && extras != nullptr)
    refuse(extras_zone, kExtrasProperty, std::string("stands beside ") + kPassProperty + " (zone '" + pass_zone + "')",
           "one of the two prices per host");
  Engine e;
  if (pass == nullptr && extras == nullptr) {
    e.summary = std::string("not charged: no platform zone of this host has the property ") + kExtrasProperty + " or " +
                kPassProperty;
    return e;
  }
  if (pass != nullptr) {
    e.pass_bandwidth_by_bytes = parse_pass_table(pass, pass_zone);
    e.summary = std::string("charged: ") + pass + " (platform zone '" + pass_zone + "')";
  } else {
    parse_extras(extras, extras_zone, e);
    e.summary = "charged: measured non-contiguous extras, " + std::to_string(e.send_extra.size()) + " send and " +
                std::to_string(e.recv_extra.size()) + " receive block sizes" +
                (e.self_send_extra.empty() ? ", none for a message to itself"
                                           : ", " + std::to_string(e.self_send_extra.size()) + " and " +
                                                 std::to_string(e.self_recv_extra.size()) + " for a message to itself") +
                " (property " + kExtrasProperty + ", platform zone '" + extras_zone + "')";
  }
  if (!simgrid::config::get_value<bool>("smpi/simulate-computation"))
    return {{}, {}, {}, {}, {}, "not charged: computation is not simulated (smpi/simulate-computation off)"};
  return e;
}

// Looked up once per simulated host: with SMPI's privatisation (tb-smpirun's default) each rank
// has a table of its own, without it the ranks share one, and every rank reads its own host's.
const Engine& engine() {
  static std::map<const simgrid::s4u::Host*, Engine> by_host;
  const simgrid::s4u::Host* host = simgrid::s4u::Host::current();
  auto found = by_host.find(host);
  if (found == by_host.end()) found = by_host.emplace(host, find_engine()).first;
  return found->second;
}

// Seconds the engine costs one side of `count` instances of `type`; 0 when they are one
// contiguous run. With the measured extras, the side's blocks are its bytes over its count of
// contiguous blocks, and a message to itself reads the tables of such messages (none: nothing).
double side_seconds(const Engine& e, MessageSide side, int count, MPI_Datatype type, bool to_itself = false) {
  if (!e.charges()) return 0.0;
  const std::int64_t bytes = bytes_of(count, type);
  if (bytes <= 0) return 0.0;
  const auto layout = type_layout(type);
  if (layout->dense() || (count == 1 && layout->blocks.size() == 1)) return 0.0;
  const double total = static_cast<double>(bytes);
  if (!e.pass_bandwidth_by_bytes.empty())  // the experiment's price, kept as it was: other ranks' messages only
    return to_itself ? 0.0 : total / interpolate_log(e.pass_bandwidth_by_bytes, total);
  const double block = total / (static_cast<double>(count) * static_cast<double>(layout->blocks.size()));
  const ExtrasByBlock& table = to_itself ? (side == MessageSide::send ? e.self_send_extra : e.self_recv_extra)
                                         : (side == MessageSide::send ? e.send_extra : e.recv_extra);
  if (table.empty()) return 0.0;
  return blend_by_size(table, block, [&](const SecondsByBytes& curve) { return extra_curve_at(curve, total); });
}

// The work as this rank's simulated computation; the compute burst before it is closed first,
// and a new one opened after it, as SMPI does around its own calls.
void charge(double seconds) {
  if (seconds > 0.0) smpi_execute_benched(seconds);
}

// One side of every message of an Alltoallw call to or from another rank, and of the own block
// unless the call is in place (which leaves it where it is).
void charge_alltoallw_side(MessageSide side, const int* counts, const MPI_Datatype* types, const AlltoallwComm& c,
                           bool in_place) {
  const Engine& e = engine();
  if (!e.charges() || c.inter) return;
  double seconds = 0.0;
  for (int peer = 0; peer < c.size; ++peer)
    if (peer != c.rank || !in_place) seconds += side_seconds(e, side, counts[peer], types[peer], peer == c.rank);
  charge(seconds);
}

}  // namespace

void charge_datatype_engine(MessageSide side, int count, MPI_Datatype type) {
  charge(side_seconds(engine(), side, count, type));
}

void charge_alltoallw_sends(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const bool in_place = a.sendbuf == MPI_IN_PLACE;  // then each peer's block leaves from recvbuf
  charge_alltoallw_side(MessageSide::send, in_place ? a.recvcounts : a.sendcounts, in_place ? a.recvtypes : a.sendtypes,
                        c, in_place);
}

void charge_alltoallw_receives(const AlltoallwArgs& a, const AlltoallwComm& c) {
  charge_alltoallw_side(MessageSide::receive, a.recvcounts, a.recvtypes, c, a.sendbuf == MPI_IN_PLACE);
}

std::string simulated_datatype_engine_summary() { return engine().summary; }

}  // namespace tb
