// Helpers for MPI tests: collective checks, so that every rank reaches the same assertions and
// no rank leaves a collective early.
#pragma once

#include "collectives/settings.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace tb::test {

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline std::int64_t sum_over_ranks(std::int64_t v, MPI_Comm comm = MPI_COMM_WORLD) {
  long long in = v, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return out;
}

// Sets an environment variable for one scope (and re-reads the settings) and restores what was there (or its absence).
// SMPI's ranks are threads of one process sharing one environment: there every rank must make it
// (it is collective on MPI_COMM_WORLD), so that all have read the old value before any sets the
// new one, and all are done with the new one before any restores the old.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    every_rank_here();
    setenv(name, value, 1);
    reload_settings();
  }
  ~ScopedEnv() {
    every_rank_here();
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
    reload_settings();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void every_rank_here() {
#if defined(TB_SMPI)
    MPI_Barrier(MPI_COMM_WORLD);
#endif
  }

  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace tb::test
