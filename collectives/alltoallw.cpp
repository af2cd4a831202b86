#include "collectives/alltoallw.hpp"

#include "collectives/algorithms/native.hpp"
#include "collectives/mpi_error.hpp"

#include <stdexcept>

namespace tb {

AlltoallwComm check_alltoallw_args(const AlltoallwArgs& a, std::string_view algorithm) {
  const std::string who(algorithm);
  if (a.comm == MPI_COMM_NULL) throw std::invalid_argument(who + ": communicator is MPI_COMM_NULL");
  AlltoallwComm c;
  int inter = 0;
  TB_MPI_CHECK(PMPI_Comm_test_inter(a.comm, &inter));
  c.inter = inter != 0;
  if (c.inter) {
    TB_MPI_CHECK(PMPI_Comm_remote_size(a.comm, &c.size));
  } else {
    TB_MPI_CHECK(PMPI_Comm_size(a.comm, &c.size));
  }
  TB_MPI_CHECK(PMPI_Comm_rank(a.comm, &c.rank));
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  if (!a.recvcounts || !a.rdispls || !a.recvtypes)
    throw std::invalid_argument(who + ": recvcounts, rdispls and recvtypes must not be null");
  if (!in_place && (!a.sendcounts || !a.sdispls || !a.sendtypes))
    throw std::invalid_argument(who + ": sendcounts, sdispls and sendtypes must not be null");
  for (int p = 0; p < c.size; ++p) {
    if (a.recvcounts[p] < 0)
      throw std::invalid_argument(who + ": recvcounts[" + std::to_string(p) + "] = " + std::to_string(a.recvcounts[p]) +
                                  " is negative");
    if (a.recvcounts[p] > 0 && a.recvtypes[p] == MPI_DATATYPE_NULL)
      throw std::invalid_argument(who + ": recvtypes[" + std::to_string(p) + "] is MPI_DATATYPE_NULL");
    if (in_place) continue;
    if (a.sendcounts[p] < 0)
      throw std::invalid_argument(who + ": sendcounts[" + std::to_string(p) + "] = " + std::to_string(a.sendcounts[p]) +
                                  " is negative");
    if (a.sendcounts[p] > 0 && a.sendtypes[p] == MPI_DATATYPE_NULL)
      throw std::invalid_argument(who + ": sendtypes[" + std::to_string(p) + "] is MPI_DATATYPE_NULL");
  }
  return c;
}

void AlltoallwAlgorithm::run(const AlltoallwArgs& args) {
  const AlltoallwComm comm = check_alltoallw_args(args, name());
  if (comm.inter && !handles_intercommunicators()) {
    path_ = "native (intercommunicator)";
    native_alltoallw(args);
    return;
  }
  path_ = std::string(name());
  exchange(args, comm);
}

}  // namespace tb
