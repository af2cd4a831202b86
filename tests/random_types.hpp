// A seeded generator of random derived datatypes for conformance tests.
//
// Every generated type is a tree over one "unit" (a predefined type, possibly a named pair type
// with a gap, such as MPI_DOUBLE_INT) built from all the MPI constructors: contiguous, vector
// (negative strides too), hvector, indexed and hindexed (blocks in shuffled memory order),
// indexed_block, hindexed_block, struct (children of different layouts, negative
// displacements), subarray (C and Fortran order), darray (block, cyclic, none), resized (lower
// bound moved down, extent grown: gaps) and dup. Types never overlap themselves, so they are
// valid receive types. exact(n) makes a type holding exactly n units; any() makes one holding
// whatever its constructors give (darray included) and says how many.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tb::test {

class TypeGenerator {
 public:
  // negative_strides: allow vector/hvector with negative strides. Open MPI 4.1.4 misplaces such
  // types (wrong lower bound; test_conformance's KnownLibraryDefects), so tests turn them off
  // there; with MPICH they stay on.
  TypeGenerator(std::uint64_t seed, MPI_Datatype unit, bool negative_strides = true)
      : rng_(seed), unit_(unit), negative_strides_(negative_strides) {}

  // A committed type with exactly n >= 1 units. The caller frees it with free_type().
  MPI_Datatype exact(std::int64_t n, int depth = 3);
  // A committed type with any number (>= 1) of units, reported in *units.
  MPI_Datatype any(std::int64_t* units, int depth = 3);

  std::mt19937_64& rng() { return rng_; }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  MPI_Datatype build(std::int64_t n, int depth);  // uncommitted unless predefined
  MPI_Datatype contiguous(std::int64_t n, int depth);
  MPI_Datatype vector(std::int64_t n, int depth, bool in_bytes);
  MPI_Datatype indexed(std::int64_t n, int depth, bool in_bytes);
  MPI_Datatype indexed_block(std::int64_t n, int depth, bool in_bytes);
  MPI_Datatype struct_of(std::int64_t n, int depth);
  MPI_Datatype subarray(std::int64_t n, int depth);
  MPI_Datatype resized(std::int64_t n, int depth);
  MPI_Datatype dup(std::int64_t n, int depth);
  std::vector<std::int64_t> divisors(std::int64_t n);
  std::int64_t pick_divisor(std::int64_t n);
  std::mt19937_64 rng_;
  MPI_Datatype unit_;
  bool negative_strides_;
};

// True when the MPI library is Open MPI (whose known datatype defects the tests work around).
bool is_open_mpi();

// Bytes [lo, hi) relative to the buffer origin that `count` instances of t touch: the hull of
// MPI_Type_get_true_extent and the testbed's own flattening (Open MPI 4.1.4 misreports the true
// lower bound of negative-stride types, and buffers must hold what the data really touches).
void type_span(MPI_Datatype t, int count, std::int64_t& lo, std::int64_t& hi);

// Frees a type unless it is predefined.
void free_type(MPI_Datatype& t);

// The units that generated types may be built from.
const std::vector<MPI_Datatype>& unit_types();

}  // namespace tb::test

namespace tb::test {
// A one-line description of a datatype's constructor tree, e.g.
// "vector(3,2,-4, resized(lb=-8,extent=40, MPI_INT))", for failure messages.
std::string describe_type(MPI_Datatype t);
}  // namespace tb::test
