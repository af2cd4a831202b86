// One test per term of tb-model's cost model, each on a case small enough to compute by hand (the
// comment above each test gives the computation). docs/cost-model.md lists every term with its
// source and names its test here (or in test_fpga_models.cpp where one already pins it).
#include "fpga_transport/algorithm_cost.hpp"
#include "fpga_transport/beff.hpp"
#include "fpga_transport/hpcc_reference.hpp"
#include "fpga_transport/link_models.hpp"
#include "fpga_transport/model_terms.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/pattern.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace tb::fpga {
namespace {

const std::string kReference = TB_SOURCE_DIR "/fpga_transport/reference/hpcc_fpga_520n_beff.json";

// A host network: alpha 1 us per message, 1 ns per byte (1 GB/s).
Network host_network(int ranks) {
  return Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 1e-6}, {"beta_s_per_byte", 1e-9}}}}, ranks);
}

// A PCIe+MPI network from figures: PCIe 8 GB/s + 10 us per transfer, host 2 us + 10 GB/s, and
// optionally 2 FPGAs per node with a flat 5 us node contention per transfer.
Network pcie_network(int ranks, bool two_per_node) {
  nlohmann::json p = {{"pcie_bandwidth_bytes_per_s", 8e9},
                      {"pcie_latency_s", 10e-6},
                      {"host", {{"alpha_s", 2e-6}, {"bandwidth_bytes_per_s", 1e10}}}};
  if (two_per_node) {
    p["fpgas_per_node"] = 2;
    p["node_contention_seconds_by_bytes"] = {{1, 5e-6}};
  }
  return Network::from_json({{"kind", "pcie_mpi"}, {"pcie_mpi", p}}, ranks);
}

// Two ranks: rank 0 sends 100 B in 4 blocks to rank 1 (received contiguous), rank 1 sends 100 B
// contiguous to rank 0; each keeps 50 B for itself.
CommPattern two_rank_pattern() {
  CommPattern p(2);
  p.at(0, 1) = {100, 4, 1};
  p.at(1, 0) = {100, 1, 1};
  p.at(0, 0) = {50, 1, 1};
  p.at(1, 1) = {50, 1, 1};
  return p;
}

MemoryModel plain_memory(double bandwidth, double per_block) {
  MemoryModel m;
  m.copy_bandwidth_bytes_per_s = bandwidth;
  m.per_block_s = per_block;
  return m;
}

// The library's work in a phase: `sends` per rank, and no non-contiguous receive.
void expect_library_sends(const Phase& p, const std::vector<LibraryWork>& sends) {
  ASSERT_EQ(p.library_send.size(), sends.size());
  for (std::size_t r = 0; r < sends.size(); ++r) {
    EXPECT_EQ(p.library_send[r].bytes, sends[r].bytes) << "rank " << r;
    EXPECT_EQ(p.library_send[r].blocks, sends[r].blocks) << "rank " << r;
    EXPECT_EQ(p.library_send[r].messages, sends[r].messages) << "rank " << r;
    EXPECT_EQ(p.library_recv[r].messages, 0.0) << "rank " << r;
  }
}

// IEC link, one channel (32 B chunks): 100 B and 128 B are 4 chunks = 4 / 156.25 MHz = 25.6 ns,
// + 520 ns = 545.6 ns; 129 B is 5 chunks, 552.0 ns.
TEST(CostTerms, IecMessageIsWholeChunksPlusLatency) {
  IecLink link;
  link.channels_per_link = 1;
  EXPECT_NEAR(link.message_time_s(100), 545.6e-9, 1e-15);
  EXPECT_NEAR(link.message_time_s(128), 545.6e-9, 1e-15);
  EXPECT_NEAR(link.message_time_s(129), 552.0e-9, 1e-15);
}

// Channels per link from the topology, 4 channels per FPGA: a ring link bundles 2 (64 B chunks),
// a torus link 1 (32 B). 6400 B: ring 100 chunks = 640 ns, torus 200 chunks = 1280 ns, + 520 ns.
TEST(CostTerms, IecChannelsPerLinkByTopology) {
  const nlohmann::json ring = {{"kind", "iec"}, {"topology", "ring"}, {"channels_per_fpga", 4}};
  const nlohmann::json torus = {{"kind", "iec"}, {"topology", "torus"}, {"torus_dims", {3, 3}}, {"channels_per_fpga", 4}};
  EXPECT_NEAR(Network::from_json(ring, 4).message_time_s(0, 1, 6400), 1160e-9, 1e-15);
  EXPECT_NEAR(Network::from_json(torus, 9).message_time_s(0, 1, 6400), 1800e-9, 1e-15);
}

// Routing and link sharing on a ring of 4 (64 B chunks): 0 -> 2 goes 0, 1, 2 (2 hops) and shares
// the directed link 0 -> 1 with 0 -> 1: 100 + 100 chunks = 1280 ns, + 2 hops x 520 ns = 2320 ns.
// The opposite direction is a separate resource: 0 -> 1 with 1 -> 0 costs one message, 1160 ns.
TEST(CostTerms, IecRoutedMessagesShareDirectedLinks) {
  const Network ring = Network::from_json({{"kind", "iec"}, {"topology", "ring"}, {"channels_per_fpga", 4}}, 4);
  EXPECT_EQ(ring.route(0, 2), (std::vector<int>{0, 1, 2}));
  EXPECT_NEAR(ring.phase_time_s({{0, 1, 6400}, {0, 2, 6400}}), 2320e-9, 1e-15);
  EXPECT_NEAR(ring.phase_time_s({{0, 1, 6400}, {1, 0, 6400}}), 1160e-9, 1e-15);
}

// Host network, 3 ranks: 0 -> 1 1000 B, 0 -> 2 1000 B, 1 -> 0 500 B. Rank 0: 2 messages x 1 us +
// max(2000 out, 500 in) x 1 ns = 4 us; rank 1: 1 us + max(500, 1000) ns = 2 us; rank 2: 1 us.
// The phase takes the slowest rank: 4 us.
TEST(CostTerms, HostPhaseIsTheSlowestRanksMessagesAndBytes) {
  EXPECT_NEAR(host_network(3).phase_time_s({{0, 1, 1000}, {0, 2, 1000}, {1, 0, 500}}), 4e-6, 1e-15);
}

// A host network with measured messages: m(1000 B) = 2 us, m(2000 B) = 3 us, m(4000 B) = 7 us,
// and the Hockney fit alpha 1 us, 1 ns per byte.
Network measured_host_network(int ranks) {
  const nlohmann::json host = {{"alpha_s", 1e-6},
                               {"beta_s_per_byte", 1e-9},
                               {"message_seconds_by_bytes", {{1000, 2e-6}, {2000, 3e-6}, {4000, 7e-6}}}};
  return Network::from_json({{"kind", "host"}, {"host", host}}, ranks);
}

// Measured messages, one message alone: below the first size its time, 2 us at 500 B; linear
// between sizes, 1500 B: (2 + 3) / 2 = 2.5 us, 3000 B: (3 + 7) / 2 = 5 us; beyond the last size
// its time plus the fit's 1 ns per byte, 6000 B: 7 us + 2000 ns = 9 us (not the last segment's
// 2 ns per byte, 11 us; not Hockney's 1 us + 6 us = 7 us).
TEST(CostTerms, MeasuredMessagesLinearBetweenSizesFitsBetaBeyond) {
  const Network net = measured_host_network(2);
  EXPECT_NEAR(net.message_time_s(0, 1, 500), 2e-6, 1e-15);
  EXPECT_NEAR(net.message_time_s(0, 1, 1500), 2.5e-6, 1e-15);
  EXPECT_NEAR(net.message_time_s(0, 1, 3000), 5e-6, 1e-15);
  EXPECT_NEAR(net.message_time_s(0, 1, 6000), 9e-6, 1e-15);
}

// Measured messages in a phase, 3 ranks: 0 -> 1 1000 B, 0 -> 2 3000 B, 1 -> 0 2000 B. Rank 0 sends
// m(1000) + m(3000) = 2 + 5 = 7 us and receives m(2000) = 3 us: 7 us; rank 1 sends 3 us, receives
// 2 us; rank 2 receives 5 us. The phase takes the slowest rank: 7 us. A rank with k equal
// messages takes k m(L): 0 -> 1 and 0 -> 2 of 1000 B each, 2 x 2 us = 4 us. A receiving rank can
// be the slowest: 1 -> 0 and 2 -> 0 of 3000 B each, rank 0 receives 5 + 5 = 10 us (the senders 5).
TEST(CostTerms, MeasuredMessagesPhaseIsTheSlowestRanksMessagesInTurn) {
  const Network net = measured_host_network(3);
  EXPECT_NEAR(net.phase_time_s({{0, 1, 1000}, {0, 2, 3000}, {1, 0, 2000}}), 7e-6, 1e-15);
  EXPECT_NEAR(net.phase_time_s({{0, 1, 1000}, {0, 2, 1000}}), 4e-6, 1e-15);
  EXPECT_NEAR(net.phase_time_s({{1, 0, 3000}, {2, 0, 3000}}), 10e-6, 1e-15);
}

// The switch: without measured_messages the same phase is Hockney's. Rank 0: 2 messages x 1 us +
// max(4000 out, 2000 in) x 1 ns = 6 us; rank 1: 1 us + 2000 ns = 3 us; rank 2: 3000 ns. 6 us;
// the network's description then names Hockney instead of the measured messages.
TEST(CostTerms, MeasuredMessagesSwitchOffFallsBackToHockney) {
  std::vector<Network> nets{measured_host_network(3)};
  EXPECT_NE(nets[0].describe().find("host measured messages"), std::string::npos) << nets[0].describe();
  MemoryModel memory;
  switch_off("measured_messages", nets, memory);
  EXPECT_NEAR(nets[0].phase_time_s({{0, 1, 1000}, {0, 2, 3000}, {1, 0, 2000}}), 6e-6, 1e-15);
  EXPECT_NE(nets[0].describe().find("host Hockney, alpha 1 us"), std::string::npos) << nets[0].describe();
}

// A malformed curve is refused, the error naming its key: sizes out of order, a point that is not
// [bytes, seconds], a negative time, no points.
TEST(CostTerms, MeasuredMessagesMalformedCurveNamesTheKey) {
  for (const nlohmann::json& curve : {nlohmann::json{{2000, 3e-6}, {1000, 2e-6}}, nlohmann::json{{1000, 2e-6, 5}},
                                      nlohmann::json{{1000, -1e-6}}, nlohmann::json::array(), nlohmann::json("fast")}) {
    const nlohmann::json spec = {
        {"kind", "host"}, {"host", {{"alpha_s", 1e-6}, {"beta_s_per_byte", 1e-9}, {"message_seconds_by_bytes", curve}}}};
    try {
      Network::from_json(spec, 2);
      ADD_FAILURE() << "accepted " << curve.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("in 'host': key 'message_seconds_by_bytes'"), std::string::npos) << e.what();
    }
  }
}

// PCIe+MPI from figures, three stages one after the other. One 8000 B message: PCIe 10 + 1 us,
// host 2 + 0.8 us, PCIe 11 us: 24.8 us. Rank 0 sending 8000 B to 1 and to 2: PCIe out 22 us (rank 0),
// host 2 x 2 us + 16000 B / 10 GB/s = 5.6 us, PCIe in 11 us (ranks 1 and 2 each): 38.6 us.
TEST(CostTerms, PcieMpiIsPcieOutHostPcieIn) {
  const Network net = pcie_network(3, false);
  EXPECT_NEAR(net.message_time_s(0, 1, 8000), 24.8e-6, 1e-12);
  EXPECT_NEAR(net.phase_time_s({{0, 1, 8000}, {0, 2, 8000}}), 38.6e-6, 1e-12);
}

// Measured curves, linear between points: PCIe {128 B: 30 us, 1024 B: 50 us}, host Sendrecv
// {128 B: 5 us, 1024 B: 9 us}. At 576 B (half way): PCIe 40 us, host 7 us: 2 x 40 + 7 = 87 us.
// Below 128 B the curves are flat (HPCC FPGA moves at least its 128 B validation buffer).
TEST(CostTerms, PcieMpiMeasuredCurves) {
  const nlohmann::json p = {{"pcie_transfer_seconds_by_bytes", {{128, 30e-6}, {1024, 50e-6}}},
                            {"host_exchange_seconds_by_bytes", {{128, 5e-6}, {1024, 9e-6}}}};
  const Network net = Network::from_json({{"kind", "pcie_mpi"}, {"pcie_mpi", p}}, 2);
  EXPECT_NEAR(net.message_time_s(0, 1, 576), 87e-6, 1e-12);
  EXPECT_NEAR(net.message_time_s(0, 1, 1), 2 * 30e-6 + 5e-6, 1e-12);
}

// The curves from the publication's runs, at 1 MiB (loop length 256, two rounds per loop):
// PCIe = (PCIE 1 FPGA - CPU 1 rank) / 2 = (0.343970 - 0.0730763) s / 512 / 2 = 264.545 us;
// host = CPU 26 ranks = 0.145454 s / 512 = 284.090 us.
TEST(CostTerms, PcieMpiCalibratedFromTheSingleFpgaAndCpuRuns) {
  const PcieMpiPath p = calibrate_base_path(load_beff_reference(kReference), "pcie_1fpga", "cpu_1rank", "cpu_26ranks");
  EXPECT_NEAR(p.pcie_time_s(1 << 20), (0.343970 - 0.0730763) / 512 / 2, 1e-12);
  EXPECT_NEAR(p.host_time_s(1 << 20), 0.145454 / 512, 1e-12);
}

// Node contention, 2 FPGAs per node (ranks 0,1 node 0; 2,3 node 1), 5 us per transfer. 0 -> 2
// alone: no other FPGA of either node busy, 24.8 us as above. 0 -> 2 with 1 -> 3: both FPGAs of
// node 0 read and both of node 1 write: (11 + 5) + 2.8 + (11 + 5) = 34.8 us. 0 -> 2 with 2 -> 0:
// one reader and one writer per node, in different stages: 24.8 us.
TEST(CostTerms, NodeContentionWhenAnotherFpgaOfTheNodeTransfers) {
  const Network net = pcie_network(4, true);
  EXPECT_NEAR(net.phase_time_s({{0, 2, 8000}}), 24.8e-6, 1e-12);
  EXPECT_NEAR(net.phase_time_s({{0, 2, 8000}, {1, 3, 8000}}), 34.8e-6, 1e-12);
  EXPECT_NEAR(net.phase_time_s({{0, 2, 8000}, {2, 0, 8000}}), 24.8e-6, 1e-12);
  EXPECT_NEAR(pcie_network(4, false).phase_time_s({{0, 2, 8000}, {1, 3, 8000}}), 24.8e-6, 1e-12);
}

// The term from the publication's runs, at 1 MiB: ((PCIE node - CPU node) - (PCIE 1 - CPU 1)) / 2 =
// ((0.521787 - 0.180534) - (0.343970 - 0.0730763)) s / 512 / 2 = 68.710 us per transfer. At 1 KiB
// the difference is negative (-1.418 us: noise between runs), so the term is 0 there.
TEST(CostTerms, NodeContentionFromTheRunsOnBothFpgasOfOneNode) {
  const NodeContention n = calibrate_node_contention(load_beff_reference(kReference), "pcie_2fpga_1node",
                                                     "cpu_2ranks_1node", "pcie_1fpga", "cpu_1rank");
  EXPECT_EQ(n.fpgas_per_node, 2);
  EXPECT_NEAR(n.extra_per_transfer.time_s(1 << 20), ((0.521787 - 0.180534) - (0.343970 - 0.0730763)) / 1024, 1e-12);
  EXPECT_DOUBLE_EQ(n.extra_per_transfer.time_s(1024), 0.0);
}

// The switch: without node_contention the same phase costs 24.8 us again.
TEST(CostTerms, NodeContentionSwitchesOff) {
  std::vector<Network> nets{pcie_network(4, true)};
  MemoryModel memory;
  switch_off("node_contention", nets, memory);
  EXPECT_NEAR(nets[0].phase_time_s({{0, 2, 8000}, {1, 3, 8000}}), 24.8e-6, 1e-12);
  EXPECT_THROW(switch_off("no_such_term", nets, memory), std::invalid_argument);
}

// b_eff on the PCIe+MPI path serves the two neighbours one after the other: at L = 1 B (one size,
// loop length 65536) an exchange is 2 rounds of 2 PCIe (10 us + 1 B / 8 GB/s) + host (2 us +
// 1 B / 10 GB/s) = 2 x 22.00035 us = 44.0007 us, so b(1) per rank = 2 x 1 B / 44.0007 us.
// On IEC both neighbours at once: L = 64 B is one chunk on each of two links, 526.4 ns per
// exchange, b(64) per rank = 2 x 64 B / 526.4 ns.
TEST(CostTerms, BeffExchangeOnPcieInTwoRoundsOnIecAtOnce) {
  BeffRules one_size;
  one_size.max_exponent = 0;
  EXPECT_NEAR(model_beff(pcie_network(4, false), one_size).per_rank_bytes_per_s(), 2.0 / 44.0007e-6, 1e-3);
  BeffRules sizes_to_64;
  sizes_to_64.max_exponent = 6;
  const Network ring = Network::from_json({{"kind", "iec"}, {"topology", "ring"}, {"channels_per_fpga", 4}}, 4);
  const BeffResult r = model_beff(ring, sizes_to_64);
  EXPECT_NEAR(r.points.back().bandwidth_bytes_per_s / 4, 2.0 * 64 / 526.4e-9, 1.0);
}

// Local work: 1000 B in 10 blocks at 1 GB/s and 10 ns per block = 1 us + 0.1 us.
TEST(CostTerms, LocalCopyIsBytesOverBandwidthPlusBlocks) {
  EXPECT_NEAR(plain_memory(1e9, 10e-9).copy_time_s(1000, 10), 1.1e-6, 1e-15);
}

// Working set: bandwidth 4 GB/s at 1 KB, 1 GB/s at 1 MB. 1000 B copied by a rank that touches
// 1 MB in the call: 1000 B / 1 GB/s = 1 us; with the term off, at the copy's own size: 0.25 us.
TEST(CostTerms, WorkingSetPicksTheBandwidth) {
  MemoryModel m = plain_memory(1e9, 0.0);
  m.bandwidth_by_bytes = {{1e3, 4e9}, {1e6, 1e9}};
  EXPECT_NEAR(m.copy_time_s(1000, 0, 1e6), 1e-6, 1e-15);
  std::vector<Network> none;
  switch_off("working_set", none, m);
  EXPECT_NEAR(m.copy_time_s(1000, 0, 1e6), 0.25e-6, 1e-15);
}

// Streaming stores: a rank's testbed copies of 4 MiB or more in a phase at the streaming bandwidth
// (20 GB/s here) instead of the plain 10 GB/s: 8 MiB in 0.419 ms instead of 0.839 ms; with the term
// off, the plain bandwidth.
TEST(CostTerms, StreamingStoresForLargeTestbedCopies) {
  MemoryModel m = plain_memory(10e9, 0.0);
  m.streaming_bandwidth_by_bytes = {{1, 20e9}};
  const Network host = host_network(1);
  const Phase large{"large", {}, {8 << 20}, {1}, {0}, {LibraryWork{}}, {LibraryWork{}}, {}, {}, {}};
  EXPECT_NEAR(cost({large}, host, m).local_s, (8 << 20) / 20e9, 1e-15);
  std::vector<Network> none;
  switch_off("streaming_stores", none, m);
  EXPECT_NEAR(cost({large}, host, m).local_s, (8 << 20) / 10e9, 1e-15);
}

// The library's packing (native, pairwise) on the network's MPI_Pack model (2 GB/s here) instead of
// the memory model (10 GB/s): 2 MB packed by the library = 1 ms; with the term off, 0.2 ms.
TEST(CostTerms, LibraryEngineForTheLibrarysPacking) {
  const nlohmann::json spec = {{"kind", "host"},
                               {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}}},
                               {"library", {{"copy_bandwidth_bytes_per_s", 2e9}, {"per_block_s", 0.0}}}};
  std::vector<Network> nets{Network::from_json(spec, 1)};
  MemoryModel m = plain_memory(10e9, 0.0);
  const Phase packed{"library", {}, {0}, {0}, {0}, {LibraryWork{2e6, 1, 1}}, {LibraryWork{}}, {}, {}, {}};
  EXPECT_NEAR(cost({packed}, nets[0], m).local_s, 1e-3, 1e-15);
  switch_off("library_engine", nets, m);
  EXPECT_NEAR(cost({packed}, nets[0], m).local_s, 0.2e-3, 1e-15);
}

// Phases add (nothing overlaps) and each phase costs its messages plus its slowest rank's local
// work. pack_alltoallv on two_rank_pattern(), host network, memory 1 GB/s, no block cost: pack
// 150 B (rank 0: 50 self + 100) = 150 ns; messages: each rank one of 100 B = 1 us + 100 ns;
// unpack 150 B = 150 ns. Total 1.4 us in 3 phases, 2 messages.
TEST(CostTerms, PhasesAddEachAtItsSlowestRank) {
  const Cost c = cost(schedule("pack_alltoallv", two_rank_pattern(), {}), host_network(2), plain_memory(1e9, 0.0));
  EXPECT_NEAR(c.local_s, 300e-9, 1e-15);
  EXPECT_NEAR(c.communication_s, 1.1e-6, 1e-15);
  EXPECT_NEAR(c.total_s(), 1.4e-6, 1e-15);
  EXPECT_EQ(c.phases, 3);
  EXPECT_EQ(c.messages, 2);
}

// native: one phase, both messages; the library packs rank 0's 4-block send (100 B, 4 blocks);
// the self parts (50 B each) are messages to itself inside the library, not the testbed's copies.
TEST(CostTerms, NativeScheduleOnePhaseLibraryPacks) {
  const auto p = schedule("native", two_rank_pattern(), {});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].messages.size(), 2u);
  expect_library_sends(p[0], {{100, 4, 1}, {}});
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{0, 0}));
  ASSERT_EQ(p[0].self_messages.size(), 2u);
  EXPECT_EQ(p[0].self_messages[0].bytes, 50);
  EXPECT_EQ(p[0].self_messages[1].bytes, 50);
}

// Self messages. A host network measured at 2 us for a 10 B and 3 us for a 1010 B self message,
// its library engine 0.5 GB/s and 20 ns per block: rank 1's contiguous 50 B self part (native)
// costs 2.04 us (linear), local_remap's packed one too. Rank 0's self part has 4 send blocks: one
// pass of the library's engine, 100 ns + 80 ns. With the term off every self part is one plain
// copy on memory of 1 GB/s and 10 ns per block: rank 0 50 ns + 40 ns, local_remap's 50 + 10 ns.
TEST(CostTerms, SelfMessagesAtTheirMeasuredTime) {
  nlohmann::json spec = {
      {"kind", "host"},
      {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}, {"self_message_seconds_by_bytes", {{10, 2e-6}, {1010, 3e-6}}}}},
      {"library", {{"copy_bandwidth_bytes_per_s", 0.5e9}, {"per_block_s", 20e-9}}}};
  std::vector<Network> nets{Network::from_json(spec, 2)};
  MemoryModel m = plain_memory(1e9, 10e-9);
  CommPattern one(2);
  one.at(0, 0) = {50, 4, 1};
  one.at(1, 1) = {50, 1, 1};
  const auto native = schedule("native", one, {});
  const auto remap = schedule("local_remap", one, {});
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 2.04e-6, 1e-15);
  one.at(1, 1) = {0, 1, 1};
  const auto native_strided_only = schedule("native", one, {});
  EXPECT_NEAR(cost(native_strided_only, nets[0], m).local_s, 180e-9, 1e-15);
  EXPECT_NEAR(cost({remap[1]}, nets[0], m).local_s, 2.04e-6, 1e-15);
  switch_off("self_messages", nets, m);
  EXPECT_EQ(nets[0].self_messages(), nullptr);
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 90e-9, 1e-15);
  EXPECT_NEAR(cost(native_strided_only, nets[0], m).local_s, 90e-9, 1e-15);
  EXPECT_NEAR(cost({remap[1]}, nets[0], m).local_s, 60e-9, 1e-15);
}

// Cold self messages. A host whose self message of 1000 B takes 2.99 us (2 us at 10 B, 3 us at
// 1010 B), messages free (Hockney 0, 0), with the cold extra of such a self message 1 us after
// 100 B of traffic and 5 us after 10000 B. Three ranks, each with 1000 B to itself; rank 0 also
// sends 9000 B to rank 1. native: ranks 0 and 1 move 10000 B (their working set, the self message,
// plus the 9000 B sent or received), so their self messages cost 2.99 + 5 us; rank 2's traffic is
// its 1000 B, halfway between the two on log T, so 2.99 + 3 us. The local work is the slowest
// rank's: 7.99 us (5.99 us were the working set taken for the traffic). Without the term 2.99 us;
// without the measured self messages the self part is a plain copy (1 us + one 10 ns block) and
// pays no cold extra. local_remap's self part was just packed, and pack_alltoallv copies its own:
// neither changes with the term.
TEST(CostTerms, ColdSelfMessagesPayTheExtraAfterTheCallsMemoryTraffic) {
  nlohmann::json spec = {
      {"kind", "host"},
      {"host",
       {{"alpha_s", 0.0},
        {"beta_s_per_byte", 0.0},
        {"self_message_seconds_by_bytes", {{10, 2e-6}, {1010, 3e-6}}},
        {"cold_self_message_extra_seconds",
         {{{"traffic_bytes", 100}, {"seconds_by_bytes", {{1000, 1e-6}}}},
          {{"traffic_bytes", 10000}, {"seconds_by_bytes", {{1000, 5e-6}}}}}}}}};
  MemoryModel m = plain_memory(1e9, 10e-9);
  CommPattern p(3);
  for (int r = 0; r < 3; ++r) p.at(r, r) = {1000, 1, 1};
  p.at(0, 1) = {9000, 1, 1};
  std::vector<Network> nets{Network::from_json(spec, 3)};
  EXPECT_NEAR(cost(schedule("native", p, {}), nets[0], m).local_s, 7.99e-6, 1e-12);
  std::vector<Network> plain_self{Network::from_json(spec, 3)};
  MemoryModel plain_m = m;
  switch_off("self_messages", plain_self, plain_m);
  EXPECT_NEAR(cost(schedule("native", p, {}), plain_self[0], plain_m).local_s, 1.01e-6, 1e-12);
  std::vector<Network> without{Network::from_json(spec, 3)};
  MemoryModel without_m = m;
  switch_off("cold_self_messages", without, without_m);
  EXPECT_EQ(without[0].cold_self_messages(), nullptr);
  EXPECT_NEAR(cost(schedule("native", p, {}), without[0], without_m).local_s, 2.99e-6, 1e-12);
  for (const char* name : {"local_remap", "pack_alltoallv"})
    EXPECT_DOUBLE_EQ(cost(schedule(name, p, {}), nets[0], m).local_s,
                     cost(schedule(name, p, {}), without[0], without_m).local_s)
        << name;
}

// The self-message curve is checked like the message curve: its errors name its key.
TEST(CostTerms, SelfMessagesMalformedCurveNamesTheKey) {
  auto host_with = [](const nlohmann::json& curve) {
    return nlohmann::json{{"kind", "host"},
                          {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}, {"self_message_seconds_by_bytes", curve}}}};
  };
  for (const nlohmann::json& bad : {nlohmann::json::array(), nlohmann::json{{2, 1e-6}, {1, 2e-6}}, nlohmann::json("x")}) {
    try {
      Network::from_json(host_with(bad), 2);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("self_message_seconds_by_bytes"), std::string::npos) << e.what();
    }
  }
}

// A host whose non-contiguous messages were measured: sent, 64 B blocks 10 us at 1000 B and 30 us
// at 2000 B, 4096 B blocks 2 and 4 us; received, 64 B blocks 5 us at 1000 B (one point). A self
// message takes 1 us at any size; the library engine 1 GB/s.
nlohmann::json measured_noncontiguous_host() {
  return {{"kind", "host"},
          {"host",
           {{"alpha_s", 0.0},
            {"beta_s_per_byte", 0.0},
            {"self_message_seconds_by_bytes", {{1, 1e-6}}},
            {"noncontiguous_send_extra_seconds",
             {{{"block_bytes", 64}, {"seconds_by_bytes", {{1000, 10e-6}, {2000, 30e-6}}}},
              {{"block_bytes", 4096}, {"seconds_by_bytes", {{1000, 2e-6}, {2000, 4e-6}}}}}},
            {"noncontiguous_recv_extra_seconds", {{{"block_bytes", 64}, {"seconds_by_bytes", {{1000, 5e-6}}}}}}}},
          {"library", {{"copy_bandwidth_bytes_per_s", 1e9}, {"per_block_s", 0.0}}}};
}

// Non-contiguous messages (native). Rank 0 sends 1536 B in 3 blocks of 512 B, half-way between
// 64 and 4096 on log(block): 64 B curve at 1536 B 10 + 0.536 * 20 = 20.72 us, 4096 B curve
// 2 + 0.536 * 2 = 3.072 us, mean 11.896 us; it receives 500 B in 8 blocks (62.5 B: the 64 B
// curve), below its first size: 5 us * 500 / 1000 = 2.5 us. Rank 0 pays the larger of its two
// sides (noncontiguous_overlap, the next test), 11.896 us; rank 1 receives 1536 B in 24 blocks of
// 64 B: 5 us. With the term off one pass of the engine: rank 0 (1536 + 500) B at 1 GB/s =
// 2.036 us. Without local work (SMPI with compute off), nothing.
CommPattern noncontiguous_pattern() {
  CommPattern p(2);
  p.at(0, 1) = {1536, 3, 24};
  p.at(1, 0) = {500, 1, 8};
  return p;
}

TEST(CostTerms, NoncontiguousMessagesAtTheirMeasuredExtra) {
  std::vector<Network> nets{Network::from_json(measured_noncontiguous_host(), 2)};
  MemoryModel m = plain_memory(10e9, 0.0);
  const auto native = schedule("native", noncontiguous_pattern(), {});
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 11.896e-6, 1e-12);
  std::vector<Network> without_local_work = nets;
  MemoryModel no_local_work = m;
  switch_off("local_work", without_local_work, no_local_work);
  EXPECT_EQ(cost(native, without_local_work[0], no_local_work).local_s, 0.0);
  switch_off("noncontiguous_messages", nets, m);
  EXPECT_EQ(nets[0].noncontiguous_messages(), nullptr);
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 2.036e-6, 1e-12);
}

// The same pattern: rank 0 is non-contiguous on both sides, 11.896 us sending and 2.5 us
// receiving; it pays the larger, 11.896 us, and with noncontiguous_overlap off their sum,
// 14.396 us. Rank 1, non-contiguous only on its receiving side, pays its 5 us either way. The
// engine's fallback (noncontiguous_messages off) keeps the sum: packing and unpacking are both
// work on the rank's core, 2.036 us.
TEST(CostTerms, NoncontiguousSidesOverlapTheRankPaysTheLarger) {
  std::vector<Network> nets{Network::from_json(measured_noncontiguous_host(), 2)};
  MemoryModel m = plain_memory(10e9, 0.0);
  CommPattern p = noncontiguous_pattern();
  const auto native = schedule("native", p, {});
  EXPECT_TRUE(nets[0].noncontiguous_sides_overlap());
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 11.896e-6, 1e-12);
  p.at(0, 1) = {1536, 1, 24};  // rank 0 contiguous on its sending side: its 2.5 us, rank 1's 5 us
  EXPECT_NEAR(cost(schedule("native", p, {}), nets[0], m).local_s, 5e-6, 1e-12);
  switch_off("noncontiguous_overlap", nets, m);
  EXPECT_FALSE(nets[0].noncontiguous_sides_overlap());
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 14.396e-6, 1e-12);
  switch_off("noncontiguous_messages", nets, m);
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 2.036e-6, 1e-12);
}

// A non-contiguous self message: its measured time (1 us) plus the measured extra of its
// non-contiguous side: 1000 B in 16 blocks (62.5 B: the 64 B curve) 10 us, 11 us in all. With
// the term off one pass of the library engine, 1000 B at 1 GB/s: 1 us.
TEST(CostTerms, NoncontiguousSelfMessageAtItsMeasuredExtra) {
  std::vector<Network> nets{Network::from_json(measured_noncontiguous_host(), 1)};
  MemoryModel m = plain_memory(10e9, 0.0);
  CommPattern p(1);
  p.at(0, 0) = {1000, 16, 1};
  const auto native = schedule("native", p, {});
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 11e-6, 1e-12);
  switch_off("noncontiguous_messages", nets, m);
  EXPECT_NEAR(cost(native, nets[0], m).local_s, 1e-6, 1e-12);
}

// A self message's own measured extra replaces the pairs': the host above with its self extra
// measured too, sent in 64 B blocks 4 us at 1000 B and 8 us at 2000 B. The self message of
// 1000 B in 16 blocks then costs 1 us + 4 us = 5 us; rank 0's 1500 B in 24 blocks 1 us + 6 us
// (linear) = 7 us. Switched off, the pairs' extra again: 11 us. The two self tables come together.
TEST(CostTerms, NoncontiguousSelfMessagesAtTheirOwnMeasuredExtra) {
  nlohmann::json spec = measured_noncontiguous_host();
  spec["host"]["self_noncontiguous_send_extra_seconds"] = {
      {{"block_bytes", 64}, {"seconds_by_bytes", {{1000, 4e-6}, {2000, 8e-6}}}}};
  spec["host"]["self_noncontiguous_recv_extra_seconds"] = {{{"block_bytes", 64}, {"seconds_by_bytes", {{1000, 1e-6}}}}};
  std::vector<Network> nets{Network::from_json(spec, 1)};
  MemoryModel m = plain_memory(10e9, 0.0);
  CommPattern p(1);
  p.at(0, 0) = {1000, 16, 1};
  EXPECT_NEAR(cost(schedule("native", p, {}), nets[0], m).local_s, 5e-6, 1e-12);
  p.at(0, 0) = {1500, 24, 1};
  EXPECT_NEAR(cost(schedule("native", p, {}), nets[0], m).local_s, 7e-6, 1e-12);
  p.at(0, 0) = {1000, 16, 1};
  switch_off("noncontiguous_self_messages", nets, m);
  EXPECT_EQ(nets[0].noncontiguous_self_messages(), nullptr);
  EXPECT_NEAR(cost(schedule("native", p, {}), nets[0], m).local_s, 11e-6, 1e-12);
  spec["host"].erase("self_noncontiguous_recv_extra_seconds");
  try {
    Network::from_json(spec, 1);
    ADD_FAILURE() << "accepted a self send extra without its receive extra";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("self_noncontiguous_recv_extra_seconds"), std::string::npos) << e.what();
  }
}

// node_leader's copies go through its copy lists: a 1000 B self copy of 16 blocks on one rank
// costs 1 us of bandwidth + 16 pieces at the measured cost per piece, read in log(bytes) at its
// working set (1000 B, halfway from 10 ns at 100 B to 30 ns at 10 KB: 20 ns), 1.32 us. Switched
// off, the pieces cost the packer's 1 ns per block: 1.016 us. pack_alltoallv's blocks never
// take the piece cost: 1 us twice (pack, unpack) + 17 blocks at 1 ns.
TEST(CostTerms, NodeLeaderCopiesAtTheMeasuredCostPerPiece) {
  std::vector<Network> nets{
      Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}}}}, 1)};
  MemoryModel m = plain_memory(1e9, 1e-9);
  m.per_piece_by_bytes = {{100, 10e-9}, {10000, 30e-9}};
  CommPattern p(1);
  p.at(0, 0) = {1000, 16, 1};
  EXPECT_NEAR(cost(schedule("node_leader", p, {}), nets[0], m).local_s, 1.32e-6, 1e-12);
  EXPECT_NEAR(cost(schedule("pack_alltoallv", p, {}), nets[0], m).local_s, 2.017e-6, 1e-12);
  switch_off("copy_list_pieces", nets, m);
  EXPECT_TRUE(m.per_piece_by_bytes.empty());
  EXPECT_NEAR(cost(schedule("node_leader", p, {}), nets[0], m).local_s, 1.016e-6, 1e-12);
}

// The packer's blocks at their measured cost by working set: pack_alltoallv's self block of
// 1000 B, 16 blocks sent and 1 received, on one rank costs 2 us of bandwidth (1000 B out and in)
// + 17 blocks at the cost read in log(bytes) at its working set of 2000 B, from 10 ns at 100 B to
// 30 ns at 10 KB: 10 + 20 log(20) / log(100) = 23.01 ns. Switched off, the blocks cost
// per_block_s, 1 ns: 2.017 us. The table reaches to_json and from_json, and the copy lists'
// fallback (a piece costs a block where no piece table is given: 20 ns at 1000 B), but not the
// MPI library's packing.
TEST(CostTerms, PackerBlocksAtTheMeasuredCostByWorkingSet) {
  std::vector<Network> nets{
      Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}}}}, 1)};
  MemoryModel m = plain_memory(1e9, 1e-9);
  m.per_block_by_bytes = {{100, 10e-9}, {10000, 30e-9}};
  CommPattern p(1);
  p.at(0, 0) = {1000, 16, 1};
  EXPECT_NEAR(cost(schedule("pack_alltoallv", p, {}), nets[0], m).local_s,
              2e-6 + 17 * (10e-9 + 20e-9 * std::log(20.0) / std::log(100.0)), 1e-15);
  EXPECT_NEAR(m.per_piece_at(1000), 20e-9, 1e-18);
  // The library's packing, on a network without an engine of its own, falls back on the memory
  // model but not on the packer's table: 1 us + 16 blocks at per_block_s.
  const Phase packed{"library", {}, {0}, {0}, {0}, {LibraryWork{1000, 16, 1}}, {LibraryWork{}}, {}, {}, {}};
  EXPECT_NEAR(cost({packed}, nets[0], m).local_s, 1e-6 + 16e-9, 1e-15);
  const MemoryModel back = nlohmann::json(m).get<MemoryModel>();
  EXPECT_EQ(back.per_block_by_bytes, m.per_block_by_bytes);
  switch_off("packer_blocks", nets, m);
  EXPECT_TRUE(m.per_block_by_bytes.empty());
  EXPECT_NEAR(cost(schedule("pack_alltoallv", p, {}), nets[0], m).local_s, 2.017e-6, 1e-12);
}

// The two tables come together, and each is checked: errors name the key.
TEST(CostTerms, NoncontiguousMalformedTableNamesTheKey) {
  const nlohmann::json good = measured_noncontiguous_host();
  std::vector<std::pair<nlohmann::json, std::string>> cases;
  nlohmann::json one_side = good;
  one_side["host"].erase("noncontiguous_recv_extra_seconds");
  cases.emplace_back(one_side, "noncontiguous_recv_extra_seconds");
  nlohmann::json unordered = good;
  std::swap(unordered["host"]["noncontiguous_send_extra_seconds"][0], unordered["host"]["noncontiguous_send_extra_seconds"][1]);
  cases.emplace_back(unordered, "noncontiguous_send_extra_seconds");
  nlohmann::json unknown = good;
  unknown["host"]["noncontiguous_recv_extra_seconds"][0]["blocks"] = 1;
  cases.emplace_back(unknown, "noncontiguous_recv_extra_seconds");
  nlohmann::json empty_curve = good;
  empty_curve["host"]["noncontiguous_send_extra_seconds"][1]["seconds_by_bytes"] = nlohmann::json::array();
  cases.emplace_back(empty_curve, "noncontiguous_send_extra_seconds");
  for (const auto& [spec, key] : cases) {
    try {
      Network::from_json(spec, 2);
      ADD_FAILURE() << "accepted " << spec.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// The node handoff tests' host: 2 ranks on one node, messages free, a node handoff measured at
// 2 us extra for 1000 B and 3 us for 2000 B.
Network handoff_host() {
  return Network::from_json({{"kind", "host"},
                             {"ranks_per_node", 2},
                             {"host",
                              {{"alpha_s", 0.0},
                               {"beta_s_per_byte", 0.0},
                               {"node_handoff_extra_seconds_by_bytes", {{1000, 2e-6}, {2000, 3e-6}}}}}},
                            2);
}

// Rank 0 sends 1500 B to rank 1, rank 1 500 B to rank 0, both contiguous.
CommPattern handoff_pattern() {
  CommPattern p(2);
  p.at(0, 1) = {1500, 1, 1};
  p.at(1, 0) = {500, 1, 1};
  return p;
}

// Node handoffs (node_leader, 2 ranks on one node, staged). A host measured at 2 us extra for
// 1000 B and 3 us for 2000 B; memory 1 GB/s. Rank 1 unpacks rank 0's 1500 B from the staging:
// 1.5 us copy + 2.5 us handoff; rank 0 unpacks 500 B: 0.5 us + 2 us * 500 / 1000 (below the first
// size, scaled) = 1.5 us. The unpack phase costs 4 us; with the term off 1.5 us; with node-shared
// arrays there is no staging and no handoff.
TEST(CostTerms, NodeHandoffForTheUnpackFromStaging) {
  std::vector<Network> nets{handoff_host()};
  MemoryModel m = plain_memory(1e9, 0.0);
  m.by_working_set = false;
  const CommPattern p = handoff_pattern();
  const auto staged = schedule("node_leader", p, {.ranks_per_node = 2});
  ASSERT_EQ(staged.size(), 3u);
  EXPECT_EQ(staged[2].handoff_bytes, (std::vector<double>{500, 1500}));
  EXPECT_NEAR(cost({staged[2]}, nets[0], m).local_s, 4e-6, 1e-12);
  const auto shared = schedule("node_leader", p, {.ranks_per_node = 2, .node_shared_buffers = true});
  EXPECT_EQ(shared[2].handoff_bytes, (std::vector<double>{0, 0}));
  switch_off("node_handoff", nets, m);
  EXPECT_EQ(nets[0].node_handoff(), nullptr);
  EXPECT_NEAR(cost({staged[2]}, nets[0], m).local_s, 1.5e-6, 1e-12);
}

// Node handoffs on the write side (pack_alltoallv, 2 ranks on one node). The same host: rank 0
// packs 1500 B for rank 1 into the buffer rank 1 read in the previous call: 1.5 us copy + 2.5 us
// handoff; rank 1 packs 500 B: 0.5 us + 1 us. The pack phase costs 4 us; with the ranks on two
// nodes (the peer reads through the network, not from the buffer) or the term off, 1.5 us.
TEST(CostTerms, NodeHandoffForThePackIntoABufferAnOnNodePeerRead) {
  std::vector<Network> nets{handoff_host()};
  MemoryModel m = plain_memory(1e9, 0.0);
  m.by_working_set = false;
  const CommPattern p = handoff_pattern();
  const auto one_node = schedule("pack_alltoallv", p, {.ranks_per_node = 2});
  ASSERT_EQ(one_node.size(), 3u);
  EXPECT_EQ(one_node[0].handoff_bytes, (std::vector<double>{1500, 500}));
  EXPECT_NEAR(cost({one_node[0]}, nets[0], m).local_s, 4e-6, 1e-12);
  EXPECT_EQ(schedule("local_remap", p, {.ranks_per_node = 2})[0].handoff_bytes, (std::vector<double>{1500, 500}));
  const auto two_nodes = schedule("pack_alltoallv", p, {.ranks_per_node = 1});
  EXPECT_EQ(two_nodes[0].handoff_bytes, (std::vector<double>{0, 0}));
  EXPECT_NEAR(cost({two_nodes[0]}, nets[0], m).local_s, 1.5e-6, 1e-12);
  switch_off("node_handoff", nets, m);
  EXPECT_NEAR(cost({one_node[0]}, nets[0], m).local_s, 1.5e-6, 1e-12);
}

// Node handoffs in pieces. The host above also measured 6 us for 1000 B and 9 us for 2000 B
// copied in 64-byte pieces. Rank 0's 1500 B reach rank 1 in 25 blocks of 60 B on both sides:
// node_leader's unpack on rank 1 is 1.5 us copy + 7.5 us (the pieces' extra); rank 0 unpacks
// 500 B contiguous: 0.5 us + 1 us. The unpack phase costs 9 us, with the term off 4 us (the
// contiguous extra). Received contiguous, half the pair is in pieces: 1.5 + (7.5 + 2.5) / 2 =
// 6.5 us. pack_alltoallv's pack on rank 0 keeps the contiguous extra: 1.5 + 2.5 = 4 us. Between
// 64 B and one block of L bytes the share in pieces falls linearly in log(block): at sqrt(64 L)
// one half.
TEST(CostTerms, NodeHandoffInPiecesForSmallBlocks) {
  nlohmann::json spec = {{"kind", "host"},
                         {"ranks_per_node", 2},
                         {"host",
                          {{"alpha_s", 0.0},
                           {"beta_s_per_byte", 0.0},
                           {"node_handoff_extra_seconds_by_bytes", {{1000, 2e-6}, {2000, 3e-6}}},
                           {"node_handoff_piece_extra_seconds_by_bytes", {{1000, 6e-6}, {2000, 9e-6}}}}}};
  std::vector<Network> nets{Network::from_json(spec, 2)};
  MemoryModel m = plain_memory(1e9, 0.0);
  m.by_working_set = false;
  CommPattern p = handoff_pattern();
  p.at(0, 1) = {1500, 25, 25};
  const auto staged = schedule("node_leader", p, {.ranks_per_node = 2});
  EXPECT_EQ(staged[2].handoff_piece_bytes, (std::vector<double>{0, 1500}));
  EXPECT_NEAR(cost({staged[2]}, nets[0], m).local_s, 9e-6, 1e-12);
  EXPECT_NEAR(cost({schedule("pack_alltoallv", p, {.ranks_per_node = 2})[0]}, nets[0], m).local_s, 4e-6, 1e-12);
  CommPattern received_whole = p;
  received_whole.at(0, 1) = {1500, 25, 1};
  EXPECT_NEAR(cost({schedule("node_leader", received_whole, {.ranks_per_node = 2})[2]}, nets[0], m).local_s, 6.5e-6,
              1e-12);
  EXPECT_DOUBLE_EQ(HostMessage::piece_share(1500, std::sqrt(64.0 * 1500)), 0.5);
  EXPECT_DOUBLE_EQ(HostMessage::piece_share(1500, 60), 1.0);
  EXPECT_DOUBLE_EQ(HostMessage::piece_share(1500, 1500), 0.0);
  switch_off("node_handoff_pieces", nets, m);
  EXPECT_NE(nets[0].node_handoff(), nullptr);
  EXPECT_NEAR(cost({staged[2]}, nets[0], m).local_s, 4e-6, 1e-12);
  spec["host"].erase("node_handoff_extra_seconds_by_bytes");
  try {
    Network::from_json(spec, 2);
    ADD_FAILURE() << "accepted handoffs in pieces without the contiguous ones";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node_handoff_piece_extra_seconds_by_bytes"), std::string::npos) << e.what();
  }
}

// Fresh messages (pack_alltoallv, 3 ranks on one node; messages themselves free: alpha and beta
// 0). A host measured at 2 us extra for a message of 1000 B its sender just wrote and 5 us for
// 4000 B. Rank 1 receives 4000 B from rank 0 (5 us) and 2500 B from rank 2 (2 + 1500 x 3 / 3000 =
// 3.5 us), one after another: 8.5 us; rank 0 receives 1000 B from rank 1: 2 us. The exchange costs
// 8.5 us; native's messages (the user's arrays, not just written) 0; with the ranks on separate
// nodes (the schedule's ranks per node) or the term off, 0.
TEST(CostTerms, FreshMessagesPayTheirMeasuredExtraOnTheReceiver) {
  std::vector<Network> nets{Network::from_json(
      {{"kind", "host"},
       {"host",
        {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}, {"fresh_message_extra_seconds_by_bytes", {{1000, 2e-6}, {4000, 5e-6}}}}}},
      3)};
  MemoryModel m = plain_memory(1e9, 0.0);
  CommPattern p(3);
  p.at(0, 1) = {4000, 1, 1};
  p.at(2, 1) = {2500, 1, 1};
  p.at(1, 0) = {1000, 1, 1};
  const auto packed = schedule("pack_alltoallv", p, {.ranks_per_node = 3});
  ASSERT_EQ(packed.size(), 3u);
  EXPECT_NEAR(cost({packed[1]}, nets[0], m).communication_s, 8.5e-6, 1e-12);
  EXPECT_NEAR(cost(schedule("native", p, {.ranks_per_node = 3}), nets[0], m).communication_s, 0.0, 1e-12);
  EXPECT_NEAR(cost({schedule("pack_alltoallv", p, {.ranks_per_node = 1})[1]}, nets[0], m).communication_s, 0.0, 1e-12);
  switch_off("fresh_messages", nets, m);
  EXPECT_EQ(nets[0].fresh_messages(), nullptr);
  EXPECT_NEAR(cost({packed[1]}, nets[0], m).communication_s, 0.0, 1e-12);
}

// Zero-copy gets (ucx_zcopy, 3 ranks, every piece direct). A host measured at 2 us per get of
// 1000 B and 5 us per get of 4000 B, and at 10 us / 40 us per MPI message of the same sizes. Rank 1
// gets 4000 B from rank 0 (5 us) and 2500 B from rank 2 (2 + 1500 x 3 / 3000 = 3.5 us), one after
// another: 8.5 us; rank 0 gets 1000 B from rank 1: 2 us; senders do nothing. The phase costs
// 8.5 us. With the term off the pieces are MPI messages: rank 1 receives 40 + 25 us = 65 us.
TEST(CostTerms, ZeroCopyGetsByTheirReceiversAtTheirMeasuredTime) {
  nlohmann::json spec = {{"kind", "host"},
                         {"host",
                          {{"alpha_s", 0.0},
                           {"beta_s_per_byte", 0.0},
                           {"message_seconds_by_bytes", {{1000, 10e-6}, {4000, 40e-6}}},
                           {"get_seconds_by_bytes", {{1000, 2e-6}, {4000, 5e-6}}}}}};
  std::vector<Network> nets{Network::from_json(spec, 3)};
  MemoryModel m = plain_memory(1e9, 0.0);
  CommPattern p(3);
  p.at(0, 1) = {4000, 1, 1};
  p.at(2, 1) = {2500, 1, 1};
  p.at(1, 0) = {1000, 1, 1};
  const auto phases = schedule("ucx_zcopy", p, {.pack_below_bytes = 1.0});
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_FALSE(phases[0].zero_copy_gets);
  EXPECT_TRUE(phases[1].zero_copy_gets);
  EXPECT_FALSE(phases[2].zero_copy_gets);
  EXPECT_NEAR(cost({phases[1]}, nets[0], m).communication_s, 8.5e-6, 1e-12);
  switch_off("zero_copy_gets", nets, m);
  EXPECT_EQ(nets[0].zero_copy_gets(), nullptr);
  EXPECT_NEAR(cost({phases[1]}, nets[0], m).communication_s, 65e-6, 1e-12);
}

// Cold messages. A host measured at 10 us / 40 us per message of 1000 / 4000 B, with the extra
// after 1000 B of other traffic 1 us / 4 us and after 100000 B 10 us / 40 us. Rank 0 sends 1000 B
// and receives 4000 B, rank 1 the reverse. Traffic {1000, 100000}: rank 1 sends 4000 B at
// 40 + 40 us = 80 us, the slowest side. Traffic {1000, 10000} (halfway on log T): 40 + (4 + 40) / 2
// = 62 us. Without traffic, or with the term off: 40 us. On the Hockney fit (alpha = beta = 0
// here) the extras alone: 40 us. Through cost(), pairwise with 1000 B each
// way and nothing else: each rank's traffic is 2000 B (sent and received), w = log 2 / log 100,
// each message 10 + (1 - w) 1 + w 10 us.
TEST(CostTerms, ColdMessagesPayTheExtraAfterTheCallsMemoryTraffic) {
  nlohmann::json spec = {
      {"kind", "host"},
      {"host",
       {{"alpha_s", 0.0},
        {"beta_s_per_byte", 0.0},
        {"message_seconds_by_bytes", {{1000, 10e-6}, {4000, 40e-6}}},
        {"cold_message_extra_seconds",
         {{{"traffic_bytes", 1000}, {"seconds_by_bytes", {{1000, 1e-6}, {4000, 4e-6}}}},
          {{"traffic_bytes", 100000}, {"seconds_by_bytes", {{1000, 10e-6}, {4000, 40e-6}}}}}}}}};
  std::vector<Network> nets{Network::from_json(spec, 2)};
  const std::vector<Message> phase{{0, 1, 1000}, {1, 0, 4000}};
  EXPECT_NEAR(nets[0].phase_time_s(phase, {1000, 100000}), 80e-6, 1e-12);
  EXPECT_NEAR(nets[0].phase_time_s(phase, {1000, 10000}), 62e-6, 1e-12);
  EXPECT_NEAR(nets[0].phase_time_s(phase), 40e-6, 1e-12);
  MemoryModel m = plain_memory(1e9, 0.0);
  std::vector<Network> hockney{Network::from_json(spec, 2)};
  switch_off("measured_messages", hockney, m);
  EXPECT_NEAR(hockney[0].phase_time_s(phase, {1000, 100000}), 40e-6, 1e-12);
  CommPattern p(2);
  p.at(0, 1) = {1000, 1, 1};
  p.at(1, 0) = {1000, 1, 1};
  const double w = std::log(2.0) / std::log(100.0);
  EXPECT_NEAR(cost(schedule("pairwise", p, {}), nets[0], m).communication_s, 10e-6 + (1 - w) * 1e-6 + w * 10e-6, 1e-12);
  switch_off("cold_messages", nets, m);
  EXPECT_EQ(nets[0].cold_messages(), nullptr);
  EXPECT_NEAR(nets[0].phase_time_s(phase, {1000, 100000}), 40e-6, 1e-12);
}

// pairwise: the self copies in a phase of their own, then P - 1 = 1 step with both messages.
TEST(CostTerms, PairwiseScheduleSelfCopyThenSteps) {
  const auto p = schedule("pairwise", two_rank_pattern(), {});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{50, 50}));
  EXPECT_TRUE(p[0].messages.empty());
  EXPECT_EQ(p[1].messages.size(), 2u);
  expect_library_sends(p[1], {{100, 4, 1}, {}});
}

// pack_alltoallv and local_remap: pack everything (rank 0: 150 B in 1 + 4 blocks; rank 1: 150 B in
// 2), contiguous messages, unpack everything (150 B in 2 blocks each). local_remap's packed self
// part (50 B each) is also a message to itself in the exchange; pack_alltoallv copies it only.
TEST(CostTerms, PackExchangeUnpackSchedule) {
  for (const char* name : {"pack_alltoallv", "local_remap"}) {
    const auto p = schedule(name, two_rank_pattern(), {});
    ASSERT_EQ(p.size(), 3u) << name;
    EXPECT_EQ(p[0].local_bytes, (std::vector<double>{150, 150})) << name;
    EXPECT_EQ(p[0].local_blocks, (std::vector<double>{5, 2})) << name;
    EXPECT_EQ(p[1].messages.size(), 2u) << name;
    EXPECT_EQ(p[2].local_blocks, (std::vector<double>{2, 2})) << name;
    const double self = std::string(name) == "local_remap" ? 50 : 0;
    for (const SelfMessage& m : p[1].self_messages) EXPECT_EQ(m.bytes, self) << name;
  }
}

// node_leader. One rank per node: every byte to the other rank is staged (packed 100 B, unpacked
// 100 B) and goes as one leader message per node pair. Both ranks on one node, private arrays:
// rank 0 copies its self part and stages 100 B for rank 1, which unpacks it; no messages.
// Node-shared arrays: rank 0 copies 150 B straight in, nothing to unpack.
TEST(CostTerms, NodeLeaderScheduleStagedOrShared) {
  ScheduleOptions o;
  o.ranks_per_node = 1;
  auto p = schedule("node_leader", two_rank_pattern(), o);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{150, 150}));
  EXPECT_EQ(p[1].messages.size(), 2u);
  EXPECT_EQ(p[2].local_bytes, (std::vector<double>{100, 100}));
  o.ranks_per_node = 2;
  p = schedule("node_leader", two_rank_pattern(), o);
  EXPECT_TRUE(p[1].messages.empty());
  EXPECT_EQ(p[2].local_bytes, (std::vector<double>{100, 100}));
  o.node_shared_buffers = true;
  p = schedule("node_leader", two_rank_pattern(), o);
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{150, 150}));
  EXPECT_EQ(p[2].local_bytes, (std::vector<double>{0, 0}));
}

// ucx_zcopy: rank 0's blocks to rank 1 average 25 B, rank 1's 100 B. Under pack_below (4096) both
// are packed (100 B each, beside the 50 B self copies) and sent as one message each; with
// pack_below = 10 both go as min(send, receive blocks) = 1 zero-copy piece, and only the self
// copies are local work.
TEST(CostTerms, UcxZcopyScheduleByBlockSize) {
  ScheduleOptions o;
  auto p = schedule("ucx_zcopy", two_rank_pattern(), o);
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{150, 150}));
  EXPECT_EQ(p[0].local_blocks, (std::vector<double>{5, 2}));
  EXPECT_EQ(p[1].messages.size(), 2u);
  o.pack_below_bytes = 10;
  p = schedule("ucx_zcopy", two_rank_pattern(), o);
  EXPECT_EQ(p[0].local_bytes, (std::vector<double>{50, 50}));
  EXPECT_EQ(p[1].messages.size(), 2u);
}

// Fixed overhead per call (host networks): measured 10 us at 1 B per peer; the model's native call
// at 1 B per peer on 2 ranks costs 1 us + 1 ns (one message each) + 1 ns (self message of 1 B: a
// copy at 1 GB/s, this network has no self-message curve): 1.002 us, so the overhead is 8.998 us. Never negative; 0 on other network kinds.
TEST(CostTerms, FixedOverheadIsMeasuredMinusModelAtOneByte) {
  const MemoryModel m = plain_memory(1e9, 0.0);
  EXPECT_NEAR(fixed_overhead_s("native", 10e-6, 2, host_network(2), m, {}), 8.998e-6, 1e-15);
  EXPECT_DOUBLE_EQ(fixed_overhead_s("native", 0.5e-6, 2, host_network(2), m, {}), 0.0);
  EXPECT_DOUBLE_EQ(fixed_overhead_s("native", 10e-6, 2, pcie_network(2, false), m, {}), 0.0);
}

// local_work off (SMPI with compute off charges no copies): pack_alltoallv on two ranks keeps
// its messages (1 us + 100 ns each, one per rank) and loses its packing and unpacking, which
// on 1 GB/s memory would be 150 ns + 150 ns.
TEST(CostTerms, LocalWorkSwitchesOff) {
  MemoryModel m = plain_memory(1e9, 0.0);
  std::vector<Network> nets{host_network(2)};
  const auto phases = schedule("pack_alltoallv", two_rank_pattern(), {});
  EXPECT_NEAR(cost(phases, nets[0], m).local_s, 300e-9, 1e-15);
  switch_off("local_work", nets, m);
  const Cost c = cost(phases, nets[0], m);
  EXPECT_DOUBLE_EQ(c.local_s, 0.0);
  EXPECT_NEAR(c.communication_s, 1.1e-6, 1e-15);
}

// Every switchable term has a name, what it adds and its source.
TEST(CostTerms, SwitchableTermsAreDescribed) {
  ASSERT_EQ(switchable_terms().size(), 19u);
  for (const ModelTerm& t : switchable_terms()) {
    EXPECT_FALSE(t.adds.empty()) << t.name;
    EXPECT_FALSE(t.source.empty()) << t.name;
  }
}

}  // namespace
}  // namespace tb::fpga
