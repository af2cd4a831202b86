// Datatype flattening: any committed MPI datatype as its list of contiguous byte blocks.
//
// type_layout(t) decodes t with MPI_Type_get_envelope / MPI_Type_get_contents (named, dup,
// contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct,
// subarray, darray, resized) into the (offset, length) blocks ONE instance of t touches, in
// type-map order (the order MPI packs and matches data in), with blocks that follow each other
// in memory merged. Offsets are relative to the buffer origin (not to the lower bound); the
// i-th of `count` instances sits at i * extent. The result is cached on the datatype itself
// (an attribute keyval), so later calls on the same type cost one attribute lookup, and the
// cache entry dies with the type; predefined types (which take no attributes) are kept in a
// table of their own.
//
// The signature (run-length list of basic types) is kept too: two (count, type) pairs match
// when their signatures are equal (MPI's rule for a send matching a receive).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace tb {

struct ByteBlock {
  std::int64_t offset;  // bytes from the buffer origin
  std::int64_t length;  // bytes
};

struct BasicRun {
  MPI_Datatype type;  // a predefined (named) type
  std::int64_t count;
};

struct TypeLayout {
  std::vector<ByteBlock> blocks;   // one instance, type-map order, adjacent blocks merged
  std::vector<BasicRun> signature; // one instance, adjacent runs of one type merged
  std::int64_t size = 0;           // bytes of data in one instance (MPI_Type_size)
  std::int64_t lb = 0, extent = 0; // MPI_Type_get_extent
  // One block [0, size) with extent == size: `count` instances are one contiguous run.
  bool dense() const { return blocks.size() == 1 && blocks[0].offset == 0 && blocks[0].length == extent; }
};

// The layout of one instance of `type` (must be committed or predefined). Cached per type.
// Throws std::invalid_argument for MPI_DATATYPE_NULL and for combiners it cannot decode
// (Fortran F90_* and the deprecated *_INTEGER ones).
std::shared_ptr<const TypeLayout> type_layout(MPI_Datatype type);

// The signature of `count` instances of `type`, adjacent runs merged.
std::vector<BasicRun> type_signature(MPI_Datatype type, std::int64_t count);

// MPI's matching rule: the same sequence of basic types (hence the same total size).
bool same_signature(MPI_Datatype a, std::int64_t count_a, MPI_Datatype b, std::int64_t count_b);

// How many times type_layout() decoded a type rather than hitting the cache (for tests).
std::int64_t type_layout_decodings();

// How many cached layouts have died with their types (or could not be cached) so far. A memo
// keyed by datatype handles (auto's call classes) is valid while this is unchanged: MPI reuses
// the handle of a freed type for the next one.
std::uint64_t type_layouts_dropped();

}  // namespace tb
