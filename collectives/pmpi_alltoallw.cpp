// libtb_alltoallw.so: the PMPI drop-in library. It defines MPI_Alltoallw and runs the registry
// algorithm named by $TB_ALLTOALLW (default native), so unmodified applications can run on any
// algorithm:
//
//   LD_PRELOAD=build/mpich/lib/libtb_alltoallw.so TB_ALLTOALLW=pairwise mpiexec -n 4 ./app
//
// TB_ALLTOALLW_VERBOSE=1 prints one line per rank at the first call and whenever the path
// changes (e.g. a delegation to native), and a count of calls at MPI_Finalize; =2 prints every
// call. TB_ALLTOALLW_RECORD=path appends, for every call on an intracommunicator, one JSON line
// with the call's per-peer pattern (bytes and contiguous blocks on both sides, from the datatype
// flattening) that tb-model costs on modelled networks (fpga_transport/pattern.hpp).
// Errors (an unknown algorithm name, bad arguments, mismatched sizes, MPI failures) are reported
// on stderr and raised through the communicator's error handler with an MPI error class, as MPI
// would: the class each tb::MpiError carries (collectives/algorithm_support.hpp), MPI_ERR_ARG for
// a setting or algorithm name that cannot be used (a TB_ALLTOALLW_RECORD path that cannot be
// written among them), MPI_ERR_IO on rank 0 for a record line that could not be written (after
// the call's exchange, which every rank completes). TB_CHECKED=1 works here as in the C++ API.
// Internally only PMPI_* entry points are used, so the library never recurses into itself.
//
// Persistent calls: MPI_Alltoallw_init (MPI 4: MPICH 4.0.2) and MPIX_Alltoallw_init (Open MPI
// 4.1's pcollreq extension) prepare the call with the same algorithm (its prepared form:
// AlltoallwAlgorithm::prepare) and return a persistent request of the library's own, a send of no
// bytes to MPI_PROC_NULL, so that MPI_Wait, MPI_Test and their relatives work unchanged. MPI_Start
// and MPI_Startall run the prepared call when given such a request, then start that request; the
// exchange therefore happens inside MPI_Start and the wait returns at once. MPI makes MPI_Start
// local, so a program that needs its peer to communicate between its start and its wait can
// deadlock here (docs/known-problems.md). MPI_Request_free drops the prepared call.
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "collectives/type_layout.hpp"

#include <nlohmann/json.hpp>

#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>
#include <stdexcept>
#include <string>

namespace {

struct State {
  std::unique_ptr<tb::AlltoallwAlgorithm> algorithm;
  std::map<MPI_Request, std::unique_ptr<tb::PreparedAlltoallw>> prepared;  // by the request handed out
  std::string error;  // why no algorithm could be made
  std::string last_path;
  long calls = 0;
  long recorded = 0;
  int verbose = 0;
  std::string record_path;
  bool initialised = false;
};

State& state() {
  static State s;
  return s;
}

int world_rank() {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void init(State& s) {
  s.initialised = true;
  try {
    tb::check_settings();
    s.verbose = tb::settings().alltoallw_verbose.get();
    s.record_path = tb::settings().alltoallw_record.get();
    s.algorithm = tb::make_alltoallw();
  } catch (const std::exception& e) {
    s.error = e.what();
  }
}

int fail(MPI_Comm comm, int error_class, const std::string& message, const char* function = "MPI_Alltoallw") {
  std::fprintf(stderr, "[libtb_alltoallw] rank %d: %s: %s\n", world_rank(), function, message.c_str());
  if (comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, error_class);
  return error_class;
}

// fail() for the exception being handled (call it inside a catch block): a tb::MpiError keeps
// its MPI error class, a std::invalid_argument (a bad argument or setting) is MPI_ERR_ARG, any
// other exception `other_class`.
int fail_current(MPI_Comm comm, const char* function, int other_class) {
  try {
    throw;
  } catch (const tb::MpiError& e) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(e.code(), &error_class);
    return fail(comm, error_class, e.what(), function);
  } catch (const std::invalid_argument& e) {
    return fail(comm, MPI_ERR_ARG, e.what(), function);
  } catch (const std::exception& e) {
    return fail(comm, other_class, e.what(), function);
  }
}

// Contiguous runs of `count` instances of `type` (one run when the instances are dense).
std::int64_t blocks_of(int count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  const auto layout = tb::type_layout(type);
  if (layout->size == 0) return 0;
  return layout->dense() ? 1 : static_cast<std::int64_t>(count) * static_cast<std::int64_t>(layout->blocks.size());
}

// Every rank contributes (bytes sent, send blocks, receive blocks) per peer; rank 0 of the
// communicator appends the call's pattern as one JSON line. Returns why that line could not be
// written (rank 0 alone can fail), or "".
std::string record(State& s, const int sendcounts[], const MPI_Datatype sendtypes[], const int recvcounts[],
            const MPI_Datatype recvtypes[], MPI_Comm comm) {
  int inter = 0, size = 0, rank = 0;
  if (comm == MPI_COMM_NULL || !sendcounts || !sendtypes || !recvcounts || !recvtypes) return "";  // run() says why
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return "";
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  std::vector<long long> mine(3 * static_cast<std::size_t>(size));
  for (int p = 0; p < size; ++p) {
    int type_size = 0;
    if (sendcounts[p] > 0 && sendtypes[p] != MPI_DATATYPE_NULL) PMPI_Type_size(sendtypes[p], &type_size);
    mine[3 * p] = static_cast<long long>(std::max(sendcounts[p], 0)) * type_size;
    mine[3 * p + 1] = blocks_of(sendcounts[p], sendtypes[p]);
    mine[3 * p + 2] = blocks_of(recvcounts[p], recvtypes[p]);
  }
  std::vector<long long> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
  PMPI_Gather(mine.data(), 3 * size, MPI_LONG_LONG, all.data(), 3 * size, MPI_LONG_LONG, 0, comm);
  ++s.recorded;
  if (rank != 0) return "";
  nlohmann::json pairs = nlohmann::json::array();
  auto row = [&](int r, int p, int k) { return all[static_cast<std::size_t>(r) * 3 * size + 3 * p + k]; };
  for (int src = 0; src < size; ++src)
    for (int dst = 0; dst < size; ++dst)
      if (row(src, dst, 0) > 0) pairs.push_back({src, dst, row(src, dst, 0), row(src, dst, 1), row(dst, src, 2)});
  errno = 0;
  std::ofstream f(s.record_path, std::ios::app);
  if (f)
    f << nlohmann::json{{"ranks", size},
                        {"description",
                         "MPI_Alltoallw call " + std::to_string(s.recorded) + " recorded by libtb_alltoallw"},
                        {"pairs", pairs}}
             .dump()
      << "\n";
  if (f) f.close();  // flushes: a full disk shows here
  if (f) return "";
  const std::string why = errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : "";
  return "TB_ALLTOALLW_RECORD='" + s.record_path + "': cannot be written" + why + "; call " +
         std::to_string(s.recorded) + " not recorded";
}

}  // namespace

extern "C" int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const int rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm) {
  State& s = state();
  if (!s.initialised) init(s);
  if (!s.algorithm) return fail(comm, MPI_ERR_ARG, s.error);
  std::string not_recorded;  // why rank 0 could not write the call's record
  try {
    if (!s.record_path.empty()) {
      const bool in_place = sendbuf == MPI_IN_PLACE;  // then the receive side is what is sent
      not_recorded =
          record(s, in_place ? recvcounts : sendcounts, in_place ? recvtypes : sendtypes, recvcounts, recvtypes, comm);
    }
    s.algorithm->run({sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm});
  } catch (const std::exception&) {
    return fail_current(comm, "MPI_Alltoallw", MPI_ERR_OTHER);
  }
  ++s.calls;
  const std::string path = s.algorithm->last_path();
  if (s.verbose >= 2 || (s.verbose == 1 && path != s.last_path))
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: MPI_Alltoallw via %s (call %ld)\n", world_rank(), path.c_str(),
                 s.calls);
  s.last_path = path;
  // Raised after the exchange, which every rank runs (the others wait for rank 0 in it): the data
  // moved, the record of it is lost.
  if (!not_recorded.empty()) return fail(comm, MPI_ERR_IO, not_recorded);
  return MPI_SUCCESS;
}

namespace {

// MPI_Alltoallw_init and MPIX_Alltoallw_init: the call prepared with the algorithm, behind a
// persistent request of the library's own.
int alltoallw_init(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm, MPI_Request* request) {
  State& s = state();
  if (!s.initialised) init(s);
  const char* function = "MPI_Alltoallw_init";
  if (request == nullptr) return fail(comm, MPI_ERR_REQUEST, "request is NULL", function);
  *request = MPI_REQUEST_NULL;
  if (!s.algorithm) return fail(comm, MPI_ERR_ARG, s.error, function);
  std::unique_ptr<tb::PreparedAlltoallw> call;
  try {
    call = s.algorithm->prepare({sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm});
  } catch (const std::exception&) {
    return fail_current(comm, function, MPI_ERR_ARG);
  }
  MPI_Request handle = MPI_REQUEST_NULL;
  const int code = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, &handle);
  if (code != MPI_SUCCESS) return code;
  if (s.verbose >= 1)
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: MPI_Alltoallw_init via %s\n", world_rank(), call->last_path().c_str());
  s.prepared[handle] = std::move(call);
  *request = handle;
  return MPI_SUCCESS;
}

// Runs the prepared call behind `request`, if it is one; MPI_SUCCESS otherwise.
int run_prepared(State& s, MPI_Request request) {
  const auto found = s.prepared.find(request);
  if (found == s.prepared.end()) return MPI_SUCCESS;
  tb::PreparedAlltoallw& call = *found->second;
  const MPI_Comm comm = call.args().comm;
  try {
    call.start();
  } catch (const std::exception&) {
    return fail_current(comm, "MPI_Start", MPI_ERR_OTHER);
  }
  if (s.verbose >= 2)
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: MPI_Start of MPI_Alltoallw_init via %s (start %lld)\n",
                 world_rank(), call.last_path().c_str(), static_cast<long long>(call.starts()));
  return MPI_SUCCESS;
}

}  // namespace

#if MPI_VERSION >= 4
extern "C" int MPI_Alltoallw_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                  const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info,
                                  MPI_Request* request) {
  return alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, request);
}
#endif

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
extern "C" int MPIX_Alltoallw_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                   const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info,
                                   MPI_Request* request) {
  return alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, request);
}
#endif

// The library's persistent requests are started as they are; a prepared Alltoallw runs first.
extern "C" int MPI_Start(MPI_Request* request) {
  State& s = state();
  if (request != nullptr && !s.prepared.empty()) {
    const int code = run_prepared(s, *request);
    if (code != MPI_SUCCESS) return code;
  }
  return PMPI_Start(request);
}

// The library's requests are started first (a receive among them may be what a peer's prepared
// call waits behind), then each prepared Alltoallw in order, then their own requests.
extern "C" int MPI_Startall(int count, MPI_Request requests[]) {
  State& s = state();
  if (s.prepared.empty() || count <= 0 || requests == nullptr) return PMPI_Startall(count, requests);
  std::vector<MPI_Request> library;
  for (int i = 0; i < count; ++i)
    if (!s.prepared.count(requests[i])) library.push_back(requests[i]);
  if (!library.empty()) {
    const int code = PMPI_Startall(static_cast<int>(library.size()), library.data());
    if (code != MPI_SUCCESS) return code;
  }
  for (int i = 0; i < count; ++i)
    if (s.prepared.count(requests[i])) {
      int code = run_prepared(s, requests[i]);
      if (code == MPI_SUCCESS) code = PMPI_Start(&requests[i]);
      if (code != MPI_SUCCESS) return code;
    }
  return MPI_SUCCESS;
}

// The library's request goes first, the prepared call (native's: MPICH's own persistent request)
// after it: in the other order MPICH 4.0.2's next MPI_Alltoallw_init on the communicator never
// completes its first start (tests/alltoallw_persistent_app.c, "again").
extern "C" int MPI_Request_free(MPI_Request* request) {
  State& s = state();
  const MPI_Request handle = request != nullptr ? *request : MPI_REQUEST_NULL;
  const int code = PMPI_Request_free(request);
  if (code == MPI_SUCCESS) s.prepared.erase(handle);
  return code;
}

// Thread support: the library keeps one algorithm and its call state for the whole process, and
// the testbed's algorithms keep buffers and tables between calls, so two threads in MPI_Alltoallw
// at once would share them. MPI_THREAD_MULTIPLE is therefore granted as MPI_THREAD_SERIALIZED:
// an application that needs more sees it in `provided`, as MPI intends, instead of failing
// inside the collective.
namespace {
int serialized_at_most(int provided) { return std::min(provided, static_cast<int>(MPI_THREAD_SERIALIZED)); }
}  // namespace

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int code = PMPI_Init_thread(argc, argv, required, provided);
  if (code == MPI_SUCCESS && provided != nullptr && *provided > MPI_THREAD_SERIALIZED) {
    *provided = serialized_at_most(*provided);
    if (required > MPI_THREAD_SERIALIZED && world_rank() == 0)
      std::fprintf(stderr, "[libtb_alltoallw] rank 0: MPI_THREAD_MULTIPLE asked for, MPI_THREAD_SERIALIZED granted: "
                           "the library's Alltoallw state is per process, not per thread\n");
  }
  return code;
}

extern "C" int MPI_Query_thread(int* provided) {
  const int code = PMPI_Query_thread(provided);
  if (code == MPI_SUCCESS && provided != nullptr) *provided = serialized_at_most(*provided);
  return code;
}

extern "C" int MPI_Finalize() {
  State& s = state();
  s.prepared.clear();  // they use the algorithm and MPI state
  if (s.verbose >= 1 && s.calls > 0)
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: %ld MPI_Alltoallw calls, algorithm %s\n", world_rank(), s.calls,
                 std::string(s.algorithm->name()).c_str());
  s.algorithm.reset();  // it may hold MPI state: release it while MPI is alive
  return PMPI_Finalize();
}
