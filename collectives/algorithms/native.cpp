#include "collectives/algorithms/native.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "native",
    .summary = "the MPI library's own MPI_Alltoallw (PMPI_Alltoallw)",
    .make = &make_algorithm<NativeAlltoallw>,
    .cost_schedule = "native",
    .not_modelled = "",
});

}  // namespace

void native_alltoallw(const AlltoallwArgs& a) {
  TB_MPI_CHECK(PMPI_Alltoallw(a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes, a.recvbuf, a.recvcounts,
                              a.rdispls, a.recvtypes, a.comm));
}

void NativeAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm&) { native_alltoallw(args); }

}  // namespace tb
