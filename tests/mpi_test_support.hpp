// Helpers for MPI tests: collective checks, so that every rank reaches the same assertions and
// no rank leaves a collective early.
#pragma once

#include "collectives/settings.hpp"

#include "collectives/mpi_error.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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

// A message that only its receiver's MPI progress can move, for tests of MPI's progress rule:
// rank 0 posts a receive of 8 MiB (above every library's eager limit, so a rendezvous) from
// rank 1, and rank 1, after a pause that lets rank 0 get into whatever waits next, blocks in the
// matching MPI_Send. Rank 1 therefore leaves the constructor only once rank 0's library has
// progressed that send; a library that finds the send already there when the receive is posted
// could move it within MPI_Irecv, hence the pause. Other ranks take no part. arrived() waits for
// the receive and says whether every byte came (true on ranks other than 0).
class BlockedSend {
 public:
  explicit BlockedSend(MPI_Comm comm) : message_(rank_in(comm) < 2 ? kBytes : 0, rank_in(comm) == 1 ? 'x' : 0) {
    const int me = rank_in(comm);
    if (me == 0) TB_MPI_CHECK(MPI_Irecv(message_.data(), kBytes, MPI_CHAR, 1, kTag, comm, &pending_));
    if (me == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      TB_MPI_CHECK(MPI_Send(message_.data(), kBytes, MPI_CHAR, 0, kTag, comm));
    }
    receiver_ = me == 0;
  }
  ~BlockedSend() {
    if (pending_ != MPI_REQUEST_NULL) MPI_Wait(&pending_, MPI_STATUS_IGNORE);
  }
  BlockedSend(const BlockedSend&) = delete;
  BlockedSend& operator=(const BlockedSend&) = delete;

  bool arrived() {
    TB_MPI_CHECK(MPI_Wait(&pending_, MPI_STATUS_IGNORE));
    return !receiver_ || std::count(message_.begin(), message_.end(), 'x') == kBytes;
  }

 private:
  static constexpr int kBytes = 8 << 20;
  static constexpr int kTag = 7;
  static int rank_in(MPI_Comm comm) {
    int r = 0;
    TB_MPI_CHECK(MPI_Comm_rank(comm, &r));
    return r;
  }

  std::vector<char> message_;
  MPI_Request pending_ = MPI_REQUEST_NULL;
  bool receiver_ = false;
};

}  // namespace tb::test
