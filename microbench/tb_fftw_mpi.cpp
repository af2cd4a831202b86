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
#include "microbench/mpi_tool.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <fftw3-mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

int main(int argc, char** argv) {

  std::vector<std::int64_t> shape{64, 64, 64};
  std::string planner = "measure", json;
  tb::TimingOptions timing{3, 50, 60.0, 5};
  CLI::App app{"FFTW-MPI r2c/c2r slab transform (transposed out/in), timed with the testbed's method"};
  app.add_option("--shape", shape, "global real shape, comma separated (d >= 3)")->delimiter(',')->capture_default_str();
  app.add_option("--planner", planner, "estimate, measure or patient")->capture_default_str();
  app.add_option("--inner", timing.inner, "forward+backward pairs per timed inner loop")->capture_default_str();
  app.add_option("--outer", timing.outer, "maximum outer repetitions")->capture_default_str();
  app.add_option("--max-seconds", timing.max_seconds, "stop repeating after this much time")->capture_default_str();
  app.add_option("--json", json, "write the result and metadata as JSON (rank 0)");
  auto validate = [&] {
    if (shape.size() < 3 || (planner != "estimate" && planner != "measure" && planner != "patient"))
      throw std::invalid_argument("--shape needs 3 or more axes; --planner estimate|measure|patient");
  };
  return tb::mpi_tool_main(argc, argv, "tb-fftw-mpi", app, validate, [&] {
    fftw_mpi_init();
    int rank = 0;
    TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    const unsigned flag = planner == "estimate" ? FFTW_ESTIMATE : planner == "patient" ? FFTW_PATIENT : FFTW_MEASURE;
    const int d = static_cast<int>(shape.size());
    std::vector<ptrdiff_t> n(shape.begin(), shape.end()), nc(n);
    nc.back() = n.back() / 2 + 1;
    ptrdiff_t local_n0 = 0, start0 = 0, local_n1 = 0, start1 = 0;
    const ptrdiff_t alloc = fftw_mpi_local_size_transposed(d, nc.data(), MPI_COMM_WORLD, &local_n0, &start0,
                                                           &local_n1, &start1);
    // Real rows are padded to 2*(n/2+1) in FFTW-MPI's layout, out of place too.
    ptrdiff_t rows = local_n0;
    for (int a = 1; a < d - 1; ++a) rows *= n[a];
    const ptrdiff_t padded = 2 * nc.back();
    double* real = fftw_alloc_real(static_cast<std::size_t>(2 * alloc));
    double* back = fftw_alloc_real(static_cast<std::size_t>(2 * alloc));
    fftw_complex* spectrum = fftw_alloc_complex(static_cast<std::size_t>(alloc));
    double t0 = MPI_Wtime();
    fftw_plan fwd = fftw_mpi_plan_dft_r2c(d, n.data(), real, spectrum, MPI_COMM_WORLD, flag | FFTW_MPI_TRANSPOSED_OUT);
    fftw_plan bwd = fftw_mpi_plan_dft_c2r(d, n.data(), spectrum, back, MPI_COMM_WORLD, flag | FFTW_MPI_TRANSPOSED_IN);
    double plan_s = MPI_Wtime() - t0;
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &plan_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (!fwd || !bwd) throw std::runtime_error("FFTW-MPI could not make the plans");

    double total = 1.0;
    for (auto x : n) total *= static_cast<double>(x);
    const double scale = 1.0 / total;
    // Random input (seeded per rank), padding zero.
    std::mt19937_64 gen(12345 + static_cast<std::uint64_t>(rank));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> input(static_cast<std::size_t>(rows * n.back()));
    for (auto& x : input) x = u(gen);
    auto load = [&] {
      for (ptrdiff_t r = 0; r < rows; ++r)
        for (ptrdiff_t k = 0; k < padded; ++k)
          real[r * padded + k] = k < n.back() ? input[static_cast<std::size_t>(r * n.back() + k)] : 0.0;
    };
    auto forward_backward = [&] {
      fftw_execute(fwd);
      fftw_execute(bwd);
      for (ptrdiff_t r = 0; r < rows; ++r)
        for (ptrdiff_t k = 0; k < n.back(); ++k) back[r * padded + k] *= scale;
    };

    // Check: round trip, and Parseval (sum |u|^2 = (1/N) sum over the full spectrum |U|^2, where
    // the Hermitian half counts twice except the k = 0 and k = n/2 planes).
    load();
    fftw_execute(fwd);
    double sums[3] = {0, 0, 0};
    for (double x : input) sums[0] += x * x;
    // The transposed output is local_n1 x n0 x n2 x ... x (n/2+1).
    ptrdiff_t out_rows = local_n1;
    for (int a = 0; a < d - 1; ++a)
      if (a != 1) out_rows *= n[a];
    for (ptrdiff_t r = 0; r < out_rows; ++r)
      for (ptrdiff_t k = 0; k < nc.back(); ++k) {
        const double m = spectrum[r * nc.back() + k][0] * spectrum[r * nc.back() + k][0] +
                         spectrum[r * nc.back() + k][1] * spectrum[r * nc.back() + k][1];
        const bool single = k == 0 || (n.back() % 2 == 0 && k == n.back() / 2);
        sums[1] += (single ? 1.0 : 2.0) * m / total;
      }
    fftw_execute(bwd);
    for (ptrdiff_t r = 0; r < rows; ++r)
      for (ptrdiff_t k = 0; k < n.back(); ++k)
        sums[2] = std::max(sums[2], std::abs(back[r * padded + k] * scale - input[static_cast<std::size_t>(r * n.back() + k)]));
    double global[2];
    TB_MPI_CHECK(MPI_Allreduce(sums, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double trip = 0;
    TB_MPI_CHECK(MPI_Allreduce(&sums[2], &trip, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    const double parseval = std::abs(global[1] - global[0]) / global[0];
    const bool ok = trip < 1e-10 && parseval < 1e-10;

    load();
    const tb::Timing t = tb::time_collective(MPI_COMM_WORLD, timing, forward_backward);
    const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
    if (rank == 0) {
      std::string shape_text;
      for (auto x : shape) shape_text += (shape_text.empty() ? "" : "x") + std::to_string(x);
      std::printf("tb-fftw-mpi  %s r2c double, slab, FFTW_MPI_TRANSPOSED_OUT/_IN, FFTW %s, %d ranks\n",
                  shape_text.c_str(), planner.c_str(), meta["ranks"].get<int>());
      std::printf("  verified %s (round trip %.1e, Parseval %.1e); plan %.2f s\n", ok ? "yes" : "FAILED", trip, parseval,
                  plan_s);
      std::printf("  forward+backward: fastest %.3f ms, median %.3f ms (%d inner x %zu outer, MAX over ranks)\n",
                  t.fastest() * 1e3, t.median() * 1e3, t.inner, t.seconds_per_op.size());
      if (!json.empty()) {
        std::ofstream f(json);
        f << nlohmann::json{{"metadata", meta},
                            {"results",
                             {{{"tool", "tb-fftw-mpi"}, {"method", "fftw-mpi"}, {"kind", "r2c"}, {"precision", "double"},
                               {"global_shape", shape_text}, {"grid", std::to_string(meta["ranks"].get<int>())},
                               {"planner", planner}, {"verified", ok}, {"inner", t.inner},
                               {"outer", t.seconds_per_op.size()}, {"fastest_s", t.fastest()},
                               {"median_s", t.median()}, {"plan_s", plan_s}, {"samples_s", t.seconds_per_op}}}}}
                 .dump(2)
          << "\n";
      }
    }
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(real);
    fftw_free(back);
    fftw_free(spectrum);
    fftw_mpi_cleanup();
    return ok ? 0 : 1;
  });
}
