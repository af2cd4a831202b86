#include "collectives/alltoallw.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/algorithms/native.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/settings.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace tb {
namespace {

// What one rank can see wrong in its own arguments (the classes: algorithm_support.hpp).
struct Inspection {
  AlltoallwComm comm;
  CallError error;        // the first problem found
  bool unusable = false;  // a null array: the arguments cannot even be read
};

Inspection inspect(const AlltoallwArgs& a, std::string_view algorithm) {
  const std::string who(algorithm);
  if (a.comm == MPI_COMM_NULL) throw MpiError(MPI_ERR_COMM, who + ": communicator is MPI_COMM_NULL");
  Inspection in;
  AlltoallwComm& c = in.comm;
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
  if (!a.recvcounts || !a.rdispls || !a.recvtypes) {
    in.error.note(MPI_ERR_ARG, who + ": recvcounts, rdispls and recvtypes must not be null");
    in.unusable = true;
    return in;
  }
  if (!in_place && (!a.sendcounts || !a.sdispls || !a.sendtypes)) {
    in.error.note(MPI_ERR_ARG, who + ": sendcounts, sdispls and sendtypes must not be null");
    in.unusable = true;
    return in;
  }
  auto check = [&](const char* counts, const char* types, int p, int count, MPI_Datatype type) {
    if (count < 0)
      in.error.note(MPI_ERR_COUNT, who + ": " + counts + "[" + std::to_string(p) + "] = " + std::to_string(count) +
                                       " is negative");
    else if (count > 0 && type == MPI_DATATYPE_NULL)
      in.error.note(MPI_ERR_TYPE, who + ": " + types + "[" + std::to_string(p) + "] is MPI_DATATYPE_NULL");
  };
  for (int p = 0; p < c.size; ++p) {
    check("recvcounts", "recvtypes", p, a.recvcounts[p], a.recvtypes[p]);
    if (!in_place) check("sendcounts", "sendtypes", p, a.sendcounts[p], a.sendtypes[p]);
  }
  return in;
}

bool bad_block(int count, MPI_Datatype type) { return count < 0 || (count > 0 && type == MPI_DATATYPE_NULL); }

// The arguments with every bad block made empty, so that a rank with a bad count or type still
// takes part in the exchange (its peers complete where their blocks with it are empty too).
struct Sanitized {
  std::vector<int> scounts, rcounts, zeros;
  std::vector<MPI_Datatype> stypes, rtypes;
  AlltoallwArgs args;
  Sanitized(const AlltoallwArgs& a, int size, bool unusable) : args(a) {
    const auto n = static_cast<std::size_t>(size);
    const bool in_place = a.sendbuf == MPI_IN_PLACE;
    rcounts.assign(n, 0);
    rtypes.assign(n, MPI_BYTE);
    zeros.assign(n, 0);
    if (!unusable)
      for (std::size_t p = 0; p < n; ++p)
        if (!bad_block(a.recvcounts[p], a.recvtypes[p])) rcounts[p] = a.recvcounts[p], rtypes[p] = a.recvtypes[p];
    args.recvcounts = rcounts.data();
    args.recvtypes = rtypes.data();
    if (unusable) args.rdispls = zeros.data();
    if (in_place) return;
    scounts.assign(n, 0);
    stypes.assign(n, MPI_BYTE);
    if (!unusable)
      for (std::size_t p = 0; p < n; ++p)
        if (!bad_block(a.sendcounts[p], a.sendtypes[p])) scounts[p] = a.sendcounts[p], stypes[p] = a.sendtypes[p];
    args.sendcounts = scounts.data();
    args.sendtypes = stypes.data();
    if (unusable) args.sdispls = zeros.data();
  }
};

// TB_CHECKED: every rank sends every peer the bytes it sends it (one MPI_Alltoall of int64),
// compares them with what it expects, and all agree on the worst problem found anywhere (one
// MPI_Allreduce; two on an intercommunicator). Throws on every rank if there is one, before any
// data moves.
void check_collectively(const AlltoallwArgs& a, const AlltoallwComm& c, const CallError& own,
                        std::string_view algorithm) {
  const auto n = static_cast<std::size_t>(c.size);
  const SendSide send = send_side(a);
  std::vector<std::int64_t> sends(n), arrives(n);
  for (std::size_t p = 0; p < n; ++p) sends[p] = bytes_of(send.counts[p], send.types[p]);
  TB_MPI_CHECK(PMPI_Alltoall(sends.data(), 1, MPI_INT64_T, arrives.data(), 1, MPI_INT64_T, a.comm));
  ProblemRecord mine;
  if (!own.empty()) mine = error_record(c.rank, own.error_class);
  for (int p = 0; p < c.size && own.empty(); ++p) {
    const std::int64_t expected = bytes_of(a.recvcounts[p], a.recvtypes[p]);
    if (arrives[p] != expected) {
      const ProblemRecord r = mismatch_record(c.rank, p, arrives[p], c.rank, expected);
      if (r.severity > mine.severity) mine = r;
    }
  }
  const ProblemRecord all = agree_on_problem(mine, a.comm);
  if (all.severity == 0) return;
  if (!own.empty()) own.raise();
  throw MpiError(static_cast<int>(all.error_class), problem_text(std::string(algorithm) + " (TB_CHECKED)", all));
}

}  // namespace

AlltoallwComm check_alltoallw_args(const AlltoallwArgs& a, std::string_view algorithm) {
  const Inspection in = inspect(a, algorithm);
  if (!in.error.empty()) in.error.raise();
  return in.comm;
}

void AlltoallwAlgorithm::run(const AlltoallwArgs& args) {
  const Inspection in = inspect(args, name());
  const bool checked = settings().checked.get();
  if (in.unusable && !checked) in.error.raise();
  std::optional<Sanitized> sanitized;
  if (!in.error.empty()) sanitized.emplace(args, in.comm.size, in.unusable);
  const AlltoallwArgs& use = sanitized ? sanitized->args : args;
  if (checked) check_collectively(use, in.comm, in.error, name());
  try {
    if (in.comm.inter && !handles_intercommunicators()) {
      path_ = "native (intercommunicator)";
      native_alltoallw(use);
    } else {
      path_ = std::string(name());
      exchange(use, in.comm);
    }
  } catch (...) {
    if (in.error.empty()) throw;
  }
  if (!in.error.empty()) in.error.raise();  // the argument error, after this rank took part
}

}  // namespace tb
