// auto: per call, the algorithm a measured tuning table (or a built-in rule) says is fastest for
// this call's node layout, layout class and message size; then that algorithm runs the call.
//
// Classification (cheap, local): bytes per peer (the mean over peers of the larger of the send and
// receive side), bytes per contiguous block (from the cached flattening type_layout(), the more
// fragmented side) and whether every peer's data is one block; the node layout is node_layout(comm)
// (ranks, nodes, the largest node's ranks). The table is the file TB_TUNING_TABLE names
// (experiments/tune.py writes it; format in collectives/tuning_table.hpp; errors name the file).
// Without a table, or for a node layout the table lacks, the built-in rule decides and the path
// says so ("auto (built-in rule) -> native"):
//   one rank:                           pairwise (a local copy; Open MPI's coll/self misplaces it)
//   more than one node:                 native
//   one node, >= 1 MiB per peer:        node_leader
//   one node, below:                    native
// Its source: docs/results/2026-11-30-node-leader-sizes.md (MPICH and Open MPI, 2 ranks):
// node_leader costs 1.5-4 us against native's 0.5-0.9 us below a few KiB, is 1.8-3.7x faster on
// one node from 1 MiB up on both send layouts, and on two one-rank nodes ties or loses for
// contiguous data (it wins only from 4 MiB on the vector layout: not worth a rule of its own).
//
// Agreement: every rank of a call must run the SAME algorithm (mixing them hangs: see
// analysis/mpich_algorithms.py), but a rank's sizes may differ from its peers'. So where the
// choice at this node layout depends on the class, the ranks agree on it first: the element-wise
// maximum of three int64 (bytes per peer, -block bytes, -contiguous), i.e. every rank looks up
// the largest size and the most fragmented layout of any rank. On one node whose ranks share
// memory the maximum goes through a shared-memory window (collectives/node_max.hpp: a cache line
// per rank, the cost of a node barrier); elsewhere, including nodes emulated on one host, it is
// one MPI_Allreduce on a cached duplicate of the communicator, of the order of a small native
// Alltoallw. TB_AUTO_AGREEMENT=each-call-allreduce takes the allreduce everywhere, to compare.
// No rank can skip the agreement alone: a rank whose class sits deep inside a band cannot know
// that its peers' do too, and one rank agreeing while another runs the exchange is a hang. So
// its cost is paid wherever the table (or the rule) picks more than one algorithm at this node
// layout; none where it picks one for every class, and none on one rank.
// TB_AUTO_AGREEMENT=assume-same drops it: the application asserts that every rank's own class
// gives the same choice (true when all ranks pass the same counts and types, as tb-bench and
// evenly divided redistributions do); under TB_CHECKED=1 each call verifies that assertion with
// an allreduce and fails on every rank, naming the setting, when it does not hold.
//
// Per call, auto's own work is a few comparisons: the communicator's state (node layout, what the
// table says at it) is made once per communicator and table; a call whose counts and types equal
// a recent call's on this rank reuses its class (a memo keyed by datatype handles, dropped when
// any cached type is freed, since MPI reuses freed handles); and a recent class's decision, path
// text and algorithm instance are reused.
//
// Prepared (persistent) calls classify and agree once, at prepare; the chosen algorithm's own
// prepared form then runs every start, and the path says "auto -> <its prepared path>". Where the
// table has entries measured in the prepared forms ("calls": "persistent", tune.py --calls
// blocking,persistent) at this node layout, a prepared call looks those up, and the path says
// "auto (persistent measurements) -> ..."; else, where it has the per-size bands tune.py keeps for
// prepared calls when its one-algorithm rule took the blocking ones ("calls": "prepared"), those,
// and the path says "auto (per-size bands for prepared calls) -> ...". Whether the ranks must agree
// is decided per kind of call: blocking entries of one algorithm spare blocking calls the
// agreement, while prepared calls still agree wherever their own entries split by class.
// auto never chooses itself, and skips a table's choice this build lacks (ucx_zcopy without
// UCX) for the entry's next alternative. Wins: wherever the measured winner changes with size,
// layout or node layout; costs the agreement on small calls.
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/tuning_table.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class AutoAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "auto"; }

  // What a call is run with: the algorithm, and how auto came to it ("" for the table, else
  // "built-in rule" with the reason; "assume-same" added where TB_AUTO_AGREEMENT skipped the
  // agreement), as the path's prefix says.
  struct Decision {
    std::string algorithm;
    std::string how;
    std::string prefix() const { return how.empty() ? "auto -> " : "auto (" + how + ") -> "; }
  };

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;
  std::unique_ptr<PreparedExchange> prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;

 private:
  // A decision made before, kept for the calls that repeat it: its communicator's state (by
  // serial number), table and class, the instance that runs it, and the path text last built.
  struct Recent {
    std::uint64_t comm_serial = 0;
    const TuningTable* table = nullptr;
    CallClass call;
    bool assumed = false;   // TB_AUTO_AGREEMENT=assume-same
    bool prepared = false;  // for a prepared call (the table's persistent entries first)
    Decision decision;
    AlltoallwAlgorithm* algorithm = nullptr;
    std::string inner_path, path;
  };
  Recent& choose(const AlltoallwArgs& args, const AlltoallwComm& comm, bool prepared);
  AlltoallwAlgorithm& instance(const std::string& name);

  std::string table_path_;                       // TB_TUNING_TABLE as last read ("" = none)
  std::shared_ptr<const TuningTable> table_;     // that table
  std::map<std::string, std::unique_ptr<AlltoallwAlgorithm>> algorithms_;  // kept: their caches live on
  static constexpr std::size_t kRecentDecisions = 8;
  std::vector<Recent> recent_;  // most recent first
};

// The call's class on this rank alone (no communication).
CallClass classify_call(const AlltoallwArgs& args, const AlltoallwComm& comm);

// The built-in rule (see the header comment): the algorithm for a class at a node layout.
std::string builtin_choice(const TuningNodeLayout& layout, const CallClass& call);

// How many agreements this process has made through shared memory (NodeMax), for tests.
std::int64_t shared_memory_agreements();

}  // namespace tb
