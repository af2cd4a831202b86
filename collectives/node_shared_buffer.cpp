#include "collectives/node_shared_buffer.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/node_layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <mutex>

namespace tb {
namespace {

std::mutex g_mutex;
std::vector<const NodeSharedBuffer*> g_buffers;  // every live buffer of this process

bool inside(std::int64_t lo, std::int64_t hi, const NodeSharedBuffer::Member& m) {
  return lo >= m.owner_base && hi <= m.owner_base + m.bytes && lo <= hi;
}

}  // namespace

NodeSharedBuffer::NodeSharedBuffer(MPI_Comm comm, std::size_t bytes) : size_(bytes) {
  const NodeLayout& node = node_layout(comm);
  MPI_Info info = MPI_INFO_NULL;
  TB_MPI_CHECK(PMPI_Info_create(&info));
  // Each segment stays on its owner's pages (NUMA-local first touch), not one contiguous block.
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  auto request = static_cast<MPI_Aint>(bytes);
#if defined(TB_SMPI)
  // SimGrid SMPI 3.32's MPI_Win_allocate_shared allocates ONE block of rank 0's size x ranks and
  // gives rank r the address block + r x (r's own size), so segments of different sizes would
  // overlap: every rank asks for the largest. (Its MPI_Win_shared_query is not used: below.)
  TB_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, &request, 1, MPI_AINT, MPI_MAX, node.node_comm));
#endif
  const int rc = PMPI_Win_allocate_shared(request, 1, info, node.node_comm, &base, &win_);
  PMPI_Info_free(&info);
  TB_MPI_CHECK(rc);
  data_ = static_cast<std::byte*>(base);
  struct Entry {
    std::int64_t pid, base, bytes;
  } mine{getpid(), reinterpret_cast<std::intptr_t>(base), static_cast<std::int64_t>(bytes)};
  std::vector<Entry> all(static_cast<std::size_t>(node.node_size));
  TB_MPI_CHECK(PMPI_Allgather(&mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, node.node_comm));
  for (int r = 0; r < node.node_size; ++r) {
    void* local = nullptr;
#if defined(TB_SMPI)
    // SMPI answers the window's start for every rank; all simulated ranks share one address
    // space, so a peer's segment is where the peer said it is.
    local = reinterpret_cast<void*>(static_cast<std::intptr_t>(all[r].base));
#else
    MPI_Aint size = 0;
    int unit = 0;
    TB_MPI_CHECK(PMPI_Win_shared_query(win_, r, &size, &unit, &local));
#endif
    members_.push_back({static_cast<int>(all[r].pid), all[r].base, all[r].bytes, static_cast<const std::byte*>(local)});
  }
  std::lock_guard lock(g_mutex);
  g_buffers.push_back(this);
}

NodeSharedBuffer::~NodeSharedBuffer() {
  {
    std::lock_guard lock(g_mutex);
    g_buffers.erase(std::remove(g_buffers.begin(), g_buffers.end(), this), g_buffers.end());
  }
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (!finalized && win_ != MPI_WIN_NULL) PMPI_Win_free(&win_);
}

bool readable_by(const void* p, std::int64_t bytes, int reader_pid) {
  const auto lo = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(p));
  const int me = getpid();
  std::lock_guard lock(g_mutex);
  for (const NodeSharedBuffer* b : g_buffers) {
    bool mine = false, reader = false;
    for (const auto& m : b->members()) {
      mine = mine || (m.pid == me && inside(lo, lo + bytes, m));
      reader = reader || m.pid == reader_pid;
    }
    if (mine && reader) return true;
  }
  return false;
}

const std::byte* shared_view(int owner_pid, std::int64_t addr, std::int64_t bytes) {
  std::lock_guard lock(g_mutex);
  for (const NodeSharedBuffer* b : g_buffers)
    for (const auto& m : b->members())
      if (m.pid == owner_pid && inside(addr, addr + bytes, m)) return m.local + (addr - m.owner_base);
  return nullptr;
}

}  // namespace tb
