// Memory the other ranks of a node can read directly: one segment per rank of an MPI-3
// shared-memory window (MPI_Win_allocate_shared) on the node communicator of node_layout().
//
// Arrays that live here let node_leader take its single-copy path: a receiver copies its data
// straight out of the sender's array (one memcpy per byte) instead of the sender packing into a
// staging area and the receiver unpacking from it (two). Plans and tools allocate their arrays
// here when asked (tb-redistribute --buffers shared). Every live buffer is listed in a
// process-wide table so an algorithm can ask whether a span of memory is readable by a peer
// and, on the peer's side, where that memory appears in its own address space.
//
// Construction is collective over `comm` (every rank passes its own size, 0 allowed), and so is
// destruction (MPI_Win_free): destroy buffers in the same order on every rank, before
// MPI_Finalize.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb {

class NodeSharedBuffer {
 public:
  NodeSharedBuffer(MPI_Comm comm, std::size_t bytes);
  ~NodeSharedBuffer();
  NodeSharedBuffer(const NodeSharedBuffer&) = delete;
  NodeSharedBuffer& operator=(const NodeSharedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

  struct Member {
    int pid = 0;                 // the process owning the segment
    std::int64_t owner_base = 0; // the segment's address in the owner's address space
    std::int64_t bytes = 0;
    const std::byte* local = nullptr;  // the same segment in this process
  };
  const std::vector<Member>& members() const { return members_; }

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::vector<Member> members_;
};

// True when [p, p + bytes) lies inside one of this process's own NodeSharedBuffer segments and
// the process `reader_pid` maps that buffer too.
bool readable_by(const void* p, std::int64_t bytes, int reader_pid);

// Where `owner_pid`'s address range [addr, addr + bytes) appears in this process, or nullptr
// when it is not in a NodeSharedBuffer this process maps.
const std::byte* shared_view(int owner_pid, std::int64_t addr, std::int64_t bytes);

}  // namespace tb
