#include "fpga_transport/hpcc_reference.hpp"
#include "fpga_transport/json_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace tb::fpga {

std::vector<double> BeffRun::round_seconds() const {
  std::vector<double> r;
  for (std::size_t i = 0; i < seconds.size(); ++i) r.push_back(seconds[i] / (2.0 * static_cast<double>(loop_length[i])));
  return r;
}

const BeffRun& BeffReference::run(const std::string& name) const {
  const auto it = runs.find(name);
  if (it != runs.end()) return it->second;
  std::string known;
  for (const auto& [n, r] : runs) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("b_eff reference " + source + " has no run '" + name + "' (it has: " + known + ")");
}

const BeffRun& BeffReference::calibration_run(const std::string& name) const {
  const BeffRun& r = run(name);
  if (!r.held_out.empty())
    throw std::invalid_argument("b_eff run '" + name + "' is held out (" + r.held_out + "); no calibration may use it");
  return r;
}

BeffReference load_beff_reference(const std::string& path) {
  const nlohmann::json j = read_json_file("b_eff reference", path);
  BeffReference ref;
  ref.source = path;
  try {
    ref.min_buffer_bytes = j.value("min_buffer_bytes", 1.0);
    for (const auto& [name, r] : j.at("runs").items()) {
      BeffRun run;
      run.name = name;
      run.communication_type = r.value("communication_type", "");
      run.file = r.value("file", "");
      run.ranks = r.at("ranks").get<int>();
      r.at("bytes").get_to(run.bytes);
      r.at("loop_length").get_to(run.loop_length);
      r.at("seconds").get_to(run.seconds);
      run.published_beff_bytes_per_s = r.value("published_beff_bytes_per_s", 0.0);
      run.held_out = r.value("held_out", "");
      if (run.ranks < 1 || run.bytes.empty() || run.bytes.size() != run.loop_length.size() ||
          run.bytes.size() != run.seconds.size())
        throw std::invalid_argument("run '" + name + "' needs ranks >= 1 and equally long bytes, loop_length, seconds");
      for (std::size_t i = 0; i < run.bytes.size(); ++i)
        if (run.bytes[i] <= 0 || run.loop_length[i] <= 0 || !(run.seconds[i] > 0) ||
            (i > 0 && run.bytes[i] <= run.bytes[i - 1]))
          throw std::invalid_argument("run '" + name + "', size " + std::to_string(i) +
                                      ": needs increasing bytes > 0, loop_length > 0, seconds > 0");
      ref.runs.emplace(name, std::move(run));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("b_eff reference " + path + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("b_eff reference " + path + ": " + e.what());
  }
  return ref;
}

PcieMpiPath calibrate_base_path(const BeffReference& ref, const std::string& pcie_run, const std::string& cpu_run,
                                const std::string& host_network_run) {
  const BeffRun& pcie = ref.calibration_run(pcie_run);
  const BeffRun& cpu = ref.calibration_run(cpu_run);
  const BeffRun& host = ref.calibration_run(host_network_run);
  if (pcie.ranks != cpu.ranks)
    throw std::invalid_argument("calibrate_base_path: runs '" + pcie_run + "' and '" + cpu_run +
                                "' must have the same rank count");
  if (pcie.bytes != cpu.bytes || pcie.bytes != host.bytes)
    throw std::invalid_argument("calibrate_base_path: the runs must measure the same message sizes");
  const auto p = pcie.round_seconds(), c = cpu.round_seconds(), h = host.round_seconds();
  PcieMpiPath path;
  for (std::size_t i = 0; i < pcie.bytes.size(); ++i) {
    const double b = static_cast<double>(pcie.bytes[i]);
    if (b < ref.min_buffer_bytes) continue;  // really moved min_buffer_bytes, like the size that equals it
    const double transfer = (p[i] - c[i]) / 2.0;
    if (!(transfer > 0))
      throw std::invalid_argument("calibrate_base_path: at " + std::to_string(pcie.bytes[i]) + " B the PCIE round (" +
                                  std::to_string(p[i]) + " s) is not longer than the CPU round (" +
                                  std::to_string(c[i]) + " s)");
    path.pcie_transfer.seconds_by_bytes.emplace_back(b, transfer);
    path.host_exchange.seconds_by_bytes.emplace_back(b, h[i]);
  }
  if (path.pcie_transfer.empty()) throw std::invalid_argument("calibrate_base_path: no size at or above min_buffer_bytes");
  path.calibration = "PCIe from " + pcie_run + " - " + cpu_run + ", host from " + host_network_run + " (" + ref.source + ")";
  return path;
}

NodeContention calibrate_node_contention(const BeffReference& ref, const std::string& node_pcie_run,
                                         const std::string& node_cpu_run, const std::string& pcie_run,
                                         const std::string& cpu_run) {
  const BeffRun& node_pcie = ref.calibration_run(node_pcie_run);
  const BeffRun& node_cpu = ref.calibration_run(node_cpu_run);
  const BeffRun& pcie = ref.calibration_run(pcie_run);
  const BeffRun& cpu = ref.calibration_run(cpu_run);
  if (node_pcie.ranks != node_cpu.ranks || node_pcie.ranks < 2)
    throw std::invalid_argument("calibrate_node_contention: runs '" + node_pcie_run + "' and '" + node_cpu_run +
                                "' must use the same number (>= 2) of FPGAs of one node");
  if (pcie.ranks != 1 || cpu.ranks != 1)
    throw std::invalid_argument("calibrate_node_contention: runs '" + pcie_run + "' and '" + cpu_run +
                                "' must be single-FPGA runs (1 rank)");
  if (node_pcie.bytes != pcie.bytes || node_cpu.bytes != pcie.bytes || cpu.bytes != pcie.bytes)
    throw std::invalid_argument("calibrate_node_contention: the runs must measure the same message sizes");
  const auto np = node_pcie.round_seconds(), nc = node_cpu.round_seconds(), p = pcie.round_seconds(),
             c = cpu.round_seconds();
  NodeContention n;
  n.fpgas_per_node = node_pcie.ranks;
  for (std::size_t i = 0; i < pcie.bytes.size(); ++i) {
    const double b = static_cast<double>(pcie.bytes[i]);
    if (b < ref.min_buffer_bytes) continue;  // moved min_buffer_bytes, like the size that equals it
    const double extra = ((np[i] - nc[i]) - (p[i] - c[i])) / 2.0;
    n.extra_per_transfer.seconds_by_bytes.emplace_back(b, std::max(0.0, extra));
  }
  if (n.extra_per_transfer.empty())
    throw std::invalid_argument("calibrate_node_contention: no size at or above min_buffer_bytes");
  n.calibration = "node contention from (" + node_pcie_run + " - " + node_cpu_run + ") - (" + pcie_run + " - " +
                  cpu_run + ")";
  return n;
}

}  // namespace tb::fpga
