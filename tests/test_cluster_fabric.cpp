// The cluster network (fpga_transport/cluster_fabric.hpp): SimGrid's routes, SMPI's factors and
// the bottleneck bound of a phase, each on a case computed by hand in the comment above it.
// docs/cost-model.md, "The cluster network", names these tests.
#include "fpga_transport/algorithm_cost.hpp"
#include "fpga_transport/cluster_fabric.hpp"
#include "fpga_transport/network.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tb::fpga {
namespace {

// A dragonfly of 2 groups x 2 chassis x 2 routers x 2 nodes (16 nodes), 1 GB/s and 1 us per link
// with 1, 2 and 3 links (bandwidth x1, x2, x3) for green, black and blue; loopback 10 GB/s, 1 us;
// factors 1; no envelope and no crosstraffic unless a test sets them.
nlohmann::json small_dragonfly() {
  return {{"topology", "DRAGONFLY"},
          {"topo_parameters", {{2, 3}, {2, 2}, {2, 1}, {2}}},
          {"nodes", 16},
          {"cores_per_node", 2},
          {"bandwidth_bytes_per_s", 1e9},
          {"latency_s", 1e-6},
          {"loopback_bandwidth_bytes_per_s", 1e10},
          {"loopback_latency_s", 1e-6},
          {"bandwidth_factor", {{0, 1.0}}},
          {"latency_factor", {{0, 1.0}}},
          {"envelope_bytes", 0},
          {"crosstraffic", 0}};
}

ClusterFabric fabric(const nlohmann::json& j) { return j.get<ClusterFabric>(); }

// SMPI's syntax: the factor of threshold T applies for T < P <= the next threshold, so 257 B
// still takes threshold 0's factor and 258 B threshold 257's; at or below the lowest threshold
// (100 B in the second table) no factor applies.
TEST(ClusterFabric, SizeFactorAppliesAboveItsThreshold) {
  SizeFactor f;
  f.by_bytes = {{0, 0.8}, {257, 0.3}, {65472, 0.9}};
  EXPECT_DOUBLE_EQ(f.at(16), 0.8);
  EXPECT_DOUBLE_EQ(f.at(257), 0.8);
  EXPECT_DOUBLE_EQ(f.at(258), 0.3);
  EXPECT_DOUBLE_EQ(f.at(65472), 0.3);
  EXPECT_DOUBLE_EQ(f.at(1 << 20), 0.9);
  f.by_bytes = {{100, 0.5}};
  EXPECT_DOUBLE_EQ(f.at(100), 1.0);
  EXPECT_DOUBLE_EQ(f.at(101), 0.5);
}

// Node id -> (group, chassis, router, node) = id / 8, id / 4 % 2, id / 2 % 2, id % 2.
//   0 -> 1:  same router: node 0 up, node 1 down (2 links);
//   0 -> 4:  router 0 of chassis 0 to router 0 of chassis 1: one black link (x2), 3 links;
//   0 -> 2:  routers 0 and 1 of chassis 0: one green link, 3 links;
//   4 -> 6:  routers 0 and 1 of chassis 1: green in chassis 1, then SimGrid 3.32 continues from
//            router 1 of chassis 0 and takes black 0 <-> 1 at position 1: 4 links;
//   2 -> 8:  other group: source router 1 is the position of group 1 (no green), chassis 0 (no
//            black), the blue link (x3), arriving at group 1's router 0 = position of group 0,
//            the destination's router (no green): 3 links;
//   0 -> 8:  as 2 -> 8, but router 0 first takes the green link to router 1: 4 links.
TEST(ClusterFabric, DragonflyRoutesAsSimGrid332) {
  const ClusterFabric f = fabric(small_dragonfly());
  auto bandwidths = [&](int s, int d) {
    std::vector<double> b;
    for (const auto& l : f.route(s, d)) b.push_back(l.bandwidth_bytes_per_s / 1e9);
    return b;
  };
  EXPECT_EQ(bandwidths(0, 1), (std::vector<double>{1, 1}));
  EXPECT_EQ(bandwidths(0, 4), (std::vector<double>{1, 2, 1}));
  EXPECT_EQ(bandwidths(0, 2), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(bandwidths(4, 6), (std::vector<double>{1, 1, 2, 1}));
  EXPECT_EQ(bandwidths(2, 8), (std::vector<double>{1, 3, 1}));
  EXPECT_EQ(bandwidths(0, 8), (std::vector<double>{1, 1, 3, 1}));
  // The two directions of a link are separate resources: 0 -> 2 and 2 -> 0 share no link.
  for (const auto& a : f.route(0, 2))
    for (const auto& b : f.route(2, 0)) EXPECT_NE(a.id, b.id);
}

// One message alone: lat_factor L + P / (bw_factor x rate), P = bytes + envelope.
// Loopback, 1 MB, factors 1: 1 us + 1e6 / 1e10 = 101 us. With envelope 16 B, bw factor 0.5 and
// lat factor 2: 2 us + (1e6 + 16) / 5e9 = 202.0032 us.
TEST(ClusterFabric, OnNodeMessageIsFactoredLatencyPlusBytes) {
  auto j = small_dragonfly();
  EXPECT_NEAR(fabric(j).on_node_message_s(1e6), 101e-6, 1e-12);
  j["envelope_bytes"] = 16;
  j["bandwidth_factor"] = {{0, 0.5}};
  j["latency_factor"] = {{0, 2.0}};
  EXPECT_NEAR(fabric(j).on_node_message_s(1e6), 202.0032e-6, 1e-12);
}

// Between nodes, the phase is bounded by its most loaded directed link. Nodes 0 and 1 (one
// router, 2 links of 1 us): two messages of 1 MB from node 0 to node 1 share node 0's up link:
// 2e6 / 1e9 + 2 us = 2.002 ms. Alone each takes 1.002 ms. With crosstraffic 0.05 and one more
// 1 MB message from node 1 to node 0, node 0's up link carries 2 MB + 5 % of 1 MB: 2.052 ms.
TEST(ClusterFabric, PhaseIsTheMostLoadedLinkPlusLatency) {
  auto j = small_dragonfly();
  EXPECT_NEAR(fabric(j).between_nodes_s({{{0, 1}, 1e6}}), 1.002e-3, 1e-12);
  EXPECT_NEAR(fabric(j).between_nodes_s({{{0, 1}, 1e6}, {{0, 1}, 1e6}}), 2.002e-3, 1e-12);
  j["crosstraffic"] = 0.05;
  EXPECT_NEAR(fabric(j).between_nodes_s({{{0, 1}, 1e6}, {{0, 1}, 1e6}, {{1, 0}, 1e6}}), 2.052e-3, 1e-12);
}

// Four nodes 0-3 share one green link between routers 0 and 1 of chassis 0 (nodes 0, 1 on router
// 0; 2, 3 on router 1). Nodes 0 and 1 each send 1 MB to node 2 and to node 3: each node's up link
// carries 2 MB, the green link 4 MB: 4 ms + 3 us.
TEST(ClusterFabric, RouterLinksCanBeTheBottleneck) {
  const ClusterFabric f = fabric(small_dragonfly());
  EXPECT_NEAR(f.between_nodes_s({{{0, 2}, 1e6}, {{0, 3}, 1e6}, {{1, 2}, 1e6}, {{1, 3}, 1e6}}), 4.003e-3, 1e-12);
}

// Network kind cluster: ranks fill nodes `ranks_per_node` at a time (2 here: ranks 0, 1 on node
// 0), on-node messages take the loopback alone, and the phase is the longer part. Rank 0 -> 1
// (1 MB on node 0: 101 us) and rank 0 -> 2 (1 MB to node 1: 1.002 ms): 1.002 ms.
TEST(ClusterFabric, NetworkPlacesRanksNodeByNode) {
  const Network n = Network::from_json({{"kind", "cluster"}, {"cluster", small_dragonfly()}}, 4);
  EXPECT_EQ(n.ranks_per_node(), 2);
  EXPECT_NEAR(n.phase_time_s({{0, 1, 1e6}}), 101e-6, 1e-12);
  EXPECT_NEAR(n.phase_time_s({{0, 1, 1e6}, {0, 2, 1e6}}), 1.002e-3, 1e-12);
  Network one_per_node = n;
  one_per_node.place_ranks(1);  // now rank 1 is on node 1: 1.002 ms
  EXPECT_NEAR(one_per_node.phase_time_s({{0, 1, 1e6}}), 1.002e-3, 1e-12);
}

// The message of the std::invalid_argument that `f` throws ("" if it throws none).
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterFabric, BadDescriptionsAreRefusedByName) {
  auto j = small_dragonfly();
  j["topology"] = "TORUS";
  EXPECT_NE(refusal([&] { fabric(j); }).find("topology must be FLAT or DRAGONFLY, got 'TORUS'"), std::string::npos);
  j = small_dragonfly();
  j["nodes"] = 15;  // the parameters give 16
  EXPECT_NE(refusal([&] { fabric(j); }).find("DRAGONFLY parameters give 16 nodes, the cluster has 15"), std::string::npos);
  j = small_dragonfly();
  j.erase("latency_factor");
  EXPECT_NE(refusal([&] { fabric(j); }).find("missing required key 'latency_factor'"), std::string::npos);
  EXPECT_NE(refusal([] { Network::from_json({{"kind", "cluster"}}, 4); }).find("kind cluster needs the key 'cluster'"),
            std::string::npos);
  Network n = Network::from_json({{"kind", "cluster"}, {"cluster", small_dragonfly()}}, 4);
  EXPECT_NE(refusal([&] { n.place_ranks(3); }).find("3 ranks per node, but its nodes have 2 cores"), std::string::npos);
  EXPECT_NE(refusal([] { Network::from_json({{"kind", "cluster"}, {"cluster", small_dragonfly()}}, 33); })
                .find("33 ranks do not fit on its 16 nodes at 2 per node"),
            std::string::npos);
}

// SMPI's linear barrier released from rank 0 on node 0, 2 ranks per node on nodes 0-3, each
// message 1000 B (the envelope alone: 1 us on a 1 GB/s link). Rank 1 (node 0): the loopback,
// 1 us + 0.1 us. Ranks 2, 3 (node 1, one router: 2 links): their latency ends at 2 us, then both
// cross node 0's up link and node 1's down link: 2 + 2 = 4 us. Ranks 4-7 (nodes 2, 3 on router 1:
// up, green, down): latency ends at 3 us, but node 0's up link is busy until 4 us and then carries
// their 4000 B: 8 us (the green link alone would serve them by 7 us, each node's down link by
// 5 us). Rank 0 leaves with its last send: 8 us. (SimGrid's max-min would share node 0's up link
// from 3 us on and deliver ranks 2, 3 later, about 6 us; the last release, 8 us, is the same.)
TEST(ClusterFabric, LinearBarrierExitsWaitForLatencyThenShareLinks) {
  auto j = small_dragonfly();
  j["envelope_bytes"] = 1000;
  const auto exits = fabric(j).linear_barrier_exits_s({0, 0, 1, 1, 2, 2, 3, 3});
  const std::vector<double> expected{8e-6, 1.1e-6, 4e-6, 4e-6, 8e-6, 8e-6, 8e-6, 8e-6};
  ASSERT_EQ(exits.size(), expected.size());
  for (std::size_t r = 0; r < exits.size(); ++r) EXPECT_NEAR(exits[r], expected[r], 1e-12) << "rank " << r;
}

// The timing barrier on the same cluster: exits 6.9, 0, 2.9, 2.9, 6.9 x 4 us after the first
// (rank 1). Communicators {0..3} and {4..7} spread 6.9 and 0 us; over 3 inner calls 2.3 us per call.
// One communicator of all: 6.9 us over 1 call. Without the term, or on a network that does not
// describe its barrier, nothing.
TEST(ClusterFabric, TimingBarrierIsTheWidestSpreadInACommunicatorOverInnerCalls) {
  auto j = small_dragonfly();
  j["envelope_bytes"] = 1000;
  j["barrier"] = "ompi_basic_linear";
  Network n = Network::from_json({{"kind", "cluster"}, {"cluster", j}}, 8);
  CommPattern halves(8);
  halves.communicators = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  EXPECT_NEAR(timing_barrier_s(halves, n, 3), 2.3e-6, 1e-12);
  EXPECT_NEAR(timing_barrier_s(CommPattern(8), n, 1), 6.9e-6, 1e-12);
  EXPECT_NE(refusal([&] { timing_barrier_s(halves, n, 0); }).find("inner must be >= 1"), std::string::npos);
  n.drop_barrier();
  EXPECT_EQ(timing_barrier_s(halves, n, 3), 0.0);
  j.erase("barrier");
  EXPECT_EQ(timing_barrier_s(halves, Network::from_json({{"kind", "cluster"}, {"cluster", j}}, 8), 3), 0.0);
  j["barrier"] = "binomial";
  EXPECT_NE(refusal([&] { fabric(j); }).find("barrier 'binomial' is not modelled"), std::string::npos);
}

// FLAT with a backbone (2 GB/s, 3 us): node 0 up, the backbone, node 1 down. Two 1 MB messages
// 0 -> 1 and 2 -> 3 share the backbone (both directions are one link): 2e6 / 2e9 + 5 us = 1.005 ms,
// where each alone takes 5 us + 1e6 / 1e9 = 1.005 ms too (the node link is slower); a third,
// 1 -> 0, makes the backbone carry 3 MB: 1.505 ms.
TEST(ClusterFabric, FlatBackboneIsOneSharedLink) {
  auto j = small_dragonfly();
  j["topology"] = "FLAT";
  j.erase("topo_parameters");
  j["backbone_bandwidth_bytes_per_s"] = 2e9;
  j["backbone_latency_s"] = 3e-6;
  const ClusterFabric f = fabric(j);
  ASSERT_EQ(f.route(0, 1).size(), 3u);
  EXPECT_NEAR(f.between_nodes_s({{{0, 1}, 1e6}, {{2, 3}, 1e6}}), 1.005e-3, 1e-12);
  EXPECT_NEAR(f.between_nodes_s({{{0, 1}, 1e6}, {{2, 3}, 1e6}, {{1, 0}, 1e6}}), 1.505e-3, 1e-12);
}

// A hand-made pattern is one communicator, whatever pairs carry no data: 4 ranks where only
// 0 <-> 1 and 2 <-> 3 exchange still take 3 pairwise steps (plus the self copy), as the
// implementation steps over its whole communicator.
TEST(ClusterFabric, PatternWithoutCommunicatorsIsOneCommunicator) {
  CommPattern p(4);
  p.at(0, 1) = p.at(1, 0) = p.at(2, 3) = p.at(3, 2) = {100, 1, 1};
  EXPECT_EQ(schedule("pairwise", p, {}).size(), 4u);
}

// pairwise steps within each sub-communicator: a 2 x 2 grid's redistribution along grid axis 0
// exchanges within {0, 2} and {1, 3}, so one step (plus the self copy), not three.
TEST(ClusterFabric, PairwiseStepsWithinSubCommunicators) {
  const CommPattern p = redistribution_pattern({8, 8, 8}, {2, 2}, 2, 0, 8);
  const auto phases = schedule("pairwise", p, {});
  ASSERT_EQ(phases.size(), 2u);
  ASSERT_EQ(phases[1].messages.size(), 4u);
  for (const auto& m : phases[1].messages) EXPECT_EQ(m.src % 2, m.dst % 2);
}

// node_leader aggregates per communicator: on the 2 x 2 grid with 2 ranks per node (0, 1 on node
// 0; 2, 3 on node 1), {0, 2} and {1, 3} each send one message per direction between their own
// ranks, which lead their node in their communicator: 4 leader messages, not 2 for the node pair.
TEST(ClusterFabric, NodeLeaderAggregatesPerSubCommunicator) {
  const CommPattern p = redistribution_pattern({8, 8, 8}, {2, 2}, 2, 0, 8);
  ScheduleOptions o;
  o.ranks_per_node = 2;
  const auto phases = schedule("node_leader", p, o);
  ASSERT_EQ(phases.size(), 3u);
  ASSERT_EQ(phases[1].messages.size(), 4u);
  for (const auto& m : phases[1].messages) {
    EXPECT_EQ(m.src % 2, m.dst % 2);
    EXPECT_DOUBLE_EQ(m.bytes, static_cast<double>(p.at(m.src, m.dst).bytes));
  }
}

}  // namespace
}  // namespace tb::fpga
