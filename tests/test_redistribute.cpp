// The redistribution core against an independent reference: every rank fills its block with a
// function of the GLOBAL index; after a redistribution each element must hold that function of
// its own global index, and forward followed by backward must give the input back.
#include "collectives/node_layout.hpp"
#include "collectives/registry.hpp"
#include "mpi_test_support.hpp"
#include "redistribute/block_distribution.hpp"
#include "redistribute/global_pattern.hpp"
#include "redistribute/redistribution.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tb {
namespace {

using test::sum_over_ranks;
using test::world_rank;
using test::world_size;

std::vector<std::byte> buffer(const Pencil& p, ElementType t, std::byte fill) {
  return std::vector<std::byte>(static_cast<std::size_t>(p.local_size()) * element_size(t), fill);
}

// Runs forward and backward on `plan` and returns the global number of wrong elements.
std::int64_t check_round_trip(Redistribution& plan) {
  const ElementType t = plan.element_type();
  auto in = buffer(plan.input(), t, std::byte{0});
  auto out = buffer(plan.output(), t, std::byte{0xA5});
  auto back = buffer(plan.input(), t, std::byte{0x5A});
  fill_global_pattern(plan.input(), t, in.data());
  plan.forward(in.data(), out.data());
  std::int64_t bad = count_pattern_mismatches(plan.output(), t, out.data());
  plan.backward(out.data(), back.data());
  bad += count_pattern_mismatches(plan.input(), t, back.data());
  return sum_over_ranks(bad);
}

// A layout aligned in `a` that distributes `b`; which grid axis takes b rotates with a.
std::vector<int> layout_distributing(int d, int g, int a, int b) {
  std::vector<int> chosen{b};
  for (int k = 0; k < d && static_cast<int>(chosen.size()) < g; ++k)
    if (k != a && k != b) chosen.push_back(k);
  std::vector<int> layout(static_cast<std::size_t>(d), -1);
  for (int i = 0; i < g; ++i) layout[chosen[i]] = (i + a) % g;
  return layout;
}

TEST(BlockDistribution, FirstRanksTakeTheRemainder) {
  for (std::int64_t n : {0, 1, 5, 7, 8, 13, 100})
    for (int p : {1, 2, 3, 4, 7, 16}) {
      BlockDistribution dist(n, p);
      std::int64_t next = 0;
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(dist.start(r), next) << "n=" << n << " p=" << p << " r=" << r;
        EXPECT_EQ(dist.size(r), n / p + (r < n % p ? 1 : 0));
        next += dist.size(r);
      }
      EXPECT_EQ(next, n);
    }
  EXPECT_THROW(BlockDistribution(5, 0), std::invalid_argument);
  EXPECT_THROW(BlockDistribution(-1, 2), std::invalid_argument);
}

TEST(ProcessGrid, FillsFreeDimsAndBuildsSubcomms) {
  const int n = world_size();
  for (const std::vector<int>& spec : {std::vector<int>{0}, {0, 0}, {0, 1}, {1, 0}, {0, 0, 0}, {n}}) {
    auto grid = ProcessGrid::create(MPI_COMM_WORLD, spec);
    ASSERT_EQ(grid->ndims(), static_cast<int>(spec.size()));
    EXPECT_EQ(std::accumulate(grid->dims().begin(), grid->dims().end(), 1, std::multiplies<>()), n);
    for (int q = 0; q < grid->ndims(); ++q) {
      int sub = 0, rank = 0;
      MPI_Comm_size(grid->subcomm(q), &sub);
      MPI_Comm_rank(grid->subcomm(q), &rank);
      EXPECT_EQ(sub, grid->dims()[q]);
      EXPECT_EQ(rank, grid->coords()[q]);
      if (spec[q] != 0) { EXPECT_EQ(grid->dims()[q], spec[q]); }
    }
  }
}

TEST(ProcessGrid, RejectsGridsThatDoNotFitTheCommunicator) {
  const int n = world_size();
  try {
    ProcessGrid::create(MPI_COMM_WORLD, {n + 1});
    ADD_FAILURE() << "a grid larger than the communicator was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("communicator has " + std::to_string(n)), std::string::npos) << e.what();
  }
  EXPECT_THROW(ProcessGrid::create(MPI_COMM_WORLD, {n, 2}), std::invalid_argument);
  EXPECT_THROW(ProcessGrid::create(MPI_COMM_WORLD, {}), std::invalid_argument);
  EXPECT_THROW(ProcessGrid::create(MPI_COMM_WORLD, {-1}), std::invalid_argument);
  EXPECT_THROW(ProcessGrid::create(MPI_COMM_NULL, {0}), std::invalid_argument);
}

TEST(Pencil, LocalBlocksTileTheGlobalArray) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  const std::vector<std::int64_t> shape{7, 9, 13};
  for (int a = 0; a < 3; ++a) {
    Pencil p(grid, shape, a);
    EXPECT_EQ(p.local_shape()[a], shape[a]) << "aligned axis must be whole";
    EXPECT_EQ(sum_over_ranks(p.local_size()), 7 * 9 * 13);
    for (int b = 0; b < 3; ++b) {
      Pencil r = p.realigned(b);
      EXPECT_EQ(r.aligned_axis(), b);
      EXPECT_EQ(r.grid_axis(b), -1);
      if (a != b) { EXPECT_EQ(r.grid_axis(a), p.grid_axis(b)); }
      EXPECT_EQ(sum_over_ranks(r.local_size()), 7 * 9 * 13);
    }
  }
}

TEST(Pencil, RejectsBadShapesAxesAndLayouts) {
  auto slab = ProcessGrid::create(MPI_COMM_WORLD, {0});
  auto pencil_grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  auto expect_error = [](auto make, const std::string& words) {
    try {
      make();
      ADD_FAILURE() << "accepted; expected an error mentioning '" << words << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error([&] { Pencil(slab, {8}, 0); }, "at least 2 axes");
  expect_error([&] { Pencil(slab, {8, 0}, 0); }, "shorter than 1");
  expect_error([&] { Pencil(slab, {8, 8}, 2); }, "aligned axis 2 is out of range");
  expect_error([&] { Pencil(slab, {8, 8}, -1); }, "out of range");
  expect_error([&] { Pencil(pencil_grid, {8, 8}, 0); }, "cannot distribute a 2-dimensional array");
  expect_error([&] { Pencil(slab, {8, 8, 8}, 0, {0, -1, -1}); }, "must not be distributed");
  expect_error([&] { Pencil(slab, {8, 8, 8}, 0, {-1, 0, 0}); }, "distributes 2 array axes");
  expect_error([&] { Pencil(slab, {8, 8, 8}, 0, {-1, -1, -1}); }, "distributes 0 array axes");
  expect_error([&] { Pencil(slab, {8, 8, 8}, 0, {-1, 1, -1}); }, "does not have");
  expect_error([&] { Pencil(slab, {8, 8, 8}, 0, {-1, 0}); }, "layout names 2 axes");
  expect_error([&] { Pencil(slab, {8, 8}, 0).realigned(5); }, "out of range");
}

struct Case {
  int d;
  ElementType type;
  std::string method;
};

class RedistributionMatrix : public testing::TestWithParam<Case> {};

// Every axis pair, every grid dimension 1..d-1, uneven sizes, axes shorter than their ranks.
TEST_P(RedistributionMatrix, EveryAxisPairEveryGridMatchesTheGlobalPattern) {
  const auto [d, type, method] = GetParam();
  const std::vector<std::vector<std::int64_t>> shapes{{}, {}, {13, 9}, {7, 9, 8}, {5, 7, 4, 6}, {3, 5, 4, 2, 7}};
  const auto& shape = shapes[d];
  for (int g = 1; g <= d - 1; ++g) {
    auto grid = ProcessGrid::create(MPI_COMM_WORLD, std::vector<int>(static_cast<std::size_t>(g), 0));
    for (int a = 0; a < d; ++a)
      for (int b = 0; b < d; ++b) {
        if (a == b) continue;
        Pencil in(grid, shape, a, layout_distributing(d, g, a, b));
        auto plan = make_redistribution(in, in.realigned(b), type, method);
        EXPECT_EQ(check_round_trip(*plan), 0)
            << plan->method() << " grid " << grid->describe() << ": " << in.describe() << " -> "
            << plan->output().describe() << " " << element_type_name(type);
      }
  }
}

// Every registered Alltoallw algorithm and the local-remap baseline.
std::vector<std::string> all_methods() {
  std::vector<std::string> methods;
  for (const auto& info : alltoallw_algorithms()) methods.emplace_back(info.name);
  methods.emplace_back("local_remap");
  return methods;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int d = 2; d <= 5; ++d)
    for (ElementType t : kAllElementTypes)
      for (const auto& m : all_methods()) cases.push_back({d, t, m});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllDimsTypesMethods, RedistributionMatrix, testing::ValuesIn(all_cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           std::string t(element_type_name(info.param.type));
                           for (char& c : t)
                             if (c == '<' || c == '>') c = '_';
                           return "d" + std::to_string(info.param.d) + "_" + t + "_" + info.param.method;
                         });

TEST(Redistribution, PencilChainThroughEveryAxisAndBack) {
  // The FFT's use: aligned 3 -> 2 -> 1 -> 0 on a 2-D grid, then back the same way.
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  const ElementType t = ElementType::c64;
  std::vector<Pencil> pencils{Pencil(grid, {6, 5, 7, 4}, 3)};
  for (int axis : {2, 1, 0}) pencils.push_back(pencils.back().realigned(axis));
  for (const auto& method : all_methods()) {
    std::vector<std::unique_ptr<Redistribution>> plans;
    std::vector<std::vector<std::byte>> arrays;
    for (std::size_t i = 0; i < pencils.size(); ++i) arrays.push_back(buffer(pencils[i], t, std::byte{0x11}));
    for (std::size_t i = 0; i + 1 < pencils.size(); ++i)
      plans.push_back(make_redistribution(pencils[i], pencils[i + 1], t, method));
    fill_global_pattern(pencils[0], t, arrays[0].data());
    for (std::size_t i = 0; i < plans.size(); ++i) plans[i]->forward(arrays[i].data(), arrays[i + 1].data());
    EXPECT_EQ(sum_over_ranks(count_pattern_mismatches(pencils.back(), t, arrays.back().data())), 0) << method;
    std::fill(arrays[0].begin(), arrays[0].end(), std::byte{0});
    for (std::size_t i = plans.size(); i-- > 0;) plans[i]->backward(arrays[i + 1].data(), arrays[i].data());
    EXPECT_EQ(sum_over_ranks(count_pattern_mismatches(pencils[0], t, arrays[0].data())), 0) << method;
  }
}

TEST(Redistribution, AxesShorterThanTheirRankCountLeaveRanksEmpty) {
  // 2 x 3 x 2 on a slab: with 3 or 4 ranks some ranks hold nothing before or after.
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  Pencil in(grid, {2, 3, 2}, 2);
  Pencil out = in.realigned(0);
  const std::int64_t empty_ranks = sum_over_ranks(in.local_size() == 0 ? 1 : 0);
  if (world_size() > 2) {
    EXPECT_GT(empty_ranks, 0);
  }
  for (ElementType t : kAllElementTypes)
    for (const auto& method : all_methods()) {
      auto plan = make_redistribution(in, out, t, method);
      EXPECT_EQ(check_round_trip(*plan), 0) << method << " " << element_type_name(t);
    }
}

TEST(Redistribution, TypedBuffersAreCheckedForTypeSizeAndOverlap) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  Pencil in(grid, {8, 6, 4}, 2);
  Pencil out = in.realigned(0);
  SubarrayRedistribution plan(in, out, ElementType::f64, "native");
  std::vector<double> a(static_cast<std::size_t>(in.local_size())), b(static_cast<std::size_t>(out.local_size()));
  std::vector<float> f(a.size());
  EXPECT_THROW(plan.forward<double>(std::span<const double>(a.data(), a.size() + 1), std::span<double>(b)),
               std::invalid_argument);
  EXPECT_THROW(plan.forward<float>(std::span<const float>(f), std::span<float>(f)), std::invalid_argument);
  std::vector<double> one(std::max(a.size(), b.size()) + 1);
  if (!a.empty() && !b.empty()) {
    EXPECT_THROW(plan.forward(one.data(), one.data() + 1), std::invalid_argument);
  }
  // The valid call works on every rank (all ranks reach it: nothing above is collective).
  fill_global_pattern(in, ElementType::f64, a.data());
  plan.forward<double>(std::span<const double>(a), std::span<double>(b));
  EXPECT_EQ(sum_over_ranks(count_pattern_mismatches(out, ElementType::f64, b.data())), 0);
}

// One forward call of `plan` from `from` into `to` (the source filled with the global pattern,
// the destination cleared): the global number of wrong elements.
std::int64_t forward_errors(Redistribution& plan, std::vector<std::byte>& from, std::vector<std::byte>& to) {
  const ElementType t = plan.element_type();
  std::fill(from.begin(), from.end(), std::byte{0});
  std::fill(to.begin(), to.end(), std::byte{0x5A});
  fill_global_pattern(plan.input(), t, from.data());
  plan.forward(from.data(), to.data());
  return sum_over_ranks(count_pattern_mismatches(plan.output(), t, to.data()));
}

// Whether `method`'s prepared form rebinds here, asked of a small prepared call of its own
// (native's does not where the library has MPI_Alltoallw_init).
bool prepared_form_rebinds(const std::string& method) {
  const auto n = static_cast<std::size_t>(world_size());
  std::vector<double> send(n), recv(n);
  std::vector<int> counts(n, 1), displs(n);
  for (std::size_t p = 0; p < n; ++p) displs[p] = static_cast<int>(p * sizeof(double));
  std::vector<MPI_Datatype> types(n, MPI_DOUBLE);
  auto algorithm = make_alltoallw(method);
  return algorithm
      ->prepare({send.data(), counts.data(), displs.data(), types.data(), recv.data(), counts.data(), displs.data(),
                 types.data(), MPI_COMM_WORLD})
      ->rebinds();
}

// The prepared path (AlltoallwCalls::persistent, the default): the second call in a row with the
// same arrays prepares the call, after an agreement on them at every call. From then on a prepared
// form that rebinds (pairwise, pack_alltoallv, node_leader with private arrays) follows a call
// where rank 0 alone passes other arrays without agreeing again; one that does not (native's
// MPI_Alltoallw_init) runs that call blocking on every rank (the ranks agree on it), and the next
// call with the first arrays runs blocking again before it prepares anew. A start bound to rank
// 0's old arrays would send zeros or leave its new destination uncleared; paths that differ
// between ranks would hang or mix. The agreements are counted: where all ranks share one node
// (not an emulated split of one), each-call makes them through shared memory; each-call-allreduce,
// and SMPI (no NodeMax there), through MPI_Allreduce.
TEST(Redistribution, PreparedCallsFollowArraysThatOneRankChanges) {
#if defined(TB_SMPI)
  const bool shares_memory = false;
#else
  const bool shares_memory = world_size() > 1 && node_layout(MPI_COMM_WORLD).nodes == 1;
#endif
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  Pencil in(grid, {8, 6, 4}, 2);
  Pencil out = in.realigned(0);
  const ElementType t = ElementType::f64;
  for (const std::string agreement : {"each-call", "each-call-allreduce"}) {
    test::ScopedEnv how("TB_REDISTRIBUTION_AGREEMENT", agreement.c_str());
    const bool through_memory = shares_memory && agreement == "each-call";
    for (const std::string method : {"pairwise", "pack_alltoallv", "node_leader", "native"}) {
      const std::string name = method + " under " + agreement;
      const bool rebinds = prepared_form_rebinds(method);
      EXPECT_TRUE(rebinds || method == "native") << name;
      // SMPI has no MPI_Alltoallw_init: native's prepared call runs the blocking one, and says so.
      const std::string form = method + (method == "native" && rebinds ? " (not prepared" : " (persistent");
      SubarrayRedistribution plan(in, out, t, method);
      auto a = buffer(in, t, std::byte{0}), b = buffer(out, t, std::byte{0});
      auto a2 = buffer(in, t, std::byte{0}), b2 = buffer(out, t, std::byte{0});
      const std::int64_t agreements = redistribution_agreements();
      const std::int64_t shared = redistribution_shared_memory_agreements();
      std::string blocking_path;
      for (int call = 1; call <= 7; ++call) {
        const bool other = call == 4 && world_rank() == 0;
        if (other) std::fill(a.begin(), a.end(), std::byte{0});  // a start still reading it would send zeros
        EXPECT_EQ(forward_errors(plan, other ? a2 : a, other ? b2 : b), 0) << name << " call " << call;
        if (call == 1) blocking_path = plan.method();
        // Calls 2 and 6 prepare and start, 3 and 7 start; 4 (new arrays on rank 0) and 5 (new to
        // rank 0 again) start the rebound call or run blocking.
        const bool prepared = call == 2 || call == 3 || call == 6 || call == 7 || (rebinds && call > 1);
        EXPECT_EQ(plan.method() != blocking_path, prepared) << name << " call " << call << ": " << plan.method();
        if (prepared) {
          EXPECT_NE(plan.method().find(form), std::string::npos) << plan.method();
        }
      }
      const std::int64_t made = redistribution_agreements() - agreements;
      EXPECT_EQ(made, rebinds ? 2 : 7) << name;  // calls 1 and 2, or each
      EXPECT_EQ(redistribution_shared_memory_agreements() - shared, through_memory ? made : 0) << name;
    }
  }
}

// TB_REDISTRIBUTION_AGREEMENT=assume-same drops that per-call agreement: repeated calls still
// prepare and start. Under TB_CHECKED=1 a call where one rank alone changes its arrays is an error
// on every rank, naming the setting, and the plan goes on with the next good call.
TEST(Redistribution, AssumeSameSkipsTheAgreementAndCheckedModeCatchesAFalseAssertion) {
  test::ScopedEnv assume("TB_REDISTRIBUTION_AGREEMENT", "assume-same");
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  Pencil in(grid, {8, 6, 4}, 2);
  const ElementType t = ElementType::c64;
  if (prepared_form_rebinds("native")) GTEST_SKIP() << "native's prepared form rebinds here: no agreement to skip";
  SubarrayRedistribution plan(in, in.realigned(0), t, "native");  // MPI_Alltoallw_init: its prepared form does not rebind
  auto a = buffer(in, t, std::byte{0}), b = buffer(plan.output(), t, std::byte{0});
  auto a2 = buffer(in, t, std::byte{0}), b2 = buffer(plan.output(), t, std::byte{0});
  const std::int64_t agreements = redistribution_agreements();
  for (int call = 1; call <= 3; ++call) EXPECT_EQ(forward_errors(plan, a, b), 0) << "call " << call;
  EXPECT_NE(plan.method().find("persistent"), std::string::npos) << plan.method();
  EXPECT_EQ(redistribution_agreements(), agreements);  // no agreement on the arrays
  if (world_size() < 2) return;  // one rank cannot disagree with itself
  test::ScopedEnv checked("TB_CHECKED", "1");
  const bool other = world_rank() == 0;
  try {
    forward_errors(plan, other ? a2 : a, other ? b2 : b);
    ADD_FAILURE() << "a call where rank 0 alone changed its arrays was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TB_REDISTRIBUTION_AGREEMENT=assume-same"), std::string::npos) << e.what();
  }
  EXPECT_EQ(forward_errors(plan, a, b), 0);
}

// A rank holding no data passes null arrays at every call, the addresses a plan starts from: its
// first call is still a call with new arrays, as on the other ranks, even when nothing is agreed
// (assume-same). It once prepared and started there while the others ran blocking: a hang.
TEST(Redistribution, AssumeSameFirstCallOnARankWithoutDataRunsLikeTheOthers) {
  if (world_size() < 2) GTEST_SKIP() << "needs a rank that holds nothing";
  test::ScopedEnv assume("TB_REDISTRIBUTION_AGREEMENT", "assume-same");
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  Pencil in(grid, {1, 3, 1}, 2);  // axis 0 (in) and axis 2 (out) of extent 1: ranks from 1 hold nothing
  const ElementType t = ElementType::f64;
  for (const char* checked : {"0", "1"}) {
    test::ScopedEnv check("TB_CHECKED", checked);
    for (const std::string method : {"native", "pairwise"}) {
      SubarrayRedistribution plan(in, in.realigned(0), t, method);
      auto a = buffer(in, t, std::byte{0}), b = buffer(plan.output(), t, std::byte{0});
      EXPECT_EQ(a.empty(), world_rank() != 0);
      for (int call = 1; call <= 3; ++call)
        EXPECT_EQ(forward_errors(plan, a, b), 0) << method << ", TB_CHECKED=" << checked << ", call " << call;
    }
  }
}

TEST(Redistribution, RejectsPencilsThatAreNotOneRealignmentApart) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  auto other_grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  Pencil in(grid, {6, 7, 8}, 2);
  EXPECT_THROW(make_redistribution(in, in, ElementType::f32, "native"), std::invalid_argument);
  EXPECT_THROW(make_redistribution(in, Pencil(grid, {6, 7, 9}, 1), ElementType::f32), std::invalid_argument);
  EXPECT_THROW(make_redistribution(in, Pencil(other_grid, {6, 7, 8}, 1), ElementType::f32), std::invalid_argument);
  // Aligned in 0, but with the grid axes swapped relative to in.realigned(0).
  EXPECT_THROW(make_redistribution(in, Pencil(grid, {6, 7, 8}, 0, {-1, 0, 1}), ElementType::f32, "local_remap"),
               std::invalid_argument);
}

TEST(Registry, NativeIsListedAndUnknownNamesAreRejected) {
  ASSERT_FALSE(alltoallw_algorithms().empty());
  EXPECT_EQ(alltoallw_algorithms()[0].name, "native");
  EXPECT_NE(alltoallw_algorithm_list().find("native"), std::string::npos);
  try {
    make_alltoallw("no_such_algorithm");
    ADD_FAILURE() << "unknown algorithm accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_algorithm"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("native"), std::string::npos) << "the error lists the registered names";
  }
}

TEST(Registry, TbAlltoallwChoosesTheDefault) {
  {
    test::ScopedEnv chosen("TB_ALLTOALLW", "native");
    EXPECT_EQ(make_alltoallw()->name(), "native");
  }
  {
    test::ScopedEnv chosen("TB_ALLTOALLW", "bogus");
    try {
      auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
      Pencil in(grid, {4, 4}, 1);
      SubarrayRedistribution plan(in, in.realigned(0), ElementType::f32);
      ADD_FAILURE() << "TB_ALLTOALLW=bogus accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("TB_ALLTOALLW"), std::string::npos) << e.what();
    }
  }
  test::ScopedEnv unset("TB_ALLTOALLW", "");
  EXPECT_EQ(default_alltoallw_name(), "native");
}

}  // namespace
}  // namespace tb
