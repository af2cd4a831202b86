// The modelled cost of one Alltoallw call (a CommPattern) for each algorithm of the registry and
// for the local-remap baseline, on a modelled Network, with local work (pack, unpack, copies) on
// a MemoryModel measured on this machine.
//
// Each algorithm becomes a schedule: a sequence of phases, each with the messages in flight at
// once and every rank's local work (bytes and contiguous blocks copied). A phase costs the
// network's time for its messages plus the slowest rank's local work; phases do not overlap (no
// algorithm here pipelines local work with communication, except what the network model itself
// assumes). Each registered algorithm names its schedule in its registration (or says why it has
// none); the schedules follow the implementations in collectives/algorithms/:
//   native          one phase, every message at once (MPICH and Open MPI post all isend/irecv);
//                   a non-contiguous side is packed or unpacked by the library (MPICH's ch4:ucx
//                   packs every non-contiguous datatype), the self part is a message to itself.
//   pairwise        per communicator of P ranks, P-1 phases, step k: rank r sends to r+k,
//                   receives from r-k; the library packs per message as native does; the self
//                   copy in a phase of its own. A redistribution's sub-communicators
//                   (CommPattern::communicators) step together.
//   pack_alltoallv  pack everything, one phase of contiguous messages, unpack everything.
//   local_remap     the redistribution baseline (pack, MPI_Alltoall(v), unpack): the schedule
//                   of pack_alltoallv, except that its self part, packed with the rest, is also
//                   a message to itself inside MPI_Alltoall(v) (pack_alltoallv copies it once).
//   node_leader     with R ranks per node: every rank packs its off-node data into the node's
//                   staging; the leaders exchange ONE aggregated message per node pair; receivers
//                   unpack. Per communicator: sub-communicators aggregate each on its own, with
//                   its lowest rank on a node as that node's leader. On-node data takes one copy straight into the peer's array when the
//                   user's arrays are node-shared (tb-redistribute --buffers shared), and two
//                   otherwise: packed into the staging by the sender, unpacked by the receiver,
//                   whose unpack reads what other ranks wrote (a node handoff).
//                   The self part is one copy either way.
//   ucx_zcopy       peers whose blocks average at least `pack_below` bytes move with one
//                   zero-copy get per contiguous piece (min of send and receive blocks) and no
//                   local work; smaller ones are packed, got as one piece, and unpacked. Every
//                   message is a get made by its receiver (Phase::zero_copy_gets).
#pragma once

#include "fpga_transport/link_models.hpp"
#include "fpga_transport/network.hpp"
#include "fpga_transport/pattern.hpp"

#include <string>
#include <vector>

namespace tb::fpga {

// A message from a rank to itself, which the MPI library copies on its own path. Where the network
// measured such messages (tb-beff's self exchanges, contiguous): that time, plus for each
// non-contiguous side the measured extra of a non-contiguous message where the network has it,
// else (contiguous time aside) one pass of the library's datatype engine over the more fragmented
// side. Without the self measurement: one plain copy of its bytes in max(send, receive) blocks on
// the memory model. At its measured time it also pays the measured cold extra of its buffers
// after the call's memory traffic (network.cold_self_messages()), unless `just_written`: its
// source was written earlier in the same call (local_remap's packed self part), so it is in cache.
struct SelfMessage {
  double bytes = 0.0, send_blocks = 1.0, recv_blocks = 1.0;
  bool just_written = false;
};

// One side of the MPI library's datatype work in a phase, for one rank: its messages with a
// non-contiguous send side (or receive side), their bytes and contiguous blocks summed. Where the
// network measured non-contiguous messages each costs the measured extra time at the side's mean
// message and block size; otherwise the bytes are one pass of the library's engine.
struct LibraryWork {
  double bytes = 0.0, blocks = 0.0, messages = 0.0;
};

struct Phase {
  std::string name;
  std::vector<Message> messages;
  // per rank: the testbed's plain copies (its packer: large ones take streaming stores), their
  // bytes, the contiguous blocks of the packer's, and the pieces of node_leader's copy lists
  std::vector<double> local_bytes, local_blocks, local_pieces;
  std::vector<LibraryWork> library_send, library_recv;  // per rank: the MPI library's datatype work
  std::vector<SelfMessage> self_messages;  // per rank: its message to itself (empty: none in the phase)
  // per rank: bytes of its local copies that read what another rank of the node wrote in this call
  // (node_leader's unpack from the node's staging) or writes over what another rank of its node has
  // just read (a pack into the buffer an on-node peer read in the previous call); where the
  // network measured node handoffs they cost that extra time on top of the copy (empty: none)
  std::vector<double> handoff_bytes;
  // per rank: of those bytes, the ones copied in small pieces (HostMessage::piece_share of each
  // copy's bytes; node_leader's staged pairs of vector types; empty: none, as handoff_bytes)
  std::vector<double> handoff_piece_bytes;
  // the messages are one-sided zero-copy gets made by their receivers (ucx_zcopy), costed by
  // Network::gets_phase_time_s
  bool zero_copy_gets = false;
};

struct ScheduleOptions {
  int ranks_per_node = 1;            // node_leader's R; which packs and messages stay on a node (ranks are numbered node by node)
  double pack_below_bytes = 4096.0;  // ucx_zcopy's threshold (TB_UCX_PACK_BELOW)
  bool node_shared_buffers = false;  // node_leader: the user's arrays are in node-shared memory
};

// What the model does with one algorithm: its schedule, or why it has none.
struct ModelledAlgorithm {
  std::string name;
  std::string schedule;      // a name from schedule_names(); empty when not modelled
  std::string not_modelled;  // why not, when schedule is empty
};

// Every registered algorithm, as its registration declares it (a schedule, or a reason it has
// none; an unknown schedule name counts as not modelled, and says so), then local_remap.
std::vector<ModelledAlgorithm> algorithms_to_cost();

// The schedules the model has, by name.
std::vector<std::string> schedule_names();

// The phases of `algorithm` (a registered name, or local_remap) on `pattern`. Throws
// std::invalid_argument for an unknown or unmodelled algorithm, naming why.
std::vector<Phase> schedule(const std::string& algorithm, const CommPattern& pattern, const ScheduleOptions& options);

struct Cost {
  double communication_s = 0.0;
  double local_s = 0.0;
  double overhead_s = 0.0;  // fixed software cost per call, when calibrated (tb-model --overheads)
  double timing_s = 0.0;    // what the testbed's timing adds per call (timing_barrier_s)
  double total_s() const { return communication_s + local_s + overhead_s + timing_s; }
  int phases = 0;
  std::int64_t messages = 0;  // network messages (self excluded)
};

// Local work: plain copies on `memory`, with streaming stores where a rank copies
// memory.streaming_from_bytes or more in the phase; the
// library's packing on the network's library model when it has one (a calibrated host measures
// MPI_Pack), else on `memory` too. Communication: each phase's messages on the network, given
// every rank's memory traffic in the call (its working set and message bytes; cold messages), a
// phase of zero-copy gets as the receivers' gets.
Cost cost(const std::vector<Phase>& phases, const Network& network, const MemoryModel& memory);

// What the testbed's timing (microbench/timing.hpp) adds to each call it reports: it runs `inner`
// calls after an MPI_Barrier over all ranks and reports the slowest rank's time over `inner`, so a
// rank that leaves the barrier early waits, in the first call, for the last rank of its
// communicator. Per call: the widest spread of the barrier's exits within one of the pattern's
// communicators, over `inner` (Network::barrier_exits_s); 0 where the network does not describe
// its barrier. The same for every algorithm: each call waits for the last of its ranks.
double timing_barrier_s(const CommPattern& pattern, const Network& network, int inner);

// The fixed software cost per call of `algorithm` (tb-model --overheads): its time measured at 1 B
// per peer (tb-bench, contiguous) minus the model's cost of that call on `ranks` ranks, never below
// 0. Host networks only (the measurement is of this host): 0 on every other kind.
double fixed_overhead_s(const std::string& algorithm, double measured_at_one_byte_s, int ranks, const Network& network,
                        const MemoryModel& memory, const ScheduleOptions& options);

}  // namespace tb::fpga
