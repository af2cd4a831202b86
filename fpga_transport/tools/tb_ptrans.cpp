// tb-ptrans: HPCC's PTRANS (C = B + A^T) with the transposition through one Alltoallw of derived
// datatypes (fpga_transport/ptrans.hpp), any registered algorithm; validated by the residual
// against the generating functions; reports GFLOP/s (n^2 / t) and the transposition bandwidth, and
// the model's prediction of the same run on IEC links with FPGA (y, x) wired to (x, y).
//
//   mpiexec -n 4 tb-ptrans --n 2048 --nb 64 --algorithm native
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/ptrans.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/run_metadata.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  std::int64_t n = 1024, nb = 64;
  std::string algorithm = "native", json, iec_file;
  int repetitions = 5;
  CLI::App app{"PTRANS (C = B + A^T) with one Alltoallw of derived datatypes for the transposition"};
  app.add_option("--n", n, "matrix order")->capture_default_str();
  app.add_option("--nb", nb, "block size")->capture_default_str();
  app.add_option("--algorithm", algorithm, "registered Alltoallw algorithm")->capture_default_str();
  app.add_option("--repetitions", repetitions, "timed repetitions (fastest reported)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--iec", iec_file, "IEC link parameters for the prediction (a network JSON; default: built-in 520N figures)");
  app.add_option("--json", json, "write the result and metadata as JSON (rank 0)");
  return tb::mpi_tool_main(argc, argv, "tb-ptrans", app, {}, [&] {
    int rank = 0, size = 1;
    TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    try {  // bad input (the grid, the matrix, an --iec file) is the same clear error on every rank
      tb::fpga::Ptrans pt(MPI_COMM_WORLD, n, nb, algorithm);
      pt.fill();
      pt.run();
      const double residual = pt.residual();
      double best = 1e300;
      for (int r = 0; r < repetitions; ++r) {
        TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        const double t0 = MPI_Wtime();
        pt.run();
        double t = MPI_Wtime() - t0;
        TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        best = std::min(best, t);
      }
      const double residual_after = pt.residual();
      const bool ok = residual == 0.0 && residual_after == 0.0;  // exact: one addition of representable values
      const double m = static_cast<double>(pt.local_rows());
      const double off_diagonal_bytes = static_cast<double>(size - pt.grid()) * m * m * 8.0;

      // Prediction on IEC: every off-diagonal FPGA pair (y,x)-(x,y) wired with all 4 channels.
      nlohmann::json spec;
      if (!iec_file.empty()) {
        std::ifstream f(iec_file);
        if (!f) throw std::invalid_argument("cannot read " + iec_file);
        f >> spec;
      } else {
        spec = {{"name", "iec-transpose"}, {"kind", "iec"},
                {"iec", {{"channel_width_bytes", 32}, {"clock_hz", 156.25e6}, {"latency_s", 520e-9}}}};
      }
      spec["kind"] = "iec";
      spec["topology"] = "links";
      spec["links"] = nlohmann::json::array();
      const int p = pt.grid();
      for (int y = 0; y < p; ++y)
        for (int x = y + 1; x < p; ++x) spec["links"].push_back({y * p + x, x * p + y, 4});
      const tb::fpga::Network iec = tb::fpga::Network::from_json(spec, size);
      std::vector<tb::fpga::Message> messages;
      for (int y = 0; y < p; ++y)
        for (int x = 0; x < p; ++x)
          if (x != y) messages.push_back({y * p + x, x * p + y, m * m * 8.0});
      const double predicted_comm = iec.phase_time_s(messages);

      const nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);
      if (rank == 0) {
        std::printf("tb-ptrans  n %lld, nb %lld, %dx%d grid, local %lldx%lld, Alltoallw %s\n", static_cast<long long>(n),
                    static_cast<long long>(nb), p, p, static_cast<long long>(pt.local_rows()),
                    static_cast<long long>(pt.local_rows()), pt.algorithm_path().c_str());
        std::printf("  validation: residual %.3g (%s)\n", std::max(residual, residual_after), ok ? "passed" : "FAILED");
        std::printf("  fastest of %d: %.3f ms, %.3f GFLOP/s (n^2/t), transposition %.3f GB/s (off-diagonal bytes / t)\n",
                    repetitions, best * 1e3, static_cast<double>(n) * static_cast<double>(n) / best / 1e9,
                    off_diagonal_bytes / best / 1e9);
        std::printf("  IEC model, (y,x) wired to (x,y) with 4 channels: transposition %.3f ms", predicted_comm * 1e3);
        if (predicted_comm > 0)
          std::printf(" -> %.3f GFLOP/s if the add keeps pace (HPCC FPGA: the compute pipeline can be the limit)\n",
                      static_cast<double>(n) * static_cast<double>(n) / predicted_comm / 1e9);
        else
          std::printf(" (no off-diagonal transfers on a 1x1 grid)\n");
        if (!json.empty()) {
          std::ofstream f(json);
          f << nlohmann::json{{"metadata", meta},
                              {"results",
                               {{"tool", "tb-ptrans"}, {"n", n}, {"nb", nb}, {"grid", p}, {"algorithm", pt.algorithm_path()},
                                {"validated", ok}, {"residual", std::max(residual, residual_after)}, {"fastest_s", best},
                                {"gflops", static_cast<double>(n) * static_cast<double>(n) / best / 1e9},
                                {"iec_predicted_transposition_s", predicted_comm}}}}
                   .dump(2)
            << "\n";
        }
      }
      return ok ? 0 : 1;
    } catch (const std::invalid_argument& e) {
      if (rank == 0) std::fprintf(stderr, "tb-ptrans: error: %s\n", e.what());
      return 2;
    }
  });
}
