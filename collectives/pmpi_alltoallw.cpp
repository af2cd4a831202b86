// libtb_alltoallw.so: the PMPI drop-in library. It defines MPI_Alltoallw and runs the registry
// algorithm named by $TB_ALLTOALLW (default native), so unmodified applications can run on any
// algorithm:
//
//   LD_PRELOAD=build/mpich/lib/libtb_alltoallw.so TB_ALLTOALLW=pairwise mpiexec -n 4 ./app
//
// TB_ALLTOALLW_VERBOSE=1 prints one line per rank at the first call and whenever the path
// changes (e.g. a delegation to native), and a count of calls at MPI_Finalize; =2 prints every
// call. Errors (an unknown algorithm name, bad arguments, MPI failures) are reported on stderr
// and raised through the communicator's error handler with an MPI error class, as MPI would.
// Internally only PMPI_* entry points are used, so the library never recurses into itself.
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

struct State {
  std::unique_ptr<tb::AlltoallwAlgorithm> algorithm;
  std::string error;  // why no algorithm could be made
  std::string last_path;
  long calls = 0;
  int verbose = 0;
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
  if (const char* v = std::getenv("TB_ALLTOALLW_VERBOSE")) s.verbose = std::atoi(v);
  try {
    s.algorithm = tb::make_alltoallw();
  } catch (const std::exception& e) {
    s.error = e.what();
  }
}

int fail(MPI_Comm comm, int error_class, const std::string& message) {
  std::fprintf(stderr, "[libtb_alltoallw] rank %d: MPI_Alltoallw: %s\n", world_rank(), message.c_str());
  if (comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, error_class);
  return error_class;
}

}  // namespace

extern "C" int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const int rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm) {
  State& s = state();
  if (!s.initialised) init(s);
  if (!s.algorithm) return fail(comm, MPI_ERR_ARG, s.error);
  try {
    s.algorithm->run({sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm});
  } catch (const tb::MpiError& e) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(e.code(), &error_class);
    return fail(comm, error_class, e.what());
  } catch (const std::invalid_argument& e) {
    return fail(comm, MPI_ERR_ARG, e.what());
  } catch (const std::exception& e) {
    return fail(comm, MPI_ERR_OTHER, e.what());
  }
  ++s.calls;
  const std::string path = s.algorithm->last_path();
  if (s.verbose >= 2 || (s.verbose == 1 && path != s.last_path))
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: MPI_Alltoallw via %s (call %ld)\n", world_rank(), path.c_str(),
                 s.calls);
  s.last_path = path;
  return MPI_SUCCESS;
}

extern "C" int MPI_Finalize() {
  State& s = state();
  if (s.verbose >= 1 && s.calls > 0)
    std::fprintf(stderr, "[libtb_alltoallw] rank %d: %ld MPI_Alltoallw calls, algorithm %s\n", world_rank(), s.calls,
                 std::string(s.algorithm->name()).c_str());
  s.algorithm.reset();  // it may hold MPI state: release it while MPI is alive
  return PMPI_Finalize();
}
