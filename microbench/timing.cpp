#include "microbench/timing.hpp"

#include "collectives/mpi_error.hpp"

#include <algorithm>
#include <stdexcept>

namespace tb {

double Timing::fastest() const {
  if (seconds_per_op.empty()) throw std::logic_error("Timing: no samples");
  return *std::min_element(seconds_per_op.begin(), seconds_per_op.end());
}

double Timing::median() const {
  if (seconds_per_op.empty()) throw std::logic_error("Timing: no samples");
  std::vector<double> s = seconds_per_op;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

Timing time_collective(MPI_Comm comm, const TimingOptions& options, const std::function<void()>& op) {
  if (options.inner < 1 || options.outer < 1)
    throw std::invalid_argument("time_collective: inner and outer loop counts must be at least 1");
  Timing timing;
  timing.inner = options.inner;
  double spent = 0.0;
  for (int o = 0; o < options.outer; ++o) {
    TB_MPI_CHECK(MPI_Barrier(comm));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < options.inner; ++i) op();
    const double local = MPI_Wtime() - t0;
    double slowest = 0.0;
    TB_MPI_CHECK(MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    timing.seconds_per_op.push_back(slowest / options.inner);
    spent += slowest;
    if (options.max_seconds > 0.0 && spent > options.max_seconds && o + 1 >= options.min_outer) break;
  }
  return timing;
}

}  // namespace tb
