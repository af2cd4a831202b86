// tb-redistribute: plans one redistribution of a d-dimensional array between two pencils,
// verifies it (forward and back) against the global-index pattern, and times it next to the
// memory-copy floor (one memcpy of the local array) with the testbed's timing method.
//
//   mpiexec -n 2 tb-redistribute --shape 128,128,128 --type c64 --method native,local_remap
//
// In the smpi build, --smpi-shared-arrays allocates the arrays with SMPI_SHARED_MALLOC, so that
// thousands of simulated ranks hold large arrays in little memory: every rank's arrays are then
// one block of memory, their contents meaningless, and verification is off (the table and the
// rows say "off"). Other builds reject the option.
#include "collectives/mpi_error.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"
#include "microbench/checks.hpp"
#include "microbench/machine_state.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"
#include "redistribute/global_pattern.hpp"
#include "redistribute/redistribution.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

struct Options {
  std::vector<std::int64_t> shape{128, 128, 128};
  std::vector<int> grid{0};
  int from_axis = -1;  // default: last axis
  int to_axis = 0;
  std::string type = "c64";
  std::vector<std::string> methods{"native", "local_remap"};
  std::vector<std::string> calls{"blocking"};  // how the Alltoallw methods call: blocking, persistent
  tb::TimingOptions timing{3, 50, 30.0, 5};
  std::string csv, json;
  std::string buffers = "private";  // or "shared": arrays in node-shared memory (NodeSharedBuffer)
  bool smpi_shared_arrays = false;  // smpi build: arrays from SMPI_SHARED_MALLOC, verification off
};

// Where a local array lives: ordinary memory, node-shared memory, or (smpi build only) SMPI's
// shared malloc, where every simulated rank's array is the same block.
enum class ArrayKind { private_memory, node_shared, smpi_shared };

ArrayKind array_kind(const Options& opt) {
  if (opt.smpi_shared_arrays) return ArrayKind::smpi_shared;
  return opt.buffers == "shared" ? ArrayKind::node_shared : ArrayKind::private_memory;
}

// The "buffers" column: what the arrays were.
std::string buffers_name(const Options& opt) { return opt.smpi_shared_arrays ? "smpi_shared" : opt.buffers; }

// One local array: a private vector, or a segment of a NodeSharedBuffer that the other ranks
// of the node can read (node_leader's single-copy path needs the send array there).
class LocalArray {
 public:
  LocalArray(MPI_Comm comm, std::size_t bytes, ArrayKind kind) {
    if (kind == ArrayKind::node_shared) {
      shared_ = std::make_unique<tb::NodeSharedBuffer>(comm, bytes);
    } else if (kind == ArrayKind::smpi_shared) {
#if defined(TB_SMPI)
      smpi_ = static_cast<std::byte*>(SMPI_SHARED_MALLOC(std::max<std::size_t>(bytes, 1)));
#else
      throw std::logic_error("SMPI shared arrays outside the smpi build");  // validate() rejects it first
#endif
    } else {
      own_.resize(bytes);
    }
    size_ = bytes;
  }
  LocalArray(const LocalArray&) = delete;
  LocalArray& operator=(const LocalArray&) = delete;
  ~LocalArray() {
#if defined(TB_SMPI)
    if (smpi_) SMPI_SHARED_FREE(smpi_);
#endif
  }
  std::byte* data() { return smpi_ ? smpi_ : shared_ ? shared_->data() : own_.data(); }
  std::size_t size() const { return size_; }
  std::byte* begin() { return data(); }
  std::byte* end() { return data() + size_; }

 private:
  std::vector<std::byte> own_;
  std::unique_ptr<tb::NodeSharedBuffer> shared_;
  std::byte* smpi_ = nullptr;
  std::size_t size_ = 0;
};

struct Result {
  std::string method;
  bool verified = false;
  bool checked = true;  // false: verification off (SMPI shared arrays)
  tb::Timing timing;
  // The cross-core handoff ratio and the vector path's ratio (microbench/machine_state.hpp)
  // before the method was verified and after it was timed; -1 where not measured.
  double handoff_before = -1, handoff_after = -1;
  double vector_before = -1, vector_after = -1;
};

// Checks what depends only on the command line, identically on every rank, so that bad input
// ends the job cleanly (exit code 2, one message) instead of through MPI_Abort.
void validate(const Options& opt) {
  const int d = static_cast<int>(opt.shape.size());
  tb::check_shape("--shape", opt.shape, 2);
  const int from = opt.from_axis >= 0 ? opt.from_axis : d - 1;
  if (from >= d || opt.to_axis < 0 || opt.to_axis >= d)
    throw std::invalid_argument("--from-axis and --to-axis must lie in 0.." + std::to_string(d - 1) + ", got " +
                                std::to_string(from) + " and " + std::to_string(opt.to_axis));
  if (from == opt.to_axis) throw std::invalid_argument("--from-axis and --to-axis must differ");
  const tb::ElementType type = tb::for_option("--type", [&] { return tb::parse_element_type(opt.type); });
  int ranks = 1;
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  tb::check_grid("--grid", opt.grid, opt.shape.size(), ranks);
  // in, out and back, and the floor's copy of the input
  tb::check_array_fits("--shape", opt.shape, static_cast<std::int64_t>(tb::element_size(type)), ranks, 4);
  // A method or kind of call named twice would be verified and timed twice under one name.
  tb::check_no_repeats("--method", opt.methods);
  const auto methods = tb::for_option("--method", [&] { return tb::expand_redistribution_methods(opt.methods); });
  tb::check_no_repeats("--method", methods, " ('all' includes every registered algorithm and local_remap)");
  for (const auto& calls : opt.calls)
    if (calls != "blocking" && calls != "persistent")
      throw std::invalid_argument("--calls: '" + calls + "' is neither blocking nor persistent");
  tb::check_no_repeats("--calls", opt.calls);
  tb::check_distinct_outputs({{"--csv", opt.csv}, {"--json", opt.json}});
  tb::check_writable(MPI_COMM_WORLD, "--json", opt.json);
  tb::check_writable(MPI_COMM_WORLD, "--csv", opt.csv);
#if defined(TB_SMPI)
  if (opt.smpi_shared_arrays && opt.buffers == "shared")
    throw std::invalid_argument("--smpi-shared-arrays and --buffers shared exclude each other");
#else
  if (opt.smpi_shared_arrays)
    throw std::invalid_argument("--smpi-shared-arrays needs the smpi build (scripts/build.sh smpi, build/smpi/bin): "
                                "it allocates the arrays with SimGrid's SMPI_SHARED_MALLOC");
#endif
}

// What one run works on: the grid, the two pencils and their local arrays.
struct Problem {
  explicit Problem(const Options& opt)
      : type(tb::parse_element_type(opt.type)),
        from(opt.from_axis >= 0 ? opt.from_axis : static_cast<int>(opt.shape.size()) - 1),
        grid(tb::ProcessGrid::create(MPI_COMM_WORLD, opt.grid)),
        in_pencil(grid, opt.shape, from),
        out_pencil(in_pencil.realigned(opt.to_axis)),
        kind(array_kind(opt)),
        in(MPI_COMM_WORLD, static_cast<std::size_t>(in_pencil.local_size()) * tb::element_size(type), kind),
        out(MPI_COMM_WORLD, static_cast<std::size_t>(out_pencil.local_size()) * tb::element_size(type), kind),
        back(MPI_COMM_WORLD, in.size(), kind) {}
  tb::ElementType type;
  int from;
  std::shared_ptr<const tb::ProcessGrid> grid;
  tb::Pencil in_pencil, out_pencil;
  ArrayKind kind;
  LocalArray in, out, back;
  bool verifies() const { return kind != ArrayKind::smpi_shared; }
};

// The references every method is compared with, timed the same way.
struct Floors {
  tb::Timing memcpy, streaming;
};

Floors time_floors(const Options& opt, Problem& p) {
  // The floor: one memcpy of the local array, timed the same way.
  if (p.verifies()) tb::fill_global_pattern(p.in_pencil, p.type, p.in.data());
  // The copy's target is private memory, or SMPI's shared block like the arrays.
  LocalArray copy(MPI_COMM_SELF, p.in.size(),
                  p.kind == ArrayKind::smpi_shared ? ArrayKind::smpi_shared : ArrayKind::private_memory);
  Floors f;
  f.memcpy = tb::time_collective(p.grid->comm(), opt.timing, [&] {
    std::memcpy(copy.data(), p.in.data(), p.in.size());
  });
  // A second reference: the same copy with streaming (non-temporal) stores, as the testbed's
  // packer does for large operations. glibc's memcpy does not stream at these sizes here, so
  // a single-copy algorithm can beat the memcpy floor; this row shows by how much it could.
  f.streaming = tb::time_collective(p.grid->comm(), opt.timing, [&] {
    const tb::BlockCopy streaming(static_cast<std::int64_t>(p.in.size()));
    streaming(copy.data(), p.in.data(), static_cast<std::int64_t>(p.in.size()));
  });
  return f;
}

// This rank's wrong elements after one forward call into an output cleared to 0xA5.
long long forward_mismatches(Problem& p, tb::Redistribution& plan) {
  std::fill(p.out.begin(), p.out.end(), std::byte{0xA5});
  plan.forward(p.in.data(), p.out.data());
  return tb::count_pattern_mismatches(p.out_pencil, p.type, p.out.data());
}

// Plans, verifies and times one method, its Alltoallw called as `calls` says.
Result verify_and_time(const Options& opt, Problem& p, const std::string& method, tb::AlltoallwCalls calls) {
  auto plan = tb::make_redistribution(p.in_pencil, p.out_pencil, p.type, method, calls);
  // Persistent calls: the first forward call runs blocking and the second prepares (the same
  // arrays again); both before the timing, so that it times started calls only.
  const int untimed = calls == tb::AlltoallwCalls::persistent ? 2 : 0;
  if (!p.verifies()) {  // SMPI shared arrays: every rank's data is one block, nothing to check
    for (int i = 0; i < untimed; ++i) plan->forward(p.in.data(), p.out.data());
    Result r{"", false, false, {}};
    r.timing = tb::time_collective(p.grid->comm(), opt.timing, [&] { plan->forward(p.in.data(), p.out.data()); });
    r.method = plan->method();
    return r;
  }
  // Verify: forward must place every element at its global index; backward must restore the input.
  tb::fill_global_pattern(p.in_pencil, p.type, p.in.data());
  std::fill(p.back.begin(), p.back.end(), std::byte{0x5A});
  long long bad = forward_mismatches(p, *plan);
  plan->backward(p.out.data(), p.back.data());
  bad += tb::count_pattern_mismatches(p.in_pencil, p.type, p.back.data());
  for (int i = 1; i < untimed; ++i) plan->forward(p.in.data(), p.out.data());  // the check made the first
  Result r{"", false, true, {}};
  r.timing = tb::time_collective(p.grid->comm(), opt.timing, [&] { plan->forward(p.in.data(), p.out.data()); });
  r.method = plan->method();  // the path the timed (forward) calls took
  // The check above ran a blocking call; the timed ones were started prepared calls: one more of
  // those into a cleared output is checked too.
  bad += forward_mismatches(p, *plan);
  long long total_bad = 0;
  TB_MPI_CHECK(MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  r.verified = total_bad == 0;
  return r;
}

// "1.0x/1.1x", with " SLOW" where either side is above kSlowHandoffRatio; "-" where not measured.
std::string handoff_text(const Result& r) {
  if (r.handoff_before < 0) return "-";
  char text[48];
  const bool slow = std::max(r.handoff_before, r.handoff_after) > tb::kSlowHandoffRatio;
  std::snprintf(text, sizeof text, "%.1fx/%.1fx%s", r.handoff_before, r.handoff_after, slow ? " SLOW" : "");
  return text;
}

void print_table(const Options& opt, const Problem& p, const nlohmann::json& meta, long long max_bytes,
                 const Floors& floors, const std::vector<Result>& results) {
  const tb::Timing& floor = floors.memcpy;
  const tb::Timing& stream = floors.streaming;
  std::printf("tb-redistribute  %s  %s  on grid %s (%d ranks, %d node(s): %s)\n", tb::join(opt.shape, "x").c_str(),
              std::string(tb::element_type_name(p.type)).c_str(), p.grid->describe().c_str(), meta["ranks"].get<int>(),
              meta["node_layout"]["nodes"].get<int>(), meta["node_layout"]["source"].get<std::string>().c_str());
  std::printf("  %s  ->  %s\n", p.in_pencil.describe().c_str(), p.out_pencil.describe().c_str());
  std::printf("  MPI: %s | cores %d, NUMA nodes %d | commit %s\n", meta["mpi_library"].get<std::string>().c_str(),
              meta["hwloc"].value("cores", 0), meta["hwloc"].value("numa_nodes", 0),
              meta["git_commit"].get<std::string>().c_str());
  if (const std::string state = tb::cross_core_handoff_text(meta); !state.empty()) std::printf("  %s\n", state.c_str());
  if (const std::string state = tb::vector_path_text(meta); !state.empty()) std::printf("  %s\n", state.c_str());
  std::printf("  local array: up to %.2f MiB per rank, %s buffers; timing: %d inner x %zu outer, MAX over ranks\n\n",
              static_cast<double>(max_bytes) / (1 << 20), buffers_name(opt).c_str(), opt.timing.inner,
              floor.seconds_per_op.size());
  if (!p.verifies())
    std::printf("  verification OFF: arrays from SMPI_SHARED_MALLOC (--smpi-shared-arrays) share one block\n\n");
  // Ratios to native (fastest over fastest) when native ran in this invocation.
  double native = 0.0;
  for (const auto& r : results)
    if (r.method == "alltoallw:native") native = r.timing.fastest();  // the blocking call (a prepared one names its path)
  int w = 26;  // the method column fits the longest path description
  for (const auto& r : results) w = std::max(w, static_cast<int>(r.method.size()));
  std::printf("  %-*s %-9s %12s %12s %14s %14s %12s  %s\n", w, "method", "verified", "fastest ms", "median ms",
              "fastest/floor", "median/floor", "vs native", "handoff before/after");
  std::printf("  %-*s %-9s %12.3f %12.3f %14s %14s %12s\n", w, "memcpy floor", "-", floor.fastest() * 1e3,
              floor.median() * 1e3, "1.00", "1.00", "");
  std::printf("  %-*s %-9s %12.3f %12.3f %14.2f %14.2f %12s\n", w, "streaming-store copy", "-", stream.fastest() * 1e3,
              stream.median() * 1e3, stream.fastest() / floor.fastest(), stream.median() / floor.median(), "");
  for (const auto& r : results) {
    char vs_native[32] = "";
    if (native > 0) std::snprintf(vs_native, sizeof vs_native, "%.2f", r.timing.fastest() / native);
    std::printf("  %-*s %-9s %12.3f %12.3f %14.2f %14.2f %12s  %s\n", w, r.method.c_str(),
                !r.checked ? "off" : r.verified ? "yes" : "FAILED", r.timing.fastest() * 1e3, r.timing.median() * 1e3,
                r.timing.fastest() / floor.fastest(), r.timing.median() / floor.median(), vs_native,
                handoff_text(r).c_str());
  }
}

// One row per timed thing (the two floors, then every method); JSON rows also carry every outer
// repetition's time (samples_s), for distributions, and each method's cross-core handoff ratio
// and vector path ratio before it was verified and after it was timed (handoff_before,
// handoff_after, vector_before, vector_after), where measured.
nlohmann::json result_rows(const Options& opt, const Problem& p, long long max_bytes, const Floors& floors,
                           const std::vector<Result>& results, bool samples) {
  nlohmann::json rows = nlohmann::json::array();
  auto row = [&](const std::string& method, const char* verified, const tb::Timing& t) -> nlohmann::json& {
    nlohmann::json r = {{"tool", "tb-redistribute"}, {"method", method}, {"verified", verified},
                        {"element_type", tb::element_type_name(p.type)}, {"global_shape", tb::join(opt.shape, "x")},
                        {"grid", p.grid->describe()}, {"from_axis", p.from}, {"to_axis", opt.to_axis},
                        {"local_bytes_max", max_bytes}, {"buffers", buffers_name(opt)},
                        {"fastest_over_floor", t.fastest() / floors.memcpy.fastest()},
                        {"median_over_floor", t.median() / floors.memcpy.median()}};
    r.update(tb::timing_fields(t, samples));
    rows.push_back(std::move(r));
    return rows.back();
  };
  row("memcpy_floor", "-", floors.memcpy);
  row("streaming_copy", "-", floors.streaming);
  for (const auto& r : results) {
    nlohmann::json& added = row(r.method, !r.checked ? "off" : r.verified ? "yes" : "no", r.timing);
    if (samples && r.handoff_before >= 0) {  // the JSON only: the CSV's columns are fixed
      added["handoff_before"] = r.handoff_before;
      added["handoff_after"] = r.handoff_after;
      added["vector_before"] = r.vector_before;
      added["vector_after"] = r.vector_after;
    }
  }
  return rows;
}

int run(const Options& opt) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  const auto methods = tb::expand_redistribution_methods(opt.methods);
  Problem p(opt);
  const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
  tb::HandoffProbe probe(MPI_COMM_WORLD);
  tb::VectorPathProbe vector_probe(MPI_COMM_WORLD);
  long long local_bytes = static_cast<long long>(p.in.size()), max_bytes = 0;
  TB_MPI_CHECK(MPI_Allreduce(&local_bytes, &max_bytes, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));

  const Floors floors = time_floors(opt, p);
  std::vector<Result> results;
  for (const auto& method : methods)
    for (const auto& calls : opt.calls) {
      const bool blocking = calls == "blocking";
      if (method == "local_remap" && !blocking) continue;  // no Alltoallw to prepare
      const double before = tb::handoff_ratio(probe.measure()), vector_before = tb::handoff_ratio(vector_probe.measure());
      results.push_back(verify_and_time(opt, p, method, blocking ? tb::AlltoallwCalls::blocking : tb::AlltoallwCalls::persistent));
      results.back().handoff_before = before;
      results.back().handoff_after = tb::handoff_ratio(probe.measure());
      results.back().vector_before = vector_before;
      results.back().vector_after = tb::handoff_ratio(vector_probe.measure());
    }

  if (rank == 0) {
    print_table(opt, p, meta, max_bytes, floors, results);
    if (!opt.json.empty())
      tb::write_results_json(opt.json, meta, result_rows(opt, p, max_bytes, floors, results, true));
    if (!opt.csv.empty())
      tb::write_results_csv(opt.csv, result_rows(opt, p, max_bytes, floors, results, false),
                            {"tool", "method", "verified", "element_type", "global_shape", "grid", "from_axis",
                             "to_axis", "local_bytes_max", "buffers", "inner", "outer", "fastest_s", "median_s",
                             "fastest_over_floor", "median_over_floor"},
                            meta);
  }
  const bool all_ok =
      std::all_of(results.begin(), results.end(), [](const Result& r) { return r.verified || !r.checked; });
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Plan, verify and time one global redistribution (Alltoallw of subarray types or local remap)"};
  tb::add_list_option(app, "--shape", opt.shape, "global shape, comma separated (d >= 2)", "axis");
  tb::add_list_option(app, "--grid", opt.grid, "process grid dims, comma separated; 0 = let MPI_Dims_create choose");
  app.add_option("--from-axis", opt.from_axis, "aligned axis of the input pencil (default: last axis)")
      ->check(CLI::Range(0, 63));  // unset is -1 (the last axis); a given -5 is an error, not that default
  app.add_option("--to-axis", opt.to_axis, "aligned axis of the output pencil")->capture_default_str()->check(CLI::Range(0, 63));
  app.add_option("--type", opt.type, "element type: f32, f64, c32, c64 (float, double, complex<...>)")
      ->capture_default_str();
  tb::add_list_option(app, "--method", opt.methods, "Alltoallw algorithm names, local_remap, or all", "name");
  tb::add_list_option(app, "--calls", opt.calls,
                      "how the Alltoallw methods call: blocking (one MPI_Alltoallw per call), persistent (prepared "
                      "once, started per call: AlltoallwAlgorithm::prepare), or both, comma separated",
                      "kind");
  tb::add_timing_options(app, opt.timing, "operations per timed inner loop",
                         "stop repeating after this much time per method (0: no limit)");
  app.add_option("--buffers", opt.buffers,
                 "private: arrays in ordinary memory; shared: in node-shared memory (MPI_Win_allocate_shared), "
                 "which node_leader can read with one copy")
      ->check(CLI::IsMember({"private", "shared"}))
      ->capture_default_str();
  app.add_flag("--smpi-shared-arrays", opt.smpi_shared_arrays,
               "smpi build only: arrays from SMPI_SHARED_MALLOC (one block for every simulated rank, little "
               "memory at any rank count); verification is then off");
  app.add_option("--csv", opt.csv, "write the results as CSV (rank 0)");
  app.add_option("--json", opt.json, "write the results and metadata as JSON (rank 0)");

  return tb::mpi_tool_main(
      argc, argv, "tb-redistribute", app, [&] { validate(opt); }, [&] { return run(opt); },
      [] {
        return tb::alltoallw_algorithm_list() +
               "local_remap     pack + MPI_Alltoall(v) + unpack (redistribution baseline)\n";
      });
}
