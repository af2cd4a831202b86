#include "collectives/algorithms/auto.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/every_rank.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_max.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "collectives/type_layout.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "auto",
    .summary = "per call the measured fastest: TB_TUNING_TABLE (experiments/tune.py), else a built-in rule",
    .make = &make_algorithm<AutoAlltoallw>,
    .cost_schedule = "",
    .not_modelled = "chooses another algorithm per call (tuning table or built-in rule): model that one",
});

// The rule's threshold (docs/results/2026-11-30-node-leader-sizes.md): from 1 MiB per peer
// node_leader beat native on one node on every measured layout and MPI.
constexpr std::int64_t kNodeLeaderFrom = std::int64_t{1} << 20;

// One side of a call (send or receive): its bytes, its contiguous pieces, whether every
// non-empty peer block is one piece.
struct SideShape {
  std::int64_t bytes = 0, pieces = 0;
  bool contiguous = true;
};
SideShape side_shape(const int* counts, const MPI_Datatype* types, int size) {
  SideShape s;
  for (int p = 0; p < size; ++p) {
    const std::int64_t bytes = bytes_of(counts[p], types[p]);
    if (bytes == 0) continue;
    const auto layout = type_layout(types[p]);
    const std::int64_t pieces =
        layout->dense() ? 1 : static_cast<std::int64_t>(layout->blocks.size()) * counts[p];
    s.bytes += bytes;
    s.pieces += pieces;
    s.contiguous = s.contiguous && pieces == 1;
  }
  return s;
}

// Whether the algorithm may be run here: registered in this build, and not auto itself.
bool runnable(const std::string& name) { return name != "auto" && find_alltoallw(name) != nullptr; }

// The entry's first algorithm this build has, or "".
std::string resolve(const TuningEntry& entry) {
  for (const auto& a : entry.algorithms)
    if (runnable(a)) return a;
  return "";
}


// Whether the rule's choice can differ between classes at this node layout.
bool builtin_depends_on_class(const TuningNodeLayout& layout) { return layout.ranks > 1 && layout.nodes == 1; }

// A prepared call of the chosen algorithm, started through auto.
class PreparedAuto final : public PreparedExchange {
 public:
  PreparedAuto(std::unique_ptr<AlltoallwAlgorithm> algorithm, std::unique_ptr<PreparedAlltoallw> prepared,
               std::string prefix)
      : algorithm_(std::move(algorithm)), prepared_(std::move(prepared)), prefix_(std::move(prefix)) {}
  ~PreparedAuto() override { prepared_.reset(); }  // before the algorithm it refers to
  void start() override { prepared_->start(); }
  std::string path() const override { return prefix_ + prepared_->last_path(); }
  bool rebinds() const override { return prepared_->rebinds(); }  // the choice is the same on every rank
  void rebind(const void* sendbuf, void* recvbuf) override { prepared_->rebind(sendbuf, recvbuf); }

 private:
  std::unique_ptr<AlltoallwAlgorithm> algorithm_;
  std::unique_ptr<PreparedAlltoallw> prepared_;
  std::string prefix_;
};

}  // namespace

CallClass classify_call(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const SendSide send = send_side(a);
  SideShape sent, received;
  try {
    sent = side_shape(send.counts, send.types, c.size);
    received = side_shape(a.recvcounts, a.recvtypes, c.size);
  } catch (const std::exception&) {
    // A type the flattening cannot decode: classed as finely fragmented, so that this rank still
    // takes part in the agreement; the chosen algorithm reports the type itself.
    return CallClass{0, 1, false};
  }
  CallClass k;
  k.bytes_per_peer = std::max(sent.bytes, received.bytes) / std::max(1, c.size);
  k.contiguous = sent.contiguous && received.contiguous;
  std::int64_t block = k.bytes_per_peer;
  for (const SideShape* s : {&sent, &received})
    if (s->pieces > 0) block = std::min(block, s->bytes / s->pieces);
  k.block_bytes = block;
  return k;
}

std::string builtin_choice(const TuningNodeLayout& layout, const CallClass& call) {
  // One rank: the call is a local copy, which pairwise makes with the testbed's copier; Open MPI
  // 4.1's coll/self misplaces Alltoallw's byte displacements (tests/test_conformance.cpp).
  if (layout.ranks == 1 && runnable("pairwise")) return "pairwise";
  if (builtin_depends_on_class(layout) && call.bytes_per_peer >= kNodeLeaderFrom && runnable("node_leader"))
    return "node_leader";
  return "native";
}

// --- per communicator: its node layout, what the table says there, its recent classes ------------
namespace {

// A call's counts and types on this rank (send side, then receive side) and the class they gave.
struct ClassMemo {
  bool used = false, in_place = false;
  std::uint64_t dropped = 0;  // type_layouts_dropped() when made: a freed type's handle may be reused
  std::vector<int> counts;
  std::vector<MPI_Datatype> types;
  CallClass call;

  bool matches(const AlltoallwArgs& a, const SendSide& send, int size, std::uint64_t dropped_now) const {
    const auto n = static_cast<std::size_t>(size);
    return used && dropped == dropped_now && in_place == (a.sendbuf == MPI_IN_PLACE) && counts.size() == 2 * n &&
           std::equal(send.counts, send.counts + n, counts.begin()) &&
           std::equal(a.recvcounts, a.recvcounts + n, counts.begin() + size) &&
           std::equal(send.types, send.types + n, types.begin()) &&
           std::equal(a.recvtypes, a.recvtypes + n, types.begin() + size);
  }
  void remember(const AlltoallwArgs& a, const SendSide& send, int size, std::uint64_t dropped_now) {
    used = true;
    in_place = a.sendbuf == MPI_IN_PLACE;
    dropped = dropped_now;
    counts.assign(send.counts, send.counts + size);
    counts.insert(counts.end(), a.recvcounts, a.recvcounts + size);
    types.assign(send.types, send.types + size);
    types.insert(types.end(), a.recvtypes, a.recvtypes + size);
  }
};

std::uint64_t g_states_dropped = 0;  // AutoStates deleted with their communicators so far
std::int64_t g_shared_memory_agreements = 0;

// auto's state on a communicator: the node layout as the table keys it (the largest node's ranks
// are agreed once: node sizes differ when ranks do not divide evenly), whether the current table
// (or the rule) can choose differently between classes there, and the classes of recent calls.
struct AutoState {
  ~AutoState() { ++g_states_dropped; }
  std::uint64_t serial = 0;  // unique per state, so that auto's recent decisions can name it
  TuningNodeLayout layout;
  bool facts_made = false;
  const TuningTable* facts_table = nullptr;  // the table the next two were worked out for (nullptr: none)
  bool has_layout = false;                   // the table has entries at this node layout
  bool depends = false;                      // a blocking call's choice can differ between classes: agree
  TuningCalls prepared_calls = TuningCalls::blocking;  // the entries a prepared call looks up here
  bool prepared_depends = false;             // the same for a prepared call: agree at prepare
  std::array<ClassMemo, 4> memos;            // the redistribution and the FFT alternate a few signatures
  std::size_t next_memo = 0;
  bool node_max_made = false;
  std::unique_ptr<NodeMax> node_max;  // the agreement through shared memory; null: MPI_Allreduce

  void make_facts(const TuningTable* table);
  const CallClass& classify(const AlltoallwArgs& args, const AlltoallwComm& comm);
  CallClass agree(const CallClass& mine, MPI_Comm comm, AutoAgreement how);
};

AutoState* create_state(MPI_Comm comm) {
  static std::uint64_t serials = 0;
  const NodeLayout& nodes = node_layout(comm);
  int ranks = 0, largest = 0;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &ranks));
  TB_MPI_CHECK(PMPI_Allreduce(&nodes.node_size, &largest, 1, MPI_INT, MPI_MAX, private_comm(comm)));
  auto state = new AutoState;
  state->serial = ++serials;
  state->layout = TuningNodeLayout{ranks, nodes.nodes, largest};
  return state;
}

// The state on `comm`. The last one found is kept: the attribute lookup is a hash-table search in
// some libraries, and a repeated call should not pay it. The handle of a freed communicator may be
// reused by the next one, so the kept state is trusted only while no state has been deleted since.
AutoState& state_of(MPI_Comm comm) {
  static MPI_Comm last_comm = MPI_COMM_NULL;
  static AutoState* last_state = nullptr;
  static std::uint64_t last_dropped = 0;
  if (comm == last_comm && last_dropped == g_states_dropped) return *last_state;
  AutoState& state = CommCache<AutoState>::get(comm, create_state);
  last_comm = comm;
  last_state = &state;
  last_dropped = g_states_dropped;
  return state;
}

// Whether the table's entries of the kind at `layout` can choose differently between classes:
// not where they all resolve to one algorithm this build has. Entries none of whose algorithms
// this build has fall to the rule, which may depend on the class.
bool choice_depends_on_class(const TuningTable& table, const TuningNodeLayout& layout, TuningCalls calls) {
  const auto entries = table.entries_at(layout, calls);
  const std::string first = resolve(*entries.front());
  const bool uniform = std::all_of(entries.begin(), entries.end(), [&](const auto* e) { return resolve(*e) == first; });
  return !uniform || (first.empty() && builtin_depends_on_class(layout));
}

// Worked out per kind of call: a table whose blocking entries are one algorithm may still split
// its prepared calls by class (its persistent or prepared entries), and then they must agree.
void AutoState::make_facts(const TuningTable* table) {
  facts_made = true;
  facts_table = table;
  has_layout = table != nullptr && table->has(layout);
  if (!has_layout) {
    depends = prepared_depends = builtin_depends_on_class(layout);
    prepared_calls = TuningCalls::blocking;
    return;
  }
  depends = choice_depends_on_class(*table, layout, TuningCalls::blocking);
  prepared_calls = table->prepared_calls(layout);
  prepared_depends = choice_depends_on_class(*table, layout, prepared_calls);
}

const CallClass& AutoState::classify(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  const SendSide send = send_side(args);
  const std::uint64_t dropped = type_layouts_dropped();
  for (const ClassMemo& m : memos)
    if (m.matches(args, send, comm.size, dropped)) return m.call;
  ClassMemo& m = memos[next_memo++ % memos.size()];
  m.remember(args, send, comm.size, dropped);
  m.call = classify_call(args, comm);
  return m.call;
}

// The class every rank looks up: the largest size and the most fragmented layout of any rank.
// Where the communicator is one node (not an emulated split of one) and its ranks share memory,
// through NodeMax, made at the first agreement (every rank agrees the same calls, so every rank
// makes it at the same one); else, or under each-call-allreduce, one MPI_Allreduce.
CallClass AutoState::agree(const CallClass& mine, MPI_Comm comm, AutoAgreement how) {
  const NodeMax::Values in{mine.bytes_per_peer, -mine.block_bytes, mine.contiguous ? -1 : 0};
  NodeMax::Values out{};
  if (how == AutoAgreement::each_call && !node_max_made) {
    node_max_made = true;
    if (layout.nodes == 1) node_max = NodeMax::create(comm);
  }
  if (how == AutoAgreement::each_call && node_max) {
    out = node_max->max(in);
    ++g_shared_memory_agreements;
  } else {
    TB_MPI_CHECK(PMPI_Allreduce(in.data(), out.data(), NodeMax::kValues, MPI_INT64_T, MPI_MAX, private_comm(comm)));
  }
  return CallClass{out[0], -out[1], out[2] == -1};
}

// The decision for an (agreed) class: the table's entry, else the built-in rule with its reason.
// A prepared call takes the entries state.prepared_calls names, and says so where they are not
// the blocking ones.
AutoAlltoallw::Decision decide(const AutoState& state, const TuningTable* table, const CallClass& call,
                               bool prepared) {
  if (!table) return {builtin_choice(state.layout, call), "built-in rule"};
  if (!state.has_layout)
    return {builtin_choice(state.layout, call), "built-in rule: the table has no entry for " + describe(state.layout)};
  const TuningCalls calls = prepared ? state.prepared_calls : TuningCalls::blocking;
  const TuningEntry* entry = table->find(state.layout, call, calls);
  const std::string chosen = resolve(*entry);
  if (!chosen.empty()) {
    if (calls == TuningCalls::persistent) return {chosen, "persistent measurements"};
    if (calls == TuningCalls::prepared) return {chosen, "per-size bands for prepared calls"};
    return {chosen, ""};
  }
  return {builtin_choice(state.layout, call),
          "built-in rule: the table's " + entry->algorithms.front() + " is not in this build"};
}

// TB_AUTO_AGREEMENT=assume-same under TB_CHECKED=1: every rank's own choice must be the same.
// One allreduce of the choice's place in the registry; every rank throws alike when they differ.
void verify_same_choice(const std::string& mine, MPI_Comm comm) {
  const auto algorithms = alltoallw_algorithms();
  const auto at = std::find_if(algorithms.begin(), algorithms.end(), [&](const auto& a) { return a.name == mine; });
  std::int64_t low = 0, high = 0;
  TB_MPI_CHECK(range_over_every_rank(at - algorithms.begin(), private_comm(comm), &low, &high));
  if (low != high)
    throw std::invalid_argument(
        "auto: TB_AUTO_AGREEMENT=assume-same, but the ranks' own call classes choose different algorithms (" +
        mine + " on this rank); pass the same counts and types on every rank, or unset TB_AUTO_AGREEMENT");
}

}  // namespace

std::int64_t shared_memory_agreements() { return g_shared_memory_agreements; }

// The decision for this call, reusing a recent one with the same communicator, table and class.
AutoAlltoallw::Recent& AutoAlltoallw::choose(const AlltoallwArgs& args, const AlltoallwComm& comm, bool prepared) {
  const std::string& path = settings().tuning_table.get();
  if (path != table_path_) {  // the reader's cache takes a lock and a map lookup: not per call
    table_ = path.empty() ? nullptr : tuning_table(path);
    table_path_ = path;
  }
  const TuningTable* table = table_.get();
  AutoState& state = state_of(args.comm);
  if (!state.facts_made || state.facts_table != table) state.make_facts(table);
  CallClass call = state.classify(args, comm);
  const AutoAgreement agreement = settings().auto_agreement.get();
  const bool assume = agreement == AutoAgreement::assume_same;
  const bool depends = prepared ? state.prepared_depends : state.depends;
  if (comm.size > 1 && depends && !assume) call = state.agree(call, args.comm, agreement);
  for (Recent& r : recent_)
    if (r.comm_serial == state.serial && r.table == table && r.call == call && r.assumed == assume &&
        r.prepared == prepared) {
      if (assume && depends && settings().checked.get()) verify_same_choice(r.decision.algorithm, args.comm);
      return r;
    }
  Recent r;
  r.comm_serial = state.serial;
  r.table = table;
  r.call = call;
  r.assumed = assume;
  r.prepared = prepared;
  r.decision = decide(state, table, call, prepared);
  if (assume && depends && comm.size > 1) {
    if (settings().checked.get()) verify_same_choice(r.decision.algorithm, args.comm);
    r.decision.how = r.decision.how.empty() ? "assume-same" : r.decision.how + "; assume-same";
  }
  r.algorithm = &instance(r.decision.algorithm);
  r.inner_path = r.decision.algorithm;
  r.path = r.decision.prefix() + r.inner_path;
  if (recent_.size() == kRecentDecisions) recent_.pop_back();
  recent_.insert(recent_.begin(), std::move(r));
  return recent_.front();
}

AlltoallwAlgorithm& AutoAlltoallw::instance(const std::string& name) {
  auto& algorithm = algorithms_[name];
  if (!algorithm) algorithm = make_alltoallw(name);
  return *algorithm;
}

void AutoAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  Recent& chosen = choose(args, comm, false);
  set_path(chosen.path);  // names the chosen algorithm should it fail
  exchange_with(*chosen.algorithm, args, comm);
  if (chosen.algorithm->last_path() != chosen.inner_path) {
    chosen.inner_path = chosen.algorithm->last_path();
    chosen.path = chosen.decision.prefix() + chosen.inner_path;
  }
  set_path(chosen.path);
}

// Classified and agreed once; the chosen algorithm's prepare() checks the arguments on every rank
// once more (one MPI_Allgather of the sizes, at prepare only) and sets up its own prepared form.
std::unique_ptr<PreparedExchange> AutoAlltoallw::prepare_exchange(const AlltoallwArgs& args,
                                                                  const AlltoallwComm& comm) {
  const Decision decision = choose(args, comm, true).decision;
  auto algorithm = make_alltoallw(decision.algorithm);
  auto prepared = algorithm->prepare(args);
  return std::make_unique<PreparedAuto>(std::move(algorithm), std::move(prepared), decision.prefix());
}

}  // namespace tb
