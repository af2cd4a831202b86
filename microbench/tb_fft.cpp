// tb-fft: plans a parallel FFT (ParallelFFT), verifies it and times forward+backward pairs with
// the testbed's method (3 inner x up to 50 outer, barrier before each, MAX over ranks; fastest/3
// and median), with the per-step breakdown (serial FFT stages, redistributions, scaling).
//
// Verification, on every rank with no gather: the input is a sum of seeded random plane waves
// whose spectrum is known exactly (fft/plane_waves.hpp); the forward result is compared with it,
// and backward must return the input.
//
//   mpiexec -n 2 tb-fft --shape 128,128,128 --kind r2c --method native,local_remap
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "fft/parallel_fft.hpp"
#include "fft/plane_waves.hpp"
#include "microbench/checks.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <fftw3.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>

namespace {

struct Options {
  std::vector<std::int64_t> shape{64, 64, 64};
  std::vector<int> grid{0};
  std::string kind = "r2c";
  std::string precision = "double";
  std::vector<std::string> methods{"native"};
  std::string planner = "measure";
  std::vector<std::string> serial{"strided"};
  std::string normalization = "backward";
  std::string wisdom;
  bool destroy_input = false;
  std::uint64_t seed = 20190101;
  tb::TimingOptions timing{3, 50, 60.0, 5};
  std::string csv, json;
};

// A --wisdom file that exists must be FFTW wisdom of this precision: FFTW would otherwise ignore
// it and the run overwrite it. A missing file is fine (written after the run). Rank 0 reads it
// and every rank gets its verdict.
void check_wisdom(const Options& opt, tb::FftPrecision precision) {
  tb::check_writable(MPI_COMM_WORLD, "--wisdom", opt.wisdom);
  int rank = 0, bad = 0;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  if (rank == 0 && std::filesystem::exists(opt.wisdom)) bad = tb::import_fft_wisdom(precision, opt.wisdom) ? 0 : 1;
  TB_MPI_CHECK(MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (bad)
    throw std::invalid_argument("--wisdom " + opt.wisdom + ": FFTW cannot read it as " + opt.precision +
                                "-precision wisdom (not a wisdom file, or another precision's); remove it or name "
                                "another file");
}

void validate(const Options& opt) {
  tb::check_shape("--shape", opt.shape, 2);
  int ranks = 1;
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  tb::check_grid("--grid", opt.grid, opt.shape.size(), ranks);
  tb::for_option("--kind", [&] { return tb::parse_fft_kind(opt.kind); });
  const auto precision = tb::for_option("--precision", [&] { return tb::parse_fft_precision(opt.precision); });
  tb::for_option("--planner", [&] { return tb::parse_fft_planner(opt.planner); });
  tb::for_option("--normalization", [&] { return tb::parse_fft_normalization(opt.normalization); });
  for (const auto& s : opt.serial) tb::for_option("--serial", [&] { return tb::parse_serial_layout(s); });
  tb::check_no_repeats("--serial", opt.serial);
  // A method named twice would be planned and timed twice under one name; "all" names each once.
  tb::check_no_repeats("--method", opt.methods);
  const auto methods = tb::for_option("--method", [&] { return tb::expand_redistribution_methods(opt.methods); });
  tb::check_no_repeats("--method", methods, " ('all' includes every registered algorithm and local_remap)");
  // in, out (complex: up to twice the real input) and back, and the plans' own work arrays
  const std::int64_t element = precision == tb::FftPrecision::f64 ? 16 : 8;
  tb::check_array_fits("--shape", opt.shape, element, ranks, 4);
  // --wisdom is written after the run as well: a results file of the same name would replace it
  tb::check_distinct_outputs({{"--csv", opt.csv}, {"--json", opt.json}, {"--wisdom", opt.wisdom}});
  tb::check_writable(MPI_COMM_WORLD, "--json", opt.json);
  tb::check_writable(MPI_COMM_WORLD, "--csv", opt.csv);
  if (!opt.wisdom.empty()) check_wisdom(opt, precision);
}

// An array the FFT reads or writes, aligned as FFTW allocates.
struct Array {
  explicit Array(std::size_t bytes) : bytes(bytes), data(bytes ? fftw_malloc(bytes) : nullptr) {
    if (bytes && !data) throw std::bad_alloc();
  }
  ~Array() { fftw_free(data); }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  std::size_t bytes;
  void* data;
};

// max |a - b| / max |a| over this rank's elements, for arrays of `type`.
double relative_difference(const void* a, const void* b, std::int64_t n, tb::ElementType type) {
  const bool f64 = type == tb::ElementType::f64 || type == tb::ElementType::c64;
  const std::int64_t reals = n * static_cast<std::int64_t>(tb::element_size(type) / (f64 ? 8 : 4));
  double diff = 0.0, scale = 0.0;
  for (std::int64_t i = 0; i < reals; ++i) {
    const double x = f64 ? static_cast<const double*>(a)[i] : static_cast<const float*>(a)[i];
    const double y = f64 ? static_cast<const double*>(b)[i] : static_cast<const float*>(b)[i];
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(x));
  }
  return scale > 0 ? diff / scale : diff;
}

struct Result {
  std::string method;  // the redistribution method as the plan reports it
  std::string serial;
  bool verified = false;
  double spectrum_error = 0.0, roundtrip_error = 0.0;
  double plan_seconds = 0.0;
  tb::Timing timing;
  std::vector<tb::FftStep> steps;  // per-call seconds, MAX over ranks
};

// What every (serial layout, method) pair of one run shares.
struct Context {
  const Options& opt;
  std::shared_ptr<const tb::ProcessGrid> grid;
  tb::FftPrecision precision;
  double tolerance;
  std::vector<tb::PlaneWave> waves;
};

tb::FftOptions fft_options(const Context& c, const std::string& serial, const std::string& method) {
  tb::FftOptions fo;
  fo.kind = tb::parse_fft_kind(c.opt.kind);
  fo.precision = c.precision;
  fo.planner = tb::parse_fft_planner(c.opt.planner);
  fo.normalization = tb::parse_fft_normalization(c.opt.normalization);
  fo.serial = tb::parse_serial_layout(serial);
  fo.method = method;
  fo.backward_destroys_input = c.opt.destroy_input;
  return fo;
}

// The verification errors {spectrum, round trip}, MAX over ranks: the spectrum of the plane
// waves after forward, then backward must return the input (both up to the normalisation).
std::array<double, 2> verification_errors(const Context& c, tb::ParallelFFT& fft, const tb::FftOptions& fo, Array& in,
                                          Array& out, Array& back) {
  const std::size_t out_bytes = out.bytes;
  tb::fill_plane_waves(fft, c.waves, in.data);
  fft.forward(in.data, out.data);
  double errors[2] = {tb::plane_wave_spectrum_error(fft, c.waves, out.data), 0.0};
  if (fo.normalization == tb::FftNormalization::orthonormal) {  // undo the 1/sqrt(N) for the check
    double n = 1;
    for (auto s : c.opt.shape) n *= static_cast<double>(s);
    errors[0] = 0.0;
    Array scaled(out_bytes);
    const bool f64 = c.precision == tb::FftPrecision::f64;
    for (std::int64_t i = 0; i < 2 * fft.output_size(); ++i) {
      if (f64) static_cast<double*>(scaled.data)[i] = static_cast<double*>(out.data)[i] * std::sqrt(n);
      else static_cast<float*>(scaled.data)[i] = static_cast<float>(static_cast<float*>(out.data)[i] * std::sqrt(n));
    }
    errors[0] = tb::plane_wave_spectrum_error(fft, c.waves, scaled.data);
  }
  fft.backward(out.data, back.data);
  errors[1] = relative_difference(in.data, back.data, fft.input_size(), fft.input_type());
  if (fo.normalization == tb::FftNormalization::none) {  // FFTW's scaling: backward(forward(u)) = N u
    double n = 1;
    for (auto s : c.opt.shape) n *= static_cast<double>(s);
    errors[1] = 0.0;
    const bool f64 = c.precision == tb::FftPrecision::f64;
    const std::int64_t reals = fft.input_size() * (fo.kind == tb::FftKind::c2c ? 2 : 1);
    double scale = 0.0;
    for (std::int64_t i = 0; i < reals; ++i) {
      const double x = f64 ? static_cast<double*>(in.data)[i] : static_cast<float*>(in.data)[i];
      const double y = f64 ? static_cast<double*>(back.data)[i] : static_cast<float*>(back.data)[i];
      errors[1] = std::max(errors[1], std::abs(x - y / n));
      scale = std::max(scale, std::abs(x));
    }
    if (scale > 0) errors[1] /= scale;
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, errors, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return {errors[0], errors[1]};
}

// Per-step time per call: the mean and the fastest call on each rank, then MAX over ranks.
std::vector<tb::FftStep> step_times(const tb::ParallelFFT& fft) {
  std::vector<tb::FftStep> steps = fft.steps();
  const std::size_t n_steps = steps.size();
  std::vector<double> per_call(2 * n_steps);
  for (std::size_t i = 0; i < n_steps; ++i) {
    per_call[i] = steps[i].calls ? steps[i].seconds / static_cast<double>(steps[i].calls) : 0.0;
    per_call[n_steps + i] = steps[i].fastest_seconds;
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, per_call.data(), static_cast<int>(per_call.size()), MPI_DOUBLE, MPI_MAX,
                             MPI_COMM_WORLD));
  for (std::size_t i = 0; i < n_steps; ++i) {
    steps[i].seconds = per_call[i];
    steps[i].fastest_seconds = per_call[n_steps + i];
  }
  return steps;
}

// Plans, verifies and times one (serial layout, method) pair; `description` gets the plan's.
Result verify_and_time(const Context& c, const std::string& serial, const std::string& method,
                       std::string& description) {
  const tb::FftOptions fo = fft_options(c, serial, method);
  TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const double t0 = MPI_Wtime();
  tb::ParallelFFT fft(c.grid, c.opt.shape, fo);
  double plan_seconds = MPI_Wtime() - t0;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &plan_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  const std::size_t in_bytes = static_cast<std::size_t>(fft.input_size()) * tb::element_size(fft.input_type());
  const std::size_t out_bytes = static_cast<std::size_t>(fft.output_size()) * tb::element_size(fft.output_type());
  Array in(in_bytes), out(out_bytes), back(in_bytes);

  const auto errors = verification_errors(c, fft, fo, in, out, back);
  Result r;
  r.serial = serial;
  r.plan_seconds = plan_seconds;
  // The redistributions' persistent calls prepare at their second call with the same arrays (the
  // check made the first): that one runs before the timing too, which then times started calls.
  fft.forward(in.data, out.data);
  fft.backward(out.data, back.data);
  fft.reset_timings();
  r.timing = tb::time_collective(c.grid->comm(), c.opt.timing, [&] {
    fft.forward(in.data, out.data);
    fft.backward(out.data, back.data);
  });
  r.steps = step_times(fft);
  r.method = method;
  description = fft.describe();
  // The first check ran the redistributions' blocking calls; the timed pairs started prepared
  // ones. The check again on the same arrays covers the timed path; the worse of the two counts.
  const auto timed_path = verification_errors(c, fft, fo, in, out, back);
  r.spectrum_error = std::max(errors[0], timed_path[0]);
  r.roundtrip_error = std::max(errors[1], timed_path[1]);
  r.verified = r.spectrum_error < c.tolerance && r.roundtrip_error < c.tolerance;
  return r;
}

// The mean per-call seconds of the serial FFT steps and of the redistributions.
std::pair<double, double> fft_and_redistribute_seconds(const Result& r) {
  double fft_s = 0.0, redist_s = 0.0;
  for (const auto& s : r.steps) (s.kind == "redistribute" ? redist_s : fft_s) += s.seconds;
  return {fft_s, redist_s};
}

struct Wisdom {
  bool loaded = false, saved = false;
};

void print_report(const Context& c, const nlohmann::json& meta, const std::string& description, const Wisdom& wisdom,
                  const std::vector<Result>& results) {
  const Options& opt = c.opt;
  std::printf("tb-fft  %s %s %s  on grid %s (%d ranks, %d node(s): %s)\n", tb::join(opt.shape, "x").c_str(),
              opt.kind.c_str(), opt.precision.c_str(), c.grid->describe().c_str(), meta["ranks"].get<int>(),
              meta["node_layout"]["nodes"].get<int>(), meta["node_layout"]["source"].get<std::string>().c_str());
  std::printf("  MPI: %s | cores %d, NUMA nodes %d | commit %s\n", meta["mpi_library"].get<std::string>().c_str(),
              meta["hwloc"].value("cores", 0), meta["hwloc"].value("numa_nodes", 0),
              meta["git_commit"].get<std::string>().c_str());
  std::printf("  FFTW %s planner%s; normalisation %s; verification: 3 plane waves, seed %llu, tolerance %.0e\n",
              opt.planner.c_str(),
              opt.wisdom.empty() ? "" : (wisdom.loaded ? ", wisdom imported" : ", no wisdom file yet"),
              opt.normalization.c_str(), static_cast<unsigned long long>(opt.seed), c.tolerance);
  std::printf("  timing: forward+backward pairs, %d inner x up to %d outer, MAX over ranks\n", opt.timing.inner,
              opt.timing.outer);
  std::printf("%s\n", description.c_str());
  double native = 0.0;
  for (const auto& r : results)
    if (r.method == "native" && r.serial == opt.serial.front()) native = r.timing.fastest();
  std::printf("  %-14s %-10s %-8s %11s %11s %11s %11s %10s %10s %9s\n", "method", "serial", "verified", "fastest ms",
              "median ms", "mean fft", "mean redist", "spec.err", "trip.err", "vs native");
  for (const auto& r : results) {
    const auto [fft_s, redist_s] = fft_and_redistribute_seconds(r);
    char vs[16] = "";
    if (native > 0) std::snprintf(vs, sizeof vs, "%.2f", r.timing.fastest() / native);
    std::printf("  %-14s %-10s %-8s %11.3f %11.3f %11.3f %11.3f %10.1e %10.1e %9s\n", r.method.c_str(),
                r.serial.c_str(), r.verified ? "yes" : "FAILED", r.timing.fastest() * 1e3, r.timing.median() * 1e3,
                fft_s * 1e3, redist_s * 1e3, r.spectrum_error, r.roundtrip_error, vs);
  }
  std::printf("\n  breakdown per call (ms; mean and fastest over the timed calls, each MAX over ranks):\n");
  for (const auto& r : results) {
    std::printf("  %s, %s:%*s %9s %9s\n", r.method.c_str(), r.serial.c_str(),
                std::max(0, 71 - static_cast<int>(r.method.size() + r.serial.size() + 3)), "", "mean", "fastest");
    for (const auto& s : r.steps)
      std::printf("    %-8s %-60s %9.3f %9.3f\n", s.direction.c_str(), s.name.c_str(), s.seconds * 1e3,
                  s.fastest_seconds * 1e3);
  }
  if (!opt.wisdom.empty())
    std::printf("\n  wisdom %s %s\n", wisdom.saved ? "written to" : "could NOT be written to", opt.wisdom.c_str());
}

nlohmann::json result_rows(const Context& c, const std::vector<Result>& results) {
  const Options& opt = c.opt;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"direction", s.direction}, {"kind", s.kind}, {"name", s.name}, {"seconds_per_call", s.seconds},
                       {"fastest_seconds_per_call", s.fastest_seconds}});
    const auto [fft_s, redist_s] = fft_and_redistribute_seconds(r);
    nlohmann::json row = {{"tool", "tb-fft"}, {"method", r.method}, {"serial", r.serial}, {"verified", r.verified},
                          {"kind", opt.kind}, {"precision", opt.precision}, {"global_shape", tb::join(opt.shape, "x")},
                          {"grid", c.grid->describe()}, {"planner", opt.planner}, {"normalization", opt.normalization},
                          {"fft_s", fft_s}, {"redistribute_s", redist_s}, {"plan_s", r.plan_seconds},
                          {"spectrum_error", r.spectrum_error}, {"roundtrip_error", r.roundtrip_error},
                          {"steps", steps}};
    row.update(tb::timing_fields(r.timing, true));
    rows.push_back(std::move(row));
  }
  return rows;
}

int run(const Options& opt) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  const auto methods = tb::expand_redistribution_methods(opt.methods);
  const auto precision = tb::parse_fft_precision(opt.precision);
  auto grid = tb::ProcessGrid::create(MPI_COMM_WORLD, opt.grid);
  const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
  Wisdom wisdom;
  if (!opt.wisdom.empty()) wisdom.loaded = tb::import_fft_wisdom(precision, opt.wisdom);

  const double tolerance = precision == tb::FftPrecision::f64 ? 1e-10 : 2e-4;
  const Context c{opt, grid, precision, tolerance, tb::random_plane_waves(opt.shape, 3, opt.seed)};
  std::vector<Result> results;
  std::string description;
  for (const auto& serial : opt.serial) {
    for (const auto& method : methods) {
      std::string plan_description;
      results.push_back(verify_and_time(c, serial, method, plan_description));
      if (description.empty() || methods.size() * opt.serial.size() == 1) description = plan_description;
    }
  }
  if (!opt.wisdom.empty()) wisdom.saved = tb::export_fft_wisdom(MPI_COMM_WORLD, precision, opt.wisdom);

  if (rank == 0) {
    print_report(c, meta, description, wisdom, results);
    const nlohmann::json rows = result_rows(c, results);
    if (!opt.json.empty()) tb::write_results_json(opt.json, meta, rows);
    if (!opt.csv.empty())
      tb::write_results_csv(opt.csv, rows,
                            {"tool", "method", "serial", "verified", "kind", "precision", "global_shape", "grid",
                             "planner", "normalization", "inner", "outer", "fastest_s", "median_s", "fft_s",
                             "redistribute_s", "plan_s", "spectrum_error", "roundtrip_error"},
                            meta);
  }
  const bool ok = std::all_of(results.begin(), results.end(), [](const Result& r) { return r.verified; });
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Plan, verify and time a parallel multidimensional FFT (serial FFTW stages + redistributions)"};
  tb::add_list_option(app, "--shape", opt.shape, "global shape, comma separated (d >= 2)", "axis");
  tb::add_list_option(app, "--grid", opt.grid,
                      "process grid dims, 1 to d-1 entries (0 = MPI_Dims_create chooses): 0 = slab, 0,0 = pencil");
  app.add_option("--kind", opt.kind, "c2c or r2c (r2c: real input, forward r2c + backward c2r)")->capture_default_str();
  app.add_option("--precision", opt.precision, "double or float")->capture_default_str();
  tb::add_list_option(app, "--method", opt.methods, "redistribution: Alltoallw algorithm names, local_remap, or all",
                      "name");
  app.add_option("--planner", opt.planner, "FFTW planner: estimate, measure, patient")->capture_default_str();
  tb::add_list_option(app, "--serial", opt.serial,
                      "serial transforms: strided (FFTW guru along the axis in place), contiguous (transpose first); "
                      "both may be given",
                      "layout");
  app.add_option("--normalization", opt.normalization, "none, backward (1/N on backward), ortho (1/sqrt(N) both ways)")
      ->capture_default_str();
  app.add_option("--wisdom", opt.wisdom, "FFTW wisdom file: imported before planning if present, written after");
  app.add_flag("--backward-destroys-input", opt.destroy_input,
               "let backward overwrite its spectral input (FFTW's c2r contract): the first inverse stage runs in place");
  app.add_option("--seed", opt.seed, "seed of the verification input")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);  // CLI11 would wrap -1 to 2^64-1
  tb::add_timing_options(app, opt.timing, "forward+backward pairs per timed inner loop",
                         "stop repeating after this much time per method (0: no limit)");
  app.add_option("--csv", opt.csv, "write the results as CSV (rank 0)");
  app.add_option("--json", opt.json, "write the results, steps and metadata as JSON (rank 0)");

  return tb::mpi_tool_main(
      argc, argv, "tb-fft", app, [&] { validate(opt); }, [&] { return run(opt); },
      [] {
        return tb::alltoallw_algorithm_list() +
               "local_remap     pack + MPI_Alltoall(v) + unpack (redistribution baseline)\n";
      });
}
