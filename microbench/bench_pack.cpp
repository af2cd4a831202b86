// tb-bench-pack: the testbed's packer (collectives/pack.hpp) against memcpy and MPI_Pack.
//
// Every benchmark moves the same number of bytes per iteration (32 MiB, beyond the caches):
// memcpy of one contiguous run; pack and unpack of an hvector of blocks of B bytes at stride 2B
// (MPI_BYTE), with the testbed's packer and with MPI_Pack/MPI_Unpack; and pack with 64-byte
// gaps only. Read the bytes_per_second column: pack/memcpy is the packer's fraction of memcpy
// bandwidth.
//
//   build/mpich/bin/tb-bench-pack --benchmark_min_time=0.2
//   build/mpich/bin/tb-bench-pack --list-settings
#include "collectives/mpi_error.hpp"
#include "collectives/pack.hpp"
#include "collectives/settings.hpp"
#include "collectives/type_layout.hpp"
#include "microbench/benchmark_flags.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kTotal = 32 << 20;

// Blocks of `block` bytes, each followed by a gap of `gap` bytes.
struct Strided {
  Strided(std::int64_t block, std::int64_t gap) {
    TB_MPI_CHECK(MPI_Type_create_hvector(static_cast<int>(kTotal / block), static_cast<int>(block), block + gap,
                                         MPI_BYTE, &type));
    TB_MPI_CHECK(MPI_Type_commit(&type));
    source.assign(static_cast<std::size_t>(kTotal / block * (block + gap)), std::byte{1});
    packed.assign(static_cast<std::size_t>(kTotal), std::byte{2});
  }
  ~Strided() { MPI_Type_free(&type); }
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::vector<std::byte> source, packed;
};

void BM_Memcpy(benchmark::State& state) {
  std::vector<std::byte> a(static_cast<std::size_t>(kTotal), std::byte{1}), b(a.size(), std::byte{2});
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTotal);
}

void BM_Pack(benchmark::State& state) {
  Strided s(state.range(0), state.range(1));
  const auto layout = tb::type_layout(s.type);
  for (auto _ : state) {
    tb::pack(s.source.data(), 1, *layout, s.packed.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTotal);
}

void BM_Unpack(benchmark::State& state) {
  Strided s(state.range(0), state.range(1));
  const auto layout = tb::type_layout(s.type);
  for (auto _ : state) {
    tb::unpack(s.packed.data(), 1, *layout, s.source.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTotal);
}

void BM_MpiPack(benchmark::State& state) {
  Strided s(state.range(0), state.range(1));
  for (auto _ : state) {
    int position = 0;
    MPI_Pack(s.source.data(), 1, s.type, s.packed.data(), static_cast<int>(kTotal), &position, MPI_COMM_SELF);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTotal);
}

void BM_MpiUnpack(benchmark::State& state) {
  Strided s(state.range(0), state.range(1));
  for (auto _ : state) {
    int position = 0;
    MPI_Unpack(s.packed.data(), static_cast<int>(kTotal), &position, s.source.data(), 1, s.type, MPI_COMM_SELF);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTotal);
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
// Arguments: block bytes, gap bytes after each block (the gap equal to the block: stride 2B).
void strided(benchmark::internal::Benchmark* b) {
  for (std::int64_t block : {8, 64, 256, 1024, 4096, 65536}) b->Args({block, block});
  b->ArgNames({"block", "gap"})->Unit(benchmark::kMillisecond);
}
// The packer with 64-byte gaps only: its per-block cost when nearly every fetched cache line is
// used (with stride 2B the prefetchers also fetch the gaps, which bounds any packer).
void small_gaps(benchmark::internal::Benchmark* b) {
  for (std::int64_t block : {256, 1024, 4096, 65536}) b->Args({block, 64});
  b->ArgNames({"block", "gap"})->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_Pack)->Apply(strided)->Apply(small_gaps);
BENCHMARK(BM_MpiPack)->Apply(strided);
BENCHMARK(BM_Unpack)->Apply(strided);
BENCHMARK(BM_MpiUnpack)->Apply(strided);

}  // namespace

int main(int argc, char** argv) {
  // --list-settings: the TB_* table (the packer reads TB_STREAMING_STORES); Google Benchmark's
  // own flags are all --benchmark_*.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--list-settings") == 0) {
      std::fputs(tb::settings_table().c_str(), stdout);
      return 0;
    }
  MPI_Init(&argc, &argv);
  // Before Google Benchmark reads its flags (a bad value there is its usage and exit status 0):
  // the settings, its flags (tb-bench's checks) and the file it will write.
  const std::vector<char*> args(argv, argv + argc);
  try {
    tb::check_settings();
    tb::check_benchmark_flags(args);
    tb::check_writable("--benchmark_out", tb::benchmark_flag(args, "benchmark_out").value);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tb-bench-pack: error: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  // Google Benchmark leaves what it does not know in argv: a typo is an error, not ignored.
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    MPI_Finalize();
    return 2;
  }
  benchmark::AddCustomContext("mpi_library", tb::mpi_library_version());
  benchmark::AddCustomContext("git_commit", tb::git_commit());
  int code = 0;
  try {
    tb::check_benchmarks_matched(benchmark::RunSpecifiedBenchmarks(), args);  // a filter that matched none
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tb-bench-pack: error: %s\n", e.what());
    code = 2;
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return code;
}
