#include "fpga_transport/beff.hpp"

#include <algorithm>
#include <stdexcept>

namespace tb::fpga {

std::vector<std::int64_t> beff_sizes(const BeffRules& rules) {
  if (rules.max_exponent < 0 || rules.max_exponent > 40) throw std::invalid_argument("b_eff: max exponent out of range");
  std::vector<std::int64_t> sizes;
  for (int i = 0; i <= rules.max_exponent; ++i) sizes.push_back(std::int64_t{1} << i);
  return sizes;
}

std::int64_t beff_loop_length(int i, const BeffRules& r) {
  if (r.d <= 0 || r.l < 1 || r.u < r.l) throw std::invalid_argument("b_eff: need d > 0 and 1 <= l <= u");
  if (i <= r.o) return r.u;
  return std::max(r.u - (i - r.o) * ((r.u - r.l) / r.d), r.l);
}

BeffResult beff_from_times(int ranks, const BeffRules& rules, const std::vector<double>& loop_seconds) {
  const auto sizes = beff_sizes(rules);
  if (loop_seconds.size() != sizes.size())
    throw std::invalid_argument("b_eff: " + std::to_string(loop_seconds.size()) + " times for " +
                                std::to_string(sizes.size()) + " sizes");
  BeffResult r;
  r.ranks = ranks;
  double sum = 0.0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    BeffPoint p;
    p.bytes = sizes[i];
    p.loop_length = beff_loop_length(static_cast<int>(i), rules);
    p.seconds = loop_seconds[i];
    p.bandwidth_bytes_per_s = p.seconds > 0 ? 2.0 * ranks * static_cast<double>(p.bytes) * static_cast<double>(p.loop_length) / p.seconds : 0.0;
    sum += p.bandwidth_bytes_per_s;
    r.points.push_back(p);
  }
  r.beff_bytes_per_s = sum / static_cast<double>(sizes.size());
  return r;
}

BeffResult model_beff(const Network& network, const BeffRules& rules) {
  const int n = network.ranks();
  std::vector<double> times;
  const auto sizes = beff_sizes(rules);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double L = static_cast<double>(sizes[i]);
    double t = 0.0;
    if (network.kind() == NetworkKind::pcie_mpi) {
      // HPCC FPGA's base implementation serves the two neighbours one after the other: in
      // round k each rank does PCIe read, MPI_Sendrecv with partner (r - 1 + 2 ((r + k) mod 2)),
      // PCIe write, so the exchange costs two such phases.
      for (int k = 0; k < 2 && n > 1; ++k) {
        std::vector<Message> round;
        for (int r = 0; r < n; ++r) round.push_back({r, (r - 1 + 2 * ((r + k) % 2) + n) % n, L});
        t += network.phase_time_s(round);
      }
    } else {
      std::vector<Message> exchange;  // the IEC kernels send to both neighbours at once
      for (int r = 0; r < n && n > 1; ++r) {
        exchange.push_back({r, (r + 1) % n, L});
        exchange.push_back({r, (r + n - 1) % n, L});
      }
      t = network.phase_time_s(exchange);
    }
    times.push_back(t * static_cast<double>(beff_loop_length(static_cast<int>(i), rules)));
  }
  return beff_from_times(n, rules, times);
}

}  // namespace tb::fpga
