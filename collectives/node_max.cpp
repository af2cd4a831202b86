#include "collectives/node_max.hpp"

#include "collectives/mpi_error.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <new>

namespace tb {

void wait_for_node_peers(int spin, MPI_Comm progress) {
  if (spin < 2000) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  sched_yield();
  int arrived = 0;  // a failed probe is not reported (the header says why)
  (void)PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progress, &arrived, MPI_STATUS_IGNORE);
}

struct alignas(64) NodeMax::Record {
  std::int64_t call;                          // the last call whose values are published
  std::int64_t slots[2][NodeMax::kValues];    // by the call number's parity
};

#if !defined(TB_SMPI)
namespace {

// Whether every rank of `comm` is on this rank's shared-memory node (the same answer on every rank).
bool all_share_memory(MPI_Comm comm) {
  int size = 0;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &size));
  MPI_Comm node = MPI_COMM_NULL;
  TB_MPI_CHECK(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_size = 0;
  const int rc = PMPI_Comm_size(node, &node_size);
  PMPI_Comm_free(&node);
  TB_MPI_CHECK(rc);
  return node_size == size;
}

// Whether the window is in the unified memory model on every rank (agreed, so that all ranks
// keep or free it together).
bool unified_everywhere(MPI_Win window, MPI_Comm comm) {
  int* model = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Win_get_attr(window, MPI_WIN_MODEL, &model, &found));
  int mine = found && *model == MPI_WIN_UNIFIED ? 1 : 0, all = 0;
  TB_MPI_CHECK(PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm));
  return all == 1;
}

}  // namespace
#endif

std::unique_ptr<NodeMax> NodeMax::create(MPI_Comm comm) {
  static_assert(sizeof(Record) == 64, "one record per cache line");
  static_assert(std::atomic_ref<std::int64_t>::is_always_lock_free, "atomics shared between processes");
#if defined(TB_SMPI)
  (void)comm;
  return nullptr;
#else
  if (!all_share_memory(comm)) return nullptr;
  int rank = 0, size = 0;
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &rank));
  TB_MPI_CHECK(PMPI_Comm_size(comm, &size));
  // One record more than the ranks: the window's base need not be aligned to a cache line (Open
  // MPI's is not even 16-byte aligned), so the records start at the first line boundary in it. The
  // mapping is page-aligned in every process, so every rank finds the same boundary.
  const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(sizeof(Record)) * (size + 1) : 0;
  void* mine = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  TB_MPI_CHECK(PMPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, comm, &mine, &window));
  if (!unified_everywhere(window, comm)) {
    TB_MPI_CHECK(PMPI_Win_free(&window));
    return nullptr;
  }
  MPI_Comm probed = MPI_COMM_NULL;
  TB_MPI_CHECK(PMPI_Comm_dup(comm, &probed));
  MPI_Aint got = 0;
  int unit = 0;
  void* base = nullptr;
  TB_MPI_CHECK(PMPI_Win_shared_query(window, 0, &got, &unit, &base));
  std::size_t space = static_cast<std::size_t>(got);
  if (std::align(alignof(Record), sizeof(Record) * size, base, space) == nullptr)
    throw std::logic_error("NodeMax: the shared window is smaller than its records");
  auto* records = static_cast<Record*>(base);
  TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, window));
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      new (&records[r]) Record{};
      std::atomic_ref<std::int64_t>(records[r].call).store(0, std::memory_order_release);
    }
  }
  // The records are zero before any rank publishes (MPI's rule for shared windows: a sync, a
  // barrier, a sync).
  TB_MPI_CHECK(PMPI_Win_sync(window));
  TB_MPI_CHECK(PMPI_Barrier(comm));
  TB_MPI_CHECK(PMPI_Win_sync(window));
  return std::unique_ptr<NodeMax>(new NodeMax(probed, window, records, rank, size));
#endif
}

NodeMax::NodeMax(MPI_Comm probed, MPI_Win window, Record* records, int rank, int size)
    : probed_(probed), window_(window), records_(records), rank_(rank), size_(size) {}

// Errors are not reported: a destructor cannot throw, and the window goes with the process anyway.
NodeMax::~NodeMax() {
  PMPI_Win_unlock_all(window_);
  PMPI_Win_free(&window_);
  PMPI_Comm_free(&probed_);
}

NodeMax::Values NodeMax::max(const Values& mine) {
  const std::int64_t call = ++calls_;
  const int slot = static_cast<int>(call & 1);
  Record& own = records_[rank_];
  for (int v = 0; v < kValues; ++v)
    std::atomic_ref<std::int64_t>(own.slots[slot][v]).store(mine[v], std::memory_order_relaxed);
  std::atomic_ref<std::int64_t>(own.call).store(call, std::memory_order_release);
  Values out = mine;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    Record& peer = records_[r];
    std::atomic_ref<std::int64_t> published(peer.call);
    for (int spin = 0; published.load(std::memory_order_acquire) < call; ++spin) wait_for_node_peers(spin, probed_);
    for (int v = 0; v < kValues; ++v)
      out[v] = std::max(out[v], std::atomic_ref<std::int64_t>(peer.slots[slot][v]).load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace tb
