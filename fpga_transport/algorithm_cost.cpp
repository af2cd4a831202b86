#include "fpga_transport/algorithm_cost.hpp"

#include "collectives/registry.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tb::fpga {

namespace {

Phase empty_phase(const std::string& name, int ranks) {
  Phase p;
  p.name = name;
  p.local_bytes.assign(static_cast<std::size_t>(ranks), 0.0);
  p.local_blocks.assign(static_cast<std::size_t>(ranks), 0.0);
  p.local_pieces.assign(static_cast<std::size_t>(ranks), 0.0);
  p.library_send.assign(static_cast<std::size_t>(ranks), LibraryWork{});
  p.library_recv.assign(static_cast<std::size_t>(ranks), LibraryWork{});
  p.self_messages.assign(static_cast<std::size_t>(ranks), SelfMessage{});
  p.handoff_bytes.assign(static_cast<std::size_t>(ranks), 0.0);
  p.handoff_piece_bytes.assign(static_cast<std::size_t>(ranks), 0.0);
  return p;
}

void add_local(Phase& p, int rank, double bytes, double blocks) {
  p.local_bytes[rank] += bytes;
  p.local_blocks[rank] += blocks;
}

// A copy that hands bytes over between cores of a node (Phase::handoff_bytes), `piece_share`
// of it in pieces (HostMessage::piece_share).
void add_handoff(Phase& p, int rank, double bytes, double piece_share) {
  p.handoff_bytes[rank] += bytes;
  p.handoff_piece_bytes[rank] += piece_share * bytes;
}

// A copy made through node_leader's copy lists, in `pieces` pieces (MemoryModel::per_piece_at).
void add_pieces(Phase& p, int rank, double bytes, double pieces) {
  p.local_bytes[rank] += bytes;
  p.local_pieces[rank] += pieces;
}

// The library packs a non-contiguous send side and unpacks a non-contiguous receive side.
void library_pack(Phase& p, int src, int dst, const PairTraffic& t) {
  auto add = [&](LibraryWork& w, std::int64_t blocks) {
    w.bytes += static_cast<double>(t.bytes);
    w.blocks += static_cast<double>(blocks);
    w.messages += 1.0;
  };
  if (t.send_blocks > 1) add(p.library_send[src], t.send_blocks);
  if (t.recv_blocks > 1) add(p.library_recv[dst], t.recv_blocks);
}

void self_copies(Phase& p, const CommPattern& pat) {
  for (int r = 0; r < pat.ranks(); ++r) {
    const auto& t = pat.at(r, r);
    if (t.bytes > 0)
      add_local(p, r, static_cast<double>(t.bytes), static_cast<double>(std::max(t.send_blocks, t.recv_blocks)));
  }
}

// Every rank's self part as a message to itself, in the library (native's MPI_Alltoallw; the
// packed self part of local_remap's MPI_Alltoall(v): contiguous, `packed`).
void self_messages(Phase& p, const CommPattern& pat, bool packed) {
  for (int r = 0; r < pat.ranks(); ++r) {
    const auto& t = pat.at(r, r);
    if (t.bytes > 0)
      p.self_messages[r] = {static_cast<double>(t.bytes), packed ? 1.0 : static_cast<double>(t.send_blocks),
                            packed ? 1.0 : static_cast<double>(t.recv_blocks), packed};
  }
}

std::vector<Phase> native_schedule(const CommPattern& pat, const ScheduleOptions&) {
  const int n = pat.ranks();
  Phase p = empty_phase("all messages at once", n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const auto& t = pat.at(s, d);
      if (s == d || t.bytes == 0) continue;
      p.messages.push_back({s, d, static_cast<double>(t.bytes)});
      library_pack(p, s, d, t);
    }
  self_messages(p, pat, false);
  return {std::move(p)};
}

// Step k of every communicator at once: its i-th rank sends to its (i + k)-th (mod its size).
std::vector<Phase> pairwise_schedule(const CommPattern& pat, const ScheduleOptions&) {
  const int n = pat.ranks();
  const auto comms = pat.communicators_or_all();
  std::size_t largest = 1;
  for (const auto& c : comms) largest = std::max(largest, c.size());
  std::vector<Phase> phases;
  Phase self = empty_phase("self copy", n);
  self_copies(self, pat);
  phases.push_back(std::move(self));
  for (std::size_t k = 1; k < largest; ++k) {
    Phase p = empty_phase("step " + std::to_string(k), n);
    for (const auto& c : comms)
      for (std::size_t i = 0; k < c.size() && i < c.size(); ++i) {
        const int s = c[i], d = c[(i + k) % c.size()];
        const auto& t = pat.at(s, d);
        if (t.bytes == 0) continue;
        p.messages.push_back({s, d, static_cast<double>(t.bytes)});
        library_pack(p, s, d, t);
      }
    phases.push_back(std::move(p));
  }
  return phases;
}

// Whether two ranks share a node (ranks are numbered node by node, opt.ranks_per_node each).
bool same_node(int a, int b, const ScheduleOptions& opt) {
  const int per_node = std::max(1, opt.ranks_per_node);
  return a / per_node == b / per_node;
}

// The messages carry what their senders have just packed (Message::fresh on one node), and a sender packs
// into the buffer an on-node receiver read in the previous call (the library's single copy out
// of it): that pack writes bytes another core has just read, priced as a node handoff.
std::vector<Phase> pack_exchange_unpack_schedule(const CommPattern& pat, const ScheduleOptions& opt) {
  const int n = pat.ranks();
  Phase pack = empty_phase("pack", n), send = empty_phase("contiguous messages", n), unpack = empty_phase("unpack", n);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const auto& t = pat.at(s, d);
      if (t.bytes == 0) continue;
      add_local(pack, s, static_cast<double>(t.bytes), static_cast<double>(t.send_blocks));
      add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
      if (s == d) continue;
      const bool on_node = same_node(s, d, opt);
      send.messages.push_back({s, d, static_cast<double>(t.bytes), on_node});
      if (on_node) add_handoff(pack, s, static_cast<double>(t.bytes), 0.0);
    }
  return {std::move(pack), std::move(send), std::move(unpack)};
}

std::vector<Phase> local_remap_schedule(const CommPattern& pat, const ScheduleOptions& opt) {
  auto phases = pack_exchange_unpack_schedule(pat, opt);
  self_messages(phases[1], pat, true);
  return phases;
}

// Per communicator (a redistribution's sub-communicators run their calls at once): its ranks on
// one node (world rank / R) stage through that node's leader, its lowest rank there, and the
// leaders exchange one aggregated message per node pair of that communicator.
std::vector<Phase> node_leader_schedule(const CommPattern& pat, const ScheduleOptions& opt) {
  const int n = pat.ranks();
  const int per_node = std::max(1, opt.ranks_per_node);
  auto node = [&](int rank) { return rank / per_node; };
  Phase on_node = empty_phase("on-node copies + pack for other nodes", n);
  Phase leaders = empty_phase("one aggregated message per node pair", n);
  Phase unpack = empty_phase("unpack from staging", n);
  for (const auto& comm : pat.communicators_or_all()) {
    std::map<int, int> leader;                       // node -> its lowest rank in comm
    std::map<std::pair<int, int>, double> between;  // (node, node) -> bytes
    for (int r : comm) leader.emplace(node(r), r);  // comm is in rank order: the first one stays
    for (int s : comm)
      for (int d : comm) {
        const auto& t = pat.at(s, d);
        if (t.bytes == 0) continue;
        const auto bytes = static_cast<double>(t.bytes);
        if (s == d || (node(s) == node(d) && opt.node_shared_buffers)) {  // one copy
          add_pieces(on_node, s, bytes, static_cast<double>(std::max(t.send_blocks, t.recv_blocks)));
          continue;
        }
        // Through the node's staging: packed by the sender, unpacked by the receiver.
        add_pieces(on_node, s, bytes, static_cast<double>(t.send_blocks));
        add_pieces(unpack, d, bytes, static_cast<double>(t.recv_blocks));
        // The pair's two copies touch the staging: the sender's pack in its send blocks, the
        // receiver's unpack in its receive blocks; each is half the handoff.
        add_handoff(unpack, d, bytes,
                    0.5 * (HostMessage::piece_share(bytes, bytes / static_cast<double>(t.send_blocks)) +
                           HostMessage::piece_share(bytes, bytes / static_cast<double>(t.recv_blocks))));
        if (node(s) != node(d)) between[{node(s), node(d)}] += bytes;
      }
    for (const auto& [nodes, bytes] : between)
      leaders.messages.push_back({leader.at(nodes.first), leader.at(nodes.second), bytes});
  }
  return {std::move(on_node), std::move(leaders), std::move(unpack)};
}

std::vector<Phase> ucx_zcopy_schedule(const CommPattern& pat, const ScheduleOptions& opt) {
  const int n = pat.ranks();
  Phase pack = empty_phase("pack small-block peers", n), send = empty_phase("zero-copy gets and packed messages", n),
        unpack = empty_phase("unpack small-block peers", n);
  send.zero_copy_gets = true;
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
        const bool on_node = same_node(s, d, opt);  // as pack_alltoallv
        send.messages.push_back({s, d, static_cast<double>(t.bytes), on_node});
        if (on_node) add_handoff(pack, s, static_cast<double>(t.bytes), 0.0);
        if (t.recv_blocks > 1) add_local(unpack, d, static_cast<double>(t.bytes), static_cast<double>(t.recv_blocks));
      }
    }
  return {std::move(pack), std::move(send), std::move(unpack)};
}

using ScheduleFunction = std::vector<Phase> (*)(const CommPattern&, const ScheduleOptions&);

// The schedules, by the name an algorithm's registration declares (AlltoallwAlgorithmInfo::
// cost_schedule); local_remap is the redistribution baseline, not a registered algorithm.
const std::map<std::string, ScheduleFunction, std::less<>>& schedule_table() {
  static const std::map<std::string, ScheduleFunction, std::less<>> table{
      {"native", &native_schedule},
      {"pairwise", &pairwise_schedule},
      {"pack_alltoallv", &pack_exchange_unpack_schedule},
      {"local_remap", &local_remap_schedule},
      {"node_leader", &node_leader_schedule},
      {"ucx_zcopy", &ucx_zcopy_schedule},
  };
  return table;
}

}  // namespace

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const auto& [name, function] : schedule_table()) names.push_back(name);
  return names;
}

std::vector<ModelledAlgorithm> algorithms_to_cost() {
  std::vector<ModelledAlgorithm> list;
  for (const auto& info : alltoallw_algorithms()) {
    ModelledAlgorithm m{std::string(info.name), std::string(info.cost_schedule), std::string(info.not_modelled)};
    if (!m.schedule.empty() && !schedule_table().contains(m.schedule)) {
      m.not_modelled = "declares schedule '" + m.schedule + "', which fpga_transport does not have";
      m.schedule.clear();
    } else if (m.schedule.empty() && m.not_modelled.empty()) {
      m.not_modelled = "its registration declares no schedule and gives no reason";
    }
    list.push_back(std::move(m));
  }
  list.push_back({"local_remap", "local_remap", ""});
  return list;
}

std::vector<Phase> schedule(const std::string& algorithm, const CommPattern& pattern, const ScheduleOptions& options) {
  for (const auto& m : algorithms_to_cost()) {
    if (m.name != algorithm) continue;
    if (m.schedule.empty()) throw std::invalid_argument("algorithm '" + algorithm + "' is not modelled: " + m.not_modelled);
    return schedule_table().find(m.schedule)->second(pattern, options);
  }
  std::string names;
  for (const auto& m : algorithms_to_cost())
    if (!m.schedule.empty()) names += (names.empty() ? "" : ", ") + m.name;
  throw std::invalid_argument("no cost model for algorithm '" + algorithm + "' (modelled: " + names + ")");
}

namespace {

SelfMessage self_message_of(const Phase& p, std::size_t rank) {
  return rank < p.self_messages.size() ? p.self_messages[rank] : SelfMessage{};
}

// The measured extra time of the non-contiguous sides of a message of `bytes` (see NoncontiguousExtra).
double noncontiguous_extra_s(const NoncontiguousExtra& send, const NoncontiguousExtra& recv, double bytes,
                             double send_blocks, double recv_blocks) {
  return (send_blocks > 1 ? send.extra_s(bytes, bytes / send_blocks) : 0.0) +
         (recv_blocks > 1 ? recv.extra_s(bytes, bytes / recv_blocks) : 0.0);
}

// One rank's message to itself (see SelfMessage); `traffic_bytes`: the rank's memory traffic in
// the call. Priced by working set where it is not at its measured time, and then without a cold
// extra, which the working set already stands for.
double self_message_s(const SelfMessage& m, const Network& network, const MemoryModel& library,
                      const MemoryModel& memory, double working_set, double traffic_bytes) {
  if (m.bytes <= 0) return 0.0;
  const double blocks = std::max(m.send_blocks, m.recv_blocks);
  const MeasuredCurve* measured = network.self_messages();
  if (!measured) return memory.copy_time_s(m.bytes, blocks, working_set);
  const ColdMessageExtra* cold = m.just_written ? nullptr : network.cold_self_messages();
  const double at_measured_time = measured->time_s(m.bytes) + (cold ? cold->extra_s(m.bytes, traffic_bytes) : 0.0);
  if (blocks <= 1) return at_measured_time;
  if (!memory.local_work) return library.copy_time_s(m.bytes, blocks, working_set);
  if (const HostMessage* own = network.noncontiguous_self_messages())
    return at_measured_time +
           noncontiguous_extra_s(own->self_send_extra, own->self_recv_extra, m.bytes, m.send_blocks, m.recv_blocks);
  if (const HostMessage* pairs = network.noncontiguous_messages())
    return at_measured_time +
           noncontiguous_extra_s(pairs->send_extra, pairs->recv_extra, m.bytes, m.send_blocks, m.recv_blocks);
  return library.copy_time_s(m.bytes, blocks, working_set);
}

// The extra time of rank r's copies out of what other ranks of its node wrote, or over what they
// read (Phase::handoff_bytes).
double node_handoff_s(const Phase& p, std::size_t r, const Network& network, const MemoryModel& memory) {
  const HostMessage* host = network.node_handoff();
  if (!host || !memory.local_work || r >= p.handoff_bytes.size()) return 0.0;
  return host->node_handoff_s(p.handoff_bytes[r], r < p.handoff_piece_bytes.size() ? p.handoff_piece_bytes[r] : 0.0);
}

// The largest extra any rank's receiving pays for the fresh messages of a phase (Message::fresh),
// one after another.
double fresh_messages_s(const Phase& p, const Network& network) {
  const HostMessage* host = network.fresh_messages();
  if (!host) return 0.0;
  std::map<int, double> by_receiver;
  for (const Message& m : p.messages)
    if (m.fresh && m.src != m.dst) by_receiver[m.dst] += host->fresh_message_s(m.bytes);
  double largest = 0.0;
  for (const auto& [rank, seconds] : by_receiver) largest = std::max(largest, seconds);
  return largest;
}

// The library's datatype work of one side (see LibraryWork).
double library_work_s(const LibraryWork& w, const Network& network, const MemoryModel& library,
                      const MemoryModel& memory, double working_set, bool send) {
  if (w.messages <= 0) return 0.0;
  const HostMessage* host = network.noncontiguous_messages();
  if (!host || !memory.local_work) return library.copy_time_s(w.bytes, w.blocks, working_set);
  const double message = w.bytes / w.messages, block = w.bytes / w.blocks;
  return w.messages * (send ? host->send_extra : host->recv_extra).extra_s(message, block);
}

// Both sides of a rank's library work in a phase: their sum, or where the measured extras of the
// two sides overlap (Network::noncontiguous_sides_overlap) the larger.
double library_sides_s(const Phase& p, std::size_t r, const Network& network, const MemoryModel& library,
                       const MemoryModel& memory, double working_set) {
  const double send = library_work_s(p.library_send[r], network, library, memory, working_set, true);
  const double recv = library_work_s(p.library_recv[r], network, library, memory, working_set, false);
  return network.noncontiguous_sides_overlap() && memory.local_work ? std::max(send, recv) : send + recv;
}

}  // namespace

Cost cost(const std::vector<Phase>& phases, const Network& network, const MemoryModel& memory) {
  Cost c;
  // The library's packing where the network has no engine of its own: the memory model, less the
  // testbed packer's measured cost per block by working set (packer_blocks), which is the
  // packer's, not the library's.
  MemoryModel library_fallback;
  if (!network.library()) {
    library_fallback = memory;
    library_fallback.per_block_by_bytes.clear();
  }
  const MemoryModel& library = network.library() ? *network.library() : library_fallback;
  // Each rank's working set: every byte it copies or packs during the call.
  std::vector<double> working_set;
  for (const Phase& p : phases) {
    working_set.resize(std::max(working_set.size(), p.local_bytes.size()), 0.0);
    for (std::size_t r = 0; r < p.local_bytes.size(); ++r)
      working_set[r] += p.local_bytes[r] + p.library_send[r].bytes + p.library_recv[r].bytes + self_message_of(p, r).bytes;
  }
  // Each rank's memory traffic: its working set and the bytes of its messages, sent and received
  // (what passes through the caches between two calls' uses of the same buffers).
  std::vector<double> traffic = working_set;
  for (const Phase& p : phases)
    for (const Message& m : p.messages)
      for (int r : {m.src, m.dst})
        if (m.src != m.dst && static_cast<std::size_t>(r) < traffic.size()) traffic[static_cast<std::size_t>(r)] += m.bytes;
  for (const Phase& p : phases) {
    if (static_cast<int>(p.local_bytes.size()) > network.ranks())
      throw std::invalid_argument("the pattern has " + std::to_string(p.local_bytes.size()) + " ranks, the network " +
                                  std::to_string(network.ranks()));
    double local = 0.0;
    for (std::size_t r = 0; r < p.local_bytes.size(); ++r)
      local = std::max(local, memory.copy_time_s(p.local_bytes[r], p.local_blocks[r], working_set[r],
                                                 p.local_bytes[r] >= memory.streaming_from_bytes,
                                                 p.local_pieces[r]) +
                                  library_sides_s(p, r, network, library, memory, working_set[r]) +
                                  self_message_s(self_message_of(p, r), network, library, memory, working_set[r],
                                                 traffic[r]) +
                                  node_handoff_s(p, r, network, memory));
    const double comm =
        (p.zero_copy_gets ? network.gets_phase_time_s(p.messages, traffic) : network.phase_time_s(p.messages, traffic)) +
        fresh_messages_s(p, network);
    c.local_s += local;
    c.communication_s += comm;
    for (const auto& m : p.messages) c.messages += m.src != m.dst;
    ++c.phases;
  }
  return c;
}

double timing_barrier_s(const CommPattern& pattern, const Network& network, int inner) {
  if (inner < 1) throw std::invalid_argument("timing_barrier_s: inner must be >= 1, got " + std::to_string(inner));
  const std::vector<double> exits = network.barrier_exits_s();
  if (exits.empty()) return 0.0;
  if (pattern.ranks() > static_cast<int>(exits.size()))
    throw std::invalid_argument("timing_barrier_s: the pattern has " + std::to_string(pattern.ranks()) +
                                " ranks, the network " + std::to_string(exits.size()));
  double widest = 0.0;
  for (const auto& ranks : pattern.communicators_or_all()) {
    const auto [first, last] = std::minmax_element(ranks.begin(), ranks.end(),
                                                   [&](int a, int b) { return exits[a] < exits[b]; });
    if (first != ranks.end()) widest = std::max(widest, exits[*last] - exits[*first]);
  }
  return widest / inner;
}

double fixed_overhead_s(const std::string& algorithm, double measured_at_one_byte_s, int ranks, const Network& network,
                        const MemoryModel& memory, const ScheduleOptions& options) {
  if (network.kind() != NetworkKind::host) return 0.0;
  CommPattern one_byte(ranks);
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b) one_byte.at(a, b) = {1, 1, 1};
  return std::max(0.0, measured_at_one_byte_s - cost(schedule(algorithm, one_byte, options), network, memory).total_s());
}

}  // namespace tb::fpga
