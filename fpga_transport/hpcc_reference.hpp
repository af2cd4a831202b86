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
//
// Node contention: Noctua has two FPGAs per node. The single-FPGA runs leave the node's other FPGA
// idle; in a run on many nodes both FPGAs of a node read and write over PCIe at once (one PCIe
// root complex, host memory and NIC per node), and a Sendrecv waits for the slower partner's
// read. A PCIE and a CPU run with every FPGA of ONE node busy (each the other's partner) hold
// both effects, the host network no more than one node's shared memory, so
//   node_contention(L) = ((PCIE node round(L) - CPU node round(L))
//                         - (PCIE round(L) - CPU round(L)) of one FPGA) / 2,
// the extra time of one transfer (read or write), never below 0 (a negative difference, which
// the published runs show at a few sizes, is noise between runs, not a node that speeds up).
//
// Held-out runs: a run marked "held_out" in the reference is what the model predicts. It is
// loaded, for comparison, but every calibration here refuses it (calibration_run), so that a
// prediction cannot quietly become a fit.
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
  std::string held_out;  // non-empty: a prediction target (this says why); calibrations refuse it
  std::vector<double> round_seconds() const;  // seconds / (2 loop_length)
};

struct BeffReference {
  std::string source;
  double min_buffer_bytes = 1.0;
  std::map<std::string, BeffRun> runs;
  const BeffRun& run(const std::string& name) const;  // throws std::invalid_argument naming the runs
  // The run for a calibration: as run(), and throws std::invalid_argument when it is held out.
  const BeffRun& calibration_run(const std::string& name) const;
};

BeffReference load_beff_reference(const std::string& path);

PcieMpiPath calibrate_base_path(const BeffReference& ref, const std::string& pcie_run, const std::string& cpu_run,
                                const std::string& host_network_run);

// The node contention term from a PCIE and a CPU run on all FPGAs of one node (equal rank counts,
// at least 2: the FPGAs per node) and the single-FPGA PCIE and CPU runs (one rank each).
struct NodeContention {
  MeasuredCurve extra_per_transfer;
  int fpgas_per_node = 1;
  std::string calibration;
};
NodeContention calibrate_node_contention(const BeffReference& ref, const std::string& node_pcie_run,
                                         const std::string& node_cpu_run, const std::string& pcie_run,
                                         const std::string& cpu_run);

}  // namespace tb::fpga
