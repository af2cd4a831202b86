// tb-redistribute: plans one redistribution of a d-dimensional array between two pencils,
// verifies it (forward and back) against the global-index pattern, and times it next to the
// memory-copy floor (one memcpy of the local array) with the testbed's timing method.
//
//   mpiexec -n 2 tb-redistribute --shape 128,128,128 --type c64 --method native,local_remap
#include "collectives/mpi_error.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"
#include "redistribute/global_pattern.hpp"
#include "redistribute/redistribution.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

namespace {

struct Options {
  std::vector<std::int64_t> shape{128, 128, 128};
  std::vector<int> grid{0};
  int from_axis = -1;  // default: last axis
  int to_axis = 0;
  std::string type = "c64";
  std::vector<std::string> methods{"native", "local_remap"};
  tb::TimingOptions timing{3, 50, 30.0, 5};
  std::string csv, json;
  std::string buffers = "private";  // or "shared": arrays in node-shared memory (NodeSharedBuffer)
};

// One local array: a private vector, or a segment of a NodeSharedBuffer that the other ranks
// of the node can read (node_leader's single-copy path needs the send array there).
class LocalArray {
 public:
  LocalArray(MPI_Comm comm, std::size_t bytes, bool shared) {
    if (shared) {
      shared_ = std::make_unique<tb::NodeSharedBuffer>(comm, bytes);
    } else {
      own_.resize(bytes);
    }
    size_ = bytes;
  }
  std::byte* data() { return shared_ ? shared_->data() : own_.data(); }
  std::size_t size() const { return size_; }
  std::byte* begin() { return data(); }
  std::byte* end() { return data() + size_; }

 private:
  std::vector<std::byte> own_;
  std::unique_ptr<tb::NodeSharedBuffer> shared_;
  std::size_t size_ = 0;
};

struct Result {
  std::string method;
  bool verified = false;
  tb::Timing timing;
};

// Checks what depends only on the command line, identically on every rank, so that bad input
// ends the job cleanly (exit code 2, one message) instead of through MPI_Abort.
void validate(const Options& opt) {
  const int d = static_cast<int>(opt.shape.size());
  if (d < 2) throw std::invalid_argument("--shape needs at least 2 axes, got " + std::to_string(d));
  for (auto n : opt.shape)
    if (n < 1) throw std::invalid_argument("--shape: every axis needs length 1 or more");
  const int from = opt.from_axis >= 0 ? opt.from_axis : d - 1;
  if (from >= d || opt.to_axis < 0 || opt.to_axis >= d)
    throw std::invalid_argument("--from-axis and --to-axis must lie in 0.." + std::to_string(d - 1));
  if (from == opt.to_axis) throw std::invalid_argument("--from-axis and --to-axis must differ");
  tb::parse_element_type(opt.type);
  tb::expand_redistribution_methods(opt.methods);
}

int run(const Options& opt) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  const tb::ElementType type = tb::parse_element_type(opt.type);
  const int d = static_cast<int>(opt.shape.size());
  const int from = opt.from_axis >= 0 ? opt.from_axis : d - 1;
  const auto methods = tb::expand_redistribution_methods(opt.methods);

  auto grid = tb::ProcessGrid::create(MPI_COMM_WORLD, opt.grid);
  const tb::Pencil in_pencil(grid, opt.shape, from);
  const tb::Pencil out_pencil = in_pencil.realigned(opt.to_axis);
  const std::size_t es = tb::element_size(type);
  const bool shared = opt.buffers == "shared";
  LocalArray in(MPI_COMM_WORLD, static_cast<std::size_t>(in_pencil.local_size()) * es, shared);
  LocalArray out(MPI_COMM_WORLD, static_cast<std::size_t>(out_pencil.local_size()) * es, shared);
  LocalArray back(MPI_COMM_WORLD, in.size(), shared);

  const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
  long long local_bytes = static_cast<long long>(in.size()), max_bytes = 0;
  TB_MPI_CHECK(MPI_Allreduce(&local_bytes, &max_bytes, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));

  // The floor: one memcpy of the local array, timed the same way.
  tb::fill_global_pattern(in_pencil, type, in.data());
  std::vector<std::byte> copy(in.size());
  const tb::Timing floor = tb::time_collective(grid->comm(), opt.timing, [&] {
    std::memcpy(copy.data(), in.data(), in.size());
  });
  // A second reference: the same copy with streaming (non-temporal) stores, as the testbed's
  // packer does for large operations. glibc's memcpy does not stream at these sizes here, so
  // a single-copy algorithm can beat the memcpy floor; this row shows by how much it could.
  const tb::Timing stream = tb::time_collective(grid->comm(), opt.timing, [&] {
    const tb::BlockCopy streaming(static_cast<std::int64_t>(in.size()));
    streaming(copy.data(), in.data(), static_cast<std::int64_t>(in.size()));
  });

  std::vector<Result> results;
  for (const auto& method : methods) {
    auto plan = tb::make_redistribution(in_pencil, out_pencil, type, method);
    // Verify: forward must place every element at its global index; backward must restore the input.
    tb::fill_global_pattern(in_pencil, type, in.data());
    std::fill(out.begin(), out.end(), std::byte{0xA5});
    std::fill(back.begin(), back.end(), std::byte{0x5A});
    plan->forward(in.data(), out.data());
    plan->backward(out.data(), back.data());
    long long bad = tb::count_pattern_mismatches(out_pencil, type, out.data()) +
                    tb::count_pattern_mismatches(in_pencil, type, back.data());
    long long total_bad = 0;
    TB_MPI_CHECK(MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    Result r{"", total_bad == 0, {}};
    r.timing = tb::time_collective(grid->comm(), opt.timing, [&] { plan->forward(in.data(), out.data()); });
    r.method = plan->method();  // the path the timed (forward) calls took
    results.push_back(std::move(r));
  }

  if (rank == 0) {
    std::printf("tb-redistribute  %s  %s  on grid %s (%d ranks, %d node(s): %s)\n", tb::join(opt.shape, "x").c_str(),
                std::string(tb::element_type_name(type)).c_str(), grid->describe().c_str(), meta["ranks"].get<int>(),
                meta["node_layout"]["nodes"].get<int>(), meta["node_layout"]["source"].get<std::string>().c_str());
    std::printf("  %s  ->  %s\n", in_pencil.describe().c_str(), out_pencil.describe().c_str());
    std::printf("  MPI: %s | cores %d, NUMA nodes %d | commit %s\n", meta["mpi_library"].get<std::string>().c_str(),
                meta["hwloc"].value("cores", 0), meta["hwloc"].value("numa_nodes", 0),
                meta["git_commit"].get<std::string>().c_str());
    std::printf("  local array: up to %.2f MiB per rank, %s buffers; timing: %d inner x %zu outer, MAX over ranks\n\n",
                static_cast<double>(max_bytes) / (1 << 20), opt.buffers.c_str(), opt.timing.inner,
                floor.seconds_per_op.size());
    // Ratios to native (fastest over fastest) when native ran in this invocation.
    double native = 0.0;
    for (const auto& r : results)
      if (r.method == "alltoallw:native") native = r.timing.fastest();
    int w = 26;  // the method column fits the longest path description
    for (const auto& r : results) w = std::max(w, static_cast<int>(r.method.size()));
    std::printf("  %-*s %-9s %12s %12s %14s %14s %12s\n", w, "method", "verified", "fastest ms", "median ms",
                "fastest/floor", "median/floor", "vs native");
    std::printf("  %-*s %-9s %12.3f %12.3f %14s %14s %12s\n", w, "memcpy floor", "-", floor.fastest() * 1e3,
                floor.median() * 1e3, "1.00", "1.00", "");
    std::printf("  %-*s %-9s %12.3f %12.3f %14.2f %14.2f %12s\n", w, "streaming-store copy", "-", stream.fastest() * 1e3,
                stream.median() * 1e3, stream.fastest() / floor.fastest(), stream.median() / floor.median(), "");
    for (const auto& r : results) {
      char vs_native[32] = "";
      if (native > 0) std::snprintf(vs_native, sizeof vs_native, "%.2f", r.timing.fastest() / native);
      std::printf("  %-*s %-9s %12.3f %12.3f %14.2f %14.2f %12s\n", w, r.method.c_str(), r.verified ? "yes" : "FAILED",
                  r.timing.fastest() * 1e3, r.timing.median() * 1e3, r.timing.fastest() / floor.fastest(),
                  r.timing.median() / floor.median(), vs_native);
    }

    nlohmann::json rows = nlohmann::json::array();
    auto row = [&](const std::string& method, const char* verified, const tb::Timing& t) {
      rows.push_back({{"tool", "tb-redistribute"}, {"method", method}, {"verified", verified},
                      {"element_type", tb::element_type_name(type)}, {"global_shape", tb::join(opt.shape, "x")},
                      {"grid", grid->describe()}, {"from_axis", from}, {"to_axis", opt.to_axis},
                      {"local_bytes_max", max_bytes}, {"buffers", opt.buffers}, {"inner", t.inner}, {"outer", t.seconds_per_op.size()},
                      {"fastest_s", t.fastest()}, {"median_s", t.median()},
                      {"fastest_over_floor", t.fastest() / floor.fastest()},
                      {"median_over_floor", t.median() / floor.median()}});
    };
    row("memcpy_floor", "-", floor);
    row("streaming_copy", "-", stream);
    for (const auto& r : results) row(r.method, r.verified ? "yes" : "no", r.timing);

    if (!opt.json.empty()) {
      // JSON rows also carry every outer repetition's time, for distributions.
      nlohmann::json detailed = rows;
      detailed[0]["samples_s"] = floor.seconds_per_op;
      detailed[1]["samples_s"] = stream.seconds_per_op;
      for (std::size_t i = 0; i < results.size(); ++i) detailed[i + 2]["samples_s"] = results[i].timing.seconds_per_op;
      std::ofstream f(opt.json);
      f << nlohmann::json{{"metadata", meta}, {"results", detailed}}.dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write " + opt.json);
    }
    if (!opt.csv.empty())
      tb::write_results_csv(opt.csv, rows,
                            {"tool", "method", "verified", "element_type", "global_shape", "grid", "from_axis",
                               "to_axis", "local_bytes_max", "buffers", "inner", "outer", "fastest_s", "median_s",
                               "fastest_over_floor", "median_over_floor"}, meta);
  }
  const bool all_ok = std::all_of(results.begin(), results.end(), [](const Result& r) { return r.verified; });
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  bool list = false;
  CLI::App app{"Plan, verify and time one global redistribution (Alltoallw of subarray types or local remap)"};
  app.add_option("--shape", opt.shape, "global shape, comma separated (d >= 2)")->delimiter(',')->capture_default_str();
  app.add_option("--grid", opt.grid, "process grid dims, comma separated; 0 = let MPI_Dims_create choose")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--from-axis", opt.from_axis, "aligned axis of the input pencil (default: last axis)");
  app.add_option("--to-axis", opt.to_axis, "aligned axis of the output pencil")->capture_default_str();
  app.add_option("--type", opt.type, "element type: f32, f64, c32, c64 (float, double, complex<...>)")
      ->capture_default_str();
  app.add_option("--method", opt.methods, "Alltoallw algorithm names, local_remap, or all")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--inner", opt.timing.inner, "operations per timed inner loop")->capture_default_str();
  app.add_option("--outer", opt.timing.outer, "maximum outer repetitions")->capture_default_str();
  app.add_option("--max-seconds", opt.timing.max_seconds, "stop repeating after this much time per method (0: no limit)")
      ->capture_default_str();
  app.add_option("--buffers", opt.buffers,
                 "private: arrays in ordinary memory; shared: in node-shared memory (MPI_Win_allocate_shared), "
                 "which node_leader can read with one copy")
      ->check(CLI::IsMember({"private", "shared"}))
      ->capture_default_str();
  app.add_option("--csv", opt.csv, "write the results as CSV (rank 0)");
  app.add_option("--json", opt.json, "write the results and metadata as JSON (rank 0)");
  app.add_flag("--list-algorithms", list, "print the registered Alltoallw algorithms and exit");

  return tb::mpi_tool_main(
      argc, argv, "tb-redistribute", app,
      [&] {
        if (!list) validate(opt);
      },
      [&] {
        if (!list) return run(opt);
        int rank = 0;
        TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
        if (rank == 0)
          std::cout << tb::alltoallw_algorithm_list()
                    << "local_remap     pack + MPI_Alltoall(v) + unpack (redistribution baseline)\n";
        return 0;
      });
}
