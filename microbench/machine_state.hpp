// The machine's state for cross-core handoffs, measured when a tool takes its run_metadata (at its
// start) and again around each thing it times, and recorded with its results.
//
// On some hosts (the 2-core AMD EPYC VM of docs/results/2026-12-04-cross-core-handoff-state.md) a
// read of bytes another core has just written takes about 9x its usual time for seconds to many
// minutes at a time (docs/results/2026-12-04-row-states.md), while copies within one core do not slow down (large ones even speed up). Every
// algorithm that hands data over through shared memory (node_leader's staging, ucx_zcopy's gets)
// is then several times slower, and a benchmark or a calibration run in that state disagrees
// with one run outside it. The state cannot be chosen; it can be recorded, so that every result
// says which state it was measured in: the whole launch (run_metadata) and each row (the state
// before and after it was timed: tb-redistribute's rows, tb-bench's counters), since the state
// can change within a launch. The same holds for the MPI library's path for non-contiguous
// messages, which has states of its own (VectorPathProbe below).
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

// The ranks of each node of comm (MPI_COMM_TYPE_SHARED) in pairs, node ranks 0-1, 2-3, ... (with
// `first_pair_only`, only node ranks 0-1); a rank without a partner only joins the collectives.
// Each pair shares a window with a slot of `largest` bytes per rank. Construction is collective
// over comm, an intracommunicator, and destruction over each pair; while an exception unwinds, the
// destructor frees nothing (the partner may wait in another collective: the tool aborts instead).
class NodePairs {
 public:
  NodePairs(MPI_Comm comm, std::int64_t largest, bool first_pair_only = false);
  ~NodePairs();
  NodePairs(const NodePairs&) = delete;
  NodePairs& operator=(const NodePairs&) = delete;

  // Whether some rank of comm has a partner (the same answer on every rank).
  bool any() const { return any_; }

  // Seconds of the slowest rank for: copy `bytes` of its own into its slot, barrier, copy the
  // partner's slot into a private array (handoff: node_leader's staged path), or the same with
  // the second copy reading back what the rank itself just wrote (own). With `piece` > 0 the
  // private arrays are vectors of `piece`-byte blocks at stride 2 * piece, each block copied on
  // its own (node_leader's pack into and unpack from staging of a vector type). Collective over comm.
  double handoff(std::int64_t bytes, std::int64_t piece = 0);
  double own(std::int64_t bytes, std::int64_t piece = 0);

  // Bytes that the copies delivered wrong, on every rank over every call so far (the same on
  // every rank). Collective over comm.
  long long wrong();

 private:
  double copy_barrier_copy(unsigned char* to, const unsigned char* from, std::int64_t bytes, std::int64_t piece,
                           unsigned char expected);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm pair_ = MPI_COMM_NULL;  // MPI_COMM_NULL: no partner
  MPI_Win window_ = MPI_WIN_NULL;
  unsigned char *slot_ = nullptr, *partner_slot_ = nullptr;
  std::vector<unsigned char> own_, received_, scratch_;  // own_ and received_: room for a vector of `largest` bytes
  unsigned char partner_byte_ = 0;
  std::int64_t largest_ = 0;
  bool any_ = false;
  long long wrong_ = 0;
};

// The cross-core handoff state, measured as often as a tool asks: 1 MiB handed over between node
// ranks 0 and 1 of every node (one pair per node, so that many ranks per node do not turn it into
// a memory-bandwidth test) against the same copies within a rank, median of 5 of each.
// measure() returns {"bytes", "handoff_us", "private_us", "ratio"} (the slowest rank's medians,
// ratio = handoff_us / private_us), or null where no node has two ranks or shared windows are
// not real memory (smpi). Construction and measure() are collective over comm.
class HandoffProbe {
 public:
  explicit HandoffProbe(MPI_Comm comm);
  ~HandoffProbe();
  HandoffProbe(const HandoffProbe&) = delete;
  HandoffProbe& operator=(const HandoffProbe&) = delete;

  nlohmann::json measure();

 private:
  std::unique_ptr<NodePairs> pairs_;  // null: nothing to measure
};

// HandoffProbe(comm).measure(): the state once, as run_metadata records it.
nlohmann::json cross_core_handoff(MPI_Comm comm);

// The ratio above which the state is called slow in reports: both states are far from it (about
// 1 and about 9 on the host above). analysis/model_validation.py's SLOW_HANDOFF_RATIO mirrors it.
inline constexpr double kSlowHandoffRatio = 3.0;

// A measure()'s ratio (HandoffProbe's or VectorPathProbe's), or -1 where it is null (tb-bench's
// counters hold numbers only).
double handoff_ratio(const nlohmann::json& state);

// One line for a tool's printout: "cross-core handoff of 1 MiB: 52 us, 50 us within a core
// (1.0x)", with " SLOW STATE" above kSlowHandoffRatio; "" where the metadata has none.
std::string cross_core_handoff_text(const nlohmann::json& metadata);

// The state of the MPI library's path for a non-contiguous message, measured as often as a tool
// asks. On the host above it has two states: a 64 KiB message whose send side is a vector of
// 1 KiB blocks costs a few microseconds more than the same bytes contiguous, or about 30-40 us
// more, switching within seconds to minutes, and tb-beff's non-contiguous extras and native's and
// pairwise's times follow it (docs/results/2026-12-06-smpi-noncontiguous-extras.md). Taken beside
// the handoff state around the same rows, the two agreed on 98 % of them
// (docs/results/2026-12-06-validation-by-vector-state.md), but this one is what prices messages
// with a non-contiguous side. Node ranks 0 and 1 of every node
// exchange those 64 KiB with MPI_Sendrecv, contiguous and with the vector send side, interleaved,
// 16 exchanges back to back per timing, the slowest rank's, median of 5 of each. measure()
// returns {"bytes", "block_bytes", "contiguous_us", "vector_us", "ratio"} (ratio = vector_us /
// contiguous_us), or null where no node has two ranks or under SMPI (the simulator moves the
// bytes). Construction and measure() are collective over comm; destruction as NodePairs'.
class VectorPathProbe {
 public:
  explicit VectorPathProbe(MPI_Comm comm);
  ~VectorPathProbe();
  VectorPathProbe(const VectorPathProbe&) = delete;
  VectorPathProbe& operator=(const VectorPathProbe&) = delete;

  nlohmann::json measure();

 private:
  double exchange(bool vector);  // seconds per exchange, the slowest rank's

  MPI_Comm comm_ = MPI_COMM_NULL, pair_ = MPI_COMM_NULL;  // pair_: MPI_COMM_NULL without a partner
  MPI_Datatype vector_ = MPI_DATATYPE_NULL;
  std::vector<unsigned char> send_, strided_, received_;
  int partner_ = MPI_PROC_NULL;
  bool any_ = false;
};

// VectorPathProbe(comm).measure(): the state once, as run_metadata records it.
nlohmann::json vector_path(MPI_Comm comm);

// The ratio above which the vector path's state is called slow in printouts: about 1.1-2.6 in the
// fast state and 5-7 in the slow one on the host above.
inline constexpr double kSlowVectorRatio = 4.0;

// One line for a tool's printout: "vector message of 64 KiB in 1024 B blocks: 45.0 us, 8.0 us
// contiguous (5.6x) SLOW STATE"; "" where the metadata has none.
std::string vector_path_text(const nlohmann::json& metadata);

}  // namespace tb
