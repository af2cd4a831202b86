#include "collectives/pack.hpp"

#include "collectives/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tb {
namespace {

// Large copies bypass the cache with non-temporal (streaming) stores: a destination that does
// not fit in cache is then written once instead of read-for-ownership and written back, which
// is most of the gap between a copy of strided blocks and one big memcpy (compare tb-bench-pack
// under TB_STREAMING_STORES=never and =always).
bool use_streaming(std::int64_t total_bytes) {
  switch (settings().streaming_stores.get()) {
    case StreamingStores::never: return false;
    case StreamingStores::always: return true;
    default: return total_bytes >= kStreamingCopyBytes;
  }
}

// memcpy with streaming stores for all whole 64-byte lines of the destination.
void copy_streaming(std::byte* d, const std::byte* s, std::size_t n) {
#if defined(__SSE2__)
  if (n < 256) {
    std::memcpy(d, s, n);
    return;
  }
  const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, n - i);
#else
  std::memcpy(d, s, n);
#endif
}

void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}


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

BlockCopy::BlockCopy(std::int64_t total_bytes) : streaming_(use_streaming(total_bytes)) {}

BlockCopy::~BlockCopy() {
  if (streaming_) store_fence();  // streaming stores are weakly ordered: publish them
}

void BlockCopy::operator()(std::byte* d, const std::byte* s, std::int64_t n) const {
  if (streaming_) {
    copy_streaming(d, s, static_cast<std::size_t>(n));
  } else {
    std::memcpy(d, s, static_cast<std::size_t>(n));
  }
}

void pack(const void* buf, std::int64_t count, BlockSpan layout, std::byte* out) {
  const auto* in = static_cast<const std::byte*>(buf);
  const BlockCopy copy(count * layout.size);
  for_each_block(count, layout, [&](std::int64_t offset, std::int64_t length) {
    copy(out, in + offset, length);
    out += length;
  });
}

void unpack(const std::byte* in, std::int64_t count, BlockSpan layout, void* buf) {
  auto* out = static_cast<std::byte*>(buf);
  const BlockCopy copy(count * layout.size);
  for_each_block(count, layout, [&](std::int64_t offset, std::int64_t length) {
    copy(out + offset, in, length);
    in += length;
  });
}

void unpack_prefix(const std::byte* in, std::int64_t bytes, std::int64_t count, BlockSpan layout, void* buf) {
  auto* out = static_cast<std::byte*>(buf);
  std::int64_t left = std::min(bytes, count * layout.size);
  const BlockCopy copy(left);
  for_each_block(count, layout, [&](std::int64_t offset, std::int64_t length) {
    const std::int64_t n = std::min(length, left);
    if (n <= 0) return;
    copy(out + offset, in, n);
    in += n;
    left -= n;
  });
}

void copy_typed_prefix(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d,
                       BlockSpan ld) {
  const std::int64_t sent = count_s * ls.size, room = count_d * ld.size;
  if (sent == room) return copy_typed(src, count_s, ls, dst, count_d, ld);
  std::vector<std::byte> stream(static_cast<std::size_t>(sent));
  pack(src, count_s, ls, stream.data());
  unpack_prefix(stream.data(), std::min(sent, room), count_d, ld, dst);
}

void copy_typed(const void* src, std::int64_t count_s, BlockSpan ls, void* dst, std::int64_t count_d, BlockSpan ld) {
  if (count_s * ls.size != count_d * ld.size)
    throw std::invalid_argument("copy_typed: source holds " + std::to_string(count_s * ls.size) +
                                " bytes, destination " + std::to_string(count_d * ld.size));
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  const BlockCopy copy(count_s * ls.size);
  for_each_piece(count_s, ls, count_d, ld,
                 [&](std::int64_t soff, std::int64_t doff, std::int64_t n) { copy(d + doff, s + soff, n); });
}

void MergedCopy::clear() {
  used_ = 0;
  bytes_ = 0;
}

void MergedCopy::add(const std::byte* src, std::int64_t count_s, BlockSpan ls, std::byte* dst, std::int64_t count_d,
                     BlockSpan ld) {
  if (count_s <= 0 || ls.size == 0) return;
  if (used_ == lists_.size()) lists_.emplace_back();
  std::vector<Piece>& list = lists_[used_++];
  list.clear();
  for_each_piece(count_s, ls, count_d, ld, [&](std::int64_t soff, std::int64_t doff, std::int64_t n) {
    if (!list.empty() && list.back().src + list.back().len == src + soff && list.back().dst + list.back().len == dst + doff)
      list.back().len += n;  // pieces adjacent on both sides are one copy
    else
      list.push_back({src + soff, dst + doff, n});
  });
  bytes_ += count_s * ls.size;
}

void MergedCopy::run(bool by_source) {
  const BlockCopy copy(bytes_);
  if (used_ == 1) {
    for (const Piece& p : lists_[0]) copy(p.dst, p.src, p.len);
    return;
  }
  next_.assign(used_, 0);
  auto key = [&](const Piece& p) { return by_source ? reinterpret_cast<std::uintptr_t>(p.src) : reinterpret_cast<std::uintptr_t>(p.dst); };
  for (;;) {  // k-way merge by address: k is the number of partners on the node, a handful
    std::size_t best = used_;
    std::uintptr_t best_key = 0;
    for (std::size_t k = 0; k < used_; ++k) {
      if (next_[k] == lists_[k].size()) continue;
      const std::uintptr_t v = key(lists_[k][next_[k]]);
      if (best == used_ || v < best_key) {
        best = k;
        best_key = v;
      }
    }
    if (best == used_) break;
    const Piece& p = lists_[best][next_[best]++];
    copy(p.dst, p.src, p.len);
  }
}

}  // namespace tb
