// tb-ptrans: HPCC's PTRANS (C = B + A^T) with the transposition through one Alltoallw of derived
// datatypes (fpga_transport/ptrans.hpp), any registered algorithm; validated by the residual
// against the generating functions; reports GFLOP/s (n^2 / t) and the transposition bandwidth, and
// the model's prediction of the same run on IEC links with FPGA (y, x) wired to (x, y).
//
//   mpiexec -n 4 tb-ptrans --n 2048 --nb 64 --algorithm native
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "fpga_transport/json_file.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/ptrans.hpp"
#include "microbench/checks.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

struct Options {
  std::int64_t n = 1024, nb = 64;
  std::string algorithm = "native", json, iec_file;
  int repetitions = 5;
};

// The run on this machine: the residual before and after the timed repetitions, and each
// repetition's time (MAX over ranks).
struct Measurement {
  double residual = 0.0;
  bool ok = false;
  tb::Timing timing;
};

Measurement measure(const Options& opt, tb::fpga::Ptrans& pt) {
  pt.fill();
  pt.run();
  const double residual = pt.residual();
  Measurement m;
  m.timing.inner = 1;
  for (int r = 0; r < opt.repetitions; ++r) {
    TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    pt.run();
    double t = MPI_Wtime() - t0;
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    m.timing.seconds_per_op.push_back(t);
  }
  const double residual_after = pt.residual();
  m.ok = residual == 0.0 && residual_after == 0.0;  // exact: one addition of representable values
  m.residual = std::max(residual, residual_after);
  return m;
}

// The IEC network of the prediction: every off-diagonal FPGA pair (y,x)-(x,y) of the p x p grid
// wired with all 4 channels; the link parameters from --iec (a network JSON of kind iec with its
// 'iec' section: another kind's file, or one without the section, would leave the built-in
// parameters in place without a word) or built in.
tb::fpga::Network iec_network(const Options& opt, int p) {
  nlohmann::json spec;
  if (!opt.iec_file.empty()) {
    spec = tb::fpga::read_json_file("--iec", opt.iec_file);
    if (!spec.is_object()) throw std::invalid_argument("--iec " + opt.iec_file + ": not a JSON object");
    if (const auto kind = spec.find("kind"); kind != spec.end() && *kind != "iec")
      throw std::invalid_argument("--iec " + opt.iec_file + ": kind " +
                                  (kind->is_string() ? "'" + kind->get<std::string>() + "'" : kind->dump()) +
                                  " is not an IEC network (use a network file of kind iec)");
    if (!spec.contains("iec"))
      throw std::invalid_argument("--iec " + opt.iec_file + ": needs the key 'iec' (channel_width_bytes, clock_hz, "
                                  "latency_s): the link parameters of the prediction");
  } else {
    spec = {{"name", "iec-transpose"}, {"kind", "iec"},
            {"iec", {{"channel_width_bytes", 32}, {"clock_hz", 156.25e6}, {"latency_s", 520e-9}}}};
  }
  spec["kind"] = "iec";
  spec["topology"] = "links";
  spec["links"] = nlohmann::json::array();
  for (int y = 0; y < p; ++y)
    for (int x = y + 1; x < p; ++x) spec["links"].push_back({y * p + x, x * p + y, 4});
  try {
    return tb::fpga::Network::from_json(spec, p * p);
  } catch (const std::invalid_argument& e) {
    if (opt.iec_file.empty()) throw;
    throw std::invalid_argument("--iec " + opt.iec_file + ": " + e.what());
  }
}

// The model's time of the transposition on the IEC network.
double iec_transposition_s(const Options& opt, const tb::fpga::Ptrans& pt) {
  const int p = pt.grid();
  const tb::fpga::Network iec = iec_network(opt, p);
  const double m = static_cast<double>(pt.local_rows());
  std::vector<tb::fpga::Message> messages;
  for (int y = 0; y < p; ++y)
    for (int x = 0; x < p; ++x)
      if (x != y) messages.push_back({y * p + x, x * p + y, m * m * 8.0});
  return iec.phase_time_s(messages);
}

// Everything the command line decides, on every rank before any collective: the grid, n and nb,
// the matrices' memory, the algorithm, the --iec file and the --json path.
void validate(const Options& opt) {
  int size = 1;
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const int p = static_cast<int>(std::lround(std::sqrt(static_cast<double>(size))));
  if (p * p != size)
    throw std::invalid_argument("PTRANS needs a square P x P grid (as HPCC FPGA): " + std::to_string(size) +
                                " ranks is not a square");
  if (opt.n % (opt.nb * p) != 0)
    throw std::invalid_argument("--n " + std::to_string(opt.n) + " must be a multiple of --nb * P = " +
                                std::to_string(opt.nb) + " * " + std::to_string(p));
  const std::int64_t m = opt.n / p;
  if (m * m > std::int64_t{1} << 31)
    throw std::invalid_argument("--n " + std::to_string(opt.n) + ": the local " + std::to_string(m) + "x" +
                                std::to_string(m) + " matrix is too large for one MPI count (2^31 elements)");
  tb::check_array_fits("--n", {m, m}, 8, 1, 4);  // A, B, C and A^T of doubles on every rank
  tb::for_option("--algorithm", [&] { return tb::make_alltoallw(opt.algorithm); });
  iec_network(opt, p);
  tb::check_writable(MPI_COMM_WORLD, "--json", opt.json);
}

void report(const Options& opt, const tb::fpga::Ptrans& pt, int size, const nlohmann::json& meta,
            const Measurement& run, double predicted_comm) {
  const int p = pt.grid();
  const double best = run.timing.fastest();
  const double n2 = static_cast<double>(opt.n) * static_cast<double>(opt.n);
  const double m = static_cast<double>(pt.local_rows());
  const double off_diagonal_bytes = static_cast<double>(size - p) * m * m * 8.0;
  std::printf("tb-ptrans  n %lld, nb %lld, %dx%d grid, local %lldx%lld, Alltoallw %s\n", static_cast<long long>(opt.n),
              static_cast<long long>(opt.nb), p, p, static_cast<long long>(pt.local_rows()),
              static_cast<long long>(pt.local_rows()), pt.algorithm_path().c_str());
  std::printf("  validation: residual %.3g (%s)\n", run.residual, run.ok ? "passed" : "FAILED");
  std::printf("  fastest of %d: %.3f ms, %.3f GFLOP/s (n^2/t), transposition %.3f GB/s (off-diagonal bytes / t)\n",
              opt.repetitions, best * 1e3, n2 / best / 1e9, off_diagonal_bytes / best / 1e9);
  std::printf("  IEC model, (y,x) wired to (x,y) with 4 channels: transposition %.3f ms", predicted_comm * 1e3);
  if (predicted_comm > 0)
    std::printf(" -> %.3f GFLOP/s if the add keeps pace (HPCC FPGA: the compute pipeline can be the limit)\n",
                n2 / predicted_comm / 1e9);
  else
    std::printf(" (no off-diagonal transfers on a 1x1 grid)\n");
  if (opt.json.empty()) return;
  nlohmann::json row = {{"tool", "tb-ptrans"}, {"n", opt.n}, {"nb", opt.nb}, {"grid", p},
                        {"algorithm", pt.algorithm_path()}, {"validated", run.ok}, {"verified", run.ok},
                        {"residual", run.residual}, {"gflops", n2 / best / 1e9},
                        {"iec_predicted_transposition_s", predicted_comm}};
  row.update(tb::timing_fields(run.timing, true));
  tb::write_results_json(opt.json, meta, nlohmann::json::array({row}));
}

int run(const Options& opt) {
  int rank = 0, size = 1;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  try {  // bad input (the grid, the matrix, an --iec file) is the same clear error on every rank
    tb::fpga::Ptrans pt(MPI_COMM_WORLD, opt.n, opt.nb, opt.algorithm);
    const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);  // before measuring: the state it starts in
    const Measurement m = measure(opt, pt);
    const double predicted_comm = iec_transposition_s(opt, pt);
    if (rank == 0) report(opt, pt, size, meta, m, predicted_comm);
    return m.ok ? 0 : 1;
  } catch (const std::invalid_argument& e) {
    if (rank == 0) std::fprintf(stderr, "tb-ptrans: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"PTRANS (C = B + A^T) with one Alltoallw of derived datatypes for the transposition"};
  app.add_option("--n", opt.n, "matrix order")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 31));
  app.add_option("--nb", opt.nb, "block size")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 31));
  app.add_option("--algorithm", opt.algorithm, "registered Alltoallw algorithm")->capture_default_str();
  app.add_option("--repetitions", opt.repetitions, "timed repetitions (fastest reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--iec", opt.iec_file, "IEC link parameters for the prediction (a network JSON; default: built-in 520N figures)");
  app.add_option("--json", opt.json, "write the result and metadata as JSON (rank 0)");
  return tb::mpi_tool_main(
      argc, argv, "tb-ptrans", app, [&] { validate(opt); },
      [&] { return run(opt); }, [] { return tb::alltoallw_algorithm_list(); });
}
