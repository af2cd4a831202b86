// What the algorithms in collectives/algorithms/ share beyond the interface: byte addressing of
// the user's buffers, the size of a (count, type) pair, the send side of a call (the receive
// side under MPI_IN_PLACE), and the message tags of the algorithms that send point to point.
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/mpi_error.hpp"

#include <cstddef>
#include <cstdint>

namespace tb {

// The address `displ` bytes into `buf` (MPI_Alltoallw's displacements are in bytes).
inline const std::byte* at(const void* buf, int displ) { return static_cast<const std::byte*>(buf) + displ; }
inline std::byte* at(void* buf, int displ) { return static_cast<std::byte*>(buf) + displ; }

// The bytes of `count` instances of `type`; 0 for a zero count whatever the type.
inline std::int64_t bytes_of(int count, MPI_Datatype type) {
  if (count == 0) return 0;
  int size = 0;
  TB_MPI_CHECK(PMPI_Type_size(type, &size));
  return static_cast<std::int64_t>(count) * size;
}

// What a rank sends: the send arguments, or under MPI_IN_PLACE what the receive layout holds.
struct SendSide {
  const void* buf;
  const int* counts;
  const int* displs;
  const MPI_Datatype* types;
};
inline SendSide send_side(const AlltoallwArgs& a) {
  if (a.sendbuf == MPI_IN_PLACE) return {a.recvbuf, a.recvcounts, a.rdispls, a.recvtypes};
  return {a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes};
}

// Point-to-point tags, one per algorithm. Each algorithm sends on its own cached duplicate of
// the user's communicator, so the tags only need to be distinct within an algorithm; distinct
// values still make a message in a trace say whose it is.
namespace tags {
inline constexpr int pairwise = 7701;
inline constexpr int node_leader = 4242;
}  // namespace tags

}  // namespace tb
