#include "collectives/algorithms/pairwise.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"
#include "collectives/simulated_datatype_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "pairwise",
    .summary = "P-1 Sendrecv steps on the user's datatypes, self block copied locally",
    .make = &make_algorithm<PairwiseAlltoallw>,
    .cost_schedule = "pairwise",
    .not_modelled = "",
});

// The calls made on a communicator: each call's messages carry a tag of their own (cycling over
// up to 2^20 tags), so that a message a mismatched call left unreceived cannot land in the next
// call's receive.
struct PairwiseCalls {
  std::int64_t calls = 0;
  int span = 1;
};
PairwiseCalls* create_calls(MPI_Comm comm) {
  auto* calls = new PairwiseCalls;
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found));
  const int tag_ub = found ? *static_cast<int*>(value) : 32767;
  calls->span = std::max(1, std::min(tag_ub - tags::pairwise + 1, 1 << 20));
  return calls;
}
int next_tag(MPI_Comm comm) {
  PairwiseCalls& calls = CommCache<PairwiseCalls>::get(comm, create_calls);
  return tags::pairwise + static_cast<int>(calls.calls++ % calls.span);
}

// A receive's outcome: an MPI error (a truncation: the sender sent more) or a short message,
// kept for after the last step so that every peer's step still happens.
void check_receive(int code, const MPI_Status& status, int src, int me, std::int64_t expected, CallError& error) {
  if (code != MPI_SUCCESS) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(code, &error_class);
    error.note(error_class, error_class == MPI_ERR_TRUNCATE
                                ? "pairwise: rank " + std::to_string(src) + " sends more than the " +
                                      std::to_string(expected) + " bytes rank " + std::to_string(me) +
                                      " expects (truncated): " + mpi_error_string(code)
                                : "pairwise: the receive from rank " + std::to_string(src) + " on rank " +
                                      std::to_string(me) + " (expecting " + std::to_string(expected) +
                                      " bytes) failed: " + mpi_error_string(code));
    return;
  }
  int arrived = 0;
  PMPI_Get_count(&status, MPI_BYTE, &arrived);
  if (arrived != MPI_UNDEFINED && arrived != expected)
    error.note(mismatch_class(arrived, expected), mismatch_text("pairwise", src, arrived, me, expected));
}

// Step k exchanges the same region with peer (k - rank) mod P, in place.
void exchange_in_place(const AlltoallwArgs& a, int size, int rank, MPI_Comm comm, int tag, CallError& error) {
  for (int k = 0; k < size; ++k) {
    const int peer = ((k - rank) % size + size) % size;
    const std::int64_t bytes = bytes_of(a.recvcounts[peer], a.recvtypes[peer]);
    if (peer == rank || bytes == 0) continue;
    MPI_Status status;
    charge_datatype_engine(MessageSide::send, a.recvcounts[peer], a.recvtypes[peer]);  // SMPI: the library packs
    const int code = PMPI_Sendrecv_replace(at(a.recvbuf, a.rdispls[peer]), a.recvcounts[peer], a.recvtypes[peer],
                                           peer, tag, peer, tag, comm, &status);
    charge_datatype_engine(MessageSide::receive, a.recvcounts[peer], a.recvtypes[peer]);  // and its unpacking
    check_receive(code, status, peer, rank, bytes, error);
  }
}

std::atomic<std::int64_t> g_request_sets{0};  // pairwise_request_sets()

// One set of the prepared form's persistent requests, on one pair of arrays: every step's, back
// to back. Freed with the set.
struct RequestSet {
  RequestSet(const void* send, void* recv) : sendbuf(send), recvbuf(recv) {}
  RequestSet(const RequestSet&) = delete;
  RequestSet& operator=(const RequestSet&) = delete;
  ~RequestSet() {
    for (MPI_Request& r : requests)
      if (r != MPI_REQUEST_NULL) PMPI_Request_free(&r);
  }
  const void* sendbuf;
  void* recvbuf;
  std::vector<MPI_Request> requests;
};

// pairwise's prepared form: the schedule made once, each step's send and receive as a persistent
// request on the communicator's duplicate with a tag of its own, and the self block's layouts.
// prepare() has matched every sender's size with its receiver's, so a start only moves data.
// The requests hold their arrays' addresses: the request sets of the last kKeptSets pairs of
// arrays are kept, so that a plan moved among a few arrays (an FFT of several fields into
// arrays of their own, say) makes each set once.
class PreparedPairwise final : public PreparedExchange {
 public:
  PreparedPairwise(const AlltoallwArgs& a, const AlltoallwComm& c);
  void start() override;
  std::string path() const override { return in_place_ ? "pairwise (persistent, in place)" : "pairwise (persistent)"; }
  bool rebinds() const override { return true; }
  void rebind(const void* sendbuf, void* recvbuf) override;

 private:
  static constexpr std::size_t kKeptSets = 4;
  void add_step(int dst, int src);
  std::unique_ptr<RequestSet> make_requests(const void* sendbuf, void* recvbuf) const;
  void copy_self() const;

  AlltoallwArgs args_;
  AlltoallwComm comm_;
  MPI_Comm traffic_ = MPI_COMM_NULL;
  int tag_ = tags::pairwise;
  bool in_place_ = false;
  struct Step {
    int dst, src;
    bool sends, receives;  // whether the block to dst, from src, has bytes
  };
  std::vector<int> step_begin_;  // step s: requests [step_begin_[s], step_begin_[s + 1])
  std::vector<Step> steps_;
  std::vector<std::unique_ptr<RequestSet>> sets_;  // the last used first; the first is args_'s
  std::vector<int> in_place_peers_;              // in place: the peer of each step with data
  std::shared_ptr<const TypeLayout> self_send_, self_recv_;
};

PreparedPairwise::PreparedPairwise(const AlltoallwArgs& a, const AlltoallwComm& c)
    : args_(a), comm_(c), in_place_(a.sendbuf == MPI_IN_PLACE) {
  traffic_ = c.size > 1 ? private_comm(a.comm) : a.comm;
  tag_ = c.size > 1 ? next_tag(traffic_) : tags::pairwise;
  step_begin_.push_back(0);
  if (in_place_) {
    for (int k = 0; k < c.size; ++k) {
      const int peer = ((k - c.rank) % c.size + c.size) % c.size;
      if (peer != c.rank && bytes_of(a.recvcounts[peer], a.recvtypes[peer]) > 0) in_place_peers_.push_back(peer);
    }
    return;
  }
  if (bytes_of(a.sendcounts[c.rank], a.sendtypes[c.rank]) > 0) {
    self_send_ = type_layout(a.sendtypes[c.rank]);
    self_recv_ = type_layout(a.recvtypes[c.rank]);
  }
  const int n = c.size, me = c.rank;
  for (int k = 1; k < n; ++k) add_step((me + k) % n, (me - k + n) % n);
  sets_.push_back(make_requests(a.sendbuf, a.recvbuf));
}

// Step: receive from src, send to dst; a zero-byte block on one side is one on the other too
// (prepare() checked), so both skip it. The step's requests: the receive first, then the send.
void PreparedPairwise::add_step(int dst, int src) {
  const AlltoallwArgs& a = args_;
  const Step step{.dst = dst,
                  .src = src,
                  .sends = bytes_of(a.sendcounts[dst], a.sendtypes[dst]) > 0,
                  .receives = bytes_of(a.recvcounts[src], a.recvtypes[src]) > 0};
  step_begin_.push_back(step_begin_.back() + int{step.sends} + int{step.receives});
  steps_.push_back(step);
}

// Every step's persistent requests on these arrays, in the schedule's order.
std::unique_ptr<RequestSet> PreparedPairwise::make_requests(const void* sendbuf, void* recvbuf) const {
  auto set = std::make_unique<RequestSet>(sendbuf, recvbuf);
  const AlltoallwArgs& a = args_;
  set->requests.reserve(static_cast<std::size_t>(step_begin_.back()));
  for (const auto& [dst, src, sends, receives] : steps_) {
    if (receives) {
      set->requests.push_back(MPI_REQUEST_NULL);  // stays null, and is not freed, should the init fail
      TB_MPI_CHECK(PMPI_Recv_init(at(recvbuf, a.rdispls[src]), a.recvcounts[src], a.recvtypes[src], src, tag_,
                                  traffic_, &set->requests.back()));
    }
    if (sends) {
      set->requests.push_back(MPI_REQUEST_NULL);
      TB_MPI_CHECK(PMPI_Send_init(at(sendbuf, a.sdispls[dst]), a.sendcounts[dst], a.sendtypes[dst], dst, tag_,
                                  traffic_, &set->requests.back()));
    }
  }
  ++g_request_sets;
  return set;
}

// In place, each start reads the receive buffer from args_. Otherwise the requests of a pair of
// arrays used before come to the front, or new ones are made (creating persistent requests is
// local) and the least recently used set beyond kKeptSets is freed. Should making them fail, the
// call stays on the arrays it had.
void PreparedPairwise::rebind(const void* sendbuf, void* recvbuf) {
  if (!in_place_) {
    auto kept = std::find_if(sets_.begin(), sets_.end(),
                             [&](const auto& set) { return set->sendbuf == sendbuf && set->recvbuf == recvbuf; });
    if (kept != sets_.end()) {
      std::rotate(sets_.begin(), kept, kept + 1);
    } else {
      sets_.insert(sets_.begin(), make_requests(sendbuf, recvbuf));
      if (sets_.size() > kKeptSets) sets_.pop_back();
    }
  }
  args_.sendbuf = sendbuf;
  args_.recvbuf = recvbuf;
}

void PreparedPairwise::copy_self() const {
  if (!self_send_) return;
  const int me = comm_.rank;
  copy_typed(at(args_.sendbuf, args_.sdispls[me]), args_.sendcounts[me], *self_send_, at(args_.recvbuf, args_.rdispls[me]),
             args_.recvcounts[me], *self_recv_);
}

// A failed step does not end the start: the remaining steps run, so that no peer waits for this
// rank, and the first failure is thrown at the end.
void PreparedPairwise::start() {
  CallError error;
  auto keep = [&](int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(code, &error_class);
    error.note(error_class, std::string("pairwise (persistent): ") + what + " failed: " + mpi_error_string(code));
  };
  const AlltoallwArgs& a = args_;
  if (in_place_) {
    for (const int peer : in_place_peers_) {
      charge_datatype_engine(MessageSide::send, a.recvcounts[peer], a.recvtypes[peer]);  // SMPI: the library packs
      keep(PMPI_Sendrecv_replace(at(a.recvbuf, a.rdispls[peer]), a.recvcounts[peer], a.recvtypes[peer], peer, tag_,
                                 peer, tag_, traffic_, MPI_STATUS_IGNORE),
           "MPI_Sendrecv_replace");
      charge_datatype_engine(MessageSide::receive, a.recvcounts[peer], a.recvtypes[peer]);  // and its unpacking
    }
  } else {
    copy_self();
    for (std::size_t s = 0; s + 1 < step_begin_.size(); ++s) {
      const int n = step_begin_[s + 1] - step_begin_[s];
      if (n == 0) continue;
      MPI_Request* step = sets_.front()->requests.data() + step_begin_[s];
      const int dst = steps_[s].dst, src = steps_[s].src;
      charge_datatype_engine(MessageSide::send, a.sendcounts[dst], a.sendtypes[dst]);  // SMPI: the library packs
      keep(PMPI_Startall(n, step), "MPI_Startall");
      keep(PMPI_Waitall(n, step, MPI_STATUSES_IGNORE), "MPI_Waitall");
      charge_datatype_engine(MessageSide::receive, a.recvcounts[src], a.recvtypes[src]);  // and its unpacking
    }
  }
  if (!error.empty()) error.raise();
}

}  // namespace

std::int64_t pairwise_request_sets() { return g_request_sets; }

std::unique_ptr<PreparedExchange> PairwiseAlltoallw::prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  return std::make_unique<PreparedPairwise>(args, comm);
}

// A failed or mismatched receive does not end the call: the remaining steps run, so that no
// peer waits for this rank, and the first problem is thrown at the end (its class:
// algorithm_support.hpp). What remains (as with MPICH's and Open MPI's own Alltoallw): a block
// that one side thinks empty and the other not is skipped by the empty side; a message sent to a
// rank expecting nothing stays unreceived (its tag keeps it out of later calls), and a rank that
// expects a message its peer never sends waits for it. TB_CHECKED=1 catches both before anything
// moves.
void PairwiseAlltoallw::exchange(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const int size = c.size, rank = c.rank;
  const MPI_Comm comm = size > 1 ? private_comm(a.comm) : a.comm;
  const int tag = size > 1 ? next_tag(comm) : tags::pairwise;
  CallError error;
  if (a.sendbuf == MPI_IN_PLACE) {
    set_path("pairwise (in place)");
    exchange_in_place(a, size, rank, comm, tag, error);
    if (!error.empty()) error.raise();
    return;
  }
  const std::int64_t self_sent = bytes_of(a.sendcounts[rank], a.sendtypes[rank]);
  const std::int64_t self_expected = bytes_of(a.recvcounts[rank], a.recvtypes[rank]);
  if (self_sent != self_expected)
    error.note(mismatch_class(self_sent, self_expected),
               mismatch_text("pairwise", rank, self_sent, rank, self_expected) + " [the self block]");
  if (self_sent > 0 && self_expected > 0)
    copy_typed_prefix(at(a.sendbuf, a.sdispls[rank]), a.sendcounts[rank], *type_layout(a.sendtypes[rank]),
                      at(a.recvbuf, a.rdispls[rank]), a.recvcounts[rank], *type_layout(a.recvtypes[rank]));
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size, src = (rank - k + size) % size;
    // A zero-byte block on one side is a zero-byte block on the other (matching signatures):
    // both skip it, and each Sendrecv degenerates to a plain send or receive.
    const bool sends = bytes_of(a.sendcounts[dst], a.sendtypes[dst]) > 0;
    const std::int64_t expected = bytes_of(a.recvcounts[src], a.recvtypes[src]);
    const bool recvs = expected > 0;
    MPI_Status status;
    if (sends) charge_datatype_engine(MessageSide::send, a.sendcounts[dst], a.sendtypes[dst]);  // SMPI: packing
    const int code = PMPI_Sendrecv(at(a.sendbuf, a.sdispls[dst]), sends ? a.sendcounts[dst] : 0,
                                   sends ? a.sendtypes[dst] : MPI_BYTE, sends ? dst : MPI_PROC_NULL, tag,
                                   at(a.recvbuf, a.rdispls[src]), recvs ? a.recvcounts[src] : 0,
                                   recvs ? a.recvtypes[src] : MPI_BYTE, recvs ? src : MPI_PROC_NULL, tag, comm,
                                   &status);
    if (recvs) charge_datatype_engine(MessageSide::receive, a.recvcounts[src], a.recvtypes[src]);  // and its unpacking
    if (recvs || code != MPI_SUCCESS) check_receive(code, status, src, rank, expected, error);
  }
  if (!error.empty()) error.raise();
}

}  // namespace tb
