#include "collectives/pack.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tb {
namespace {

// Calls f(byte pointer offset, length) for every block of `count` instances, in order.
template <class F>
void for_each_block(std::int64_t count, const BlockSpan& l, F f) {
  if (count <= 0 || l.size == 0) return;
  if (l.dense()) {
    f(std::int64_t{0}, count * l.extent);
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t base = i * l.extent;
    for (std::size_t k = 0; k < l.count; ++k) f(base + l.blocks[k].offset, l.blocks[k].length);
  }
}

}  // namespace

void pack(const void* buf, std::int64_t count, BlockSpan layout, std::byte* out) {
  const auto* in = static_cast<const std::byte*>(buf);
  for_each_block(count, layout, [&](std::int64_t offset, std::int64_t length) {
    std::memcpy(out, in + offset, static_cast<std::size_t>(length));
    out += length;
  });
}

void unpack(const std::byte* in, std::int64_t count, BlockSpan layout, void* buf) {
  auto* out = static_cast<std::byte*>(buf);
  for_each_block(count, layout, [&](std::int64_t offset, std::int64_t length) {
    std::memcpy(out + offset, in, static_cast<std::size_t>(length));
    in += length;
  });
}

void copy_typed(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d, BlockSpan ld) {
  if (count_s * ls.size != count_d * ld.size)
    throw std::invalid_argument("copy_typed: source holds " + std::to_string(count_s * ls.size) +
                                " bytes, destination " + std::to_string(count_d * ld.size));
  // Collect the destination blocks lazily: walk the source blocks and fill destination blocks.
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  std::int64_t di = 0;            // destination instance
  std::size_t db = 0;             // destination block within the instance
  std::int64_t dused = 0;         // bytes of the current destination block already written
  const bool ddense = ld.dense();
  auto next_dest = [&](std::int64_t& offset, std::int64_t& room) {
    if (ddense) {
      offset = dused;
      room = count_d * ld.extent - dused;
      return;
    }
    while (ld.blocks[db].length == dused) {
      dused = 0;
      if (++db == ld.count) {
        db = 0;
        ++di;
      }
    }
    offset = di * ld.extent + ld.blocks[db].offset + dused;
    room = ld.blocks[db].length - dused;
  };
  for_each_block(count_s, ls, [&](std::int64_t offset, std::int64_t length) {
    while (length > 0) {
      std::int64_t doff = 0, room = 0;
      next_dest(doff, room);
      const std::int64_t n = std::min(length, room);
      std::memcpy(d + doff, s + offset, static_cast<std::size_t>(n));
      offset += n;
      length -= n;
      dused += n;
    }
  });
}

}  // namespace tb
