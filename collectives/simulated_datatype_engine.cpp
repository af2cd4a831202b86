#include "collectives/simulated_datatype_engine.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/log_interpolation.hpp"
#include "collectives/type_layout.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <smpi/smpi.h>
#include <xbt/config.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

namespace tb {
namespace {

constexpr const char* kProperty = "tb_datatype_engine_bandwidth_by_bytes";

// The engine's bandwidth by message bytes, from the platform; empty: nothing is charged.
struct Engine {
  std::vector<std::pair<double, double>> bandwidth_by_bytes;  // ascending bytes
  std::string summary;
};

// The error for a property the testbed cannot use. A platform is the simulation's input, not one
// call's, and the zones of a platform may differ, so one rank cannot tell the others: the whole
// simulation stops here with the message, on the first rank that reads it. (Not MPI_Abort: SMPI
// ends the ranks with an exception that a caller's catch-all, gtest's among them, can swallow,
// and smpirun then exits 0.)
[[noreturn]] void refuse(const std::string& zone, const std::string& what) {
  std::fprintf(stderr, "tb: platform zone '%s': property %s %s; it must be BYTES:BYTES_PER_S entries separated by "
                       "';', both finite and > 0, bytes ascending\n",
               zone.c_str(), kProperty, what.c_str());
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
    refuse(zone, "has the entry '" + entry + "'");
  return value;
}

std::vector<std::pair<double, double>> parse_table(const std::string& text, const std::string& zone) {
  std::vector<std::pair<double, double>> table;
  std::istringstream entries(text);
  for (std::string entry; std::getline(entries, entry, ';');) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos) refuse(zone, "has the entry '" + entry + "'");
    const double bytes = parse_number(entry.substr(0, colon), zone, entry);
    const double bandwidth = parse_number(entry.substr(colon + 1), zone, entry);
    if (!table.empty() && bytes <= table.back().first) refuse(zone, "has the entry '" + entry + "' out of order");
    table.emplace_back(bytes, bandwidth);
  }
  if (table.empty()) refuse(zone, "is empty");
  return table;
}

// The property's value and its zone: the host's zone, then the zones around it up to the root
// (whose get_parent() must not be called: SimGrid 3.32 dereferences the missing parent).
std::pair<const char*, std::string> find_property() {
  const simgrid::s4u::NetZone* root = simgrid::s4u::Engine::get_instance()->get_netzone_root();
  for (const simgrid::s4u::NetZone* zone = simgrid::s4u::Host::current()->get_englobing_zone(); zone != nullptr;
       zone = zone == root ? nullptr : zone->get_parent())
    if (const char* value = zone->get_property(kProperty)) return {value, zone->get_name()};
  return {nullptr, ""};
}

// A malformed property stops the run whether or not computation is simulated.
Engine find_engine() {
  const auto [value, zone] = find_property();
  if (value == nullptr)
    return {{}, std::string("not charged: no platform zone of this host has the property ") + kProperty};
  auto table = parse_table(value, zone);
  if (!simgrid::config::get_value<bool>("smpi/simulate-computation"))
    return {{}, "not charged: computation is not simulated (smpi/simulate-computation off)"};
  return {std::move(table), std::string("charged: ") + value + " (platform zone '" + zone + "')"};
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

// Seconds of one engine pass over `count` instances of `type`; 0 when they are one contiguous run.
double pass_seconds(const std::vector<std::pair<double, double>>& table, int count, MPI_Datatype type) {
  const std::int64_t bytes = bytes_of(count, type);
  if (table.empty() || bytes <= 0) return 0.0;
  const auto layout = type_layout(type);
  if (layout->dense() || (count == 1 && layout->blocks.size() == 1)) return 0.0;
  return static_cast<double>(bytes) / interpolate_log(table, static_cast<double>(bytes));
}

// The pass as this rank's simulated computation; the compute burst before it is closed first,
// and a new one opened after it, as SMPI does around its own calls.
void charge(double seconds) {
  if (seconds > 0.0) smpi_execute_benched(seconds);
}

}  // namespace

void charge_datatype_engine(int count, MPI_Datatype type) {
  charge(pass_seconds(engine().bandwidth_by_bytes, count, type));
}

void charge_alltoallw_sends(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const auto& table = engine().bandwidth_by_bytes;
  if (table.empty() || c.inter) return;
  const bool in_place = a.sendbuf == MPI_IN_PLACE;  // then each peer's block leaves from recvbuf
  const int* counts = in_place ? a.recvcounts : a.sendcounts;
  const MPI_Datatype* types = in_place ? a.recvtypes : a.sendtypes;
  double seconds = 0.0;
  for (int peer = 0; peer < c.size; ++peer)
    if (peer != c.rank) seconds += pass_seconds(table, counts[peer], types[peer]);
  charge(seconds);
}

void charge_alltoallw_receives(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const auto& table = engine().bandwidth_by_bytes;
  if (table.empty() || c.inter) return;
  double seconds = 0.0;
  for (int peer = 0; peer < c.size; ++peer)
    if (peer != c.rank) seconds += pass_seconds(table, a.recvcounts[peer], a.recvtypes[peer]);
  charge(seconds);
}

std::string simulated_datatype_engine_summary() { return engine().summary; }

}  // namespace tb
