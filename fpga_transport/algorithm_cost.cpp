#include "fpga_transport/algorithm_cost.hpp"

#include <algorithm>
#include <stdexcept>

namespace tb::fpga {

const std::vector<std::string>& modelled_algorithms() {
  static const std::vector<std::string> names{"native", "pairwise", "pack_alltoallv", "node_leader", "ucx_zcopy",
                                              "local_remap"};
  return names;
}

namespace {

Phase empty_phase(const std::string& name, int ranks) {
  Phase p;
  p.name = name;
  p.local_bytes.assign(static_cast<std::size_t>(ranks), 0.0);
  p.local_blocks.assign(static_cast<std::size_t>(ranks), 0.0);
  p.library_bytes.assign(static_cast<std::size_t>(ranks), 0.0);
  p.library_blocks.assign(static_cast<std::size_t>(ranks), 0.0);
  return p;
}

void add_local(Phase& p, int rank, double bytes, double blocks) {
  p.local_bytes[rank] += bytes;
  p.local_blocks[rank] += blocks;
}

// The library packs a non-contiguous send side and unpacks a non-contiguous receive side.
void library_pack(Phase& p, int src, int dst, const PairTraffic& t) {
  if (t.send_blocks > 1) {
    p.library_bytes[src] += static_cast<double>(t.bytes);
    p.library_blocks[src] += static_cast<double>(t.send_blocks);
  }
  if (t.recv_blocks > 1) {
    p.library_bytes[dst] += static_cast<double>(t.bytes);
    p.library_blocks[dst] += static_cast<double>(t.recv_blocks);
  }
}

void self_copies(Phase& p, const CommPattern& pat) {
  for (int r = 0; r < pat.ranks(); ++r) {
    const auto& t = pat.at(r, r);
    if (t.bytes > 0)
      add_local(p, r, static_cast<double>(t.bytes), static_cast<double>(std::max(t.send_blocks, t.recv_blocks)));
  }
}

}  // namespace

std::vector<Phase> schedule(const std::string& algorithm, const CommPattern& pat, const ScheduleOptions& opt) {
  const int n = pat.ranks();
  std::vector<Phase> phases;
  if (algorithm == "native") {
    Phase p = empty_phase("all messages at once", n);
    p.testbed_copies = false;  // the library copies the self part too
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const auto& t = pat.at(s, d);
        if (s == d || t.bytes == 0) continue;
        p.messages.push_back({s, d, static_cast<double>(t.bytes)});
        library_pack(p, s, d, t);
      }
    self_copies(p, pat);
    phases.push_back(std::move(p));
  } else if (algorithm == "pairwise") {
    Phase self = empty_phase("self copy", n);
    self_copies(self, pat);
    phases.push_back(std::move(self));
    for (int k = 1; k < n; ++k) {
      Phase p = empty_phase("step " + std::to_string(k), n);
      for (int s = 0; s < n; ++s) {
        const int d = (s + k) % n;
        const auto& t = pat.at(s, d);
        if (t.bytes == 0) continue;
        p.messages.push_back({s, d, static_cast<double>(t.bytes)});
        library_pack(p, s, d, t);
      }
      phases.push_back(std::move(p));
    }
  } else if (algorithm == "pack_alltoallv" || algorithm == "local_remap") {
    Phase pack = empty_phase("pack", n), send = empty_phase("contiguous messages", n), unpack = empty_phase("unpack", n);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const auto& t = pat.at(s, d);
        if (t.bytes == 0) continue;
        add_local(pack, s, static_cast<double>(t.bytes), static_cast<double>(t.send_blocks));
        add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
        if (s != d) send.messages.push_back({s, d, static_cast<double>(t.bytes)});
      }
    phases.push_back(std::move(pack));
    phases.push_back(std::move(send));
    phases.push_back(std::move(unpack));
  } else if (algorithm == "node_leader") {
    const int r = std::max(1, opt.ranks_per_node);
    auto node = [&](int rank) { return rank / r; };
    const int nodes = (n + r - 1) / r;
    Phase on_node = empty_phase("on-node copies + pack for other nodes", n);
    Phase leaders = empty_phase("one aggregated message per node pair", n);
    Phase unpack = empty_phase("unpack from staging", n);
    std::vector<double> between(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(nodes), 0.0);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const auto& t = pat.at(s, d);
        if (t.bytes == 0) continue;
        if (s == d || (node(s) == node(d) && opt.node_shared_buffers)) {  // one copy
          add_local(on_node, s, static_cast<double>(t.bytes), static_cast<double>(std::max(t.send_blocks, t.recv_blocks)));
        } else if (node(s) == node(d)) {  // through the node's staging
          add_local(on_node, s, static_cast<double>(t.bytes), static_cast<double>(t.send_blocks));
          add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
        } else {
          add_local(on_node, s, static_cast<double>(t.bytes), static_cast<double>(t.send_blocks));
          add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
          between[static_cast<std::size_t>(node(s) * nodes + node(d))] += static_cast<double>(t.bytes);
        }
      }
    for (int a = 0; a < nodes; ++a)
      for (int b = 0; b < nodes; ++b)
        if (a != b && between[static_cast<std::size_t>(a * nodes + b)] > 0)
          leaders.messages.push_back({a * r, b * r, between[static_cast<std::size_t>(a * nodes + b)]});
    phases.push_back(std::move(on_node));
    phases.push_back(std::move(leaders));
    phases.push_back(std::move(unpack));
  } else if (algorithm == "ucx_zcopy") {
    Phase pack = empty_phase("pack small-block peers", n), send = empty_phase("zero-copy gets and packed messages", n),
          unpack = empty_phase("unpack small-block peers", n);
    self_copies(pack, pat);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const auto& t = pat.at(s, d);
        if (s == d || t.bytes == 0) continue;
        const double average = static_cast<double>(t.bytes) / static_cast<double>(std::max<std::int64_t>(1, t.send_blocks));
        if (average >= opt.pack_below_bytes) {
          const std::int64_t pieces = std::max<std::int64_t>(1, std::min(t.send_blocks, t.recv_blocks));
          for (std::int64_t i = 0; i < pieces; ++i)
            send.messages.push_back({s, d, static_cast<double>(t.bytes) / static_cast<double>(pieces)});
        } else {
          add_local(pack, s, static_cast<double>(t.bytes), static_cast<double>(t.send_blocks));
          send.messages.push_back({s, d, static_cast<double>(t.bytes)});
          if (t.recv_blocks > 1) add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
        }
      }
    phases.push_back(std::move(pack));
    phases.push_back(std::move(send));
    phases.push_back(std::move(unpack));
  } else {
    std::string names;
    for (const auto& a : modelled_algorithms()) names += (names.empty() ? "" : ", ") + a;
    throw std::invalid_argument("no cost model for algorithm '" + algorithm + "' (modelled: " + names + ")");
  }
  return phases;
}

Cost cost(const std::vector<Phase>& phases, const Network& network, const MemoryModel& memory) {
  Cost c;
  // Each rank's working set: every byte it copies or packs during the call.
  std::vector<double> working_set;
  for (const Phase& p : phases) {
    working_set.resize(std::max(working_set.size(), p.local_bytes.size()), 0.0);
    for (std::size_t r = 0; r < p.local_bytes.size(); ++r) working_set[r] += p.local_bytes[r] + p.library_bytes[r];
  }
  for (const Phase& p : phases) {
    if (static_cast<int>(p.local_bytes.size()) > network.ranks())
      throw std::invalid_argument("the pattern has " + std::to_string(p.local_bytes.size()) + " ranks, the network " +
                                  std::to_string(network.ranks()));
    const MemoryModel& library = network.library() ? *network.library() : memory;
    double local = 0.0;
    for (std::size_t r = 0; r < p.local_bytes.size(); ++r)
      local = std::max(local, memory.copy_time_s(p.local_bytes[r], p.local_blocks[r], working_set[r],
                                                 p.testbed_copies && p.local_bytes[r] >= memory.streaming_from_bytes) +
                                  library.copy_time_s(p.library_bytes[r], p.library_blocks[r], working_set[r]));
    const double comm = network.phase_time_s(p.messages);
    c.local_s += local;
    c.communication_s += comm;
    for (const auto& m : p.messages) c.messages += m.src != m.dst;
    ++c.phases;
  }
  return c;
}

}  // namespace tb::fpga
