// b_eff with HPCC FPGA's rules: ranks in a ring, each exchanging a message of L bytes with BOTH
// neighbours at once, for L = 2^0 .. 2^max_exponent; per size a loop of ll(i) exchanges
//     ll(i) = u                                      for i <= o
//     ll(i) = max(u - (i - o) * floor((u - l) / d), l)  for i > o
// (u = 65536, l = 256, o = 11, d = 7 by default). The time of a size is the minimum over the
// repetitions on each rank, then the maximum over ranks. Each rank sends 2 L bytes per exchange
// (one message to each neighbour), so
//     b(L) = 2 * ranks * L * ll / t,   b_eff = sum over the sizes of b(L) / (number of sizes).
// Counting both neighbours' messages is what reproduces the publication's model (7.77 GB/s per
// FPGA on IEC, about 19.9 GB/s at 1 MiB).
#pragma once

#include "fpga_transport/network.hpp"

#include <cstdint>
#include <vector>

namespace tb::fpga {

struct BeffRules {
  int max_exponent = 20;
  std::int64_t u = 65536, l = 256;
  int o = 11, d = 7;
};

std::vector<std::int64_t> beff_sizes(const BeffRules& rules);
std::int64_t beff_loop_length(int exponent, const BeffRules& rules);

struct BeffPoint {
  std::int64_t bytes = 0;
  std::int64_t loop_length = 0;
  double seconds = 0.0;            // for the whole loop
  double bandwidth_bytes_per_s = 0.0;  // b(L), all ranks together
};

struct BeffResult {
  int ranks = 1;
  std::vector<BeffPoint> points;
  double beff_bytes_per_s = 0.0;   // all ranks together
  double per_rank_bytes_per_s() const { return beff_bytes_per_s / ranks; }
};

// b(L) and b_eff from loop times (one per size, in beff_sizes() order).
BeffResult beff_from_times(int ranks, const BeffRules& rules, const std::vector<double>& loop_seconds);

// The b_eff pattern on a modelled network. One exchange = every rank sends L to each neighbour in
// the ring (rank order): on IEC and host networks to both at once (one phase); on the PCIe+MPI
// base path in two rounds one after the other, as HPCC FPGA's base implementation does (each
// round: PCIe read, MPI_Sendrecv with one neighbour, PCIe write).
BeffResult model_beff(const Network& network, const BeffRules& rules = {});

}  // namespace tb::fpga
