// native: the MPI library's own MPI_Alltoallw.
//
// Calls PMPI_Alltoallw, so the algorithm stays the library's even when the testbed's PMPI
// drop-in library intercepts MPI_Alltoallw. What that is depends on the library: MPICH 4.0.2
// posts nonblocking isend/irecv to every peer (datatypes packed by the netmod); Open MPI 4.1's
// coll/basic does a linear isend/irecv with the same count of messages, 2(P-1) per rank.
// It is the reference every other algorithm is checked against.
#pragma once

#include "collectives/alltoallw.hpp"

#include <string>

namespace tb {

// One PMPI_Alltoallw with the given arguments; what other algorithms delegate to.
void native_alltoallw(const AlltoallwArgs& args);

// For algorithms written for intracommunicators: runs an intercommunicator call natively, sets
// `path` to "native (intercommunicator)" and returns true; returns false otherwise.
bool delegate_intercommunicator(const AlltoallwArgs& args, const AlltoallwComm& comm, std::string& path);

class NativeAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "native"; }
  void run(const AlltoallwArgs& args) override;
};

}  // namespace tb
