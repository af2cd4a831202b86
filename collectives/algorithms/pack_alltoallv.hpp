// pack_alltoallv: pack every peer's block into one contiguous buffer with the testbed's own
// packer (flattened block lists, not MPI_Pack), one MPI_Alltoallv of bytes, unpack.
//
// Per rank: the P-1 messages of MPI_Alltoallv (whatever algorithm the library picks for it),
// the user's data volume, plus one pack and one unpack copy of everything not sent to self.
// The self block is copied directly from the send layout to the receive layout (one copy).
// Buffers grow to the largest call seen and are reused: no allocation once warm.
// Wins where the library's Alltoallv is better tuned than its Alltoallw (vendor shared-memory
// Alltoall(v) paths), and where MPI's own datatype engine is slow on the user's types.
// Each non-empty block travels behind an 8-byte header with the sender's byte count: the
// receiver unpacks what arrived, never staging bytes past a shorter message, and names a
// mismatch with both figures (a longer message is truncated by MPI_Alltoallv itself). A block one
// side thinks empty and the other not is MPI_Alltoallv's to handle (as with native).
// Each peer's block must fit MPI's int counts; larger calls are rejected with a clear error.
//
// MPI_IN_PLACE is supported (pack from the receive buffer, exchange, unpack into it).
//
// Prepared (persistent) form: layouts, counts, displacements and both staging buffers are made
// once, and blocks travel without the header (prepare() has matched every pair's sizes); a start
// packs, calls MPI_Alltoallv and unpacks.
#pragma once

#include "collectives/algorithm_support.hpp"
#include "collectives/type_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tb {

class PackAlltoallv final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "pack_alltoallv"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
  std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;

 private:
  // Per-peer sizes and flattened layouts of both sides; the self block keeps its sizes.
  void measure(const SendSide& send, const AlltoallwArgs& args, int size);
  std::vector<std::byte> send_, recv_;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<std::shared_ptr<const TypeLayout>> slayout_, rlayout_;
  std::vector<std::int64_t> sbytes_, rbytes_;
};

}  // namespace tb
