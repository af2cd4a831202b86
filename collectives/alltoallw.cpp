#include "collectives/alltoallw.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/algorithms/native.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/settings.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
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

// Up to this many ranks checked mode gathers every rank's sizes with one MPI_Allgather and each
// rank finds the worst problem by itself: one collective per call instead of two. The gathered
// table holds P x (2P + 1) int64 (512 KiB at 64 ranks), so above that the sizes travel by
// MPI_Alltoall and only a flag (or the worst record) by MPI_Allreduce.
constexpr int kGatheredCheckRanks = 64;

// What a rank's row of the gathered table holds: the bytes it sends each peer, the bytes it
// expects from each, and its own error class (MPI_SUCCESS when its arguments are usable).
std::vector<std::int64_t> size_row(const AlltoallwArgs& a, const AlltoallwComm& c, const CallError& own) {
  const auto n = static_cast<std::size_t>(c.size);
  const SendSide send = send_side(a);
  std::vector<std::int64_t> row(2 * n + 1);
  for (std::size_t p = 0; p < n; ++p) {
    row[p] = bytes_of(send.counts[p], send.types[p]);
    row[n + p] = bytes_of(a.recvcounts[p], a.recvtypes[p]);
  }
  row[2 * n] = own.error_class;
  return row;
}

// The worst problem in the gathered table, the same on every rank: each rank's own error, else
// its worst mismatch as receiver (the first of the highest severity); over ranks the highest
// severity, the lowest rank when equal (as agree_on_problem's reduction chooses).
ProblemRecord worst_in_table(const std::vector<std::int64_t>& table, int size) {
  const auto n = static_cast<std::size_t>(size);
  const auto row = [&](std::size_t r) { return table.data() + r * (2 * n + 1); };
  ProblemRecord worst;
  for (std::size_t r = 0; r < n; ++r) {
    ProblemRecord found;
    if (row(r)[2 * n] != MPI_SUCCESS) {
      found = error_record(static_cast<int>(r), static_cast<int>(row(r)[2 * n]));
    } else {
      for (std::size_t p = 0; p < n; ++p) {
        const std::int64_t arrives = row(p)[r], expected = row(r)[n + p];
        if (arrives == expected) continue;
        const int receiver = static_cast<int>(r);
        const ProblemRecord m = mismatch_record(receiver, static_cast<int>(p), arrives, receiver, expected);
        if (m.severity > found.severity) found = m;
      }
    }
    if (found.severity > worst.severity) worst = found;
  }
  return worst;
}

// The worst problem of the call over every rank (see kGatheredCheckRanks for the two routes).
ProblemRecord find_problem(const AlltoallwArgs& a, const AlltoallwComm& c, const CallError& own) {
  const std::vector<std::int64_t> row = size_row(a, c, own);
  const auto n = static_cast<std::size_t>(c.size);
  if (!c.inter && c.size <= kGatheredCheckRanks) {
    std::vector<std::int64_t> table(n * row.size());
    const int fields = static_cast<int>(row.size());
    TB_MPI_CHECK(PMPI_Allgather(row.data(), fields, MPI_INT64_T, table.data(), fields, MPI_INT64_T, a.comm));
    return worst_in_table(table, c.size);
  }
  std::vector<std::int64_t> arrives(n);
  TB_MPI_CHECK(PMPI_Alltoall(row.data(), 1, MPI_INT64_T, arrives.data(), 1, MPI_INT64_T, a.comm));
  ProblemRecord mine;
  if (!own.empty()) mine = error_record(c.rank, own.error_class);
  for (std::size_t p = 0; p < n && own.empty(); ++p) {
    if (arrives[p] == row[n + p]) continue;
    const ProblemRecord r = mismatch_record(c.rank, static_cast<int>(p), arrives[p], c.rank, row[n + p]);
    if (r.severity > mine.severity) mine = r;
  }
  return agree_on_problem(mine, a.comm);
}

// TB_CHECKED: every rank learns what every peer sends it, compares that with what it expects,
// and all agree on the worst problem found anywhere. Throws on every rank if there is one,
// before any data moves.
void check_collectively(const AlltoallwArgs& a, const AlltoallwComm& c, const CallError& own,
                        std::string_view algorithm, std::string_view why = "TB_CHECKED") {
  const ProblemRecord all = find_problem(a, c, own);
  if (all.severity == 0) return;
  if (!own.empty()) own.raise();
  throw MpiError(static_cast<int>(all.error_class), problem_text(std::string(algorithm) + " (" + std::string(why) + ")", all));
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

std::unique_ptr<PreparedExchange> AlltoallwAlgorithm::prepare_exchange(const AlltoallwArgs&, const AlltoallwComm&) {
  return nullptr;
}

// Unlike run(), prepare() always checks collectively: a prepared call is made once and started
// many times, so the check costs little, and a rank whose arguments are wrong must not leave its
// peers to wait in starts it never makes.
std::unique_ptr<PreparedAlltoallw> AlltoallwAlgorithm::prepare(const AlltoallwArgs& args) {
  const Inspection in = inspect(args, name());
  std::optional<Sanitized> sanitized;
  if (!in.error.empty()) sanitized.emplace(args, in.comm.size, in.unusable);
  check_collectively(sanitized ? sanitized->args : args, in.comm, in.error, name(), "prepare");
  return std::unique_ptr<PreparedAlltoallw>(new PreparedAlltoallw(*this, args, in.comm));
}

PreparedAlltoallw::PreparedAlltoallw(AlltoallwAlgorithm& algorithm, const AlltoallwArgs& a, const AlltoallwComm& comm)
    : algorithm_(algorithm), comm_(comm), args_(a) {
  const auto n = static_cast<std::size_t>(comm.size);
  recv_.take(n, args_.recvcounts, args_.rdispls, args_.recvtypes);
  if (a.sendbuf != MPI_IN_PLACE) send_.take(n, args_.sendcounts, args_.sdispls, args_.sendtypes);
  if (comm.inter && !algorithm.handles_intercommunicators()) {
    fallback_path_ = "native (intercommunicator)";
    exchange_ = prepare_native_alltoallw(args_);
  } else {
    exchange_ = algorithm.prepare_exchange(args_, comm_);
  }
  path_ = path_now();
}

void PreparedAlltoallw::SideCopy::take(std::size_t peers, const int*& counts_in, const int*& displs_in,
                                       const MPI_Datatype*& types_in) {
  counts.assign(counts_in, counts_in + peers);
  displs.assign(displs_in, displs_in + peers);
  types.assign(types_in, types_in + peers);
  counts_in = counts.data();
  displs_in = displs.data();
  types_in = types.data();
}

PreparedAlltoallw::~PreparedAlltoallw() = default;

void PreparedAlltoallw::start() {
  ++starts_;
  if (exchange_) {
    exchange_->start();
  } else if (!fallback_path_.empty()) {
    native_alltoallw(args_);
  } else {
    AlltoallwAlgorithm::exchange_with(algorithm_, args_, comm_);
  }
  path_ = path_now();
  algorithm_.path_ = path_;  // tools that print the algorithm's path see this call's
}

void PreparedExchange::rebind(const void*, void*) {
  throw std::logic_error("PreparedExchange::rebind: this prepared form does not rebind (rebinds() is false)");
}

bool PreparedAlltoallw::rebinds() const {
  if (!fallback_path_.empty()) return false;  // native's prepared call on the intercommunicator
  return !exchange_ || exchange_->rebinds();
}

void PreparedAlltoallw::rebind(const void* sendbuf, void* recvbuf) {
  if (!rebinds())
    throw std::logic_error("PreparedAlltoallw::rebind: " + path_ + " holds its buffers' addresses; prepare anew");
  if ((sendbuf == MPI_IN_PLACE) != (args_.sendbuf == MPI_IN_PLACE))
    throw std::invalid_argument("PreparedAlltoallw::rebind: " + std::string(algorithm_.name()) +
                                ": the send buffer must be MPI_IN_PLACE exactly where the prepared call's was");
  if (sendbuf == args_.sendbuf && recvbuf == args_.recvbuf) return;
  if (exchange_) exchange_->rebind(sendbuf, recvbuf);  // first: a failed one leaves args_ as it was
  args_.sendbuf = sendbuf;
  args_.recvbuf = recvbuf;
}

std::string PreparedAlltoallw::path_now() const {
  if (!fallback_path_.empty()) return fallback_path_ + (exchange_ ? " via " + exchange_->path() : std::string());
  if (exchange_) return exchange_->path();
  const std::string ran = starts_ > 0 ? algorithm_.path_ : std::string(algorithm_.name());
  return ran + " (not prepared: each start runs the blocking call)";
}

}  // namespace tb
