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

// bytes = count * layout.size
void pack(const void* buf, std::int64_t count, const TypeLayout& layout, std::byte* out);
void unpack(const std::byte* in, std::int64_t count, const TypeLayout& layout, void* buf);

// Copies count_s instances of the source layout into count_d instances of the destination
// layout; their data sizes must be equal (matching signatures).
void copy_typed(const void* src, std::int64_t count_s, const TypeLayout& ls, void* dst, std::int64_t count_d,
                const TypeLayout& ld);

}  // namespace tb
