#include "collectives/pairwise.hpp"

#include "collectives/comm_cache.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/native.hpp"
#include "collectives/pack.hpp"

namespace tb {
namespace {

constexpr int kTag = 7701;

std::byte* at(void* buf, int displ) { return static_cast<std::byte*>(buf) + displ; }
const std::byte* at(const void* buf, int displ) { return static_cast<const std::byte*>(buf) + displ; }

std::int64_t bytes_of(int count, MPI_Datatype type) {
  if (count == 0) return 0;
  int size = 0;
  TB_MPI_CHECK(PMPI_Type_size(type, &size));
  return static_cast<std::int64_t>(count) * size;
}

}  // namespace

void PairwiseAlltoallw::run(const AlltoallwArgs& a) {
  const AlltoallwComm c = check_alltoallw_args(a, name());
  if (delegate_intercommunicator(a, c, path_)) return;
  path_ = "pairwise";
  const int P = c.size, r = c.rank;
  const MPI_Comm comm = P > 1 ? private_comm(a.comm) : a.comm;

  if (a.sendbuf == MPI_IN_PLACE) {
    path_ = "pairwise (in place)";
    for (int k = 0; k < P; ++k) {
      const int peer = ((k - r) % P + P) % P;
      if (peer == r || bytes_of(a.recvcounts[peer], a.recvtypes[peer]) == 0) continue;
      TB_MPI_CHECK(PMPI_Sendrecv_replace(at(a.recvbuf, a.rdispls[peer]), a.recvcounts[peer], a.recvtypes[peer], peer,
                                         kTag, peer, kTag, comm, MPI_STATUS_IGNORE));
    }
    return;
  }

  if (bytes_of(a.sendcounts[r], a.sendtypes[r]) > 0)
    copy_typed(at(a.sendbuf, a.sdispls[r]), a.sendcounts[r], *type_layout(a.sendtypes[r]), at(a.recvbuf, a.rdispls[r]),
               a.recvcounts[r], *type_layout(a.recvtypes[r]));
  for (int k = 1; k < P; ++k) {
    const int dst = (r + k) % P, src = (r - k + P) % P;
    // A zero-byte block on one side is a zero-byte block on the other (matching signatures):
    // both skip it, and each Sendrecv degenerates to a plain send or receive.
    const bool sends = bytes_of(a.sendcounts[dst], a.sendtypes[dst]) > 0;
    const bool recvs = bytes_of(a.recvcounts[src], a.recvtypes[src]) > 0;
    TB_MPI_CHECK(PMPI_Sendrecv(at(a.sendbuf, a.sdispls[dst]), sends ? a.sendcounts[dst] : 0,
                               sends ? a.sendtypes[dst] : MPI_BYTE, sends ? dst : MPI_PROC_NULL, kTag,
                               at(a.recvbuf, a.rdispls[src]), recvs ? a.recvcounts[src] : 0,
                               recvs ? a.recvtypes[src] : MPI_BYTE, recvs ? src : MPI_PROC_NULL, kTag, comm,
                               MPI_STATUS_IGNORE));
  }
}

}  // namespace tb
