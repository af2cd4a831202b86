// native: the MPI library's own MPI_Alltoallw.
//
// Calls PMPI_Alltoallw, so the algorithm stays the library's even when the testbed's PMPI
// drop-in library intercepts MPI_Alltoallw. What that is depends on the library: MPICH 4.0.2
// posts nonblocking isend/irecv to every peer (datatypes packed by the netmod); Open MPI 4.1's
// coll/basic does a linear isend/irecv with the same count of messages, 2(P-1) per rank.
// Its prepared form is the library's own persistent collective, where the library has one.
// It is the reference every other algorithm is checked against, and what the base class hands
// intercommunicators to.
#pragma once

#include "collectives/alltoallw.hpp"

namespace tb {

// One PMPI_Alltoallw with the given arguments.
void native_alltoallw(const AlltoallwArgs& args);

// The library's persistent Alltoallw for these arguments (PMPI_Alltoallw_init on MPI 4 libraries,
// PMPIX_Alltoallw_init on Open MPI 4.1's pcollreq extension); each start is MPI_Start and
// MPI_Wait. nullptr where the library has neither. Collective.
std::unique_ptr<PreparedExchange> prepare_native_alltoallw(const AlltoallwArgs& args);

class NativeAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "native"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
  bool handles_intercommunicators() const override { return true; }
  std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
};

}  // namespace tb
