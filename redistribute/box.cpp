#include "redistribute/box.hpp"

#include <cstring>

namespace tb {

std::int64_t Box::count() const {
  std::int64_t n = 1;
  for (std::int64_t s : size) n *= s;
  return n;
}

namespace {

// Calls run(array_byte_offset, run_bytes) for each contiguous run of the box, in C order.
template <class Run>
void for_each_run(const std::vector<std::int64_t>& shape, const Box& box, std::size_t elem_size, Run run) {
  if (box.count() == 0) return;
  const int d = static_cast<int>(shape.size());
  std::vector<std::int64_t> stride(shape.size());  // bytes
  std::int64_t s = static_cast<std::int64_t>(elem_size);
  for (int k = d - 1; k >= 0; --k) {
    stride[k] = s;
    s *= shape[k];
  }
  // The innermost run: axis d-1, extended over leading axes while the inner box spans its axis whole.
  int inner = d - 1;
  std::int64_t run_bytes = box.size[inner] * stride[inner];
  while (inner > 0 && box.size[inner] == shape[inner]) {
    --inner;
    run_bytes = box.size[inner] * stride[inner];
  }
  std::int64_t base = 0;
  for (int k = 0; k < d; ++k) base += box.start[k] * stride[k];
  std::vector<std::int64_t> index(shape.size(), 0);  // over axes [0, inner)
  while (true) {
    std::int64_t offset = base;
    for (int k = 0; k < inner; ++k) offset += index[k] * stride[k];
    run(offset, run_bytes);
    int k = inner - 1;
    for (; k >= 0; --k) {
      if (++index[k] < box.size[k]) break;
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

}  // namespace

void copy_box_to_buffer(const void* array, const std::vector<std::int64_t>& shape, const Box& box,
                        std::size_t elem_size, void* buffer) {
  auto* out = static_cast<std::byte*>(buffer);
  const auto* in = static_cast<const std::byte*>(array);
  for_each_run(shape, box, elem_size, [&](std::int64_t offset, std::int64_t bytes) {
    std::memcpy(out, in + offset, static_cast<std::size_t>(bytes));
    out += bytes;
  });
}

void copy_buffer_to_box(const void* buffer, const std::vector<std::int64_t>& shape, const Box& box,
                        std::size_t elem_size, void* array) {
  const auto* in = static_cast<const std::byte*>(buffer);
  auto* out = static_cast<std::byte*>(array);
  for_each_run(shape, box, elem_size, [&](std::int64_t offset, std::int64_t bytes) {
    std::memcpy(out + offset, in, static_cast<std::size_t>(bytes));
    in += bytes;
  });
}

}  // namespace tb
