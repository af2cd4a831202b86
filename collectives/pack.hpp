// The testbed's packer, driven by flattened block lists (type_layout), not MPI_Pack.
//
// pack() gathers `count` instances of a type from `buf` into a contiguous byte stream in
// type-map order; unpack() scatters such a stream; copy_typed() moves one typed region into
// another whose signature matches, walking both block lists at once (no intermediate buffer).
// A dense layout (one block covering its extent) is one memcpy for any count.
// Operations that move kStreamingCopyBytes or more use streaming (non-temporal) stores for
// blocks of 256 bytes and up, so a destination larger than the cache is not read before it is
// written; TB_STREAMING_STORES=never|always overrides the choice (for measurements).
#pragma once

#include "collectives/type_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb {

inline constexpr std::int64_t kStreamingCopyBytes = std::int64_t{4} << 20;

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
// The first `bytes` bytes of such a stream (a short message: what arrived, nothing past it);
// bytes <= count * layout.size.
void unpack_prefix(const std::byte* in, std::int64_t bytes, std::int64_t count, BlockSpan layout, void* buf);

// Calls f(source offset, destination offset, length) for the pieces in which `count_s`
// instances of `ls` meet `count_d` instances of `ld` in type-map order (their data sizes must be
// equal). copy_typed is this with a memcpy per piece; node_leader records the pieces instead.
template <class F>
void for_each_piece(std::int64_t count_s, BlockSpan ls, std::int64_t count_d, BlockSpan ld, F f);

// One byte stream: `bytes` contiguous bytes as a layout (count 1).
inline BlockSpan contiguous_span(const ByteBlock& block) { return BlockSpan(&block, 1, block.length, block.length); }

// Copies with streaming stores for operations of kStreamingCopyBytes and more (see above);
// the destructor fences them.
class BlockCopy {
 public:
  explicit BlockCopy(std::int64_t total_bytes);
  ~BlockCopy();
  BlockCopy(const BlockCopy&) = delete;
  BlockCopy& operator=(const BlockCopy&) = delete;
  void operator()(std::byte* dst, const std::byte* src, std::int64_t bytes) const;
  bool streaming() const { return streaming_; }

 private:
  bool streaming_;
};

// Several typed copies done as one stream of pieces in address order - of their sources (each
// source array is then read front to back once, however the destinations interleave) or of
// their destinations. Reading a strided source once instead of once per destination saves the
// passes that would each bring the whole source through the cache.
// Lists are kept between uses: no allocation once warm.
class MergedCopy {
 public:
  void clear();
  // Adds one copy: count_s instances of ls at src to count_d instances of ld at dst.
  void add(const std::byte* src, std::int64_t count_s, BlockSpan ls, std::byte* dst, std::int64_t count_d, BlockSpan ld);
  void run(bool by_source);
  std::int64_t bytes() const { return bytes_; }

 private:
  struct Piece {
    const std::byte* src;
    std::byte* dst;
    std::int64_t len;
  };
  std::vector<std::vector<Piece>> lists_;
  std::vector<std::size_t> next_;
  std::size_t used_ = 0;
  std::int64_t bytes_ = 0;
};

// Copies count_s instances of the source layout into count_d instances of the destination
// layout; their data sizes must be equal (matching signatures).
void copy_typed(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d, BlockSpan ld);
// The same where the sizes may differ (a mismatched self block): copies the smaller of the two,
// in type-map order, and nothing past either layout.
void copy_typed_prefix(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d,
                       BlockSpan ld);

template <class F>
void for_each_piece(std::int64_t count_s, BlockSpan ls, std::int64_t count_d, BlockSpan ld, F f) {
  if (count_s <= 0 || ls.size == 0) return;
  std::int64_t di = 0;     // destination instance
  std::size_t db = 0;      // destination block within the instance
  std::int64_t dused = 0;  // bytes of the current destination block already covered
  const bool ddense = ld.dense();
  auto source_block = [&](std::int64_t offset, std::int64_t length) {
    while (length > 0) {
      std::int64_t doff = 0, room = 0;
      if (ddense) {
        doff = dused;
        room = count_d * ld.extent - dused;
      } else {
        while (ld.blocks[db].length == dused) {
          dused = 0;
          if (++db == ld.count) {
            db = 0;
            ++di;
          }
        }
        doff = di * ld.extent + ld.blocks[db].offset + dused;
        room = ld.blocks[db].length - dused;
      }
      const std::int64_t n = length < room ? length : room;
      f(offset, doff, n);
      offset += n;
      length -= n;
      dused += n;
    }
  };
  if (ls.dense()) {
    source_block(0, count_s * ls.extent);
    return;
  }
  for (std::int64_t i = 0; i < count_s; ++i)
    for (std::size_t k = 0; k < ls.count; ++k) source_block(i * ls.extent + ls.blocks[k].offset, ls.blocks[k].length);
}

}  // namespace tb
