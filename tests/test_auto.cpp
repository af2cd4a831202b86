// auto: the built-in rule without a table, a table's choice followed (results equal native's),
// ONE algorithm per call when ranks' local classes differ, clear errors for bad tables, the
// prepared form's path. Tables are written by the test, one file per rank and case (the reader
// caches a table per path for the process).
#include "collectives/algorithms/auto.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/node_max.hpp"
#include "collectives/registry.hpp"
#include "collectives/tuning_table.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

namespace tb {
namespace {

// One Alltoallw of ints: this rank sends send_ints(p) to each peer p and receives recv_ints(p)
// from each; `fragmented` sends through a vector type of 2-int (8-byte) blocks at a 4-int stride.
class Exchange {
 public:
  Exchange(std::function<int(int)> send_ints, std::function<int(int)> recv_ints, bool fragmented = false) {
    const int size = test::world_size(), rank = test::world_rank();
    int soffset = 0, roffset = 0;
    for (int p = 0; p < size; ++p) {
      const int s = send_ints(p), r = recv_ints(p);
      if (fragmented && s % 2 != 0) throw std::logic_error("fragmented sends need an even count");
      MPI_Datatype type = MPI_INT;
      if (fragmented && s > 0) {
        MPI_Type_vector(s / 2, 2, 4, MPI_INT, &type);
        MPI_Type_commit(&type);
        owned_.push_back(type);
      }
      scounts_.push_back(fragmented && s > 0 ? 1 : s);
      stypes_.push_back(type);
      sdispls_.push_back(soffset * static_cast<int>(sizeof(int)));
      const int span = fragmented ? 2 * s : s;
      for (int i = 0; i < span; ++i) send_.push_back(rank * 1000000 + p * 1000 + i);
      soffset += span;
      rcounts_.push_back(r);
      rtypes_.push_back(MPI_INT);
      rdispls_.push_back(roffset * static_cast<int>(sizeof(int)));
      roffset += r;
    }
    send_.resize(static_cast<std::size_t>(soffset) + 1);
    recv_.assign(static_cast<std::size_t>(roffset) + 1, -1);
  }
  ~Exchange() {
    for (auto& t : owned_) MPI_Type_free(&t);
  }
  AlltoallwArgs args() {
    return {send_.data(), scounts_.data(), sdispls_.data(), stypes_.data(), recv_.data(),
            rcounts_.data(), rdispls_.data(), rtypes_.data(), MPI_COMM_WORLD};
  }
  // What `algorithm` delivers, from a cleared receive buffer.
  std::vector<int> run(AlltoallwAlgorithm& algorithm) {
    std::fill(recv_.begin(), recv_.end(), -1);
    algorithm.run(args());
    return recv_;
  }
  std::vector<int> native() { return run(*make_alltoallw("native")); }
  std::vector<int>& received() { return recv_; }

 private:
  std::vector<int> send_, recv_, scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<MPI_Datatype> stypes_, rtypes_, owned_;
};

Exchange uniform_exchange(int ints, bool fragmented = false) {
  return Exchange([=](int) { return ints; }, [=](int) { return ints; }, fragmented);
}

// The node layout as auto keys it (the largest node's ranks agreed here independently).
TuningNodeLayout this_layout() {
  const NodeLayout& nodes = node_layout(MPI_COMM_WORLD);
  int largest = 0;
  MPI_Allreduce(&nodes.node_size, &largest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return {test::world_size(), nodes.nodes, largest};
}

std::string layout_json(const TuningNodeLayout& l) {
  return "{\"ranks\": " + std::to_string(l.ranks) + ", \"nodes\": " + std::to_string(l.nodes) +
         ", \"ranks_per_node\": " + std::to_string(l.ranks_per_node) + "}";
}

// A table file of this rank: `entries` is the JSON list's text.
const std::string kClasses =
    "{\"name\": \"contiguous\", \"contiguous\": true},"
    " {\"name\": \"block64\", \"max_block_bytes\": 512}, {\"name\": \"block4K\", \"max_block_bytes\": null}";

std::string write_table(const std::string& name, const std::string& entries, const std::string& head = "",
                        const std::string& classes = kClasses) {
  const std::string path = "/tmp/tb_test_auto_" + std::to_string(getpid()) + "_" + name + ".json";
  std::ofstream out(path);
  out << (head.empty() ? "{\"format\": \"tb-alltoallw-tuning\", \"version\": 1, \"metadata\": {}," : head)
      << "\"layout_classes\": [" << classes << "], \"entries\": [" << entries << "]}\n";
  return path;
}

std::string entry(const std::string& klass, const std::string& band, const std::string& algorithm,
                  const std::string& more = "", const TuningNodeLayout* layout = nullptr) {
  const TuningNodeLayout here = layout ? *layout : this_layout();
  return "{\"node_layout\": " + layout_json(here) + ", \"layout_class\": \"" + klass + "\", \"bytes_per_peer\": " +
         band + ", \"algorithm\": \"" + algorithm + "\"" + (more.empty() ? "" : ", " + more) + "}";
}

bool starts_with(const std::string& text, const std::string& head) { return text.rfind(head, 0) == 0; }

// The same path text on every rank.
bool same_on_every_rank(const std::string& text) {
  const std::int64_t hash = static_cast<std::int64_t>(std::hash<std::string>{}(text) & 0x7fffffffffff);
  std::int64_t low = 0, high = 0;
  MPI_Allreduce(&hash, &low, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &high, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return low == high;
}

// What the built-in rule picks below 1 MiB per peer: pairwise on one rank (a local copy), else native.
std::string rule_below_1mib() { return test::world_size() == 1 ? "pairwise" : "native"; }

TEST(Auto, WithoutATableTheBuiltInRuleDecidesAndSaysSo) {
  test::ScopedEnv none("TB_TUNING_TABLE", "");
  auto algorithm = make_alltoallw("auto");
  Exchange small = uniform_exchange(4);
  EXPECT_EQ(small.run(*algorithm), small.native());
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto (built-in rule) -> " + rule_below_1mib())) << algorithm->last_path();
  // 1 MiB per peer: node_leader on one node with more than one rank, native otherwise.
  Exchange large = uniform_exchange(1 << 18);
  EXPECT_EQ(large.run(*algorithm), large.native());
  const TuningNodeLayout layout = this_layout();
  const std::string expect = layout.ranks > 1 && layout.nodes == 1 ? "node_leader" : rule_below_1mib();
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto (built-in rule) -> " + expect)) << algorithm->last_path();
}

TEST(Auto, FollowsTheTableAndMatchesNative) {
  const std::string path = write_table(
      "follows", entry("contiguous", "[0, null]", "pairwise") + "," + entry("block64", "[0, null]", "pack_alltoallv"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  auto algorithm = make_alltoallw("auto");
  Exchange contiguous = uniform_exchange(100);
  EXPECT_EQ(contiguous.run(*algorithm), contiguous.native());
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  Exchange fragmented = uniform_exchange(64, true);  // 8-byte blocks: class block64
  EXPECT_EQ(fragmented.run(*algorithm), fragmented.native());
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pack_alltoallv")) << algorithm->last_path();
  std::remove(path.c_str());
}

// A table with entries measured in the prepared forms: blocking calls never see them, prepared
// calls take them and say so; a blocking entry and a persistent one may cover the same band.
TEST(Auto, PreparedCallsFollowThePersistentEntries) {
  const std::string path = write_table("persistent", entry("contiguous", "[0, null]", "pairwise") + "," +
                                                         entry("contiguous", "[0, null]", "pack_alltoallv",
                                                               "\"calls\": \"persistent\""));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  Exchange call = uniform_exchange(50);
  const std::vector<int> expect = call.native();
  auto algorithm = make_alltoallw("auto");
  EXPECT_EQ(call.run(*algorithm), expect);
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  auto prepared = algorithm->prepare(call.args());
  EXPECT_TRUE(starts_with(prepared->last_path(), "auto (persistent measurements) -> pack_alltoallv"))
      << prepared->last_path();
  for (int i = 0; i < 2; ++i) {
    std::fill(call.received().begin(), call.received().end(), -1);
    prepared->start();
    EXPECT_EQ(call.received(), expect);
  }
  EXPECT_EQ(call.run(*algorithm), expect);  // the blocking decision is kept apart from the prepared one
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  std::remove(path.c_str());
}

// Rank 0's own class is small (4 B per peer), every other rank's is large (its self block): the
// table picks pairwise for small and pack_alltoallv for large, and every rank must run the SAME
// one (the largest class, pack_alltoallv). Without the agreement this hangs or mixes paths.
TEST(Auto, UnequalSizesPerRankStillRunOneAlgorithm) {
  const std::string path = write_table("unequal", entry("contiguous", "[0, 64]", "pairwise") + "," +
                                                      entry("contiguous", "[65, null]", "pack_alltoallv"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  const int rank = test::world_rank();
  const auto ints = [rank](int p) { return p == rank && rank != 0 ? 1000 : 1; };
  Exchange call(ints, ints);
  const CallClass mine = classify_call(call.args(), {test::world_size(), rank, false});
  if (test::world_size() > 1) {
    EXPECT_EQ(mine.bytes_per_peer <= 64, rank == 0) << mine.bytes_per_peer;
  }
  auto algorithm = make_alltoallw("auto");
  EXPECT_EQ(call.run(*algorithm), call.native());
  const std::string expect = test::world_size() > 1 ? "auto -> pack_alltoallv" : "auto -> pairwise";
  EXPECT_TRUE(starts_with(algorithm->last_path(), expect)) << algorithm->last_path();
  EXPECT_TRUE(same_on_every_rank(algorithm->last_path())) << algorithm->last_path();
  std::remove(path.c_str());
}

// The same for a prepared call where only the entries a prepared call looks up depend on the
// class: the blocking entries are one algorithm (no agreement for blocking calls), the persistent
// (or prepared) ones split by size, so the prepared call must still agree. The paths are compared
// before any start, so a missing agreement fails here rather than hanging in mismatched exchanges.
TEST(Auto, UnequalSizesPerRankStillPrepareOneAlgorithm) {
  for (const std::string kind : {"persistent", "prepared"}) {
    const std::string calls = "\"calls\": \"" + kind + "\"";
    const std::string path =
        write_table("unequal_" + kind, entry("contiguous", "[0, null]", "pairwise") + "," +
                                           entry("contiguous", "[0, 64]", "pairwise", calls) + "," +
                                           entry("contiguous", "[65, null]", "pack_alltoallv", calls));
    test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
    const int rank = test::world_rank();
    const auto ints = [rank](int p) { return p == rank && rank != 0 ? 1000 : 1; };
    Exchange call(ints, ints);
    const std::vector<int> expect = call.native();
    auto algorithm = make_alltoallw("auto");
    auto prepared = algorithm->prepare(call.args());
    const std::string how = kind == "persistent" ? "persistent measurements" : "per-size bands for prepared calls";
    const std::string chosen = test::world_size() > 1 ? "pack_alltoallv" : "pairwise";
    EXPECT_TRUE(starts_with(prepared->last_path(), "auto (" + how + ") -> " + chosen)) << prepared->last_path();
    ASSERT_TRUE(same_on_every_rank(prepared->last_path())) << prepared->last_path();
    std::fill(call.received().begin(), call.received().end(), -1);
    prepared->start();
    EXPECT_EQ(call.received(), expect) << kind;
    EXPECT_EQ(call.run(*algorithm), expect) << kind;  // blocking calls take the blocking entry
    EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
    std::remove(path.c_str());
  }
}

// A prepared call looks up the persistent entries first, then the prepared ones, then the
// blocking ones: each table below differs from the one before by one more kind of entry.
TEST(Auto, PreparedCallsTakePersistentThenPreparedThenBlockingEntries) {
  const std::string blocking = entry("contiguous", "[0, null]", "pairwise");
  const std::string prepared = entry("contiguous", "[0, null]", "pack_alltoallv", "\"calls\": \"prepared\"");
  const std::string persistent = entry("contiguous", "[0, null]", "native", "\"calls\": \"persistent\"");
  const std::vector<std::pair<std::string, std::string>> cases{
      {blocking, "auto -> pairwise"},
      {blocking + "," + prepared, "auto (per-size bands for prepared calls) -> pack_alltoallv"},
      {blocking + "," + prepared + "," + persistent, "auto (persistent measurements) -> native"},
  };
  Exchange call = uniform_exchange(50);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = write_table("order" + std::to_string(i), cases[i].first);
    test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
    auto algorithm = make_alltoallw("auto");
    auto started = algorithm->prepare(call.args());
    EXPECT_TRUE(starts_with(started->last_path(), cases[i].second)) << i << ": " << started->last_path();
    std::remove(path.c_str());
  }
}

// The same agreement, counted: on one node through shared memory (NodeMax), and with
// TB_AUTO_AGREEMENT=each-call-allreduce through MPI_Allreduce, both to the same choice.
TEST(Auto, OnOneNodeTheAgreementGoesThroughSharedMemory) {
  if (test::world_size() == 1) GTEST_SKIP() << "one rank agrees with no one";
  if (this_layout().nodes != 1) GTEST_SKIP() << "the ranks are on more than one (emulated) node: MPI_Allreduce";
  const std::string path = write_table("shared", entry("contiguous", "[0, 64]", "pairwise") + "," +
                                                     entry("contiguous", "[65, null]", "pack_alltoallv"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  const int rank = test::world_rank();
  const auto ints = [rank](int p) { return p == rank && rank != 0 ? 1000 : 1; };
  Exchange call(ints, ints);
  for (const char* agreement : {"each-call", "each-call-allreduce"}) {
    test::ScopedEnv how("TB_AUTO_AGREEMENT", agreement);
    auto algorithm = make_alltoallw("auto");
    const std::int64_t before = shared_memory_agreements();
    for (int repeat = 0; repeat < 3; ++repeat) EXPECT_EQ(call.run(*algorithm), call.native()) << agreement;
    EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pack_alltoallv")) << algorithm->last_path();
    const bool shared = std::string(agreement) == "each-call";
    EXPECT_EQ(shared_memory_agreements() - before, shared ? 3 : 0) << agreement;
  }
  std::remove(path.c_str());
}

// NodeMax against MPI_Allreduce over many calls, with ranks that run ahead of and behind each
// other (a rank may publish its next call while a slower one still reads the last).
TEST(NodeMax, EqualsMpiAllreduceOverManyCallsAndUnevenRanks) {
  auto node_max = NodeMax::create(MPI_COMM_WORLD);
  if (!node_max) {
    ASSERT_NE(this_layout().nodes, 1) << "all ranks share one node, yet no NodeMax was made";
    GTEST_SKIP() << "the ranks do not share one node";
  }
  const unsigned seed = 20261202;
  std::printf("NodeMax: seed %u\n", seed);
  std::mt19937_64 random(seed + static_cast<unsigned>(test::world_rank()));
  std::uniform_int_distribution<std::int64_t> value(-1000000, 1000000);
  // No ASSERT inside the loops: a rank that left early would leave its peers waiting in max().
  int first_wrong = -1;
  for (int call = 0; call < 500; ++call) {
    const NodeMax::Values mine{value(random), value(random), value(random)};
    if (random() % 97 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const NodeMax::Values got = node_max->max(mine);
    NodeMax::Values expect{};
    MPI_Allreduce(mine.data(), expect.data(), NodeMax::kValues, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (got != expect && first_wrong < 0) first_wrong = call;
  }
  EXPECT_EQ(first_wrong, -1) << "the first call whose maximum differs from MPI_Allreduce's";
  // Back to back without the allreduce between: the two slots alternate under a peer one call ahead.
  first_wrong = -1;
  std::int64_t last = 0;
  for (int call = 1; call <= 1000; ++call) {
    const NodeMax::Values got = node_max->max({call * 10 + test::world_rank(), -call, 0});
    const NodeMax::Values expect{call * 10 + test::world_size() - 1, -call, 0};
    if (got != expect && first_wrong < 0) first_wrong = call;
    last = got[0];
  }
  EXPECT_EQ(first_wrong, -1) << "the first back-to-back call with a wrong maximum";
  EXPECT_EQ(node_max->calls(), 1500);
  EXPECT_EQ(last, 10000 + test::world_size() - 1);
}

// A rank waiting in max() keeps its MPI library progressing: rank 1 blocks in an MPI_Send into a
// receive rank 0 posted before it waits (test::BlockedSend), so rank 1 reaches max() only through
// rank 0's progress. A hang is this test's failure (the ctest timeout ends it).
TEST(NodeMax, WaitingKeepsTheMpiLibraryProgressing) {
  auto node_max = NodeMax::create(MPI_COMM_WORLD);
  const int me = test::world_rank();
  if (!node_max || test::world_size() < 2) GTEST_SKIP() << "needs two ranks sharing one node";
  test::BlockedSend blocked(MPI_COMM_WORLD);
  const NodeMax::Values got = node_max->max({me, 0, 0});
  EXPECT_EQ(got[0], test::world_size() - 1);
  EXPECT_TRUE(blocked.arrived());
}

// The same with a table none of whose algorithms this build has: the built-in rule decides, and on
// one node it depends on the size (node_leader from 1 MiB per peer), so the ranks agree here too.
TEST(Auto, UnequalSizesUnderTheBuiltInRuleStillRunOneAlgorithm) {
  const std::string path = write_table("unequal_rule", entry("contiguous", "[0, null]", "no_such_algorithm"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  const int rank = test::world_rank(), size = test::world_size();
  const auto ints = [rank, size](int p) { return p == rank && rank != 0 ? size * (1 << 18) : 1; };
  Exchange call(ints, ints);
  auto algorithm = make_alltoallw("auto");
  EXPECT_EQ(call.run(*algorithm), call.native());
  const TuningNodeLayout layout = this_layout();
  const std::string expect = size > 1 && layout.nodes == 1 ? "node_leader" : rule_below_1mib();
  EXPECT_TRUE(starts_with(algorithm->last_path(),
                          "auto (built-in rule: the table's no_such_algorithm is not in this build) -> " + expect))
      << algorithm->last_path();
  EXPECT_TRUE(same_on_every_rank(algorithm->last_path())) << algorithm->last_path();
  std::remove(path.c_str());
}

TEST(Auto, SkipsAlgorithmsThisBuildLacksAndLayoutsTheTableLacks) {
  const std::string alternatives =
      write_table("alternatives", entry("contiguous", "[0, null]", "no_such_algorithm",
                                        "\"alternatives\": [\"also_missing\", \"pairwise\", \"native\"]"));
  const std::string none = write_table("none", entry("contiguous", "[0, null]", "no_such_algorithm"));
  TuningNodeLayout elsewhere = this_layout();
  elsewhere.ranks += 7;  // a layout ranks can have, not this job's
  elsewhere.ranks_per_node += 7;
  const std::string other = write_table("other", entry("contiguous", "[0, null]", "pairwise", "", &elsewhere));
  Exchange call = uniform_exchange(10);
  auto algorithm = make_alltoallw("auto");
  {
    test::ScopedEnv table("TB_TUNING_TABLE", alternatives.c_str());
    EXPECT_EQ(call.run(*algorithm), call.native());
    EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  }
  {
    test::ScopedEnv table("TB_TUNING_TABLE", none.c_str());
    EXPECT_EQ(call.run(*algorithm), call.native());
    EXPECT_TRUE(starts_with(algorithm->last_path(),
                            "auto (built-in rule: the table's no_such_algorithm is not in this build) -> " +
                                rule_below_1mib()))
        << algorithm->last_path();
  }
  {
    test::ScopedEnv table("TB_TUNING_TABLE", other.c_str());
    EXPECT_EQ(call.run(*algorithm), call.native());
    EXPECT_TRUE(starts_with(algorithm->last_path(), "auto (built-in rule: the table has no entry for ")) << algorithm->last_path();
  }
  for (const auto& p : {alternatives, none, other}) std::remove(p.c_str());
}

// Each bad table: the error names the file and what is wrong, on every rank, before any exchange.
TEST(Auto, BadTablesAreClearErrors) {
  const std::string ok = entry("contiguous", "[0, null]", "pairwise");
  struct Case {
    std::string name, path, expect;
  };
  const std::string missing = "/tmp/tb_test_auto_no_such_dir/table.json";
  std::string wrapped = entry("contiguous", "[0, null]", "pairwise");  // 4294967298 read as an int is 2
  wrapped.replace(wrapped.find("\"ranks\": ") + 9, std::to_string(this_layout().ranks).size(), "4294967298");
  const TuningNodeLayout impossible{2, 5, 7};
  std::vector<Case> cases{
      {"missing", missing, "cannot be read"},
      {"version", write_table("version", ok, "{\"format\": \"tb-alltoallw-tuning\", \"version\": 2,"), "version 2"},
      {"format", write_table("format", ok, "{\"format\": \"something-else\", \"version\": 1,"), "\"format\""},
      {"self", write_table("self", entry("contiguous", "[0, null]", "auto")), "auto cannot choose itself"},
      {"class", write_table("class", entry("no_class", "[0, null]", "pairwise")), "no_class"},
      {"band", write_table("band", entry("contiguous", "[10, 5]", "pairwise")), "max below min"},
      {"overlap", write_table("overlap", ok + "," + entry("contiguous", "[8, 9]", "native")), "overlap"},
      {"field", write_table("field", "{\"layout_class\": \"contiguous\"}"), "node_layout"},
      {"calls", write_table("calls", entry("contiguous", "[0, null]", "pairwise", "\"calls\": \"sometimes\"")),
       "\"calls\" must be"},
      {"persistent overlap",
       write_table("poverlap", entry("contiguous", "[0, null]", "pairwise", "\"calls\": \"persistent\"") + "," +
                                   entry("contiguous", "[8, 9]", "native", "\"calls\": \"persistent\"")),
       "two persistent entries"},
      {"prepared overlap",
       write_table("preoverlap", entry("contiguous", "[0, null]", "pairwise", "\"calls\": \"prepared\"") + "," +
                                     entry("contiguous", "[8, 9]", "native", "\"calls\": \"prepared\"")),
       "two prepared entries"},
      {"prepared alone", write_table("prealone", entry("contiguous", "[0, null]", "pairwise", "\"calls\": \"prepared\"")),
       "need blocking entries"},
      // Integers beyond an int must not wrap onto this job's layout or version 1.
      {"ranks wrap", write_table("rankswrap", wrapped),
       "\"ranks\" must be an integer from 1 to 2147483647, not 4294967298"},
      {"version wrap", write_table("versionwrap", ok, "{\"format\": \"tb-alltoallw-tuning\", \"version\": 4294967297,"),
       "version 4294967297"},
      {"impossible layout", write_table("nolayout", entry("contiguous", "[0, null]", "pairwise", "", &impossible)),
       "2 ranks cannot lie on 5 nodes"},
      {"unknown entry key",
       write_table("entrykey", entry("contiguous", "[0, null]", "pairwise", "\"alternatves\": [\"native\"]")),
       "entries[0]: unknown key \"alternatves\""},
      {"unknown table key", write_table("tablekey", ok, "{\"format\": \"tb-alltoallw-tuning\", \"version\": 1, \"entires\": [],"),
       "the table: unknown key \"entires\""},
      {"class twice", write_table("classtwice", ok, "", kClasses + ", {\"name\": \"contiguous\", \"contiguous\": true}"),
       "layout_classes[3]: the name \"contiguous\" is taken by layout_classes[0]"},
      {"contiguous text", write_table("contiguoustext", ok, "", "{\"name\": \"contiguous\", \"contiguous\": \"yes\"}"),
       "\"contiguous\" must be true or false, not \"yes\""},
  };
  const std::string not_json = "/tmp/tb_test_auto_" + std::to_string(getpid()) + "_not_json.json";
  std::ofstream(not_json) << "{ not json";
  cases.push_back({"not json", not_json, "not valid JSON"});
  const std::string empty = "/tmp/tb_test_auto_" + std::to_string(getpid()) + "_empty.json";
  std::ofstream(empty) << "";
  cases.push_back({"empty", empty, "is empty"});
  const std::string directory = "/tmp/tb_test_auto_" + std::to_string(getpid()) + "_directory";
  std::filesystem::create_directory(directory);
  cases.push_back({"directory", directory, "is a directory"});
  Exchange call = uniform_exchange(4);
  for (const auto& c : cases) {
    test::ScopedEnv table("TB_TUNING_TABLE", c.path.c_str());
    auto algorithm = make_alltoallw("auto");
    for (const std::string where : {"run", "check_settings"}) {
      try {
        if (where == "run") algorithm->run(call.args());
        else check_settings();
        ADD_FAILURE() << c.name << ": " << where << " accepted " << c.path;
      } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(c.path), std::string::npos) << c.name << ": " << what;
        EXPECT_NE(what.find(c.expect), std::string::npos) << c.name << ": " << what;
      }
    }
    if (c.path != missing) std::remove(c.path.c_str());
  }
  // The communicator is still usable: a correct call after the errors.
  test::ScopedEnv none("TB_TUNING_TABLE", "");
  auto algorithm = make_alltoallw("auto");
  EXPECT_EQ(call.run(*algorithm), call.native());
}

TEST(Auto, ThePreparedFormSaysWhatItChose) {
  Exchange call = uniform_exchange(50);
  const std::vector<int> expect = call.native();
  auto algorithm = make_alltoallw("auto");
  {
    test::ScopedEnv none("TB_TUNING_TABLE", "");
    auto prepared = algorithm->prepare(call.args());
    EXPECT_TRUE(starts_with(prepared->last_path(), "auto (built-in rule) -> " + rule_below_1mib())) << prepared->last_path();
    std::fill(call.received().begin(), call.received().end(), -1);
    prepared->start();
    EXPECT_EQ(call.received(), expect);
  }
  const std::string path = write_table("prepared", entry("contiguous", "[0, null]", "pairwise"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  auto prepared = algorithm->prepare(call.args());
  EXPECT_TRUE(starts_with(prepared->last_path(), "auto -> pairwise")) << prepared->last_path();
  for (int i = 0; i < 3; ++i) {
    std::fill(call.received().begin(), call.received().end(), -1);
    prepared->start();
    EXPECT_EQ(call.received(), expect);
  }
  EXPECT_TRUE(starts_with(prepared->last_path(), "auto -> pairwise")) << prepared->last_path();
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  std::remove(path.c_str());
}

// A repeated call reuses the class auto worked out for it, but only while its counts and types
// are the same: counts changed in place, and a freed type whose handle a new type takes (MPI
// reuses handles), are classified again. The table gives each of the three a different choice.
TEST(Auto, RepeatedCallsAreClassifiedAgainWhenTheirCountsOrTypesChange) {
  const std::string path = write_table("memo", entry("contiguous", "[0, 64]", "pairwise") + "," +
                                                    entry("contiguous", "[65, null]", "pack_alltoallv") + "," +
                                                    entry("block64", "[0, null]", "native"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  const int size = test::world_size(), rank = test::world_rank();
  constexpr int kInts = 16, kSpan = 4 * kInts;  // per peer: 16 ints as 8 two-int blocks, or 32 ints
  std::vector<int> send(static_cast<std::size_t>(size) * kSpan), recv(send.size()), scounts(size, 1),
      rcounts(size, kInts), sdispls(size), rdispls(size);
  for (int p = 0; p < size; ++p) sdispls[p] = rdispls[p] = p * kSpan * static_cast<int>(sizeof(int));
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = rank * 100000 + static_cast<int>(i);
  std::vector<MPI_Datatype> stypes(size), rtypes(size, MPI_INT);
  const AlltoallwArgs args{send.data(), scounts.data(), sdispls.data(), stypes.data(), recv.data(),
                           rcounts.data(), rdispls.data(), rtypes.data(), MPI_COMM_WORLD};
  auto algorithm = make_alltoallw("auto");
  const auto run = [&](AlltoallwAlgorithm& a) {
    std::fill(recv.begin(), recv.end(), -1);
    a.run(args);
    return recv;
  };
  const auto expect_path = [&](const std::string& chosen) {
    const std::vector<int> got = run(*algorithm);
    EXPECT_EQ(got, run(*make_alltoallw("native"))) << chosen;
    EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> " + chosen)) << algorithm->last_path();
  };
  MPI_Datatype type;
  MPI_Type_vector(kInts / 2, 2, 4, MPI_INT, &type);
  MPI_Type_commit(&type);
  std::fill(stypes.begin(), stypes.end(), type);
  expect_path("native");  // 8-byte blocks
  expect_path("native");  // the same call again, from the memo
  const MPI_Datatype freed = type;
  MPI_Type_free(&type);
  MPI_Type_contiguous(kInts, MPI_INT, &type);
  MPI_Type_commit(&type);
  std::fill(stypes.begin(), stypes.end(), type);
  std::printf("# the contiguous type %s the freed vector type's handle\n", type == freed ? "reuses" : "does not reuse");
  expect_path("pairwise");  // 64 contiguous bytes per peer
  std::fill(scounts.begin(), scounts.end(), 2);
  std::fill(rcounts.begin(), rcounts.end(), 2 * kInts);
  expect_path("pack_alltoallv");  // the same arrays, counts changed in place: 128 bytes per peer
  MPI_Type_free(&type);
  std::remove(path.c_str());
}

// auto keeps the state of the last communicator it ran on; a freed communicator's handle, taken
// by the next communicator (MPI reuses handles), must not bring that state back. The table gives
// the world's node layout pairwise and a one-rank communicator pack_alltoallv.
TEST(Auto, AFreedCommunicatorsReusedHandleGetsItsOwnState) {
  if (test::world_size() < 2) GTEST_SKIP() << "needs a node layout other than one rank";
  const TuningNodeLayout world = this_layout(), single{1, 1, 1};
  const std::string path = write_table("comms", entry("contiguous", "[0, null]", "pairwise", "", &world) + "," +
                                                     entry("contiguous", "[0, null]", "pack_alltoallv", "", &single));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  auto algorithm = make_alltoallw("auto");
  Exchange call = uniform_exchange(3);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  AlltoallwArgs args = call.args();
  args.comm = dup;
  algorithm->run(args);
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pairwise")) << algorithm->last_path();
  const MPI_Comm freed = dup;
  MPI_Comm_free(&dup);
  MPI_Comm alone;
  MPI_Comm_split(MPI_COMM_WORLD, test::world_rank(), 0, &alone);
  std::printf("# the one-rank communicator %s the freed one's handle\n", alone == freed ? "reuses" : "does not reuse");
  int one = 1, zero = 0, sent = 1000 + test::world_rank(), received = -1;
  MPI_Datatype type = MPI_INT;
  algorithm->run({&sent, &one, &zero, &type, &received, &one, &zero, &type, alone});
  EXPECT_EQ(received, sent);
  EXPECT_TRUE(starts_with(algorithm->last_path(), "auto -> pack_alltoallv")) << algorithm->last_path();
  MPI_Comm_free(&alone);
  std::remove(path.c_str());
}

// TB_AUTO_AGREEMENT=assume-same: no agreement, and the path says so where one would have run.
// Under TB_CHECKED=1 a false assertion (rank 0's own class chooses pairwise, the others' choose
// pack_alltoallv) is an error on every rank naming the setting, before any exchange; the
// communicator stays usable.
TEST(Auto, AssumeSameSkipsTheAgreementAndCheckedModeCatchesAFalseAssertion) {
  const std::string path = write_table("assume", entry("contiguous", "[0, 64]", "pairwise") + "," +
                                                      entry("contiguous", "[65, null]", "pack_alltoallv"));
  test::ScopedEnv table("TB_TUNING_TABLE", path.c_str());
  test::ScopedEnv assume("TB_AUTO_AGREEMENT", "assume-same");
  const int size = test::world_size(), rank = test::world_rank();
  Exchange uniform = uniform_exchange(4);
  auto algorithm = make_alltoallw("auto");
  EXPECT_EQ(uniform.run(*algorithm), uniform.native());
  const std::string expect = size > 1 ? "auto (assume-same) -> pairwise" : "auto -> pairwise";
  EXPECT_TRUE(starts_with(algorithm->last_path(), expect)) << algorithm->last_path();
  if (size == 1) return;  // one rank has no one to disagree with
  test::ScopedEnv checked("TB_CHECKED", "1");
  const auto ints = [rank](int p) { return p == rank && rank != 0 ? 1000 : 1; };
  Exchange unequal(ints, ints);
  try {
    algorithm->run(unequal.args());
    ADD_FAILURE() << "a false TB_AUTO_AGREEMENT=assume-same was not caught under TB_CHECKED=1";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TB_AUTO_AGREEMENT=assume-same"), std::string::npos) << e.what();
  }
  EXPECT_EQ(uniform.run(*algorithm), uniform.native());
  std::remove(path.c_str());
}

// The classification itself, on this rank: sizes, blocks, contiguity.
TEST(Auto, ClassifiesSizesAndBlocks) {
  const AlltoallwComm comm{test::world_size(), test::world_rank(), false};
  Exchange contiguous = uniform_exchange(256);
  const CallClass a = classify_call(contiguous.args(), comm);
  EXPECT_EQ(a.bytes_per_peer, 1024);
  EXPECT_TRUE(a.contiguous);
  EXPECT_EQ(a.block_bytes, 1024);
  Exchange fragmented = uniform_exchange(256, true);
  const CallClass b = classify_call(fragmented.args(), comm);
  EXPECT_EQ(b.bytes_per_peer, 1024);
  EXPECT_FALSE(b.contiguous);
  EXPECT_EQ(b.block_bytes, 8);
}

}  // namespace
}  // namespace tb
