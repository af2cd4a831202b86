// tb-model: the modelled cost of one Alltoallw (a redistribution plan's pattern, or a call recorded
// by the PMPI library) for every algorithm and the local-remap baseline, on modelled networks
// (IEC ring, IEC torus, PCIe+MPI, the host calibrated by tb-beff), with the local work on the
// memory model of this machine. Prints algorithm x network -> predicted time with the
// communication and local-work split, and the model b_eff of every network; writes CSV.
//
//   tb-model --shape 256,256,256 --grid 4 --from-axis 2 --to-axis 0 --type c64
//   tb-model --pattern calls.jsonl --call 0
//   tb-model --beff --without node_contention    (a term switched off for comparison; --list-terms)
//   tb-model --network host.json --breakdown     (what each term adds to every algorithm's total)
//   tb-model --network host.json --values-at 1M --traffic 3M   (each measured quantity at a point)
#include "collectives/pack.hpp"
#include "collectives/settings.hpp"
#include "fpga_transport/algorithm_cost.hpp"
#include "fpga_transport/beff.hpp"
#include "fpga_transport/json_file.hpp"
#include "fpga_transport/model_terms.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/pattern.hpp"
#include "microbench/checks.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/timing.hpp"
#include "redistribute/element_type.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#ifndef TB_SOURCE_DIR
#define TB_SOURCE_DIR "."
#endif

namespace {

// `bytes` as 64-byte blocks at a 128-byte stride: the strided side of the measured copies.
struct StridedBlocks {
  explicit StridedBlocks(std::size_t bytes) : blocks(bytes / 64) {
    for (std::size_t b = 0; b < blocks.size(); ++b) blocks[b] = {static_cast<std::int64_t>(b) * 128, 64};
  }
  tb::BlockSpan span() const {
    const auto n = static_cast<std::int64_t>(blocks.size());
    return tb::BlockSpan(blocks.data(), blocks.size(), n * 64, n * 128);
  }
  std::vector<tb::ByteBlock> blocks;
};

// One copy of `bytes` in those blocks of `src` into `dst`, contiguous, through a MergedCopy, as
// node_leader's blocking call copies; `time` gives its median.
template <class Time>
double copy_list_seconds(const std::vector<char>& src, std::vector<char>& dst, std::size_t bytes, Time&& time) {
  const StridedBlocks from(bytes);
  const tb::ByteBlock whole{0, static_cast<std::int64_t>(from.blocks.size()) * 64};
  tb::MergedCopy copies;
  return time([&] {
    copies.clear();
    copies.add(reinterpret_cast<const std::byte*>(src.data()), 1, from.span(), reinterpret_cast<std::byte*>(dst.data()),
               1, tb::contiguous_span(whole));
    copies.run(true);
  });
}

// One pack of `bytes` in those blocks of `src` into `dst`, contiguous, by the testbed's packer
// (pack_alltoallv's, local_remap's and ucx_zcopy's packs); `time` gives its median.
template <class Time>
double pack_seconds(const std::vector<char>& src, std::vector<char>& dst, std::size_t bytes, Time&& time) {
  const StridedBlocks from(bytes);
  return time([&] { tb::pack(src.data(), 1, from.span(), reinterpret_cast<std::byte*>(dst.data())); });
}

// Copy bandwidth of this machine at several operation sizes (caches), and the cost per block:
// the same bytes in 64-byte blocks at a 128-byte stride against one memcpy. Per size, the cost
// per block of the testbed's packer (those blocks packed by tb::pack) and per piece of
// node_leader's copy lists (those blocks copied into a contiguous array the way its blocking call
// copies: MergedCopy, pieces planned, merged, run), each against one memcpy. Each time is the
// median of 5 runs, as every measured point of the validation is a median (not the fastest).
tb::fpga::MemoryModel measure_memory() {
  const std::size_t largest = std::size_t{64} << 20;
  std::vector<char> src(2 * largest, 1), dst(2 * largest, 0);
  auto time = [](auto&& f) {
    std::vector<double> seconds;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return tb::Timing{.inner = 1, .seconds_per_op = std::move(seconds)}.median();
  };
  tb::fpga::MemoryModel m;
  for (std::size_t bytes = std::size_t{64} << 10; bytes <= largest; bytes *= 4) {
    const double t = time([&] { std::memcpy(dst.data(), src.data(), bytes); });
    m.bandwidth_by_bytes.emplace_back(static_cast<double>(bytes), static_cast<double>(bytes) / t);
    const auto blocks = static_cast<double>(bytes / 64);
    m.per_block_by_bytes.emplace_back(static_cast<double>(bytes), std::max(0.0, pack_seconds(src, dst, bytes, time) - t) / blocks);
    m.per_piece_by_bytes.emplace_back(static_cast<double>(bytes),
                                      std::max(0.0, copy_list_seconds(src, dst, bytes, time) - t) / blocks);
    if (static_cast<double>(bytes) < m.streaming_from_bytes) continue;
    // The testbed packer's large copies: streaming stores (collectives/pack.hpp).
    const double ts = time([&] {
      const tb::BlockCopy streaming(static_cast<std::int64_t>(bytes));
      streaming(reinterpret_cast<std::byte*>(dst.data()), reinterpret_cast<const std::byte*>(src.data()),
                static_cast<std::int64_t>(bytes));
    });
    m.streaming_bandwidth_by_bytes.emplace_back(static_cast<double>(bytes), static_cast<double>(bytes) / ts);
  }
  m.copy_bandwidth_bytes_per_s = m.bandwidth_by_bytes.back().second;
  const std::size_t bytes = largest, blocks = bytes / 64;
  const double contiguous = time([&] { std::memcpy(dst.data(), src.data(), bytes); });
  const double strided = time([&] {
    for (std::size_t b = 0; b < blocks; ++b) std::memcpy(dst.data() + b * 64, src.data() + b * 128, 64);
  });
  m.per_block_s = std::max(0.0, (strided - contiguous) / static_cast<double>(blocks));
  return m;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

struct Options {
  std::vector<std::int64_t> shape{128, 128, 128};
  std::vector<int> grid{2};
  int from_axis = -1, to_axis = 0, call = 0, ranks_per_node = 0;
  int inner = tb::TimingOptions{}.inner;  // the measurement's calls per timed loop, as the tools default
  std::string type = "c64", pattern_file, memory_file, csv, save_memory;
  std::vector<std::string> networks, algorithms;
  std::string overheads_file;
  bool beff = false, breakdown = false;
  std::optional<std::string> values_at, traffic, block;  // --values-at and its two table keys, as given
  double pack_below = 4096;
  std::string buffers = "private";
  std::vector<std::string> without;
  bool list_algorithms = false, list_settings = false, list_terms = false;
};

const std::string& network_dir() {
  static const std::string dir = std::string(TB_SOURCE_DIR) + "/fpga_transport/networks/";
  return dir;
}

// --values-at and the table keys it reads at; the options of a prediction do not go with it.
void add_values_options(CLI::App& app, Options& o) {
  auto* at = app.add_option("--values-at", o.values_at,
                            "print each --network's measured host quantities at a message of this many bytes "
                            "(64, 4K, 16M), each with the term that uses it (--without applies), and exit "
                            "(default network: host_calibrated)");
  for (const char* prediction : {"--shape", "--grid", "--from-axis", "--to-axis", "--type", "--pattern", "--call",
                                 "--algorithm", "--ranks-per-node", "--inner", "--pack-below", "--buffers", "--memory",
                                 "--save-memory", "--csv", "--overheads", "--beff", "--breakdown"})
    at->excludes(app.get_option(prediction));
  app.add_option("--traffic", o.traffic,
                 "with --values-at: read the cold-message tables after this many bytes of a rank's memory traffic "
                 "(default: at each measured traffic)")
      ->needs(at);
  app.add_option("--block", o.block,
                 "with --values-at: read the non-contiguous tables and the library's pack at this many bytes per "
                 "contiguous block (default: each measured block size; the pack contiguous)")
      ->needs(at);
}

void add_options(CLI::App& app, Options& o) {
  const std::string& net_dir = network_dir();
  tb::add_list_option(app, "--shape", o.shape, "global shape of the redistributed array", "axis");
  tb::add_list_option(app, "--grid", o.grid, "process grid dims (every entry >= 1)");
  app.add_option("--from-axis", o.from_axis, "aligned axis of the input pencil (default: last)")
      ->check(CLI::Range(0, 63));  // unset is -1 (the last axis); a given -5 is an error, not that default
  app.add_option("--to-axis", o.to_axis, "aligned axis of the output pencil")->capture_default_str();
  app.add_option("--type", o.type, "element type: f32, f64, c32, c64")->capture_default_str();
  app.add_option("--pattern", o.pattern_file, "a pattern recorded with TB_ALLTOALLW_RECORD instead of --shape");
  app.add_option("--call", o.call, "which recorded call (0-based)")->capture_default_str()->check(CLI::Range(0, 1 << 30));
  tb::add_list_option(app, "--network", o.networks,
                      "network JSON files (default: iec_ring, iec_torus, pcie_mpi_520n, pcie_mpi_520n_measured and "
                      "host_calibrated in " + net_dir + ")",
                      "file");
  tb::add_list_option(app, "--algorithm", o.algorithms, "algorithms to cost (default: every registered one and local_remap)",
                      "name");
  app.add_option("--ranks-per-node", o.ranks_per_node,
                 "ranks per node: node_leader's, which packed messages stay on a node, and a cluster network's "
                 "placement (default: the network's; one per "
                 "FPGA, all on one host, a cluster node's cores)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--inner", o.inner,
                 "calls per timed loop of the measurement predicted (the tools' --inner): where the network "
                 "describes its barrier, every total is a call as the testbed's timing reports it, the barrier's "
                 "uneven exits spread over these calls (a recorded --pattern too, as one communicator)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--pack-below", o.pack_below, "ucx_zcopy's packing threshold in bytes")
      ->capture_default_str()
      ->check(tb::finite_range(0, 1e18));
  app.add_option("--buffers", o.buffers,
                 "the user's arrays, as tb-redistribute --buffers: private (node_leader stages on-node data: two "
                 "copies) or shared (node_leader copies on-node data once)")
      ->check(CLI::IsMember({"private", "shared"}))
      ->capture_default_str();
  app.add_option("--memory", o.memory_file, "memory model JSON (default: measured now on this machine)");
  app.add_option("--save-memory", o.save_memory, "write the measured memory model to this file");
  app.add_option("--csv", o.csv, "write algorithm x network rows as CSV");
  app.add_option("--overheads", o.overheads_file,
                 "tb-bench JSON at 1 B per peer (contiguous): each algorithm's measured time there minus the "
                 "model's is added to every call as its fixed software overhead (host networks only)");
  app.add_flag("--beff", o.beff, "also print the model b_eff of each network at the pattern's rank count");
  tb::add_list_option(app, "--without", o.without,
                      "model terms to switch off, for a comparison (--list-terms lists them and says what each adds)",
                      "term");
  app.add_flag("--breakdown", o.breakdown,
               "also print, per network and algorithm, what each switchable term adds to the total (the total "
               "minus the total --without that term)");
  app.add_flag("--list-terms", o.list_terms, "print the switchable model terms with their sources and exit");
  app.add_flag("--list-algorithms", o.list_algorithms, "print every algorithm with its schedule (or why it has none) and exit");
  app.add_flag("--list-settings", o.list_settings, tb::kListSettingsHelp);
  add_values_options(app, o);
}

void list_algorithms() {
  for (const auto& m : tb::fpga::algorithms_to_cost())
    std::printf("%-20s %s\n", m.name.c_str(),
                m.schedule.empty() ? ("not modelled: " + m.not_modelled).c_str() : ("schedule " + m.schedule).c_str());
}

void list_terms() {
  for (const auto& t : tb::fpga::switchable_terms())
    std::printf("%-18s %s\n%-18s   source: %s\n", t.name.c_str(), t.adds.c_str(), "", t.source.c_str());
}

// --values-at: each network's measured host quantities at one message size, in microseconds,
// with the terms --without names switched off.
void print_values_at(Options& o) {
  // An absent table key is 0: the tables are read at each measured key.
  const auto size = [](const std::optional<std::string>& text, const char* option) {
    return text ? static_cast<double>(tb::parse_size(*text, option, "bytes")) : 0.0;
  };
  const double bytes = size(o.values_at, "--values-at");
  const double traffic = size(o.traffic, "--traffic");
  const double block = size(o.block, "--block");
  if (o.networks.empty()) o.networks.push_back(network_dir() + "host_calibrated.json");
  for (const auto& file : o.networks) {
    std::vector<tb::fpga::Network> net{tb::fpga::Network::from_file(file, 2)};  // its measurements know no ranks
    tb::fpga::MemoryModel unused;
    for (const auto& term : o.without) tb::fpga::switch_off(term, net, unused);
    const auto values = net[0].host_values_at(bytes, traffic, block);
    std::printf("%s (%s) at L = %.0f B%s%s:\n", net[0].name().c_str(), file.c_str(), bytes,
                o.without.empty() ? "" : ", terms switched off: ", tb::join(o.without, ", ").c_str());
    if (values.empty()) std::printf("  not a host network: no measured host quantities\n");
    std::size_t width = 0;
    for (const auto& v : values) width = std::max(width, v.what.size());
    for (const auto& v : values)
      std::printf("  %-28s %-*s %12.3f us\n", v.term.c_str(), static_cast<int>(width), v.what.c_str(), v.seconds * 1e6);
  }
}

// --without's names, checked against the switchable terms before any work.
void check_terms(const std::vector<std::string>& without) {
  const auto& known = tb::fpga::switchable_terms();
  for (const auto& name : without)
    if (std::none_of(known.begin(), known.end(), [&](const auto& t) { return t.name == name; })) {
      std::string list;
      for (const auto& t : known) list += (list.empty() ? "" : ", ") + t.name;
      throw std::invalid_argument("--without " + name + ": not a switchable model term (known: " + list + ")");
    }
}

// The algorithms --algorithm names, in the registry's order (all when none is named).
std::vector<tb::fpga::ModelledAlgorithm> chosen_algorithms(const Options& o) {
  const auto known = tb::fpga::algorithms_to_cost();
  std::vector<tb::fpga::ModelledAlgorithm> chosen;
  for (const auto& m : known)
    if (o.algorithms.empty() || std::find(o.algorithms.begin(), o.algorithms.end(), m.name) != o.algorithms.end())
      chosen.push_back(m);
  for (const auto& a : o.algorithms)
    if (std::none_of(known.begin(), known.end(), [&](const auto& m) { return m.name == a; }))
      throw std::invalid_argument("--algorithm " + a + ": not a registered algorithm nor local_remap");
  return chosen;
}

// The memory model of --memory, its schema checked (named errors, no silent defaults).
tb::fpga::MemoryModel memory_file(const std::string& path) {
  try {
    const nlohmann::json j = tb::fpga::read_json_file("--memory", path);
    auto memory = j.get<tb::fpga::MemoryModel>();
    tb::fpga::require_copy_costs(j);
    return memory;
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).rfind("--memory", 0) == 0) throw;
    throw std::invalid_argument("--memory " + path + ": " + e.what());
  }
}

// The memory model from --memory, or measured now; written to --save-memory when given.
std::pair<tb::fpga::MemoryModel, std::string> memory_model(const Options& o) {
  tb::fpga::MemoryModel memory;
  std::string source;
  if (!o.memory_file.empty()) {
    memory = memory_file(o.memory_file);
    source = o.memory_file;
  } else {
    memory = measure_memory();
    source = "measured now";
  }
  if (!o.save_memory.empty()) {
    std::ofstream f(o.save_memory);
    f << nlohmann::json(memory).dump(2) << "\n";
    if (!f) throw std::runtime_error("--save-memory " + o.save_memory + ": cannot be written");
  }
  return {memory, source};
}

// Each algorithm's measured time per call at 1 B per peer (tb-bench --overheads JSON: Google
// Benchmark's {"benchmarks": [{"name", "real_time", "time_unit"}, ...]}).
std::map<std::string, double> measured_at_one_byte(const std::string& path) {
  std::map<std::string, double> measured_1b;
  if (path.empty()) return measured_1b;
  const nlohmann::json j = tb::fpga::read_json_file("--overheads", path);
  try {
    tb::fpga::require_object(j, "the document");
    std::vector<nlohmann::json> benchmarks;
    tb::fpga::read_key(j, "", "benchmarks", benchmarks, /*required=*/true);
    for (std::size_t i = 0; i < benchmarks.size(); ++i) {
      const auto& b = benchmarks[i];
      const std::string where = "benchmarks[" + std::to_string(i) + "].";
      tb::fpga::require_object(b, "'" + where.substr(0, where.size() - 1) + "'");
      std::string name, unit = "ns";
      double real_time = 0.0;
      tb::fpga::read_key(b, where, "name", name, true);  // alltoallw/contiguous/<alg>/1/manual_time
      tb::fpga::read_key(b, where, "time_unit", unit);
      const auto first = name.find('/'), second = name.find('/', first + 1), third = name.find('/', second + 1);
      if (name.rfind("alltoallw/contiguous/", 0) != 0 || third == std::string::npos || name.compare(third, 3, "/1/") != 0)
        continue;
      tb::fpga::read_key(b, where, "real_time", real_time, true);
      const double scale = unit == "ns" ? 1e-9 : unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : unit == "s" ? 1.0 : 0.0;
      if (scale == 0.0) throw std::invalid_argument("key '" + where + "time_unit': unknown unit '" + unit + "'");
      measured_1b[name.substr(second + 1, third - second - 1)] = real_time * scale;
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--overheads " + path + ": " + e.what());
  }
  if (measured_1b.count("pack_alltoallv")) measured_1b["local_remap"] = measured_1b["pack_alltoallv"];
  return measured_1b;
}

// timing_s: per network, the timing barrier's time per call (timing_barrier_s).
void print_header(const Options& o, const tb::fpga::CommPattern& pattern, const tb::fpga::MemoryModel& memory,
                  const std::string& memory_source, const std::vector<tb::fpga::Network>& nets,
                  const std::vector<double>& timing_s) {
  std::printf("tb-model  %s; %d ranks, %.3f MiB moved in all\n", pattern.description.c_str(), pattern.ranks(),
              static_cast<double>(pattern.total_bytes()) / (1 << 20));
  std::printf("  local work: %.2f GB/s copy, %.2f ns per block", memory.copy_bandwidth_bytes_per_s / 1e9,
              memory.per_block_s * 1e9);
  if (!memory.streaming_bandwidth_by_bytes.empty())
    std::printf(", streaming stores %.2f GB/s from %.0f MiB", memory.streaming_bandwidth_by_bytes.back().second / 1e9,
                memory.streaming_from_bytes / (1 << 20));
  if (const auto& blocks = memory.per_block_by_bytes; !blocks.empty())
    std::printf(", the packer's blocks %.2f ns at %.0f KiB .. %.2f ns at %.0f MiB", blocks.front().second * 1e9,
                blocks.front().first / 1024, blocks.back().second * 1e9, blocks.back().first / (1 << 20));
  if (const auto& pieces = memory.per_piece_by_bytes; !pieces.empty())
    std::printf(", node_leader's copy lists %.2f ns per piece at %.0f KiB .. %.2f ns at %.0f MiB", pieces.front().second * 1e9,
                pieces.front().first / 1024, pieces.back().second * 1e9, pieces.back().first / (1 << 20));
  std::printf(" (%s)\n", memory_source.c_str());
  if (!o.without.empty()) std::printf("  terms switched off: %s\n", tb::join(o.without, ", ").c_str());
  for (std::size_t i = 0; i < nets.size(); ++i) {
    const auto& n = nets[i];
    std::printf("  network %s; node_leader: %d rank(s) per node\n", n.describe().c_str(),
                o.ranks_per_node > 0 ? o.ranks_per_node : n.ranks_per_node());
    if (const double t = timing_s[i]; t > 0)
      std::printf("    timing barrier: %.3f us per call (its exits' widest spread in a communicator over %d inner calls), "
                  "in every total\n", t * 1e6, o.inner);
  }
  std::printf("\n  %-16s", "ms (comm+local)");  // the total also holds the fixed overhead and the timing barrier, where they apply
  for (const auto& n : nets) std::printf(" %26s", n.name().c_str());
  std::printf("\n");
}

// What one algorithm's prediction is made from, beside the network and the memory model.
struct Prediction {
  const Options& options;
  const tb::fpga::CommPattern& pattern;
  const std::map<std::string, double>& measured_1b;  // --overheads: tb-bench at 1 B per peer
};

// Algorithm `a` on network `net` as the table prints it: the schedule's cost with the fixed
// per-call overhead calibrated at 1 B per peer (host networks) and the network's timing barrier
// per call, `timing_s` (timing_barrier_s: it depends on the network and the pattern only).
tb::fpga::Cost predict(const Prediction& p, const std::string& a, const tb::fpga::Network& net,
                       const tb::fpga::MemoryModel& memory, double timing_s) {
  tb::fpga::ScheduleOptions so;
  so.pack_below_bytes = p.options.pack_below;
  so.node_shared_buffers = p.options.buffers == "shared";
  so.ranks_per_node = p.options.ranks_per_node > 0 ? p.options.ranks_per_node : net.ranks_per_node();
  auto c = tb::fpga::cost(tb::fpga::schedule(a, p.pattern, so), net, memory);
  if (const auto it = p.measured_1b.find(a); it != p.measured_1b.end())
    c.overhead_s = tb::fpga::fixed_overhead_s(a, it->second, p.pattern.ranks(), net, memory, so);
  c.timing_s = timing_s;
  return c;
}

// The table: algorithm x network -> predicted time (communication + local work), with the
// fixed per-call overheads and the timing barrier (predict); CSV rows to `out`.
void print_costs(const Prediction& p, const tb::fpga::MemoryModel& memory, const std::vector<tb::fpga::Network>& nets,
                 const std::vector<double>& timing_s, const std::vector<tb::fpga::ModelledAlgorithm>& chosen,
                 std::ofstream& out) {
  if (!p.measured_1b.empty()) {
    std::printf("  fixed overhead per call (host networks; tb-bench at 1 B per peer minus the model):");
    for (const auto& [a, t] : p.measured_1b) std::printf(" %s %.2f us", a.c_str(), t * 1e6);
    std::printf(" measured\n");
  }
  std::vector<std::pair<double, std::string>> best(nets.size(), {1e300, ""});
  for (const auto& m : chosen) {
    const std::string& a = m.name;
    std::printf("  %-16s", a.c_str());
    if (m.schedule.empty()) {
      std::printf(" not modelled: %s\n", m.not_modelled.c_str());
      continue;
    }
    for (std::size_t i = 0; i < nets.size(); ++i) {
      const auto c = predict(p, a, nets[i], memory, timing_s[i]);
      const std::string cell = ms(c.total_s()) + " (" + ms(c.communication_s) + "+" + ms(c.local_s) + ")";
      std::printf(" %26s", cell.c_str());
      if (c.total_s() < best[i].first) best[i] = {c.total_s(), a};
      if (out)
        out << "\"" << p.pattern.description << "\"," << p.pattern.ranks() << "," << a << "," << nets[i].name() << ","
            << c.communication_s << "," << c.local_s << "," << c.overhead_s << "," << c.timing_s << "," << c.total_s()
            << "," << c.phases << "," << c.messages << "\n";
    }
    std::printf("\n");
  }
  std::printf("  %-16s", "fastest");
  for (const auto& b : best) std::printf(" %26s", b.second.c_str());
  std::printf("\n");
}

// One network's breakdown, per modelled algorithm (chosen's order): its total on the network,
// and the total minus the total with each switchable term still on switched off alone, {term,
// seconds added} where that prints as more than 0.00 us.
struct TermsAdded {
  std::vector<double> total;
  std::vector<std::vector<std::pair<std::string, double>>> added;
};

TermsAdded terms_added(const Prediction& p, const tb::fpga::MemoryModel& memory, const tb::fpga::Network& net,
                       double timing_s, const std::vector<tb::fpga::ModelledAlgorithm>& chosen) {
  TermsAdded t{std::vector<double>(chosen.size()), std::vector<std::vector<std::pair<std::string, double>>>(chosen.size())};
  for (std::size_t k = 0; k < chosen.size(); ++k)
    if (!chosen[k].schedule.empty()) t.total[k] = predict(p, chosen[k].name, net, memory, timing_s).total_s();
  const auto& without = p.options.without;
  for (const auto& term : tb::fpga::switchable_terms()) {
    if (std::find(without.begin(), without.end(), term.name) != without.end()) continue;  // already off
    std::vector<tb::fpga::Network> less_net{net};
    tb::fpga::MemoryModel less_memory = memory;
    tb::fpga::switch_off(term.name, less_net, less_memory);
    const double less_timing_s = tb::fpga::timing_barrier_s(p.pattern, less_net.front(), p.options.inner);
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      if (chosen[k].schedule.empty()) continue;
      const double added_s =
          t.total[k] - predict(p, chosen[k].name, less_net.front(), less_memory, less_timing_s).total_s();
      if (std::abs(added_s) >= 0.005e-6) t.added[k].emplace_back(term.name, added_s);  // as printed: not 0.00 us
    }
  }
  return t;
}

// --breakdown: per network and algorithm, the total and what each term adds to it (terms_added),
// as tb-model --without TERM would print the total, its fixed overhead recalibrated too. A term
// that replaces one cost by another can add less than nothing, and terms overlap (local_work
// holds the library engine's and the memory terms' shares), so the additions do not sum to the
// total.
void print_breakdown(const Prediction& p, const tb::fpga::MemoryModel& memory,
                     const std::vector<tb::fpga::Network>& nets, const std::vector<double>& timing_s,
                     const std::vector<tb::fpga::ModelledAlgorithm>& chosen) {
  std::printf("\n  what each term adds to the total, us (the total minus the total --without that term alone):\n");
  for (std::size_t i = 0; i < nets.size(); ++i) {
    std::printf("    %s\n", nets[i].name().c_str());
    const TermsAdded t = terms_added(p, memory, nets[i], timing_s[i], chosen);
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      if (chosen[k].schedule.empty()) continue;
      std::printf("      %-16s total %.2f", chosen[k].name.c_str(), t.total[k] * 1e6);
      for (const auto& [term, s] : t.added[k]) std::printf("  %s %+.2f", term.c_str(), s * 1e6);
      std::printf("\n");
    }
  }
}

// Each network's model b_eff; where a network has the node contention term, also without it.
void print_beff(const std::vector<tb::fpga::Network>& nets, int ranks) {
  std::printf("\n  model b_eff (HPCC FPGA rules) at %d ranks:\n", ranks);
  for (const auto& n : nets) {
    const auto r = tb::fpga::model_beff(n);
    std::printf("    %-20s b_eff %.3f GB/s per rank, b(1 MiB) %.3f GB/s per rank", n.name().c_str(),
                r.per_rank_bytes_per_s() / 1e9, r.points.back().bandwidth_bytes_per_s / ranks / 1e9);
    if (n.kind() == tb::fpga::NetworkKind::pcie_mpi && !n.pcie_mpi().node_contention.empty()) {
      tb::fpga::Network alone = n;
      alone.drop_node_contention();
      std::printf("; without node_contention %.3f GB/s", tb::fpga::model_beff(alone).per_rank_bytes_per_s() / 1e9);
    }
    std::printf("\n");
  }
}

// The pattern to cost: --pattern's recorded call, or the redistribution of --shape on --grid.
tb::fpga::CommPattern chosen_pattern(const Options& o) {
  if (!o.pattern_file.empty()) return tb::fpga::recorded_pattern(o.pattern_file, o.call);
  tb::check_shape("--shape", o.shape, 2);
  const auto element = tb::for_option("--type", [&] { return tb::parse_element_type(o.type); });
  std::int64_t bytes = static_cast<std::int64_t>(tb::element_size(element));
  for (auto n : o.shape)
    if (__builtin_mul_overflow(bytes, n, &bytes))  // the model sums bytes in 64-bit integers
      throw std::invalid_argument("--shape " + tb::join(o.shape, "x") + ": the array would have more than 2^63 bytes");
  const int d = static_cast<int>(o.shape.size());
  return tb::for_option("--shape/--grid/--from-axis/--to-axis", [&] {
    return tb::fpga::redistribution_pattern(o.shape, o.grid, o.from_axis >= 0 ? o.from_axis : d - 1, o.to_axis,
                                            static_cast<std::int64_t>(tb::element_size(element)));
  });
}

// Every input is read and checked, and every output path tried, before the memory is measured
// (seconds) or anything is written.
int run(Options& o) {
  tb::check_settings();
  if (o.list_algorithms) {
    list_algorithms();
    return 0;
  }
  if (o.list_terms) {
    list_terms();
    return 0;
  }
  check_terms(o.without);
  if (o.values_at) {  // given at all, an empty text too
    print_values_at(o);
    return 0;
  }
  tb::check_writable("--csv", o.csv);
  tb::check_writable("--save-memory", o.save_memory);
  const tb::fpga::CommPattern pattern = chosen_pattern(o);
  const int ranks = pattern.ranks();
  if (o.networks.empty())
    for (const char* f : {"iec_ring.json", "iec_torus.json", "pcie_mpi_520n.json", "pcie_mpi_520n_measured.json", "host_calibrated.json"})
      o.networks.push_back(network_dir() + f);
  const auto chosen = chosen_algorithms(o);
  std::vector<tb::fpga::Network> nets;
  for (const auto& f : o.networks) {
    nets.push_back(tb::fpga::Network::from_file(f, ranks));
    if (o.ranks_per_node > 0) nets.back().place_ranks(o.ranks_per_node);  // a cluster's placement too
  }
  const auto measured_1b = measured_at_one_byte(o.overheads_file);
  auto [memory, memory_source] = memory_model(o);  // saved (--save-memory) before any term is switched off
  for (const auto& term : o.without) tb::fpga::switch_off(term, nets, memory);

  // The timing barrier depends on the pattern and the network only: once per network, for the
  // header and every algorithm's total.
  std::vector<double> timing_s;
  for (const auto& n : nets) timing_s.push_back(tb::fpga::timing_barrier_s(pattern, n, o.inner));
  print_header(o, pattern, memory, memory_source, nets, timing_s);
  std::ofstream out;
  if (!o.csv.empty()) {
    out.open(o.csv);
    out.precision(std::numeric_limits<double>::max_digits10);  // every digit: the times are read back and compared
    out << "pattern,ranks,algorithm,network,communication_s,local_s,overhead_s,timing_s,total_s,phases,messages\n";
  }
  const Prediction prediction{o, pattern, measured_1b};
  print_costs(prediction, memory, nets, timing_s, chosen, out);
  if (o.breakdown) print_breakdown(prediction, memory, nets, timing_s, chosen);
  if (o.beff) print_beff(nets, ranks);
  if (!o.csv.empty() && !(out.flush()))
    throw std::runtime_error("--csv " + o.csv + ": cannot be written");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Modelled cost of one Alltoallw per algorithm on IEC, PCIe+MPI and calibrated host networks"};
  tb::use_tool_errors(app, "tb-model");
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (o.list_settings) {
    std::fputs(tb::settings_table().c_str(), stdout);
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tb-model: error: %s\n", e.what());
    return 2;
  }
}
