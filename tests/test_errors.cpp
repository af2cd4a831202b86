// Errors and their MPI classes (collectives/algorithm_support.hpp has the table): the argument
// checks of run(), size mismatches between sender and receiver in every registered algorithm
// without and with TB_CHECKED, and checked mode on an intercommunicator. Every case must end on
// every rank (no rank left waiting), write nothing past the receive layout or past what arrived,
// and leave the algorithm able to run the next correct call. State cached on a communicator is
// attached on every rank or on none.
#include "collectives/alltoallw.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/every_rank.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "mpi_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

namespace tb {
namespace {

constexpr int kStride = 8;  // ints per block; a correct call moves 2, the rest are guards

// A call of 2 ints to and from every peer, in blocks of kStride ints.
struct Case {
  int P = 0, me = 0;
  std::vector<int> send, recv, scounts, rcounts, displs;
  std::vector<MPI_Datatype> stypes, rtypes;
  MPI_Comm comm = MPI_COMM_WORLD;

  explicit Case(MPI_Comm c = MPI_COMM_WORLD) : comm(c) {
    int inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter) {
      MPI_Comm_remote_size(comm, &P);
    } else {
      MPI_Comm_size(comm, &P);
    }
    MPI_Comm_rank(comm, &me);
    reset();
  }
  void reset() {
    const auto n = static_cast<std::size_t>(P);
    send.assign(n * kStride, 0);
    recv.assign(n * kStride, -1);
    scounts.assign(n, 2);
    rcounts.assign(n, 2);
    displs.resize(n);
    stypes.assign(n, MPI_INT);
    rtypes.assign(n, MPI_INT);
    for (int p = 0; p < P; ++p) {
      displs[p] = p * kStride * static_cast<int>(sizeof(int));
      for (int i = 0; i < kStride; ++i) send[p * kStride + i] = me * 1000 + p * 10 + i;
    }
  }
  AlltoallwArgs args() {
    return {send.data(), scounts.data(), displs.data(), stypes.data(), recv.data(), rcounts.data(), displs.data(),
            rtypes.data(), comm};
  }
  // Wrong elements after a correct call.
  int wrong() const {
    int bad = 0;
    for (int p = 0; p < P; ++p)
      for (int i = 0; i < kStride; ++i)
        bad += recv[p * kStride + i] != (i < 2 ? p * 1000 + me * 10 + i : -1);
    return bad;
  }
  bool untouched() const {
    return std::all_of(recv.begin(), recv.end(), [](int v) { return v == -1; });
  }
  bool guards_untouched(int block, int first) const {
    for (int i = first; i < kStride; ++i)
      if (recv[block * kStride + i] != -1) return false;
    return true;
  }
};

// The MPI class a call ended with (MPI_SUCCESS when it did not throw), and its message.
struct Outcome {
  int error_class = MPI_SUCCESS;
  std::string what;
};
Outcome outcome(const std::function<void()>& f) {
  Outcome o;
  try {
    f();
  } catch (const MpiError& e) {
    PMPI_Error_class(e.code(), &o.error_class);
    o.what = e.what();
  } catch (const std::exception& e) {
    o.error_class = -1;  // not an MPI error: always a test failure
    o.what = e.what();
  }
  return o;
}

// A correct call after a misuse returns correct data on every rank.
void expect_next_call_correct(AlltoallwAlgorithm& a, Case& c, const std::string& after) {
  c.reset();
  const Outcome o = outcome([&] { a.run(c.args()); });
  EXPECT_EQ(o.error_class, MPI_SUCCESS) << a.name() << " after " << after << ": " << o.what;
  EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0)
      << a.name() << " after " << after;
}

TEST(ArgumentErrors, CarryMpiClasses) {
  const int P = test::world_size();
  std::vector<int> zeros(static_cast<std::size_t>(P), 0), counts = zeros, rcounts = zeros;
  std::vector<MPI_Datatype> types(static_cast<std::size_t>(P), MPI_INT), rtypes = types;
  int x = 0;
  counts[0] = -2;  // on every rank, with every other count zero: the exchange still completes
  rtypes[0] = MPI_DATATYPE_NULL;
  for (const auto& info : alltoallw_algorithms()) {
    auto a = info.make();
    Outcome o = outcome(
        [&] { a->run({&x, zeros.data(), zeros.data(), types.data(), &x, zeros.data(), zeros.data(), types.data(), MPI_COMM_NULL}); });
    EXPECT_EQ(o.error_class, MPI_ERR_COMM) << info.name << ": " << o.what;
    o = outcome([&] { a->run({&x, zeros.data(), zeros.data(), types.data(), &x, nullptr, zeros.data(), types.data(), MPI_COMM_WORLD}); });
    EXPECT_EQ(o.error_class, MPI_ERR_ARG) << info.name << ": " << o.what;
    o = outcome([&] { a->run({&x, counts.data(), zeros.data(), types.data(), &x, zeros.data(), zeros.data(), types.data(), MPI_COMM_WORLD}); });
    EXPECT_EQ(o.error_class, MPI_ERR_COUNT) << info.name << ": " << o.what;
    EXPECT_NE(o.what.find("sendcounts[0] = -2"), std::string::npos) << o.what;
    rcounts[0] = 1;
    o = outcome([&] { a->run({&x, zeros.data(), zeros.data(), types.data(), &x, rcounts.data(), zeros.data(), rtypes.data(), MPI_COMM_WORLD}); });
    rcounts[0] = 0;
    EXPECT_EQ(o.error_class, MPI_ERR_TYPE) << info.name << ": " << o.what;
    EXPECT_NE(o.what.find("recvtypes[0] is MPI_DATATYPE_NULL"), std::string::npos) << o.what;
    Case c;
    expect_next_call_correct(*a, c, "argument errors");
  }
  // The check on its own gives the same classes.
  const Outcome o = outcome([&] {
    check_alltoallw_args({&x, counts.data(), zeros.data(), types.data(), &x, zeros.data(), zeros.data(), types.data(), MPI_COMM_WORLD}, "check");
  });
  EXPECT_EQ(o.error_class, MPI_ERR_COUNT) << o.what;
}

// A negative count on one rank: that rank raises MPI_ERR_COUNT after taking part with the block
// empty, so a peer whose block with it is empty too completes with correct data.
TEST(ArgumentErrors, NegativeCountOnOneRankDoesNotStallPeers) {
  for (const auto& info : alltoallw_algorithms()) {
    auto a = info.make();
    Case c;
    const int last = c.P - 1;
    if (c.me == 0) c.rcounts[last] = -1;
    if (c.me == last) c.scounts[0] = 0;
    const Outcome o = outcome([&] { a->run(c.args()); });
    if (c.me == 0) {
      EXPECT_EQ(o.error_class, MPI_ERR_COUNT) << info.name << ": " << o.what;
      EXPECT_TRUE(c.guards_untouched(last, 0)) << info.name;
    } else {
      EXPECT_EQ(o.error_class, MPI_SUCCESS) << info.name << ": " << o.what;
      EXPECT_EQ(c.wrong(), 0) << info.name;
    }
    expect_next_call_correct(*a, c, "a negative count on rank 0");
  }
}

// One misuse: rank 0 changes a send count; `receiver` expects 2 ints from rank 0.
struct Misuse {
  const char* name;
  int expected;  // class
  bool self;     // rank 0's self block, else its block for the last rank
  int count;     // what rank 0 sends instead of 2
};
const Misuse kMisuses[] = {
    {"larger", MPI_ERR_TRUNCATE, false, 3},
    {"smaller", MPI_ERR_COUNT, false, 1},
    {"self", MPI_ERR_TRUNCATE, true, 3},
    {"self-smaller", MPI_ERR_COUNT, true, 1},
};

// Without TB_CHECKED: the receiver of the bad block raises its class (native: the MPI library's
// answer, not asserted), every other rank completes or raises the same class, nothing is written
// past the receive block or past what arrived, and the next call is correct.
// auto gives the answers of the algorithm it chooses, each of which has its own turn here (on
// calls this small its built-in rule chooses native on more than one rank).
TEST(Mismatch, ReceiverRaisesAndNothingPastTheLayoutIsWritten) {
  for (const auto& info : alltoallw_algorithms()) {
    if (info.name == "native" || info.name == "auto") continue;
    auto a = info.make();
    for (const Misuse& m : kMisuses) {
      Case c;
      const int receiver = m.self ? 0 : c.P - 1;
      if (c.me == 0) c.scounts[receiver] = m.count;
      const Outcome o = outcome([&] { a->run(c.args()); });
      const std::string where = std::string(info.name) + " " + m.name;
      if (c.me == receiver) {
        EXPECT_EQ(o.error_class, m.expected) << where << ": " << o.what;
        // Both figures where the algorithm saw them; where MPI truncated, the receive's.
        EXPECT_TRUE(o.what.find("rank 0 sends " + std::to_string(4 * m.count) + " bytes to rank " +
                                std::to_string(receiver)) != std::string::npos ||
                    o.what.find("rank 0 sends more than the 8 bytes rank " + std::to_string(receiver)) !=
                        std::string::npos)
            << where << ": " << o.what;
        EXPECT_TRUE(c.guards_untouched(0, std::min(m.count, 2))) << where;
      } else if (o.error_class != MPI_SUCCESS) {
        EXPECT_EQ(o.error_class, m.expected) << where << ": " << o.what;
      }
      expect_next_call_correct(*a, c, m.name);
    }
  }
}

// TB_CHECKED=1: every rank raises the class, naming both sides' figures, and nothing moves.
TEST(Checked, EveryRankRaisesBeforeAnythingMoves) {
  test::ScopedEnv on("TB_CHECKED", "1");
  for (const auto& info : alltoallw_algorithms()) {
    auto a = info.make();
    for (const Misuse& m : kMisuses) {
      Case c;
      const int receiver = m.self ? 0 : c.P - 1;
      if (c.me == 0) c.scounts[receiver] = m.count;
      const Outcome o = outcome([&] { a->run(c.args()); });
      const std::string where = std::string(info.name) + " " + m.name;
      EXPECT_EQ(o.error_class, m.expected) << where << ": " << o.what;
      EXPECT_NE(o.what.find("rank 0 sends " + std::to_string(4 * m.count) + " bytes to rank " + std::to_string(receiver) +
                            ", which expects 8"),
                std::string::npos)
          << where << ": " << o.what;
      EXPECT_TRUE(c.untouched()) << where;
      expect_next_call_correct(*a, c, m.name);
    }
    Case c;
    const int last = c.P - 1;
    if (c.me == 0) c.rcounts[last] = -1;
    const Outcome o = outcome([&] { a->run(c.args()); });
    EXPECT_EQ(o.error_class, MPI_ERR_COUNT) << info.name << " negative count: " << o.what;
    EXPECT_TRUE(c.untouched()) << info.name;
    expect_next_call_correct(*a, c, "a negative count under TB_CHECKED");
  }
}

// MPI_COMM_WORLD's lower and upper halves joined by an intercommunicator (errors returned),
// freed with the scope. Needs 2 ranks or more.
struct TwoGroups {
  const bool low = test::world_rank() < test::world_size() / 2;
  MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  TwoGroups() {
    MPI_Comm_split(MPI_COMM_WORLD, low ? 1 : 0, test::world_rank(), &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? test::world_size() / 2 : 0, 77, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  }
  ~TwoGroups() {
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  TwoGroups(const TwoGroups&) = delete;
  TwoGroups& operator=(const TwoGroups&) = delete;
};

// Checked mode on an intercommunicator: both groups learn of a mismatch in either direction.
TEST(Checked, Intercommunicator) {
  if (test::world_size() < 2) GTEST_SKIP() << "needs two groups";
  test::ScopedEnv on("TB_CHECKED", "1");
  const TwoGroups groups;
  const bool low = groups.low;
  const MPI_Comm inter = groups.inter;
  for (const auto& info : alltoallw_algorithms()) {
    auto a = info.make();
    Case c(inter);
    if (low && c.me == 0) c.scounts[0] = 3;  // the other group's rank 0 expects 2
    const Outcome o = outcome([&] { a->run(c.args()); });
    EXPECT_EQ(o.error_class, MPI_ERR_TRUNCATE) << info.name << ": " << o.what;
    EXPECT_TRUE(c.untouched()) << info.name;
    c.reset();
    const Outcome next = outcome([&] { a->run(c.args()); });
    EXPECT_EQ(next.error_class, MPI_SUCCESS) << info.name << ": " << next.what;
    EXPECT_EQ(test::sum_over_ranks(c.wrong()), 0) << info.name;
    EXPECT_EQ(a->last_path(), info.name == "native" ? "native" : "native (intercommunicator)");
  }
}

// The agreements' reductions reach every rank, both groups of an intercommunicator included:
// the range of the world ranks, over the world and over the two halves joined.
TEST(EveryRank, RangeAndMaximumCoverBothGroupsOfAnIntercommunicator) {
  const std::int64_t rank = test::world_rank(), last = test::world_size() - 1;
  std::int64_t low = -1, high = -1, max = -1;
  ASSERT_EQ(range_over_every_rank(rank, MPI_COMM_WORLD, &low, &high), MPI_SUCCESS);
  EXPECT_EQ(low, 0);
  EXPECT_EQ(high, last);
  if (test::world_size() < 2) return;  // an intercommunicator needs two groups
  const TwoGroups groups;
  low = high = -1;
  ASSERT_EQ(range_over_every_rank(rank, groups.inter, &low, &high), MPI_SUCCESS);
  ASSERT_EQ(max_over_every_rank(rank, groups.inter, &max), MPI_SUCCESS);
  EXPECT_EQ(low, 0) << "the lower group's ranks";
  EXPECT_EQ(high, last) << "the upper group's ranks";
  EXPECT_EQ(max, last);
}

TEST(Checked, IsADeclaredSetting) {
  const auto list = setting_list();
  EXPECT_TRUE(std::any_of(list.begin(), list.end(), [](const SettingInfo& s) { return s.name == "TB_CHECKED"; }));
  EXPECT_NE(settings_table().find("TB_CHECKED"), std::string::npos);
  test::ScopedEnv bad("TB_CHECKED", "yes");
  try {
    check_settings();
    ADD_FAILURE() << "TB_CHECKED=yes accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TB_CHECKED"), std::string::npos) << e.what();
  }
}

// What check_settings() throws, or "" when it accepts the environment.
std::string settings_error() {
  try {
    check_settings();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Values refused before any work, each with an error naming the setting and the value.
TEST(Settings, BadValuesAreRefusedByCheckSettings) {
  struct Bad {
    const char* name;
    const char* value;
    const char* error;  // a part of the error
  };
  const Bad cases[] = {
      {"TB_ALLTOALLW_RECORD", "/no/such/folder/rec.jsonl",
       "TB_ALLTOALLW_RECORD='/no/such/folder/rec.jsonl': cannot be written (folder /no/such/folder: No such file"},
      {"TB_ALLTOALLW_RECORD", "/tmp", "TB_ALLTOALLW_RECORD='/tmp': cannot be written (it is a directory)"},
      {"TB_CONFORMANCE_SEED", " -1", "TB_CONFORMANCE_SEED=' -1': use an unsigned integer"},
      {"TB_FFT_TEST_SEED", " -5", "TB_FFT_TEST_SEED=' -5': use an unsigned integer"},
      {"TB_FFT_TEST_SEED", "18446744073709551616", "(at most 18446744073709551615)"},
      {"TB_ALLTOALLW_VERBOSE", " 1", "TB_ALLTOALLW_VERBOSE=' 1': use 0, 1 or 2"},
      {"TB_CONFORMANCE_CASES", "+3", "TB_CONFORMANCE_CASES='+3': use a positive integer"},
      {"TB_RANKS_PER_NODE", "1048577", "TB_RANKS_PER_NODE='1048577': use a positive integer (at most 1048576)"},
      {"TB_UCX_TIMEOUT_S", "1000000001", "TB_UCX_TIMEOUT_S='1000000001': use seconds > 0, at most 1e9"},
      {"TB_UCX_TIMEOUT_S", " 5", "TB_UCX_TIMEOUT_S=' 5': use seconds > 0"},
      {"TB_UCX_TLS", "", "TB_UCX_TLS is set but empty"},
#if defined(TB_HAVE_UCX)
      {"TB_UCX_RNDV_THRESH", "abc", "TB_UCX_RNDV_THRESH='abc': UCX refuses it"},
#endif
  };
  for (const Bad& c : cases) {
    test::ScopedEnv bad(c.name, c.value);
    EXPECT_NE(settings_error().find(c.error), std::string::npos)
        << c.name << "='" << c.value << "' gave: '" << settings_error() << "'";
  }
}

TEST(Settings, GoodValuesAreAccepted) {
  const std::string record =
      "/tmp/tb-settings-record-" + std::to_string(test::world_rank()) + "-" + std::to_string(getpid()) + ".jsonl";
  {
    test::ScopedEnv path("TB_ALLTOALLW_RECORD", record.c_str());
    test::ScopedEnv seed("TB_CONFORMANCE_SEED", "18446744073709551615");
    test::ScopedEnv timeout("TB_UCX_TIMEOUT_S", "1e9");
    test::ScopedEnv per_node("TB_RANKS_PER_NODE", "1048576");
#if defined(TB_HAVE_UCX)
    test::ScopedEnv threshold("TB_UCX_RNDV_THRESH", "8k");
#endif
    EXPECT_EQ(settings_error(), "");
    EXPECT_EQ(settings().alltoallw_record.get(), record);
  }
  EXPECT_NE(access(record.c_str(), F_OK), 0) << "checking " << record << " created it";
}

// Two ways of forming virtual nodes at once: refused before any work, and wherever either is read.
TEST(Settings, RanksPerNodeAndNumNodesTogetherAreRefused) {
  test::ScopedEnv per_node("TB_RANKS_PER_NODE", "1");
  test::ScopedEnv nodes("TB_NUM_NODES", "2");
  const std::string error = "TB_RANKS_PER_NODE and TB_NUM_NODES are both set; set one";
  EXPECT_EQ(settings_error(), error);
  EXPECT_THROW(settings().num_nodes.get(), std::invalid_argument);
  EXPECT_THROW(settings().ranks_per_node.get(), std::invalid_argument);
}

int g_values_deleted = 0;
int count_deletion(MPI_Comm, int, void*, void*) {
  ++g_values_deleted;
  return MPI_SUCCESS;
}

// The last rank's MPI_Comm_set_attr fails (an invalid keyval): no rank keeps the attribute, and
// every rank's value is freed exactly once, by its delete callback where the attribute had been
// set and by the caller where it had not, as the cached states' collective teardown needs.
void expect_attached_nowhere(MPI_Comm comm, int key, bool fails_here) {
  int value = 0;
  g_values_deleted = 0;
  bool caller_frees = false;
  const int rc = set_attr_on_every_rank(comm, fails_here ? MPI_KEYVAL_INVALID : key, &value, &caller_frees);
  EXPECT_NE(rc, MPI_SUCCESS);
  EXPECT_EQ(caller_frees, fails_here);
  EXPECT_EQ(g_values_deleted + (caller_frees ? 1 : 0), 1) << "freed " << g_values_deleted << " time(s) by the callback";
  void* found_value = nullptr;
  int found = 1;
  EXPECT_EQ(MPI_Comm_get_attr(comm, key, &found_value, &found), MPI_SUCCESS);
  EXPECT_EQ(found, 0);
  try {
    check_attached(rc);
    ADD_FAILURE() << "check_attached accepted error " << rc;
  } catch (const MpiError& e) {
    EXPECT_NE(std::string(e.what()).find("on this rank or another"), std::string::npos) << e.what();
  }
}

TEST(CachedState, IsAttachedOnEveryRankOrOnNone) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int key = MPI_KEYVAL_INVALID;
  ASSERT_EQ(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_deletion, &key, nullptr), MPI_SUCCESS);
  const int P = test::world_size(), me = test::world_rank();
  expect_attached_nowhere(comm, key, me == P - 1);

  // every rank valid: the attribute stays, and freeing the communicator deletes it
  int value = 0;
  bool caller_frees = true;
  g_values_deleted = 0;
  EXPECT_EQ(set_attr_on_every_rank(comm, key, &value, &caller_frees), MPI_SUCCESS);
  EXPECT_FALSE(caller_frees);
  void* found_value = nullptr;
  int found = 0;
  EXPECT_EQ(MPI_Comm_get_attr(comm, key, &found_value, &found), MPI_SUCCESS);
  EXPECT_EQ(found, 1);
  EXPECT_EQ(found_value, &value);
  MPI_Comm_free(&comm);
  EXPECT_EQ(g_values_deleted, 1);
  MPI_Comm_free_keyval(&key);
}

// On an intercommunicator each group's reduction is the other group's: the agreement still
// reaches the failing rank's own group.
TEST(CachedState, IsAttachedOnEveryRankOrOnNoneOfAnIntercommunicator) {
  const int P = test::world_size(), me = test::world_rank();
  if (P < 2) GTEST_SKIP() << "needs two groups";
  const TwoGroups groups;
  int key = MPI_KEYVAL_INVALID;
  ASSERT_EQ(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_deletion, &key, nullptr), MPI_SUCCESS);
  expect_attached_nowhere(groups.inter, key, me == P - 1);  // the last rank: its group has others from 3 ranks
  MPI_Comm_free_keyval(&key);
}

}  // namespace
}  // namespace tb
