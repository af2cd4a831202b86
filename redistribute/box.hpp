// A box (start, size per axis) inside a C-order local array, and copies between a box and a
// contiguous buffer in the box's own C order. The copies collapse the trailing axes the box
// covers whole into one run and memcpy each run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb {

struct Box {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> size;
  std::int64_t count() const;  // number of elements
};

// array: C-order array of `shape` with elements of elem_size bytes.
void copy_box_to_buffer(const void* array, const std::vector<std::int64_t>& shape, const Box& box,
                        std::size_t elem_size, void* buffer);
void copy_buffer_to_box(const void* buffer, const std::vector<std::int64_t>& shape, const Box& box,
                        std::size_t elem_size, void* array);

}  // namespace tb
