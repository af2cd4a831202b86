#include "collectives/algorithms/auto.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "collectives/type_layout.hpp"

#include <algorithm>
#include <cstdint>

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

// The node layout of a communicator as the table keys it, cached on it: the largest node's
// ranks are agreed once (node sizes differ when ranks do not divide evenly).
struct AutoLayout {
  TuningNodeLayout key;
};
AutoLayout* create_layout(MPI_Comm comm) {
  const NodeLayout& nodes = node_layout(comm);
  int ranks = 0, largest = 0;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &ranks));
  TB_MPI_CHECK(PMPI_Allreduce(&nodes.node_size, &largest, 1, MPI_INT, MPI_MAX, private_comm(comm)));
  return new AutoLayout{TuningNodeLayout{ranks, nodes.nodes, largest}};
}
const TuningNodeLayout& layout_key(MPI_Comm comm) { return CommCache<AutoLayout>::get(comm, create_layout).key; }

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

// The class every rank looks up: the largest size and the most fragmented layout of any rank.
CallClass agree(const CallClass& mine, MPI_Comm comm) {
  const std::int64_t in[3] = {mine.bytes_per_peer, -mine.block_bytes, mine.contiguous ? -1 : 0};
  std::int64_t out[3] = {0, 0, 0};
  TB_MPI_CHECK(PMPI_Allreduce(in, out, 3, MPI_INT64_T, MPI_MAX, private_comm(comm)));
  return CallClass{out[0], -out[1], out[2] == -1};
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

AutoAlltoallw::Decision AutoAlltoallw::decide(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  // The table first: a bad one throws on every rank alike, before any communication.
  const std::string& path = settings().tuning_table.get();
  const auto table = path.empty() ? nullptr : tuning_table(path);
  const TuningNodeLayout& layout = layout_key(args.comm);
  std::string how = "built-in rule";
  if (table) {
    if (table->has(layout)) return from_table(*table, layout, args, comm);
    how = "built-in rule: the table has no entry for " + describe(layout);
  }
  CallClass call = classify_call(args, comm);
  if (comm.size > 1 && builtin_depends_on_class(layout)) call = agree(call, args.comm);
  return Decision{builtin_choice(layout, call), how};
}

// The table's choice. Agreement only when the entries at this node layout name more than one
// algorithm (as resolved in this build), or none this build has and the rule depends on the class.
AutoAlltoallw::Decision AutoAlltoallw::from_table(const TuningTable& table, const TuningNodeLayout& layout,
                                                  const AlltoallwArgs& args, const AlltoallwComm& comm) {
  const auto entries = table.entries_at(layout);
  const std::string first = resolve(*entries.front());
  const bool uniform = std::all_of(entries.begin(), entries.end(), [&](const auto* e) { return resolve(*e) == first; });
  // Entries none of whose algorithms this build has fall to the rule, which may depend on the class.
  const bool depends = !uniform || (first.empty() && builtin_depends_on_class(layout));
  CallClass call = classify_call(args, comm);
  if (comm.size > 1 && depends) call = agree(call, args.comm);
  const TuningEntry* entry = table.find(layout, call);
  const std::string chosen = resolve(*entry);
  if (!chosen.empty()) return Decision{chosen, ""};
  return Decision{builtin_choice(layout, call),
                  "built-in rule: the table's " + entry->algorithms.front() + " is not in this build"};
}

AlltoallwAlgorithm& AutoAlltoallw::instance(const std::string& name) {
  auto& algorithm = algorithms_[name];
  if (!algorithm) algorithm = make_alltoallw(name);
  return *algorithm;
}

void AutoAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  const Decision decision = decide(args, comm);
  AlltoallwAlgorithm& chosen = instance(decision.algorithm);
  set_path(decision.prefix() + decision.algorithm);
  exchange_with(chosen, args, comm);
  set_path(decision.prefix() + chosen.last_path());
}

// Classified and agreed once; the chosen algorithm's prepare() checks the arguments on every rank
// once more (one MPI_Allgather of the sizes, at prepare only) and sets up its own prepared form.
std::unique_ptr<PreparedExchange> AutoAlltoallw::prepare_exchange(const AlltoallwArgs& args,
                                                                  const AlltoallwComm& comm) {
  const Decision decision = decide(args, comm);
  auto algorithm = make_alltoallw(decision.algorithm);
  auto prepared = algorithm->prepare(args);
  return std::make_unique<PreparedAuto>(std::move(algorithm), std::move(prepared), decision.prefix());
}

}  // namespace tb
