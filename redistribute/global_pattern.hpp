// A verification pattern that needs no communication: every element holds a function of its
// GLOBAL index, so after any redistribution each rank can check its own block independently of
// how the data got there. Values are exact in every element type (no rounding to compare).
#pragma once

#include "redistribute/element_type.hpp"
#include "redistribute/pencil.hpp"

#include <cstdint>

namespace tb {

// Fills this rank's local array of `pencil` (local_size() elements of `type`).
void fill_global_pattern(const Pencil& pencil, ElementType type, void* data);

// Number of local elements that differ from the pattern.
std::int64_t count_pattern_mismatches(const Pencil& pencil, ElementType type, const void* data);

}  // namespace tb
