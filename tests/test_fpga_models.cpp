// The FPGA link, topology and b_eff models pinned to hand-computed values, and the publication's
// model figures (HPCC FPGA, Meyer et al.); the pattern of a redistribution; the schedules.
#include "collectives/registry.hpp"
#include "fpga_transport/algorithm_cost.hpp"
#include "fpga_transport/beff.hpp"
#include "fpga_transport/hpcc_reference.hpp"
#include "fpga_transport/json_file.hpp"
#include "fpga_transport/link_models.hpp"
#include "fpga_transport/model_terms.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/pattern.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace tb::fpga {
namespace {

const std::string kNetworks = TB_SOURCE_DIR "/fpga_transport/networks/";
const std::string kReference = TB_SOURCE_DIR "/fpga_transport/reference/hpcc_fpga_520n_beff.json";

TEST(IecLink, MessageTimeIsWholeChunksPlusLatency) {
  IecLink link;  // 32 B x 2 channels = 64 B chunks at 156.25 MHz, 520 ns
  EXPECT_DOUBLE_EQ(link.chunk_bytes(), 64.0);
  EXPECT_NEAR(link.message_time_s(1), 1.0 / 156.25e6 + 520e-9, 1e-15);   // 526.4 ns
  EXPECT_NEAR(link.message_time_s(64), 526.4e-9, 1e-15);
  EXPECT_NEAR(link.message_time_s(65), 2.0 / 156.25e6 + 520e-9, 1e-15);  // 532.8 ns
  EXPECT_NEAR(link.message_time_s(1 << 20), 16384.0 / 156.25e6 + 520e-9, 1e-12);  // 105.3776 us
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_s(), 10e9);
}

TEST(BeffRules, LoopLengths) {
  BeffRules r;
  for (int i = 0; i <= 11; ++i) EXPECT_EQ(beff_loop_length(i, r), 65536) << i;
  EXPECT_EQ(beff_loop_length(12, r), 65536 - 9325);      // floor((65536 - 256) / 7) = 9325
  EXPECT_EQ(beff_loop_length(18, r), 65536 - 7 * 9325);  // 261
  EXPECT_EQ(beff_loop_length(19, r), 256);
  EXPECT_EQ(beff_loop_length(20, r), 256);
  EXPECT_EQ(beff_sizes(r).size(), 21u);
}

TEST(BeffRules, BandwidthFromTimes) {
  BeffRules r;
  r.max_exponent = 1;  // sizes 1 and 2, loop length u
  const auto res = beff_from_times(3, r, {0.5, 0.25});
  EXPECT_DOUBLE_EQ(res.points[0].bandwidth_bytes_per_s, 2.0 * 3 * 1 * 65536 / 0.5);
  EXPECT_DOUBLE_EQ(res.points[1].bandwidth_bytes_per_s, 2.0 * 3 * 2 * 65536 / 0.25);
  EXPECT_DOUBLE_EQ(res.beff_bytes_per_s, (res.points[0].bandwidth_bytes_per_s + res.points[1].bandwidth_bytes_per_s) / 2);
  EXPECT_THROW(beff_from_times(3, r, {1.0}), std::invalid_argument);
}

// The publication's model: about 7.77 GB/s per FPGA on IEC, 19.6-20 GB/s per FPGA at 1 MiB.
TEST(ModelBeff, IecRingReproducesThePublishedModel) {
  for (int ranks : {4, 8, 25}) {
    const Network ring = Network::from_file(kNetworks + "iec_ring.json", ranks);
    const auto r = model_beff(ring);
    // sum over L of 2 L / (ceil(L/64) / 156.25 MHz + 520 ns), / 21, by hand: 7.7718 GB/s
    EXPECT_NEAR(r.per_rank_bytes_per_s() / 1e9, 7.7718, 0.001) << ranks << " FPGAs";
    EXPECT_NEAR(r.points.back().bandwidth_bytes_per_s / ranks / 1e9, 2.0 * 1048576 / 105.3776e-6 / 1e9, 1e-6);
    EXPECT_GT(r.points.back().bandwidth_bytes_per_s / ranks, 19.6e9);
    EXPECT_LT(r.points.back().bandwidth_bytes_per_s / ranks, 20.0e9);
  }
}

// The PCIe+MPI base path from data-sheet figures and the issue's 120 us per iteration (fixed cost of
// one round of the base loop: PCIe read, MPI_Sendrecv with one neighbour, PCIe write; the two
// neighbours one after the other, as HPCC FPGA's base code does). By hand: b(L) = 2 L / (2 t(L)),
// t(L) = 2 (59 us + L / 7.88 GB/s) + 2 us + L / 12.5 GB/s, mean over L: 0.3357 GB/s per FPGA,
// 1.8x the publication's measured 0.185: the data sheet's PCIe is far faster than the blocking
// buffer transfers measured (see PcieMpiMeasured below).
TEST(ModelBeff, PcieMpiBasePathFromDataSheet) {
  const Network pcie = Network::from_file(kNetworks + "pcie_mpi_520n.json", 4);
  EXPECT_NEAR(pcie.message_time_s(0, 1, 1e6), 2 * (59e-6 + 1e6 / 7.88e9) + 2e-6 + 1e6 / 12.5e9, 1e-12);
  const auto r = model_beff(pcie);
  EXPECT_NEAR(r.per_rank_bytes_per_s() / 1e9, 0.33567, 0.0001);
}

TEST(MeasuredCurve, LinearBetweenPointsFlatBelowSlopeBeyond) {
  MeasuredCurve c{{{100, 1e-6}, {200, 3e-6}, {400, 4e-6}}};
  EXPECT_DOUBLE_EQ(c.time_s(1), 1e-6);
  EXPECT_DOUBLE_EQ(c.time_s(100), 1e-6);
  EXPECT_NEAR(c.time_s(150), 2e-6, 1e-18);
  EXPECT_NEAR(c.time_s(300), 3.5e-6, 1e-18);
  EXPECT_NEAR(c.time_s(600), 5e-6, 1e-18);  // last slope 1 us per 200 B continued
  EXPECT_THROW((MeasuredCurve{{{100, 1e-6}, {100, 2e-6}}}.check("c")), std::invalid_argument);
  EXPECT_THROW((MeasuredCurve{{{100, -1e-6}}}.check("c")), std::invalid_argument);
  EXPECT_THROW(nlohmann::json::parse("[[0, 1e-6]]").get<MeasuredCurve>(), std::invalid_argument);
}

// tb-beff --fit-out writes the host's curves with to_json and tb-model reads them with from_json:
// every key tb-beff measures comes back as written (the handoffs in pieces among them), and a
// curve left out stays out.
TEST(HostMessage, JsonRoundTripKeepsEveryMeasuredCurve) {
  // Each key its own values, so that a key written under another's name cannot pass.
  int k = 0;
  auto curve = [&k] {
    ++k;
    return nlohmann::json{{4096.0, k * 1e-6}, {65536.0, k * 8e-6}};
  };
  auto table = [&curve] { return nlohmann::json{{{"block_bytes", 64.0}, {"seconds_by_bytes", curve()}}}; };
  const nlohmann::json written = {{"alpha_s", 5e-7},
                                  {"beta_s_per_byte", 1e-10},
                                  {"message_seconds_by_bytes", curve()},
                                  {"self_message_seconds_by_bytes", curve()},
                                  {"noncontiguous_send_extra_seconds", table()},
                                  {"noncontiguous_recv_extra_seconds", table()},
                                  {"self_noncontiguous_send_extra_seconds", table()},
                                  {"self_noncontiguous_recv_extra_seconds", table()},
                                  {"node_handoff_extra_seconds_by_bytes", curve()},
                                  {"node_handoff_piece_extra_seconds_by_bytes", {{4096.0, 3e-6}, {65536.0, 2e-5}}},
                                  {"fresh_message_extra_seconds_by_bytes", curve()},
                                  {"get_seconds_by_bytes", curve()},
                                  {"cold_message_extra_seconds", {{{"traffic_bytes", 1048576.0}, {"seconds_by_bytes", curve()}}}},
                                  {"cold_self_message_extra_seconds",
                                   {{{"traffic_bytes", 4194304.0}, {"seconds_by_bytes", curve()}}}}};
  const auto host = written.get<HostMessage>();
  EXPECT_EQ(nlohmann::json(host), written);
  EXPECT_DOUBLE_EQ(host.node_handoff_s(65536, 65536), 2e-5);
  nlohmann::json without_pieces = written;
  without_pieces.erase("node_handoff_piece_extra_seconds_by_bytes");
  EXPECT_EQ(nlohmann::json(without_pieces.get<HostMessage>()), without_pieces);
}

// tb-model --values-at reads every measured curve as the model does. Each curve k is k us at
// 4096 B and 8k us at 65536 B, so at 34816 B (halfway) it is 4.5k us. The send extras are
// measured at 64 B (curve 3) and 4096 B blocks (curve 4): at 512 B, halfway on log B, 15.75 us;
// without a block size, one row each, 13.5 and 18 us. The cold extras at 1 MiB (12) and 4 MiB (13)
// of traffic: at 2 MiB, halfway on log T, 56.25 us. The handoff in pieces is curve 9 alone. The
// library engine (1 GB/s + 1 ns per block) packs 34816 B in 68 blocks of 512 B: 34.884 us. At
// 1024 B, below the curves, a time is its first point's (k us) and an extra scales to 0 at 0 bytes
// (k/4 us); at 131072 B, beyond them, the message is the last point plus the fit's beta per byte
// (8 + 65536 x 1e-4 us = 14.5536 us), where an extra continues its last segment (8k + 7k/15 x 16).
TEST(HostMessage, ValuesAtReadEveryMeasuredCurveAsTheModelDoes) {
  auto curve = [](int k) { return nlohmann::json{{4096.0, k * 1e-6}, {65536.0, k * 8e-6}}; };
  auto row = [&](const char* key, double at, int k) {
    return nlohmann::json{{key, at}, {"seconds_by_bytes", curve(k)}};
  };
  const nlohmann::json host = {
      {"alpha_s", 5e-7},
      {"beta_s_per_byte", 1e-10},
      {"message_seconds_by_bytes", curve(1)},
      {"self_message_seconds_by_bytes", curve(2)},
      {"noncontiguous_send_extra_seconds", {row("block_bytes", 64, 3), row("block_bytes", 4096, 4)}},
      {"noncontiguous_recv_extra_seconds", {row("block_bytes", 64, 5)}},
      {"self_noncontiguous_send_extra_seconds", {row("block_bytes", 64, 6)}},
      {"self_noncontiguous_recv_extra_seconds", {row("block_bytes", 64, 7)}},
      {"node_handoff_extra_seconds_by_bytes", curve(8)},
      {"node_handoff_piece_extra_seconds_by_bytes", curve(9)},
      {"fresh_message_extra_seconds_by_bytes", curve(10)},
      {"get_seconds_by_bytes", curve(11)},
      {"cold_message_extra_seconds", {row("traffic_bytes", 1 << 20, 12), row("traffic_bytes", 4 << 20, 13)}},
      {"cold_self_message_extra_seconds", {row("traffic_bytes", 4 << 20, 14)}}};
  const Network net = Network::from_json(
      {{"kind", "host"}, {"host", host}, {"library", {{"copy_bandwidth_bytes_per_s", 1e9}, {"per_block_s", 1e-9}}}}, 2);
  auto seconds = [](const std::vector<Network::TermValue>& values) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& v : values) out.emplace_back(v.term, v.seconds * 1e6);
    return out;
  };
  const std::vector<std::pair<std::string, double>> at_point{
      {"measured_messages", 4.5},          {"self_messages", 9},         {"noncontiguous_messages", 15.75},
      {"noncontiguous_messages", 22.5},    {"noncontiguous_self_messages", 27},
      {"noncontiguous_self_messages", 31.5}, {"node_handoff", 36},       {"node_handoff_pieces", 40.5},
      {"fresh_messages", 45},              {"zero_copy_gets", 49.5},     {"cold_messages", 56.25},
      {"cold_self_messages", 63},          {"library_engine", 34.884}};
  const auto got = seconds(net.host_values_at(34816, 2 << 20, 512));
  ASSERT_EQ(got.size(), at_point.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, at_point[i].first) << i;
    EXPECT_NEAR(got[i].second, at_point[i].second, 1e-9) << at_point[i].first;
  }
  // Without a traffic or block size: one row per measured one, named in the row.
  const auto rows = net.host_values_at(34816);
  ASSERT_EQ(rows.size(), at_point.size() + 2);
  EXPECT_NEAR(rows[2].seconds * 1e6, 13.5, 1e-9);
  EXPECT_NEAR(rows[3].seconds * 1e6, 18, 1e-9);
  EXPECT_NE(rows[3].what.find("block 4 KiB"), std::string::npos) << rows[3].what;
  EXPECT_NE(rows[12].what.find("traffic 4 MiB"), std::string::npos) << rows[12].what;
  // Times and extras part below and beyond the measured sizes.
  const auto below = seconds(net.host_values_at(1024, 2 << 20, 512));
  EXPECT_NEAR(below[0].second, 1, 1e-9);         // m: the first point's time
  EXPECT_NEAR(below[1].second, 2, 1e-9);         // s: likewise
  EXPECT_NEAR(below[7].second, 9 / 4.0, 1e-9);   // the handoff in pieces: an extra, scaled
  EXPECT_NEAR(below[8].second, 10 / 4.0, 1e-9);  // the fresh extra
  EXPECT_NEAR(below[9].second, 11, 1e-9);        // one get: a time
  const auto beyond = seconds(net.host_values_at(131072, 2 << 20, 512));
  EXPECT_NEAR(beyond[0].second, 14.5536, 1e-9);              // m: the fit beyond the curve
  EXPECT_NEAR(beyond[8].second, 80 + 70.0 / 15 * 16, 1e-9);  // the fresh extra: its last segment on
  // A term switched off is left out, or read as the model then reads it.
  std::vector<Network> without{net};
  MemoryModel unused;
  switch_off("measured_messages", without, unused);
  switch_off("cold_messages", without, unused);
  const auto switched = without[0].host_values_at(34816, 2 << 20, 512);
  EXPECT_EQ(switched[0].term, "(Hockney fit)");
  EXPECT_NEAR(switched[0].seconds, 5e-7 + 1e-10 * 34816, 1e-15);
  EXPECT_EQ(switched.size(), at_point.size() - 1);
  // A host with the fit alone has one value; a network of another kind none.
  const Network fit =
      Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 1e-6}, {"beta_s_per_byte", 1e-9}}}}, 2);
  ASSERT_EQ(fit.host_values_at(1000).size(), 1u);
  EXPECT_NEAR(fit.host_values_at(1000)[0].seconds, 2e-6, 1e-15);
  EXPECT_TRUE(Network::from_file(kNetworks + "iec_ring.json", 4).host_values_at(1000).empty());
}

// Our b(L) and b_eff bookkeeping against the publication's printed results: every run's table,
// put through beff_from_times, gives the b_eff that HPCC FPGA printed for it.
TEST(HpccReference, OurBeffFormulaReproducesThePublishedRuns) {
  const BeffReference ref = load_beff_reference(kReference);
  ASSERT_EQ(ref.runs.size(), 7u);
  for (const auto& [name, run] : ref.runs) {
    BeffRules rules;
    for (std::size_t i = 0; i < run.bytes.size(); ++i) {
      ASSERT_EQ(run.bytes[i], std::int64_t{1} << i) << name;
      ASSERT_EQ(run.loop_length[i], beff_loop_length(static_cast<int>(i), rules)) << name << " size " << i;
    }
    const auto r = beff_from_times(run.ranks, rules, run.seconds);
    EXPECT_NEAR(r.beff_bytes_per_s / run.published_beff_bytes_per_s, 1.0, 1e-5) << name;
  }
  EXPECT_THROW(ref.run("pcie_2fpga"), std::invalid_argument);
  EXPECT_THROW(load_beff_reference(kNetworks + "no-such-file.json"), std::invalid_argument);
}

// Every model file is read through read_json_file: its errors name the file as the caller does,
// and say which of the three ways it failed.
TEST(JsonFile, ErrorsNameTheFileAndWhatIsWrong) {
  const auto message = [](const std::string& path) {
    try {
      read_json_file("--memory", path);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  const std::string garbage = ::testing::TempDir() + "json_file_garbage.txt";
  std::ofstream(garbage) << "not JSON\n";
  EXPECT_EQ(message(kNetworks), "--memory " + kNetworks + ": is a directory");
  EXPECT_EQ(message(kNetworks + "no-such-file.json"), "--memory " + kNetworks + "no-such-file.json: cannot be read");
  EXPECT_EQ(message(garbage).rfind("--memory " + garbage + ": not JSON: ", 0), 0u) << message(garbage);
  EXPECT_EQ(read_json_file("network file", kNetworks + "iec_ring.json").at("kind"), "iec");
  std::remove(garbage.c_str());
}

// The base path calibrated from the publication's OTHER runs: the PCIe transfer from one FPGA's
// PCIE and CPU runs, the host MPI exchange from the CPU run on 26 ranks, the node contention from
// the PCIE and CPU runs on both FPGAs of one node. By hand at 1 MiB:
//   pcie = (0.343970 - 0.0730763) s / 512 / 2 = 264.545 us, host = 0.145454 s / 512 = 284.090 us,
//   contention = ((0.521787 - 0.180534) - (0.343970 - 0.0730763)) s / 512 / 2 = 68.710 us.
// Its b_eff for 26 FPGAs (13 nodes of 2) is a prediction of the measured 26-FPGA PCIE run (0.1854
// GB/s per FPGA), which the calibration never sees. By hand (hpcc_reference.hpp's rules, curves
// linear between the measured sizes): 0.18015 GB/s per FPGA, 2.8 % below the measurement; without
// the node contention term 0.21807, 17.6 % above.
TEST(ModelBeff, PcieMpiMeasuredPredictsThe26FpgaRun) {
  const Network net = Network::from_file(kNetworks + "pcie_mpi_520n_measured.json", 26);
  EXPECT_NEAR(net.pcie_mpi().pcie_time_s(1 << 20), 264.54463e-6, 1e-10);
  EXPECT_NEAR(net.pcie_mpi().host_time_s(1 << 20), 284.08984e-6, 1e-10);
  EXPECT_NEAR(net.pcie_mpi().node_contention_s(1 << 20), 68.71025e-6, 1e-10);
  EXPECT_EQ(net.pcie_mpi().fpgas_per_node, 2);
  EXPECT_DOUBLE_EQ(net.pcie_mpi().pcie_time_s(1), net.pcie_mpi().pcie_time_s(128));  // 128 B buffer at least
  // One message alone: its node's other FPGA is idle, so no contention.
  EXPECT_NEAR(net.message_time_s(0, 1, 1 << 20), 2 * 264.54463e-6 + 284.08984e-6, 1e-9);
  // Both FPGAs of node 0 send (to node 1): each transfer pays the contention.
  EXPECT_NEAR(net.phase_time_s({{0, 2, 1 << 20}, {1, 3, 1 << 20}}), 2 * (264.54463e-6 + 68.71025e-6) + 284.08984e-6,
              1e-9);
  const auto model = model_beff(net);
  EXPECT_NEAR(model.per_rank_bytes_per_s() / 1e9, 0.18015, 0.0001);
  Network alone = net;
  alone.drop_node_contention();
  EXPECT_NEAR(model_beff(alone).per_rank_bytes_per_s() / 1e9, 0.21807, 0.0001);

  const BeffReference ref = load_beff_reference(kReference);
  const BeffRun& measured = ref.run("pcie_26fpga");
  const double measured_per_fpga = measured.published_beff_bytes_per_s / measured.ranks;
  const double error = model.per_rank_bytes_per_s() / measured_per_fpga - 1.0;
  std::printf("PCIe+MPI b_eff, 26 FPGAs: model %.4f GB/s, measured %.4f GB/s per FPGA, error %+.1f %%\n",
              model.per_rank_bytes_per_s() / 1e9, measured_per_fpga / 1e9, 100 * error);
  EXPECT_LT(std::abs(error), 0.10);
}

// The IEC ring model against the publication's measured 26-FPGA IEC run (7.34 GB/s per FPGA): the
// model's 7.772 is 5.8 % above it; the goal is within 10 %.
TEST(ModelBeff, IecRingWithinTenPercentOfThe26FpgaRun) {
  const BeffReference ref = load_beff_reference(kReference);
  const BeffRun& measured = ref.run("iec_26fpga");
  ASSERT_EQ(measured.ranks, 26);
  const double measured_per_fpga = measured.published_beff_bytes_per_s / measured.ranks;
  EXPECT_NEAR(measured_per_fpga / 1e9, 7.3428, 0.0001);
  const auto model = model_beff(Network::from_file(kNetworks + "iec_ring.json", 26));
  const double error = model.per_rank_bytes_per_s() / measured_per_fpga - 1.0;
  std::printf("IEC b_eff, 26 FPGAs: model %.4f GB/s, measured %.4f GB/s per FPGA, error %+.1f %%\n",
              model.per_rank_bytes_per_s() / 1e9, measured_per_fpga / 1e9, 100 * error);
  EXPECT_NEAR(error, 0.0584, 0.001);
  EXPECT_LT(std::abs(error), 0.10);
}

// The run the PCIe+MPI model predicts is held out: every calibration refuses it, by name, whichever
// role it is given, and a network file that names it fails to load.
TEST(HpccReference, HeldOutRunIsRefusedByEveryCalibration) {
  const BeffReference ref = load_beff_reference(kReference);
  EXPECT_FALSE(ref.run("pcie_26fpga").held_out.empty());
  EXPECT_THROW(ref.calibration_run("pcie_26fpga"), std::invalid_argument);
  for (const auto& [name, run] : ref.runs) {
    if (name == "pcie_26fpga") continue;
    EXPECT_TRUE(run.held_out.empty()) << name;
  }
  try {
    calibrate_base_path(ref, "pcie_1fpga", "cpu_1rank", "pcie_26fpga");
    ADD_FAILURE() << "the held-out run was accepted as the host network run";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("held out"), std::string::npos) << e.what();
  }
  EXPECT_THROW(calibrate_node_contention(ref, "pcie_26fpga", "cpu_26ranks", "pcie_1fpga", "cpu_1rank"),
               std::invalid_argument);
  EXPECT_THROW(calibrate_node_contention(ref, "pcie_2fpga_1node", "cpu_2ranks_1node", "pcie_26fpga", "cpu_1rank"),
               std::invalid_argument);
  nlohmann::json spec = {{"kind", "pcie_mpi"},
                         {"pcie_mpi",
                          {{"fpgas_per_node", 2},
                           {"calibrate_from",
                            {{"reference", kReference}, {"pcie_run", "pcie_1fpga"}, {"cpu_run", "cpu_1rank"},
                             {"host_network_run", "cpu_26ranks"}, {"node_pcie_run", "pcie_26fpga"},
                             {"node_cpu_run", "cpu_26ranks"}}}}}};
  EXPECT_THROW(Network::from_json(spec, 26), std::invalid_argument);
}

// The prediction does not depend on the held-out run's numbers: with them doubled (and the mark
// removed, so nothing but the calibration's own choice of runs keeps them out), the calibrated
// network predicts exactly the same b_eff.
TEST(HpccReference, PredictionIgnoresTheHeldOutRunsNumbers) {
  nlohmann::json doc;
  std::ifstream(kReference) >> doc;
  auto& run = doc["runs"]["pcie_26fpga"];
  run.erase("held_out");
  for (auto& t : run["seconds"]) t = 2.0 * t.get<double>();
  const std::string path = testing::TempDir() + "/tb_reference_perturbed.json";
  std::ofstream(path) << doc.dump();
  nlohmann::json spec;
  std::ifstream(kNetworks + "pcie_mpi_520n_measured.json") >> spec;
  spec["pcie_mpi"]["calibrate_from"]["reference"] = kReference;
  const double original = model_beff(Network::from_json(spec, 26)).per_rank_bytes_per_s();
  spec["pcie_mpi"]["calibrate_from"]["reference"] = path;
  const double perturbed = model_beff(Network::from_json(spec, 26)).per_rank_bytes_per_s();
  std::remove(path.c_str());
  EXPECT_DOUBLE_EQ(original, perturbed);
}

TEST(HpccReference, CalibrationErrorsNameTheProblem) {
  const BeffReference ref = load_beff_reference(kReference);
  // A PCIE run and a CPU run with different rank counts cannot be subtracted.
  EXPECT_THROW(calibrate_base_path(ref, "pcie_2fpga_1node", "cpu_1rank", "cpu_26ranks"), std::invalid_argument);
  // The node runs use the same FPGAs of one node; the single-FPGA runs one rank each.
  EXPECT_THROW(calibrate_node_contention(ref, "pcie_2fpga_1node", "cpu_1rank", "pcie_1fpga", "cpu_1rank"),
               std::invalid_argument);
  EXPECT_THROW(calibrate_node_contention(ref, "pcie_2fpga_1node", "cpu_2ranks_1node", "pcie_2fpga_1node", "cpu_1rank"),
               std::invalid_argument);
  // The CPU round is shorter than the PCIE round, never the other way round.
  EXPECT_THROW(calibrate_base_path(ref, "cpu_1rank", "pcie_1fpga", "cpu_26ranks"), std::invalid_argument);
  nlohmann::json spec = {{"kind", "pcie_mpi"}, {"pcie_mpi", {{"calibrate_from", {{"reference", kReference}}}}}};
  EXPECT_THROW(Network::from_json(spec, 4), std::invalid_argument);
  // Node runs on 2 FPGAs of a node, but a network of 1 FPGA per node: the term would not fit it.
  nlohmann::json one_per_node;
  std::ifstream(kNetworks + "pcie_mpi_520n_measured.json") >> one_per_node;
  one_per_node["pcie_mpi"]["calibrate_from"]["reference"] = kReference;
  one_per_node["pcie_mpi"].erase("fpgas_per_node");
  EXPECT_THROW(Network::from_json(one_per_node, 26), std::invalid_argument);
}

// Copies interpolate the bandwidth table in log(bytes) by working set; streaming copies use their
// own table when there is one.
TEST(MemoryModel, BandwidthByWorkingSetAndStreamingStores) {
  MemoryModel m;
  m.per_block_s = 1e-9;
  m.bandwidth_by_bytes = {{1 << 10, 40e9}, {1 << 20, 20e9}};
  EXPECT_DOUBLE_EQ(m.bandwidth_at(1 << 5), 40e9);
  EXPECT_DOUBLE_EQ(m.bandwidth_at(1 << 15), 30e9);  // half way in log(bytes)
  EXPECT_DOUBLE_EQ(m.bandwidth_at(1 << 25), 20e9);
  EXPECT_DOUBLE_EQ(m.bandwidth_at(1 << 25, true), 20e9);  // no streaming table: the same
  m.streaming_bandwidth_by_bytes = {{1 << 20, 30e9}};
  EXPECT_DOUBLE_EQ(m.bandwidth_at(1 << 25, true), 30e9);
  EXPECT_DOUBLE_EQ(m.copy_time_s(1 << 10, 4, 1 << 20), 1024 / 20e9 + 4e-9);  // the working set decides
  EXPECT_DOUBLE_EQ(m.copy_time_s(1 << 20, 0, 0, true), (1 << 20) / 30e9);
  const MemoryModel back = nlohmann::json(m).get<MemoryModel>();
  EXPECT_EQ(back.streaming_bandwidth_by_bytes, m.streaming_bandwidth_by_bytes);
  EXPECT_DOUBLE_EQ(back.streaming_from_bytes, 4.0 * (1 << 20));
  EXPECT_THROW(nlohmann::json::parse(R"({"streaming_bandwidth_by_bytes": [[0, 1e9]]})").get<MemoryModel>(),
               std::invalid_argument);
  EXPECT_THROW(nlohmann::json::parse(R"({"per_piece_seconds_by_bytes": [[1024, -1e-9]]})").get<MemoryModel>(),
               std::invalid_argument);
  const auto pieces = nlohmann::json::parse(R"({"per_piece_seconds_by_bytes": [[4096, 8e-9], [1024, 6e-9]]})").get<MemoryModel>();
  EXPECT_EQ(pieces.per_piece_by_bytes, (std::vector<std::pair<double, double>>{{1024, 6e-9}, {4096, 8e-9}}));
  EXPECT_EQ(nlohmann::json(pieces)["per_piece_seconds_by_bytes"], nlohmann::json::parse("[[1024, 6e-9], [4096, 8e-9]]"));
}

// A size listed twice leaves no line to interpolate on between its rows (0/0 in log(bytes)): each
// table refuses it, naming itself and the size, in whatever order the rows come.
TEST(MemoryModel, RefusesATableThatListsOneSizeTwice) {
  for (const char* key :
       {"bandwidth_by_bytes", "streaming_bandwidth_by_bytes", "per_piece_seconds_by_bytes", "per_block_seconds_by_bytes"}) {
    const auto j = nlohmann::json{{key, nlohmann::json::parse("[[4096, 2e9], [1024, 1e9], [4096, 3e9]]")}};
    try {
      (void)j.get<MemoryModel>();
      ADD_FAILURE() << key << ": a size listed twice was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(key) + " lists 4096 bytes twice"), std::string::npos)
          << e.what();
    }
  }
}

// A rank's testbed copies in a phase take streaming stores from streaming_from_bytes on; the
// library's packing never does.
TEST(MemoryModel, CostUsesStreamingStoresForLargeTestbedCopies) {
  MemoryModel m;
  m.per_block_s = 0.0;
  m.copy_bandwidth_bytes_per_s = 10e9;
  m.streaming_bandwidth_by_bytes = {{1, 20e9}};
  const Network host = Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}}}}, 1);
  Phase small{"small", {}, {1 << 20}, {1}, {0}, {LibraryWork{}}, {LibraryWork{}}, {}, {}, {}};
  Phase large{"large", {}, {8 << 20}, {1}, {0}, {LibraryWork{}}, {LibraryWork{}}, {}, {}, {}};
  Phase library{"library", {}, {0}, {0}, {0}, {LibraryWork{8 << 20, 1, 1}}, {LibraryWork{}}, {}, {}, {}};
  EXPECT_DOUBLE_EQ(cost({small}, host, m).local_s, (1 << 20) / 10e9);
  EXPECT_DOUBLE_EQ(cost({large}, host, m).local_s, (8 << 20) / 20e9);
  EXPECT_DOUBLE_EQ(cost({library}, host, m).local_s, (8 << 20) / 10e9);
  // native's self part is a message the library copies (this network has no self-message curve:
  // a plain copy), never with the testbed's streaming stores
  CommPattern self(1);
  self.at(0, 0) = {8 << 20, 1, 1};
  EXPECT_DOUBLE_EQ(cost(schedule("native", self, {}), host, m).local_s, (8 << 20) / 10e9);
}

TEST(Hockney, FitRecoversAlphaAndBeta) {
  std::vector<std::pair<double, double>> pts;
  for (double L : {1.0, 1024.0, 65536.0, 1048576.0}) pts.emplace_back(L, 3e-6 + L / 5e9);
  const Hockney h = Hockney::fit(pts);
  EXPECT_NEAR(h.alpha_s, 3e-6, 1e-12);
  EXPECT_NEAR(h.bandwidth_bytes_per_s(), 5e9, 1.0);
  EXPECT_THROW(Hockney::fit({{8.0, 1.0}}), std::invalid_argument);
}

// A short tb-beff run under a sanitizer measured its smallest messages slower than mid-sized
// ones; the free fit's alpha was negative and tb-model refused the network it wrote.
TEST(Hockney, FitNeverGivesANegativeTerm) {
  const std::vector<std::pair<double, double>> steep = {{1.0, 1.0}, {2.0, 2.0}, {3.0, 6.0}};  // free: alpha -2
  Hockney h = Hockney::fit(steep);
  EXPECT_EQ(h.alpha_s, 0.0);
  EXPECT_NEAR(h.beta_s_per_byte, (1.0 + 4.0 + 18.0) / (1.0 + 4.0 + 9.0), 1e-12);  // sum(xy) / sum(xx)
  const std::vector<std::pair<double, double>> falling = {{1.0, 5.0}, {2.0, 4.0}, {3.0, 3.0}};  // free: beta -1
  h = Hockney::fit(falling);
  EXPECT_EQ(h.beta_s_per_byte, 0.0);
  EXPECT_NEAR(h.alpha_s, 4.0, 1e-12);  // the mean time
}

TEST(Topology, RingAndTorusRoutes) {
  const Network ring = Network::from_file(kNetworks + "iec_ring.json", 8);
  EXPECT_EQ(ring.hops(0, 1), 1);
  EXPECT_EQ(ring.hops(0, 4), 4);
  EXPECT_EQ(ring.route(0, 3), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ring.route(0, 6), (std::vector<int>{0, 7, 6}));
  nlohmann::json spec = {{"kind", "iec"}, {"topology", "torus"}, {"torus_dims", {4, 4}}};
  const Network torus = Network::from_json(spec, 16);
  EXPECT_EQ(torus.hops(0, 10), 4);  // (0,0) -> (2,2)
  EXPECT_EQ(torus.hops(0, 3), 1);   // wraps around
  spec["torus_dims"] = {3, 4};
  EXPECT_THROW(Network::from_json(spec, 16), std::invalid_argument);
  const nlohmann::json split = {{"kind", "iec"}, {"topology", "links"}, {"links", {{0, 1, 2}, {2, 3, 2}}}};
  EXPECT_THROW(Network::from_json(split, 4).route(0, 3), std::invalid_argument);
  EXPECT_THROW(Network::from_json({{"kind", "carrier-pigeon"}}, 2), std::invalid_argument);
}

// Full duplex: opposite directions do not share; two messages over one directed link do.
TEST(Topology, LinkSharing) {
  const Network ring = Network::from_file(kNetworks + "iec_ring.json", 4);
  const double one = ring.phase_time_s({{0, 1, 6400}});
  EXPECT_NEAR(one, 100 / 156.25e6 + 520e-9, 1e-15);
  EXPECT_DOUBLE_EQ(ring.phase_time_s({{0, 1, 6400}, {1, 0, 6400}}), one);
  EXPECT_NEAR(ring.phase_time_s({{0, 1, 6400}, {2, 1, 6400}}), one, 1e-15);  // different links into 1
  // 0 -> 2 is routed 0,1,2 and shares link 0->1 with 0 -> 1: 200 chunks, 2 hops of latency
  EXPECT_NEAR(ring.phase_time_s({{0, 1, 6400}, {0, 2, 6400}}), 200 / 156.25e6 + 2 * 520e-9, 1e-15);
}

TEST(Pattern, RedistributionGeometry) {
  // 4 x 6 doubles on 2 ranks, aligned in 1 -> aligned in 0: rank 0 holds rows 0-1, rank 1 rows 2-3;
  // afterwards rank 0 holds columns 0-2, rank 1 columns 3-5.
  const CommPattern p = redistribution_pattern({4, 6}, {2}, 1, 0, 8);
  EXPECT_EQ(p.total_bytes(), 4 * 6 * 8);
  EXPECT_EQ(p.at(0, 1).bytes, 2 * 3 * 8);
  EXPECT_EQ(p.at(0, 1).send_blocks, 2);  // two rows of 3 in a 2 x 6 block
  EXPECT_EQ(p.at(0, 1).recv_blocks, 1);  // rows 0-1 of a 4 x 3 block: contiguous
  EXPECT_EQ(p.at(1, 1).bytes, 2 * 3 * 8);
  // a pencil grid: only ranks in one grid line exchange
  const CommPattern q = redistribution_pattern({8, 8, 8}, {2, 2}, 2, 1, 16);
  EXPECT_EQ(q.total_bytes(), 8 * 8 * 8 * 16);
  EXPECT_EQ(q.at(0, 3).bytes, 0);
  EXPECT_EQ(q.at(0, 2).bytes, 0);  // ranks 0 and 2 differ in grid axis 0, the exchange runs over axis 1
  EXPECT_GT(q.at(0, 1).bytes, 0);
  EXPECT_THROW(redistribution_pattern({8, 8}, {2}, 0, 0, 8), std::invalid_argument);
}

TEST(Pattern, JsonRoundTripAndRecordedFile) {
  const CommPattern p = redistribution_pattern({6, 5, 4}, {3}, 2, 0, 8);
  const std::string path = testing::TempDir() + "/tb_pattern.jsonl";
  {
    std::ofstream f(path);
    f << p.to_json().dump() << "\n" << p.to_json().dump() << "\n";
  }
  const CommPattern r = recorded_pattern(path, 1);
  ASSERT_EQ(r.ranks(), 3);
  for (int s = 0; s < 3; ++s)
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(r.at(s, d).bytes, p.at(s, d).bytes);
      EXPECT_EQ(r.at(s, d).send_blocks, p.at(s, d).send_blocks);
      EXPECT_EQ(r.at(s, d).recv_blocks, p.at(s, d).recv_blocks);
    }
  EXPECT_THROW(recorded_pattern(path, 2), std::invalid_argument);
  std::remove(path.c_str());
}

TEST(Schedules, ShapesOfTheAlgorithms) {
  const CommPattern p = redistribution_pattern({16, 16, 16}, {4}, 2, 0, 16);
  ScheduleOptions o;
  const auto native = schedule("native", p, o);
  ASSERT_EQ(native.size(), 1u);
  EXPECT_EQ(native[0].messages.size(), 12u);  // 4 x 3
  EXPECT_EQ(schedule("pairwise", p, o).size(), 4u);  // self copy + 3 steps
  const auto remap = schedule("local_remap", p, o);
  ASSERT_EQ(remap.size(), 3u);
  double packed = 0;
  for (double b : remap[0].local_bytes) packed += b;
  EXPECT_DOUBLE_EQ(packed, static_cast<double>(p.total_bytes()));
  o.ranks_per_node = 2;
  const auto leader = schedule("node_leader", p, o);
  ASSERT_EQ(leader.size(), 3u);
  ASSERT_EQ(leader[1].messages.size(), 2u);  // node 0 <-> node 1, one aggregated message each way
  EXPECT_EQ(leader[1].messages[0].src, 0);
  EXPECT_EQ(leader[1].messages[0].dst, 2);
  EXPECT_DOUBLE_EQ(leader[1].messages[0].bytes, 4.0 * static_cast<double>(p.at(0, 2).bytes));
  // Rank 0's on-node peer is rank 1. Private arrays: rank 0 packs for rank 1 (and for node 1), and
  // rank 1 unpacks what rank 0 staged. Node-shared arrays: one copy by rank 0, none by rank 1.
  const double to_1 = static_cast<double>(p.at(0, 1).bytes), to_node_1 = static_cast<double>(p.at(0, 2).bytes + p.at(0, 3).bytes);
  const double self_0 = static_cast<double>(p.at(0, 0).bytes);
  EXPECT_DOUBLE_EQ(leader[0].local_bytes[0], self_0 + to_1 + to_node_1);
  const double into_1 = static_cast<double>(p.at(0, 1).bytes + p.at(2, 1).bytes + p.at(3, 1).bytes);
  EXPECT_DOUBLE_EQ(leader[2].local_bytes[1], into_1);
  o.node_shared_buffers = true;
  const auto shared = schedule("node_leader", p, o);
  EXPECT_DOUBLE_EQ(shared[0].local_bytes[0], self_0 + to_1 + to_node_1);
  EXPECT_DOUBLE_EQ(shared[2].local_bytes[1], static_cast<double>(p.at(2, 1).bytes + p.at(3, 1).bytes));
  EXPECT_THROW(schedule("no_such_algorithm", p, o), std::invalid_argument);

  // Costs add phase by phase: local_remap's local work is pack + unpack of every byte, and its
  // self part's message inside MPI_Alltoall(v) (a plain copy: this network has no self curve).
  MemoryModel mem;
  mem.copy_bandwidth_bytes_per_s = 1e9;
  mem.per_block_s = 0.0;
  const Network host = Network::from_json({{"kind", "host"}, {"host", {{"alpha_s", 0.0}, {"beta_s_per_byte", 0.0}}}}, 4);
  const Cost c = cost(remap, host, mem);
  EXPECT_DOUBLE_EQ(c.communication_s, 0.0);
  const double self_copy = static_cast<double>(p.at(0, 0).bytes);  // every rank's self part is this size
  EXPECT_NEAR(c.local_s, (2.0 * static_cast<double>(p.total_bytes()) / 4 + self_copy) / 1e9, 1e-12);  // per rank, slowest
}

// The registry is the one list: every registered algorithm either names a schedule the model
// has, or declares why it is not modelled - never neither, never both.
TEST(Schedules, EveryRegisteredAlgorithmIsCostedOrSaysWhyNot) {
  const auto names = schedule_names();
  ASSERT_FALSE(alltoallw_algorithms().empty());
  for (const auto& info : alltoallw_algorithms()) {
    const bool has_schedule = !info.cost_schedule.empty();
    EXPECT_NE(has_schedule, !info.not_modelled.empty())
        << info.name << ": declare exactly one of cost_schedule and not_modelled";
    if (has_schedule) {
      EXPECT_NE(std::find(names.begin(), names.end(), info.cost_schedule), names.end())
          << info.name << " declares the unknown schedule '" << info.cost_schedule << "'";
    }
  }
  const auto costed = algorithms_to_cost();
  EXPECT_EQ(costed.size(), alltoallw_algorithms().size() + 1);  // + local_remap
  EXPECT_EQ(costed.back().name, "local_remap");
  const CommPattern p = redistribution_pattern({8, 8, 8}, {2}, 2, 0, 16);
  for (const auto& m : costed) {
    if (m.schedule.empty()) {
      EXPECT_THROW(schedule(m.name, p, {}), std::invalid_argument) << m.name;
    } else {
      EXPECT_FALSE(schedule(m.name, p, {}).empty()) << m.name;
    }
  }
}

}  // namespace
}  // namespace tb::fpga
