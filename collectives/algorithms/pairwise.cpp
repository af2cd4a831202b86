#include "collectives/algorithms/pairwise.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "pairwise",
    .summary = "P-1 Sendrecv steps on the user's datatypes, self block copied locally",
    .make = &make_algorithm<PairwiseAlltoallw>,
    .cost_schedule = "pairwise",
    .not_modelled = "",
});

// Step k exchanges the same region with peer (k - rank) mod P, in place.
void exchange_in_place(const AlltoallwArgs& a, int size, int rank, MPI_Comm comm) {
  for (int k = 0; k < size; ++k) {
    const int peer = ((k - rank) % size + size) % size;
    if (peer == rank || bytes_of(a.recvcounts[peer], a.recvtypes[peer]) == 0) continue;
    TB_MPI_CHECK(PMPI_Sendrecv_replace(at(a.recvbuf, a.rdispls[peer]), a.recvcounts[peer], a.recvtypes[peer], peer,
                                       tags::pairwise, peer, tags::pairwise, comm, MPI_STATUS_IGNORE));
  }
}

}  // namespace

void PairwiseAlltoallw::exchange(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const int size = c.size, rank = c.rank;
  const MPI_Comm comm = size > 1 ? private_comm(a.comm) : a.comm;
  if (a.sendbuf == MPI_IN_PLACE) {
    set_path("pairwise (in place)");
    exchange_in_place(a, size, rank, comm);
    return;
  }
  if (bytes_of(a.sendcounts[rank], a.sendtypes[rank]) > 0)
    copy_typed(at(a.sendbuf, a.sdispls[rank]), a.sendcounts[rank], *type_layout(a.sendtypes[rank]),
               at(a.recvbuf, a.rdispls[rank]), a.recvcounts[rank], *type_layout(a.recvtypes[rank]));
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size, src = (rank - k + size) % size;
    // A zero-byte block on one side is a zero-byte block on the other (matching signatures):
    // both skip it, and each Sendrecv degenerates to a plain send or receive.
    const bool sends = bytes_of(a.sendcounts[dst], a.sendtypes[dst]) > 0;
    const bool recvs = bytes_of(a.recvcounts[src], a.recvtypes[src]) > 0;
    TB_MPI_CHECK(PMPI_Sendrecv(at(a.sendbuf, a.sdispls[dst]), sends ? a.sendcounts[dst] : 0,
                               sends ? a.sendtypes[dst] : MPI_BYTE, sends ? dst : MPI_PROC_NULL, tags::pairwise,
                               at(a.recvbuf, a.rdispls[src]), recvs ? a.recvcounts[src] : 0,
                               recvs ? a.recvtypes[src] : MPI_BYTE, recvs ? src : MPI_PROC_NULL, tags::pairwise, comm,
                               MPI_STATUS_IGNORE));
  }
}

}  // namespace tb
