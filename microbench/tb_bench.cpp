// tb-bench: MPI_Alltoallw per message size, every registered algorithm, on Google Benchmark.
//
// One benchmark per (layout, algorithm, bytes per peer). Every rank runs the same iterations: a
// barrier (not timed), one Alltoallw, and the iteration's time reduced with MAX over ranks
// before SetIterationTime, so all ranks see the same times and agree on iteration counts. Only
// rank 0 reports; its JSON (--benchmark_out=F --benchmark_out_format=json) carries the run's
// metadata in "context". Each result's label is the path the algorithm took in its last call;
// its counters handoff_before and handoff_after the machine's cross-core handoff ratio, and
// vector_before and vector_after the ratio of the library's path for a non-contiguous message
// (both microbench/machine_state.hpp), before the benchmark's buffers are made and after its
// timed loop (absent where no node has two ranks, and with --state-probes off), so that each result
// says which states it ran in.
//
// Layouts (the send side; the receive side is contiguous):
//   contiguous  bytes per peer as MPI_BYTE
//   vector<B>   B-byte blocks at a 2B stride, B a power of two (vector64, vector4K; one block
//               below B bytes): a fixed size with growing B shows per-block costs (crossovers)
// and the FFT's redistributions (one Redistribution plan, complex<double>, from 16 B per peer),
// sized so that every peer's piece is x*y*z elements = the bytes per peer, x = z = 2^(log2/3):
//   slab        [P x, y, P z] on a 1-D grid, aligned 2 -> aligned 0 (send pieces strided,
//               receive pieces contiguous)
//   pencil      [P0 x, P1 y, P1 z] on a P0 x P1 grid, aligned 2 -> aligned 1 over grid axis 1
//               (both sides strided)
// These run every registered algorithm plus local_remap (pack, MPI_Alltoall(v), unpack).
// Each result's counter block_bytes is the bytes per contiguous block of its send side, the more
// fragmented side in every layout: the bytes per peer (contiguous), B (vector<B>; the bytes per
// peer below B) or 16 z (slab, pencil); experiments/tune.py classes the slab's points by it.
// --interleave: per layout and size, the algorithms one after another, so that two algorithms at
// one size are timed within milliseconds of each other (a shared machine's speed drifts over tens
// of seconds); by default each algorithm runs its whole size sweep in turn. --passes N (with
// --interleave) goes through a size's algorithms N times, each pass its own short benchmark
// named .../pass:K, so that the K-th runs of two algorithms can be paired: Google Benchmark's
// repetitions of one benchmark run back to back, and drifts of a second or two fall between
// two algorithms' repetitions instead of within a pair.
// --calls blocking,persistent: each algorithm also in its prepared form
// (AlltoallwAlgorithm::prepare once, outside the timing; one start per operation), named
// <algorithm>:persistent; for slab and pencil, the Redistribution's persistent calls (its first,
// blocking call and the one that prepares outside the timing; one flag reduction per call included
// where the prepared form does not rebind, through shared memory on one node, unless
// TB_REDISTRIBUTION_AGREEMENT=assume-same: tb-bench passes the same arrays on every rank; counter
// agreements_per_call).
// --paper: each benchmark is timed with the paper's method instead (3 inner x up to 50 outer,
// barrier before each, MAX over ranks): the time is the fastest outer loop / 3, and the
// counters carry median_s and fastest_s.
// Buffers: --buffers private (ordinary memory) or shared (NodeSharedBuffer: node_leader can
// copy directly between on-node peers). Nodes: whatever node_layout() sees, so TB_NUM_NODES=2
// runs the inter-node phase of node_leader on one host.
//
//   mpiexec -n 2 build/mpich/bin/tb-bench -m 1:16M --benchmark_min_time=0.1
#include "collectives/mpi_error.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "microbench/benchmark_flags.hpp"
#include "microbench/checks.hpp"
#include "microbench/machine_state.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"
#include "redistribute/redistribution.hpp"

#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string range = "1:16M";
  std::vector<std::string> algorithms{"all"};
  std::vector<std::string> layouts{"contiguous", "vector64"};
  std::string buffers = "private";
  bool paper = false;
  bool interleave = false;
  int passes = 1;  // with interleave: the algorithms of a size, this many times over
  std::vector<std::string> calls{"blocking"};  // blocking and/or persistent (prepared once, started per call)
  int iterations = 0;  // 0: Google Benchmark decides
  int warmup = 1;
  double paper_max_seconds = 10.0;
  std::string state_probes = "on";  // off: no handoff_* and vector_* counters (the tuner needs none)
};

bool is_redistribution_layout(const std::string& layout) { return layout == "slab" || layout == "pencil"; }

// vector<B>: B-byte blocks at a 2B stride; B a power of two.
std::int64_t block_bytes(const std::string& layout) {
  const std::string usage = "use vector<B> with B a power of two (vector64, vector4K)";
  if (layout.size() <= 6) throw std::invalid_argument("layout '" + layout + "': " + usage);
  std::int64_t b = 0;
  try {
    b = tb::parse_size(layout.substr(6), "its block size", "bytes per block");
  } catch (const std::invalid_argument& e) {  // its reason (not a size, an unknown suffix, over the limit)
    throw std::invalid_argument("layout '" + layout + "': " + e.what());
  }
  if ((b & (b - 1)) != 0) throw std::invalid_argument("layout '" + layout + "': " + usage);
  return b;
}

// The buffers and types of one benchmark, allocated once.
class Case {
 public:
  Case(MPI_Comm comm, const std::string& layout, std::int64_t bytes, bool shared) {
    TB_MPI_CHECK(MPI_Comm_size(comm, &P_));
    MPI_Datatype send_type = MPI_BYTE;
    int send_count = static_cast<int>(bytes);
    std::int64_t send_span = bytes;
    block_bytes_ = bytes;
    if (layout.rfind("vector", 0) == 0) {
      const std::int64_t b = block_bytes(layout);
      const int block = static_cast<int>(std::min<std::int64_t>(bytes, b));
      block_bytes_ = block;
      TB_MPI_CHECK(MPI_Type_vector(static_cast<int>(bytes / block), block, 2 * block, MPI_BYTE, &type_));
      TB_MPI_CHECK(MPI_Type_commit(&type_));
      send_type = type_;
      send_count = 1;
      send_span = 2 * bytes;
    } else if (layout != "contiguous") {
      throw std::invalid_argument("unknown layout '" + layout + "' (use contiguous or vector<B>, e.g. vector64)");
    }
    const std::size_t sbytes = static_cast<std::size_t>(send_span * P_), rbytes = static_cast<std::size_t>(bytes * P_);
    if (shared) {
      shared_send_ = std::make_unique<tb::NodeSharedBuffer>(comm, sbytes);
      shared_recv_ = std::make_unique<tb::NodeSharedBuffer>(comm, rbytes);
      send_ = shared_send_->data();
      recv_ = shared_recv_->data();
    } else {
      own_send_.resize(sbytes);
      own_recv_.resize(rbytes);
      send_ = own_send_.data();
      recv_ = own_recv_.data();
    }
    std::memset(send_, 1, sbytes);
    std::memset(recv_, 0, rbytes);
    for (int p = 0; p < P_; ++p) {
      scounts_.push_back(send_count);
      sdispls_.push_back(static_cast<int>(send_span * p));
      stypes_.push_back(send_type);
      rcounts_.push_back(static_cast<int>(bytes));
      rdispls_.push_back(static_cast<int>(bytes * p));
      rtypes_.push_back(MPI_BYTE);
    }
    args_ = {send_, scounts_.data(), sdispls_.data(), stypes_.data(), recv_,
             rcounts_.data(), rdispls_.data(), rtypes_.data(), comm};
  }
  ~Case() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  const tb::AlltoallwArgs& args() const { return args_; }
  int ranks() const { return P_; }
  std::int64_t send_block_bytes() const { return block_bytes_; }  // the more fragmented side

 private:
  int P_ = 0;
  std::int64_t block_bytes_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::vector<std::byte> own_send_, own_recv_;
  std::unique_ptr<tb::NodeSharedBuffer> shared_send_, shared_recv_;
  std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<MPI_Datatype> stypes_, rtypes_;
  tb::AlltoallwArgs args_;
};

// The FFT's redistribution with `bytes` per peer (see the header comment).
struct RedistributionCase {
  RedistributionCase(const std::string& layout, std::int64_t bytes, const std::string& method, tb::AlltoallwCalls calls) {
    int P = 1;
    TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &P));
    const std::int64_t elements = bytes / 16;
    if (elements < 1 || bytes % 16 != 0)
      throw std::invalid_argument(layout + " layout: bytes per peer must be a multiple of 16 (complex<double>)");
    int k = 0;
    while ((std::int64_t{1} << (3 * (k + 1))) <= elements) ++k;
    const std::int64_t x = std::int64_t{1} << k, z = x, y = elements / (x * z);
    block_bytes = 16 * z;
    std::shared_ptr<const tb::ProcessGrid> grid;
    std::vector<std::int64_t> shape;
    int from = 2, to = 0;
    if (layout == "slab") {
      grid = tb::ProcessGrid::create(MPI_COMM_WORLD, {0});
      shape = {P * x, y, P * z};
    } else {
      // The exchanging grid axis (1) takes the larger factor, so 2 ranks give a 1 x 2 grid.
      int dims[2] = {0, 0};
      TB_MPI_CHECK(MPI_Dims_create(P, 2, dims));
      grid = tb::ProcessGrid::create(MPI_COMM_WORLD, {dims[1], dims[0]});
      shape = {grid->dims()[0] * x, grid->dims()[1] * y, grid->dims()[1] * z};
      to = 1;
    }
    const tb::Pencil in(grid, shape, from);
    plan = tb::make_redistribution(in, in.realigned(to), tb::ElementType::c64, method, calls);
    input.resize(static_cast<std::size_t>(plan->input().local_size()) * 16, std::byte{1});
    output.resize(static_cast<std::size_t>(plan->output().local_size()) * 16);
    ranks = P;
    int n = 1;
    TB_MPI_CHECK(MPI_Comm_size(plan->comm(), &n));
    peers = n;
  }
  void run() { plan->forward(input.data(), output.data()); }
  int peers = 1;  // ranks of the sub-communicator the exchange runs over
  // The send side's blocks, rows of z elements (aligned 2); the receive side's are larger (slab:
  // one block per peer; pencil: y z elements).
  std::int64_t block_bytes = 0;
  std::unique_ptr<tb::Redistribution> plan;
  std::vector<std::byte> input, output;
  int ranks = 1;
};

// The machine's two states (microbench/machine_state.hpp), each taken around every benchmark.
struct StateProbes {
  explicit StateProbes(MPI_Comm comm) : handoff(comm), vector(comm) {}
  tb::HandoffProbe handoff;
  tb::VectorPathProbe vector;
};

// The machine's states around a benchmark as its counters: `*_before` as taken before its buffers
// were made, `*_after` taken now (a ratio below 0: no node has two ranks, so none is recorded).
void record_states(benchmark::State& state, StateProbes& probes, double handoff_before, double vector_before) {
  const double handoff_after = tb::handoff_ratio(probes.handoff.measure());
  const double vector_after = tb::handoff_ratio(probes.vector.measure());
  if (handoff_before >= 0) {
    state.counters["handoff_before"] = handoff_before;
    state.counters["handoff_after"] = handoff_after;
  }
  if (vector_before >= 0) {
    state.counters["vector_before"] = vector_before;
    state.counters["vector_after"] = vector_after;
  }
}

// The call one benchmark times: a redistribution (slab, pencil) or an Alltoallw of a layout, in
// its blocking or its prepared form (prepared outside the timing).
class TimedCall {
 public:
  TimedCall(const std::string& algorithm_name, const std::string& layout, std::int64_t bytes, bool persistent,
            const Options& opt) {
    if (is_redistribution_layout(layout)) {
      redistribution_ = std::make_unique<RedistributionCase>(
          layout, bytes, algorithm_name, persistent ? tb::AlltoallwCalls::persistent : tb::AlltoallwCalls::blocking);
      if (persistent) {
        // A persistent redistribution runs its first call blocking and prepares at its second (the
        // same arrays again): both outside the timing, as prepare() below is for the other layouts.
        redistribution_->run();
        redistribution_->run();
      }
      return;
    }
    case_ = std::make_unique<Case>(MPI_COMM_WORLD, layout, bytes, opt.buffers == "shared");
    algorithm_ = tb::make_alltoallw(algorithm_name);
    if (persistent) prepared_ = algorithm_->prepare(case_->args());
  }
  void run() {
    if (redistribution_) redistribution_->run();
    else if (prepared_) prepared_->start();
    else algorithm_->run(case_->args());
  }
  bool is_redistribution() const { return redistribution_ != nullptr; }
  std::string label() const {
    if (redistribution_) return redistribution_->plan->method();
    return prepared_ ? prepared_->last_path() : algorithm_->last_path();
  }
  // The benchmark's counters: ranks, peers per rank and the send side's bytes per block.
  void set_counters(benchmark::State& state) const {
    state.counters["ranks"] = redistribution_ ? redistribution_->ranks : case_->ranks();
    state.counters["peers"] = redistribution_ ? redistribution_->peers : case_->ranks();
    state.counters["block_bytes"] =
        static_cast<double>(redistribution_ ? redistribution_->block_bytes : case_->send_block_bytes());
  }

 private:
  std::unique_ptr<Case> case_;
  std::unique_ptr<RedistributionCase> redistribution_;
  std::unique_ptr<tb::AlltoallwAlgorithm> algorithm_;
  std::unique_ptr<tb::PreparedAlltoallw> prepared_;
};

// One iteration's time: the slowest rank's of one call after a barrier, or with --paper the
// testbed's timing method (several calls per iteration; its fastest is the iteration's time).
template <class Op>
void time_iteration(benchmark::State& state, const Options& opt, Op& op) {
  if (opt.paper) {
    const tb::Timing t = tb::time_collective(MPI_COMM_WORLD, {3, 50, opt.paper_max_seconds, 5}, op);
    state.SetIterationTime(t.fastest());
    state.counters["fastest_s"] = t.fastest();
    state.counters["median_s"] = t.median();
    state.counters["outer"] = static_cast<double>(t.seconds_per_op.size());
    return;
  }
  TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const double t0 = MPI_Wtime();
  op();
  double t = MPI_Wtime() - t0, slowest = 0;
  TB_MPI_CHECK(MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  state.SetIterationTime(slowest);
}

void run_benchmark(benchmark::State& state, const std::string& algorithm_name, const std::string& layout,
                   std::int64_t bytes, bool persistent, const Options& opt, StateProbes* probes) {
  try {
    // Before the buffers are touched. Google Benchmark calls this function once per trial of an
    // iteration count, so the probes run several times per benchmark (with --state-probes off, not at all).
    const double handoff_before = probes ? tb::handoff_ratio(probes->handoff.measure()) : -1;
    const double vector_before = probes ? tb::handoff_ratio(probes->vector.measure()) : -1;
    TimedCall call(algorithm_name, layout, bytes, persistent, opt);
    std::int64_t calls = 0;  // the calls made since the timing began (--paper makes several per iteration)
    auto op = [&] {
      ++calls;
      call.run();
    };
    for (int i = 0; i < opt.warmup; ++i) op();  // warm: caches, windows, first touch
    calls = 0;
    const std::int64_t agreements = tb::redistribution_agreements();
    for (auto _ : state) time_iteration(state, opt, op);
    if (probes) record_states(state, *probes, handoff_before, vector_before);
    if (call.is_redistribution())  // its agreements on its arrays inside the timed calls (0 once prepared forms rebind)
      state.counters["agreements_per_call"] = static_cast<double>(tb::redistribution_agreements() - agreements) /
                                              static_cast<double>(std::max<std::int64_t>(1, calls));
    state.SetLabel(call.label());
    call.set_counters(state);
  } catch (const std::exception& e) {
    // The other ranks may wait in a collective: end the job with the reason rather than hang.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "tb-bench (rank %d): error in %s/%s/%lld: %s\n", rank, layout.c_str(),
                 algorithm_name.c_str(), static_cast<long long>(bytes), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Bytes each rank sends per call (self included): bytes_per_second is per-rank send bandwidth.
  const auto peers = static_cast<std::int64_t>(state.counters["peers"]);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * bytes * peers);
  state.counters["bytes_per_peer"] = static_cast<double>(bytes);
}

// The other ranks' reporter: no results, and no errors either (rank 0 reports the same ones).
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  SilentReporter() { SetErrorStream(&discard_); }
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}

 private:
  std::ostream discard_{nullptr};  // no buffer: what is written is dropped
};

void add_options(CLI::App& app, Options& opt, bool& list_algorithms, bool& list_settings) {
  app.add_option("-m,--message-size", opt.range, "bytes per peer, min:max (powers of two between; K, M and G suffixes)")
      ->capture_default_str();
  tb::add_list_option(app, "--algorithms", opt.algorithms, "algorithm names, or all", "name");
  tb::add_list_option(app, "--layouts", opt.layouts, "send layouts: contiguous, vector<B> (B-byte blocks, 2B stride)",
                      "layout");
  app.add_option("--buffers", opt.buffers, "private or shared (node-shared memory)")
      ->check(CLI::IsMember({"private", "shared"}))
      ->capture_default_str();
  app.add_flag("--interleave", opt.interleave,
               "per layout and size, the algorithms one after another (paired comparisons milliseconds apart) "
               "instead of each algorithm's whole size sweep in turn");
  app.add_option("--passes", opt.passes,
                 "with --interleave: go through each size's algorithms this many times, each pass its own "
                 "benchmark named .../pass:K (the K-th runs of two algorithms are paired)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  tb::add_list_option(app, "--calls", opt.calls,
                      "blocking (one call per operation) and/or persistent (each algorithm's prepared form, "
                      "made once and started per operation; named <algorithm>:persistent)",
                      "kind");
  app.add_flag("--paper", opt.paper, "time each case with the paper's method (3 inner x up to 50 outer, MAX over ranks)");
  app.add_option("--paper-max-seconds", opt.paper_max_seconds, "--paper: stop the outer loop after this long")
      ->capture_default_str()
      ->check(tb::finite_range(0, 1e6));
  app.add_option("-i,--iterations", opt.iterations, "timed iterations per case (0: Google Benchmark decides)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000000));
  app.add_option("-x,--warmup", opt.warmup, "untimed calls before timing")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--state-probes", opt.state_probes,
                 "on: each benchmark records the machine's cross-core handoff and vector-path states before and "
                 "after it (handoff_*, vector_* counters; several ms per benchmark on one node); off: not")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--list-algorithms", list_algorithms, "print the registered algorithms and exit");
  app.add_flag("--list-settings", list_settings, tb::kListSettingsHelp);
}

// One benchmark: its name and what it times.
struct BenchmarkSpec {
  std::string title, layout, algorithm;
  std::int64_t bytes = 1;  // per peer
  bool persistent = false;
};

// What the options ask for, checked before any benchmark is registered.
struct Plan {
  std::int64_t lo = 1, hi = 1;  // bytes per peer
  std::vector<std::string> algorithms;
  bool with_local_remap = false;
  std::vector<BenchmarkSpec> benchmarks;  // in the order they run
};

// The plan's benchmarks, one per (layout, method, size, calls and pass), in the order they run:
// by default each method's size sweep in turn, with --interleave per size the methods in turn.
std::vector<BenchmarkSpec> list_benchmarks(const Options& opt, const Plan& plan) {
  std::vector<BenchmarkSpec> list;
  // A persistent run is named <algorithm>:persistent (local_remap has no Alltoallw to prepare).
  auto add = [&](const std::string& layout, const std::string& algorithm, std::int64_t bytes, int pass) {
    if (is_redistribution_layout(layout) && bytes < 16) return;  // one complex<double> per peer at least
    const std::string kind = is_redistribution_layout(layout) ? "redistribute/" : "alltoallw/";
    for (const auto& calls : opt.calls) {
      const bool persistent = calls == "persistent";
      if (persistent && algorithm == "local_remap") continue;
      const std::string name = algorithm + (persistent ? ":persistent" : "");
      std::string title = kind + layout + "/" + name + "/" + std::to_string(bytes);
      if (opt.passes > 1) title += "/pass:" + std::to_string(pass);
      list.push_back({title, layout, algorithm, bytes, persistent});
    }
  };
  for (const auto& layout : opt.layouts) {
    std::vector<std::string> methods = plan.algorithms;
    if (is_redistribution_layout(layout) && plan.with_local_remap) methods.emplace_back("local_remap");
    if (opt.interleave) {
      for (std::int64_t bytes = plan.lo; bytes <= plan.hi; bytes *= 2)
        for (int pass = 1; pass <= opt.passes; ++pass)
          for (const auto& algorithm : methods) add(layout, algorithm, bytes, pass);
    } else {
      for (const auto& algorithm : methods)
        for (std::int64_t bytes = plan.lo; bytes <= plan.hi; bytes *= 2) add(layout, algorithm, bytes, 1);
    }
  }
  return list;
}

Plan validate(const Options& opt) {
  tb::check_no_repeats("--algorithms", opt.algorithms);
  tb::check_no_repeats("--layouts", opt.layouts);
  tb::check_no_repeats("--calls", opt.calls);
  Plan plan;
  const auto colon = opt.range.find(':');
  plan.lo = tb::parse_size(opt.range.substr(0, colon), "-m");
  plan.hi = colon == std::string::npos ? plan.lo : tb::parse_size(opt.range.substr(colon + 1), "-m");
  if (plan.hi < plan.lo) throw std::invalid_argument("-m " + opt.range + ": max below min");
  if ((plan.lo & (plan.lo - 1)) != 0)
    throw std::invalid_argument("-m " + opt.range + ": the minimum must be a power of two");
  int ranks = 1;
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  // send (twice the bytes for vector layouts) and receive arrays of bytes x ranks
  tb::check_array_fits("-m", {plan.hi, ranks}, 1, 1, 3);
  for (const auto& a : opt.algorithms) {
    if (a == "all") {
      for (const auto& info : tb::alltoallw_algorithms()) plan.algorithms.emplace_back(info.name);
      plan.with_local_remap = true;
    } else if (a == "local_remap") {
      plan.with_local_remap = true;
    } else {
      tb::for_option("--algorithms", [&] { return tb::make_alltoallw(a); });  // the registry's "unknown algorithm"
      plan.algorithms.push_back(a);
    }
  }
  tb::check_no_repeats("--algorithms", plan.algorithms, " ('all' includes every registered one)");
  if (opt.passes > 1 && !opt.interleave)
    throw std::invalid_argument("--passes " + std::to_string(opt.passes) +
                                ": passes go through a size's algorithms in turn, which needs --interleave");
  for (const auto& calls : opt.calls)
    if (calls != "blocking" && calls != "persistent")
      throw std::invalid_argument("--calls: '" + calls + "' is neither blocking nor persistent");
  if (plan.hi < 16 && std::all_of(opt.layouts.begin(), opt.layouts.end(), is_redistribution_layout))
    throw std::invalid_argument("-m " + opt.range + ": the slab and pencil layouts need at least 16 bytes per peer "
                                "(one complex<double>); nothing would run");
  for (const auto& layout : opt.layouts)
    if (layout.rfind("vector", 0) == 0) tb::for_option("--layouts", [&] { return block_bytes(layout); });
    else if (!is_redistribution_layout(layout) && layout != "contiguous")
      throw std::invalid_argument("--layouts: unknown layout '" + layout +
                                  "' (use contiguous, vector<B> such as vector64, slab or pencil)");
  plan.benchmarks = list_benchmarks(opt, plan);
  if (plan.benchmarks.empty())  // Google Benchmark would say "Failed to match any benchmarks" and exit 0
    throw std::invalid_argument("--algorithms, --layouts, --calls and -m select no benchmark (local_remap runs on "
                                "the slab and pencil layouts only, blocking only, from 16 bytes per peer)");
  return plan;
}

// The run's metadata in Google Benchmark's "context", then the plan's benchmarks, each taking the
// machine's states with `probes` before and after it runs (none where null).
void register_benchmarks(const Options& opt, const Plan& plan, StateProbes* probes) {
  const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
  for (const auto& [key, value] : meta.items())
    if (key != "mpi_library_full")  // many lines of configure flags; the JSON of tb-redistribute has it
      benchmark::AddCustomContext(key, value.is_string() ? value.get<std::string>() : value.dump());
  benchmark::AddCustomContext("buffers", opt.buffers);
  benchmark::AddCustomContext("timing", opt.paper ? "paper: 3 inner x up to 50 outer, fastest/3 (MAX over ranks)"
                                                  : "per call, MAX over ranks");
  for (const BenchmarkSpec& spec : plan.benchmarks) {
    auto* b = benchmark::RegisterBenchmark(spec.title.c_str(), run_benchmark, spec.algorithm, spec.layout, spec.bytes,
                                           spec.persistent, opt, probes);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (opt.paper) b->Iterations(1);
    else if (opt.iterations > 0) b->Iterations(opt.iterations);
  }
}

// Google Benchmark would answer --help with its own flags only: ours, then a word on its.
bool print_help(const std::vector<char*>& args, CLI::App& app, int rank) {
  auto is_help = [](const char* a) { return !std::strcmp(a, "--help") || !std::strcmp(a, "-h"); };
  if (std::none_of(args.begin(), args.end(), is_help)) return false;
  if (rank == 0)
    std::printf("%s\nGoogle Benchmark's flags are accepted too: --benchmark_repetitions=N, --benchmark_min_time=S, "
                "--benchmark_filter=REGEX, --benchmark_out=FILE, --benchmark_out_format=json|csv, "
                "--benchmark_list_tests=true, ...\n",
                app.help().c_str());
  return true;
}

// After parsing: the settings table, the algorithm list, or the benchmarks (rank 0 reports).
void run(const Options& opt, bool list, bool list_settings, const std::vector<char*>& args, int rank) {
  if (list_settings) {
    if (rank == 0) std::printf("%s", tb::settings_table().c_str());
    return;
  }
  tb::check_settings();
  const Plan plan = validate(opt);
  if (list) {
    if (rank == 0) std::printf("%s", tb::alltoallw_algorithm_list().c_str());
    return;
  }
  tb::check_writable(MPI_COMM_WORLD, "--benchmark_out", tb::benchmark_flag(args, "benchmark_out").value);
  std::unique_ptr<StateProbes> probes;  // freed before MPI_Finalize, unlike the registered benchmarks
  if (opt.state_probes == "on") probes = std::make_unique<StateProbes>(MPI_COMM_WORLD);
  register_benchmarks(opt, plan, probes.get());
  // Every rank registers the same benchmarks and matches the same filter, so every rank gets the
  // same count and makes the same decision on it (the others need not wait for rank 0's).
  std::size_t matched = 0;
  if (rank == 0) {
    matched = benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    matched = benchmark::RunSpecifiedBenchmarks(&silent);
  }
  tb::check_benchmarks_matched(matched, args);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Only rank 0 may write --benchmark_out; the others drop the flag before Google Benchmark sees it,
  // and pass an empty one, which overrides a BENCHMARK_OUT variable (Google Benchmark reads it as
  // the flag's default before main).
  static char no_output[] = "--benchmark_out=";
  std::vector<char*> args(argv, argv + argc);
  if (rank != 0) {
    std::erase_if(args, [](const char* a) { return std::strncmp(a, "--benchmark_out", 15) == 0; });
    args.insert(args.begin() + 1, no_output);
  }
  int n = static_cast<int>(args.size());
  try {
    // Every rank checks the command line as given (not its args, which differ off rank 0), so all agree.
    tb::check_benchmark_flags(std::vector<char*>(argv, argv + argc));
  } catch (const std::invalid_argument& e) {
    if (rank == 0) std::fprintf(stderr, "tb-bench: error: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  Options opt;
  CLI::App app("tb-bench: MPI_Alltoallw per message size for every registered algorithm (Google Benchmark)");
  tb::use_tool_errors(app, "tb-bench");
  app.name(argv[0]);  // the usage line's program: help is printed before the parse that would set it
  bool list = false, list_settings = false;
  add_options(app, opt, list, list_settings);
  if (print_help(args, app, rank)) {
    MPI_Finalize();
    return 0;
  }
  benchmark::Initialize(&n, args.data());
  int code = 0;
  try {
    app.parse(n, args.data());
    run(opt, list, list_settings, args, rank);
  } catch (const CLI::ParseError& e) {
    code = rank == 0 ? app.exit(e) : 2;
    if (code == 0 && e.get_exit_code() != 0) code = 2;
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "tb-bench: error: %s\n", e.what());
    code = 2;
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return code;
}
