#include "collectives/native.hpp"

#include "collectives/mpi_error.hpp"

namespace tb {

void native_alltoallw(const AlltoallwArgs& a) {
  TB_MPI_CHECK(PMPI_Alltoallw(a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes, a.recvbuf, a.recvcounts,
                              a.rdispls, a.recvtypes, a.comm));
}

void NativeAlltoallw::run(const AlltoallwArgs& a) { native_alltoallw(a); }

bool delegate_intercommunicator(const AlltoallwArgs& args, const AlltoallwComm& comm, std::string& path) {
  if (!comm.inter) return false;
  path = "native (intercommunicator)";
  native_alltoallw(args);
  return true;
}

}  // namespace tb
