#include "collectives/algorithms/native.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "collectives/simulated_datatype_engine.hpp"

#if defined(TB_SMPI)
#include "collectives/algorithm_support.hpp"
#include "collectives/pack.hpp"
#include "collectives/type_layout.hpp"

#include <vector>
#endif

#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "native",
    .summary = "the MPI library's own MPI_Alltoallw (PMPI_Alltoallw)",
    .make = &make_algorithm<NativeAlltoallw>,
    .cost_schedule = "native",
    .not_modelled = "",
});

// The library's persistent request for one call.
class PreparedNative final : public PreparedExchange {
 public:
  explicit PreparedNative(MPI_Request request) : request_(request) {}
  ~PreparedNative() override {
    if (request_ != MPI_REQUEST_NULL) PMPI_Request_free(&request_);
  }
  void start() override {
    TB_MPI_CHECK(PMPI_Start(&request_));
    TB_MPI_CHECK(PMPI_Wait(&request_, MPI_STATUS_IGNORE));
  }
  std::string path() const override { return "native (persistent: the library's Alltoallw_init)"; }

 private:
  MPI_Request request_;
};

// Neither library's persistent Alltoallw is right in place on the conformance cases: MPICH
// 4.0.2's truncates messages (MPI_ERR_TRUNCATE at MPI_Wait; pinned by KnownLibraryDefects in
// tests/test_conformance.cpp), Open MPI 4.1.4's (libnbc) never completes on some (seed 20261130,
// case 75, 2 ranks), where their blocking in-place Alltoallw is right. So each start of an
// in-place call runs the blocking call instead.
bool library_persistent_usable(const AlltoallwArgs& a) { return a.sendbuf != MPI_IN_PLACE; }

}  // namespace

std::unique_ptr<PreparedExchange> prepare_native_alltoallw(const AlltoallwArgs& a) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (!library_persistent_usable(a)) return nullptr;
#if MPI_VERSION >= 4
  TB_MPI_CHECK(PMPI_Alltoallw_init(a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes, a.recvbuf, a.recvcounts,
                                   a.rdispls, a.recvtypes, a.comm, MPI_INFO_NULL, &request));
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  TB_MPI_CHECK(PMPIX_Alltoallw_init(a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes, a.recvbuf, a.recvcounts,
                                    a.rdispls, a.recvtypes, a.comm, MPI_INFO_NULL, &request));
#else
  return nullptr;
#endif
  return std::make_unique<PreparedNative>(request);
}

std::unique_ptr<PreparedExchange> NativeAlltoallw::prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm&) {
  return prepare_native_alltoallw(args);
}

void native_alltoallw(const AlltoallwArgs& a) {
  TB_MPI_CHECK(PMPI_Alltoallw(a.sendbuf, a.sendcounts, a.sdispls, a.sendtypes, a.recvbuf, a.recvcounts,
                              a.rdispls, a.recvtypes, a.comm));
}

#if defined(TB_SMPI)
// SimGrid 3.32's MPI_Alltoallw copies a rank's own block with Datatype::copy outside simulated
// time, where a real library spends the copy inside the call, so under SMPI native copies it in
// the testbed's code, which SMPI times with the rest of the rank's computation (with computation
// simulated), and hands SMPI an empty own block. Left to SMPI, which checks and reports what it
// must: an intercommunicator (no own block), MPI_IN_PLACE (nothing to copy), an empty own block,
// one whose two sides differ in size, and null buffers.
void copy_own_block_then_alltoallw(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const int me = c.rank;
  const std::int64_t sent = c.inter ? 0 : bytes_of(a.sendcounts[me], a.sendtypes[me]);
  if (c.inter || a.sendbuf == MPI_IN_PLACE || a.sendbuf == nullptr || a.recvbuf == nullptr || sent == 0 ||
      sent != bytes_of(a.recvcounts[me], a.recvtypes[me])) {
    native_alltoallw(a);
    return;
  }
  copy_typed(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *type_layout(a.sendtypes[me]),
             at(a.recvbuf, a.rdispls[me]), a.recvcounts[me], *type_layout(a.recvtypes[me]));
  std::vector<int> sendcounts(a.sendcounts, a.sendcounts + c.size), recvcounts(a.recvcounts, a.recvcounts + c.size);
  sendcounts[me] = recvcounts[me] = 0;
  AlltoallwArgs others = a;
  others.sendcounts = sendcounts.data();
  others.recvcounts = recvcounts.data();
  native_alltoallw(others);
}
#endif

// Under SMPI the library's datatype engine is charged around the call (simulated_datatype_engine.hpp)
// and the own block is copied in timed code (above). SMPI 3.32 is an MPI 3.1 library, so a
// prepared native call runs this one at each start.
void NativeAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) {
#if defined(TB_SMPI)
  charge_alltoallw_sends(args, comm);
  copy_own_block_then_alltoallw(args, comm);
  charge_alltoallw_receives(args, comm);
#else
  (void)comm;
  native_alltoallw(args);
#endif
}

}  // namespace tb
