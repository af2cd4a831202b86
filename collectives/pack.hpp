// The testbed's packer, driven by flattened block lists (type_layout), not MPI_Pack.
//
// pack() gathers `count` instances of a type from `buf` into a contiguous byte stream in
// type-map order; unpack() scatters such a stream; copy_typed() moves one typed region into
// another whose signature matches, walking both block lists at once (no intermediate buffer).
// A dense layout (one block covering its extent) is one memcpy for any count.
#pragma once

#include "collectives/type_layout.hpp"

#include <cstddef>
#include <cstdint>

namespace tb {

// A non-owning view of one instance's blocks: what a TypeLayout holds, or a block list another
// process published in shared memory (node_leader's single-copy path).
struct BlockSpan {
  const ByteBlock* blocks = nullptr;
  std::size_t count = 0;     // blocks per instance
  std::int64_t size = 0;     // data bytes per instance
  std::int64_t extent = 0;   // bytes between instances
  BlockSpan() = default;
  BlockSpan(const ByteBlock* b, std::size_t n, std::int64_t sz, std::int64_t ext) : blocks(b), count(n), size(sz), extent(ext) {}
  BlockSpan(const TypeLayout& l) : blocks(l.blocks.data()), count(l.blocks.size()), size(l.size), extent(l.extent) {}  // NOLINT
  bool dense() const { return count == 1 && blocks[0].offset == 0 && blocks[0].length == extent; }
};

// bytes = count * layout.size
void pack(const void* buf, std::int64_t count, BlockSpan layout, std::byte* out);
void unpack(const std::byte* in, std::int64_t count, BlockSpan layout, void* buf);

// Copies count_s instances of the source layout into count_d instances of the destination
// layout; their data sizes must be equal (matching signatures).
void copy_typed(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d, BlockSpan ld);

}  // namespace tb
