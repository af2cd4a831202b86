// tb-soak: many calls of each Alltoallw algorithm, to find what shows only after many: memory
// that grows (caches keyed by datatype or communicator that nothing trims, requests, windows or
// registrations not released), state one call leaves for the next, calls that slow down.
//
// Per algorithm, --calls calls of one Alltoallw with --bytes per peer: the send side is a vector
// of 64-byte blocks at a 128-byte stride, the receive side contiguous. Algorithms cache what
// they derive per datatype and per communicator, so by default every call gets a freshly
// created send type (--fresh-types N: every N calls; 0 keeps one) and every 1000th call a fresh
// MPI_Comm_dup (--fresh-comm). Every --check-every calls the send data carries the call's
// number and every received byte is checked.
//
// Reported per algorithm, all figures max over ranks: the time per call over the first and the
// last tenth of the calls (a slowdown shows as a rise), resident memory (VmRSS) after a warm-up
// of 1 % of the calls and at the end, and its growth. Exit status 1 when a check fails or the
// growth exceeds --max-growth KiB. Not a benchmark: there is no barrier between calls.
//
//   mpiexec -n 2 build/mpich/bin/tb-soak                    # 10^5 calls of every algorithm
//   mpiexec -n 3 build/mpich/bin/tb-soak --algorithms pairwise --calls 1000 --max-growth 1024
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "microbench/checks.hpp"
#include "microbench/mpi_tool.hpp"

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kBlock = 64;  // bytes per contiguous piece of the send side

struct Options {
  std::vector<std::string> algorithms{"all"};
  std::int64_t calls = 100000;
  int bytes = 256;
  std::int64_t fresh_types = 1;
  std::int64_t fresh_comm = 1000;
  std::int64_t check_every = 100;
  std::int64_t max_growth_kib = -1;  // -1: report only
};

// This process's resident set in KiB (VmRSS of /proc/self/status), 0 where it cannot be read.
std::int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::int64_t kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

template <class T>
T max_over_ranks(T value, MPI_Datatype type, MPI_Comm comm) {
  T result{};
  TB_MPI_CHECK(MPI_Allreduce(&value, &result, 1, type, MPI_MAX, comm));
  return result;
}

// The byte a sender `from` puts at position i of its block for `to` in call `call`.
std::uint8_t pattern(std::int64_t call, int from, int to, int i) {
  return static_cast<std::uint8_t>(call * 31 + from * 7 + to * 13 + i);
}

// The buffers and argument arrays of the soak call; the send type and the communicator change
// as the options say.
class SoakCall {
 public:
  SoakCall(int bytes, int ranks) : bytes_(bytes), P_(ranks), send_(2 * bytes * ranks), recv_(bytes * ranks) {
    for (int p = 0; p < P_; ++p) {
      scounts_.push_back(1);
      sdispls_.push_back(2 * bytes * p);
      rcounts_.push_back(bytes);
      rdispls_.push_back(bytes * p);
    }
    stypes_.assign(P_, MPI_DATATYPE_NULL);
    rtypes_.assign(P_, MPI_BYTE);
    TB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    new_send_type();
  }
  ~SoakCall() {
    MPI_Type_free(&type_);
    MPI_Comm_free(&comm_);
  }
  SoakCall(const SoakCall&) = delete;
  SoakCall& operator=(const SoakCall&) = delete;

  void new_send_type() {
    if (type_ != MPI_DATATYPE_NULL) TB_MPI_CHECK(MPI_Type_free(&type_));
    const int block = std::min(kBlock, bytes_);
    TB_MPI_CHECK(MPI_Type_vector(bytes_ / block, block, 2 * block, MPI_BYTE, &type_));
    TB_MPI_CHECK(MPI_Type_commit(&type_));
    stypes_.assign(P_, type_);
  }
  void new_comm() {
    TB_MPI_CHECK(MPI_Comm_free(&comm_));
    TB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  }
  tb::AlltoallwArgs args() {
    return {send_.data(), scounts_.data(), sdispls_.data(), stypes_.data(), recv_.data(),
            rcounts_.data(), rdispls_.data(), rtypes_.data(), comm_};
  }
  // Writes call `call`'s pattern into the send blocks and clears the receive buffer.
  void fill(std::int64_t call, int rank) {
    const int block = std::min(kBlock, bytes_);
    for (int p = 0; p < P_; ++p)
      for (int i = 0; i < bytes_; ++i)
        send_[2 * bytes_ * p + (i / block) * 2 * block + i % block] = pattern(call, rank, p, i);
    std::fill(recv_.begin(), recv_.end(), std::uint8_t{0});
  }
  // The number of received bytes that differ from call `call`'s pattern.
  std::int64_t wrong_bytes(std::int64_t call, int rank) const {
    std::int64_t wrong = 0;
    for (int p = 0; p < P_; ++p)
      for (int i = 0; i < bytes_; ++i) wrong += recv_[bytes_ * p + i] != pattern(call, p, rank, i);
    return wrong;
  }

 private:
  int bytes_, P_;
  std::vector<std::uint8_t> send_, recv_;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<MPI_Datatype> stypes_, rtypes_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

struct SoakResult {
  double first_us = 0, last_us = 0, seconds = 0;
  std::int64_t rss_warm_kib = 0, rss_end_kib = 0, wrong_bytes = 0, checks = 0;
};

SoakResult soak(const std::string& name, const Options& opt, int rank, int ranks) {
  auto algorithm = tb::make_alltoallw(name);
  SoakCall call(opt.bytes, ranks);
  const std::int64_t tenth = std::max<std::int64_t>(opt.calls / 10, 1);
  const std::int64_t warm_up = std::max<std::int64_t>(opt.calls / 100, 1);
  SoakResult r;
  double section_start = MPI_Wtime(), start = section_start;
  for (std::int64_t i = 0; i < opt.calls; ++i) {
    if (opt.fresh_types > 0 && i > 0 && i % opt.fresh_types == 0) call.new_send_type();
    if (opt.fresh_comm > 0 && i > 0 && i % opt.fresh_comm == 0) call.new_comm();
    const bool check = i % opt.check_every == 0;
    if (check) call.fill(i, rank);
    algorithm->run(call.args());
    if (check) {
      r.wrong_bytes += call.wrong_bytes(i, rank);
      ++r.checks;
    }
    if (i + 1 == warm_up) r.rss_warm_kib = resident_kib();
    if (i + 1 == tenth) r.first_us = (MPI_Wtime() - section_start) / static_cast<double>(tenth) * 1e6;
    if (i + 1 == opt.calls - tenth) section_start = MPI_Wtime();
  }
  r.last_us = (MPI_Wtime() - section_start) / static_cast<double>(tenth) * 1e6;
  r.seconds = MPI_Wtime() - start;
  r.rss_end_kib = resident_kib();
  return r;
}

SoakResult max_over_ranks(SoakResult r) {
  const MPI_Comm w = MPI_COMM_WORLD;
  r.first_us = max_over_ranks(r.first_us, MPI_DOUBLE, w);
  r.last_us = max_over_ranks(r.last_us, MPI_DOUBLE, w);
  r.seconds = max_over_ranks(r.seconds, MPI_DOUBLE, w);
  const std::int64_t growth = max_over_ranks<std::int64_t>(r.rss_end_kib - r.rss_warm_kib, MPI_INT64_T, w);
  r.rss_warm_kib = max_over_ranks(r.rss_warm_kib, MPI_INT64_T, w);
  r.rss_end_kib = r.rss_warm_kib + growth;  // so that end - warm is the largest growth of any rank
  r.wrong_bytes = max_over_ranks(r.wrong_bytes, MPI_INT64_T, w);
  return r;
}

std::vector<std::string> expand(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (n == "all") {
      for (const auto& info : tb::alltoallw_algorithms()) out.emplace_back(info.name);
    } else {
      tb::for_option("--algorithms", [&] { return tb::make_alltoallw(n); });  // names the known algorithms
      out.push_back(n);
    }
  }
  return out;
}

void validate(const Options& opt) {
  if (opt.bytes > kBlock && opt.bytes % kBlock != 0)
    throw std::invalid_argument("--bytes: " + std::to_string(opt.bytes) + " is neither at most " +
                                std::to_string(kBlock) + " nor a multiple of " + std::to_string(kBlock) +
                                " (the send side is made of " + std::to_string(kBlock) + "-byte blocks)");
  // An algorithm named twice would be soaked twice under one name; "all" names each once.
  tb::check_no_repeats("--algorithms", opt.algorithms);
  tb::check_no_repeats("--algorithms", expand(opt.algorithms), " ('all' includes every registered one)");
}

int run(const Options& opt) {
  int rank = 0, ranks = 1;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  if (rank == 0)
    std::printf("tb-soak: %d ranks, %lld calls per algorithm, %d bytes per peer, fresh send type every %lld calls, "
                "fresh communicator every %lld, check every %lld\n"
                "%-16s %10s %12s %12s %12s %12s %10s %8s\n",
                ranks, static_cast<long long>(opt.calls), opt.bytes, static_cast<long long>(opt.fresh_types),
                static_cast<long long>(opt.fresh_comm), static_cast<long long>(opt.check_every), "algorithm",
                "seconds", "us/call 1st", "us/call last", "RSS warm KiB", "RSS end KiB", "growth KiB", "checks");
  int status = 0;
  for (const auto& name : expand(opt.algorithms)) {
    const SoakResult r = max_over_ranks(soak(name, opt, rank, ranks));
    const std::int64_t growth = r.rss_end_kib - r.rss_warm_kib;
    const bool wrong = r.wrong_bytes > 0, grew = opt.max_growth_kib >= 0 && growth > opt.max_growth_kib;
    if (wrong || grew) status = 1;
    if (rank == 0)
      std::printf("%-16s %10.2f %12.2f %12.2f %12lld %12lld %10lld %8s%s%s\n", name.c_str(), r.seconds, r.first_us,
                  r.last_us, static_cast<long long>(r.rss_warm_kib), static_cast<long long>(r.rss_end_kib),
                  static_cast<long long>(growth), wrong ? "FAILED" : "ok",
                  wrong ? (" (" + std::to_string(r.wrong_bytes) + " wrong bytes on one rank)").c_str() : "",
                  grew ? " (growth above --max-growth)" : "");
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"tb-soak: many Alltoallw calls per algorithm; resident memory, time per call and data checked"};
  tb::use_tool_errors(app, "tb-soak");
  tb::add_list_option(app, "--algorithms", opt.algorithms, "algorithms to soak, or all");
  app.add_option("--calls", opt.calls, "calls per algorithm")->check(CLI::Range(std::int64_t{10}, std::int64_t{1} << 40));
  app.add_option("--bytes", opt.bytes, "bytes per peer")->check(CLI::Range(1, 1 << 20));
  app.add_option("--fresh-types", opt.fresh_types, "a new send datatype every N calls (0: one for all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fresh-comm", opt.fresh_comm, "a new MPI_Comm_dup every N calls (0: one for all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--check-every", opt.check_every, "check the received data every N calls")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-growth", opt.max_growth_kib, "fail when resident memory grows by more KiB (default: report only)")
      ->check(CLI::NonNegativeNumber);
  return tb::mpi_tool_main(
      argc, argv, "tb-soak", app, [&] { validate(opt); }, [&] { return run(opt); },
      [] { return tb::alltoallw_algorithm_list(); });
}
