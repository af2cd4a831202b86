// The testbed's timing method (JPDC 2019, plus medians): an inner loop of `inner` back-to-back
// operations, an outer loop of up to `outer` repetitions with a barrier before each, the inner
// loop's time reduced with MAX over ranks. Reported: the fastest outer loop / inner, and the
// median. Every rank gets the same numbers, so decisions taken on them stay collective.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

namespace tb {

struct TimingOptions {
  int inner = 3;
  int outer = 50;
  // Stop the outer loop early once this much time (sum of MAX-reduced inner loops) has been
  // spent; at least `min_outer` repetitions run. 0 = no limit.
  double max_seconds = 0.0;
  int min_outer = 5;
};

struct Timing {
  int inner = 0;
  std::vector<double> seconds_per_op;  // one per outer repetition: MAX over ranks / inner
  double fastest() const;
  double median() const;
};

// Times `op` (collective over comm) with the method above. Throws tb::MpiError on MPI failure.
Timing time_collective(MPI_Comm comm, const TimingOptions& options, const std::function<void()>& op);

}  // namespace tb
