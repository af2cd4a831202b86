// tb-fftw-mpi: the FFTW-MPI baseline for the head-to-head comparison (experiments/fft_head_to_head.sh).
//
// A d-dimensional real-to-complex transform with Debian's libfftw3-mpi, as its documentation
// recommends for speed: slab decomposition, out-of-place r2c with FFTW_MPI_TRANSPOSED_OUT forward
// and c2r with FFTW_MPI_TRANSPOSED_IN backward (so neither direction does the final transpose),
// the planner flag given (FFTW_MEASURE by default), and a 1/N scaling after backward so that
// forward+backward is the identity - the same work tb-fft's default normalisation does. Timed with
// the testbed's method (forward+backward pairs, 3 inner x up to 50 outer, MAX over ranks). Checked
// by the round trip and Parseval's identity. Built only against Open MPI, which Debian's
// libfftw3-mpi is linked with.
#include "collectives/mpi_error.hpp"
#include "microbench/checks.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <fftw3-mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

struct Options {
  std::vector<std::int64_t> shape{64, 64, 64};
  std::string planner = "measure", json;
  tb::TimingOptions timing{3, 50, 60.0, 5};
};

// Before fftw_mpi_local_size_transposed: an axis of 0 divides by zero in its slab split, a
// negative one makes it allocate nonsense.
void validate(const Options& opt) {
  tb::check_shape("--shape", opt.shape, 3);
  int ranks = 1;
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  // real, back (padded rows) and the spectrum: about three real arrays of 8-byte elements
  tb::check_array_fits("--shape", opt.shape, 8, ranks, 3);
  tb::check_writable(MPI_COMM_WORLD, "--json", opt.json);
}

// The slab r2c/c2r pair and its arrays in FFTW-MPI's layout: real rows padded to 2*(n/2+1), out
// of place too; the transposed spectrum is local_n1 x n0 x n2 x ... x (n/2+1).
struct Transform {
  Transform(const Options& opt, unsigned flag) : d(static_cast<int>(opt.shape.size())), n(opt.shape.begin(), opt.shape.end()) {
    std::vector<ptrdiff_t> nc(n);
    nc.back() = n.back() / 2 + 1;
    half = nc.back();
    const ptrdiff_t alloc = fftw_mpi_local_size_transposed(d, nc.data(), MPI_COMM_WORLD, &local_n0, &start0,
                                                           &local_n1, &start1);
    rows = local_n0;
    for (int a = 1; a < d - 1; ++a) rows *= n[a];
    padded = 2 * half;
    real = fftw_alloc_real(static_cast<std::size_t>(2 * alloc));
    back = fftw_alloc_real(static_cast<std::size_t>(2 * alloc));
    spectrum = fftw_alloc_complex(static_cast<std::size_t>(alloc));
    double t0 = MPI_Wtime();
    fwd = fftw_mpi_plan_dft_r2c(d, n.data(), real, spectrum, MPI_COMM_WORLD, flag | FFTW_MPI_TRANSPOSED_OUT);
    bwd = fftw_mpi_plan_dft_c2r(d, n.data(), spectrum, back, MPI_COMM_WORLD, flag | FFTW_MPI_TRANSPOSED_IN);
    plan_s = MPI_Wtime() - t0;
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &plan_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (!fwd || !bwd) throw std::runtime_error("FFTW-MPI could not make the plans");
    total = 1.0;
    for (auto x : n) total *= static_cast<double>(x);
    scale = 1.0 / total;
  }
  ~Transform() {
    if (fwd) fftw_destroy_plan(fwd);
    if (bwd) fftw_destroy_plan(bwd);
    fftw_free(real);
    fftw_free(back);
    fftw_free(spectrum);
  }
  Transform(const Transform&) = delete;
  Transform& operator=(const Transform&) = delete;

  // Copies the unpadded input rows into the padded real array, padding zero.
  void load(const std::vector<double>& input) {
    for (ptrdiff_t r = 0; r < rows; ++r)
      for (ptrdiff_t k = 0; k < padded; ++k)
        real[r * padded + k] = k < n.back() ? input[static_cast<std::size_t>(r * n.back() + k)] : 0.0;
  }
  // forward, backward, and the 1/N scaling that makes the pair the identity.
  void forward_backward() {
    fftw_execute(fwd);
    fftw_execute(bwd);
    for (ptrdiff_t r = 0; r < rows; ++r)
      for (ptrdiff_t k = 0; k < n.back(); ++k) back[r * padded + k] *= scale;
  }

  int d;
  std::vector<ptrdiff_t> n;
  ptrdiff_t half = 0, local_n0 = 0, start0 = 0, local_n1 = 0, start1 = 0, rows = 0, padded = 0;
  double* real = nullptr;
  double* back = nullptr;
  fftw_complex* spectrum = nullptr;
  fftw_plan fwd = nullptr, bwd = nullptr;
  double plan_s = 0.0, total = 1.0, scale = 1.0;
};

struct Check {
  double trip = 0.0, parseval = 0.0;
  bool ok = false;
};

// The round trip, and Parseval (sum |u|^2 = (1/N) sum over the full spectrum |U|^2, where the
// Hermitian half counts twice except the k = 0 and k = n/2 planes).
Check verify(Transform& t, const std::vector<double>& input) {
  const std::vector<ptrdiff_t>& n = t.n;
  t.load(input);
  fftw_execute(t.fwd);
  double sums[3] = {0, 0, 0};
  for (double x : input) sums[0] += x * x;
  ptrdiff_t out_rows = t.local_n1;
  for (int a = 0; a < t.d - 1; ++a)
    if (a != 1) out_rows *= n[a];
  for (ptrdiff_t r = 0; r < out_rows; ++r)
    for (ptrdiff_t k = 0; k < t.half; ++k) {
      const double m = t.spectrum[r * t.half + k][0] * t.spectrum[r * t.half + k][0] +
                       t.spectrum[r * t.half + k][1] * t.spectrum[r * t.half + k][1];
      const bool single = k == 0 || (n.back() % 2 == 0 && k == n.back() / 2);
      sums[1] += (single ? 1.0 : 2.0) * m / t.total;
    }
  fftw_execute(t.bwd);
  for (ptrdiff_t r = 0; r < t.rows; ++r)
    for (ptrdiff_t k = 0; k < n.back(); ++k)
      sums[2] = std::max(sums[2], std::abs(t.back[r * t.padded + k] * t.scale -
                                           input[static_cast<std::size_t>(r * n.back() + k)]));
  double global[2];
  TB_MPI_CHECK(MPI_Allreduce(sums, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  Check c;
  TB_MPI_CHECK(MPI_Allreduce(&sums[2], &c.trip, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  c.parseval = std::abs(global[1] - global[0]) / global[0];
  c.ok = c.trip < 1e-10 && c.parseval < 1e-10;
  return c;
}

void report(const Options& opt, const nlohmann::json& meta, const Check& check, double plan_s, const tb::Timing& t) {
  const std::string shape_text = tb::join(opt.shape, "x");
  std::printf("tb-fftw-mpi  %s r2c double, slab, FFTW_MPI_TRANSPOSED_OUT/_IN, FFTW %s, %d ranks\n",
              shape_text.c_str(), opt.planner.c_str(), meta["ranks"].get<int>());
  std::printf("  verified %s (round trip %.1e, Parseval %.1e); plan %.2f s\n", check.ok ? "yes" : "FAILED", check.trip,
              check.parseval, plan_s);
  std::printf("  forward+backward: fastest %.3f ms, median %.3f ms (%d inner x %zu outer, MAX over ranks)\n",
              t.fastest() * 1e3, t.median() * 1e3, t.inner, t.seconds_per_op.size());
  if (opt.json.empty()) return;
  nlohmann::json row = {{"tool", "tb-fftw-mpi"}, {"method", "fftw-mpi"}, {"kind", "r2c"}, {"precision", "double"},
                        {"global_shape", shape_text}, {"grid", std::to_string(meta["ranks"].get<int>())},
                        {"planner", opt.planner}, {"verified", check.ok}, {"plan_s", plan_s},
                        {"roundtrip_error", check.trip}, {"parseval_error", check.parseval}};
  row.update(tb::timing_fields(t, true));
  tb::write_results_json(opt.json, meta, nlohmann::json::array({row}));
}

int run(const Options& opt) {
  fftw_mpi_init();
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  const unsigned flag = opt.planner == "estimate" ? FFTW_ESTIMATE : opt.planner == "patient" ? FFTW_PATIENT : FFTW_MEASURE;
  bool ok = false;
  {
    Transform t(opt, flag);
    // Random input (seeded per rank).
    std::mt19937_64 gen(12345 + static_cast<std::uint64_t>(rank));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> input(static_cast<std::size_t>(t.rows * t.n.back()));
    for (auto& x : input) x = u(gen);

    const Check check = verify(t, input);
    ok = check.ok;
    t.load(input);
    const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);  // before timing: the state it starts in
    const tb::Timing timing = tb::time_collective(MPI_COMM_WORLD, opt.timing, [&] { t.forward_backward(); });
    if (rank == 0) report(opt, meta, check, t.plan_s, timing);
  }
  fftw_mpi_cleanup();
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"FFTW-MPI r2c/c2r slab transform (transposed out/in), timed with the testbed's method"};
  tb::add_list_option(app, "--shape", opt.shape, "global real shape, comma separated (d >= 3)", "axis");
  app.add_option("--planner", opt.planner, "estimate, measure or patient")
      ->capture_default_str()
      ->check(CLI::IsMember({"estimate", "measure", "patient"}));
  tb::add_timing_options(app, opt.timing, "forward+backward pairs per timed inner loop",
                         "stop repeating after this much time (0: no limit)");
  app.add_option("--json", opt.json, "write the result and metadata as JSON (rank 0)");
  return tb::mpi_tool_main(argc, argv, "tb-fftw-mpi", app, [&] { validate(opt); }, [&] { return run(opt); });
}
