// The publication's own b_eff measurements (HPCC FPGA on Noctua: Bittware 520N, Intel MPI over
// Omni-Path), kept as numbers in fpga_transport/reference/hpcc_fpga_520n_beff.json, and the
// calibration of the PCIe+MPI base path from them.
//
// HPCC FPGA's base (PCIE) and CPU implementations serve the two ring neighbours one after the
// other, each for a loop of ll rounds, so one round costs seconds / (2 ll):
//   PCIE round = PCIe read + MPI_Sendrecv (L each way) + PCIe write
//   CPU  round =             MPI_Sendrecv (L each way)
// calibrate_base_path takes the PCIe transfer from a PCIE run and a CPU run with the same rank count
// (one FPGA: the Sendrecv is with itself), read and write alike:
//   pcie(L) = (PCIE round(L) - CPU round(L)) / 2,
// and the host exchange from a CPU run on the network to be predicted:
//   host(L) = CPU round(L).
// Both become MeasuredCurves at the bytes really moved: HPCC FPGA sends at least min_buffer_bytes
// (its validation buffer), so sizes below it are left out and the curves are flat there.
#pragma once

#include "fpga_transport/link_models.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tb::fpga {

struct BeffRun {
  std::string name, communication_type, file;
  int ranks = 1;
  std::vector<std::int64_t> bytes, loop_length;
  std::vector<double> seconds;  // the whole loop, per size
  double published_beff_bytes_per_s = 0.0;
  std::vector<double> round_seconds() const;  // seconds / (2 loop_length)
};

struct BeffReference {
  std::string source;
  double min_buffer_bytes = 1.0;
  std::map<std::string, BeffRun> runs;
  const BeffRun& run(const std::string& name) const;  // throws std::invalid_argument naming the runs
};

BeffReference load_beff_reference(const std::string& path);

PcieMpiPath calibrate_base_path(const BeffReference& ref, const std::string& pcie_run, const std::string& cpu_run,
                                const std::string& host_network_run);

}  // namespace tb::fpga
