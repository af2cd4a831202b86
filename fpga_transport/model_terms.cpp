#include "fpga_transport/model_terms.hpp"

#include <stdexcept>

namespace tb::fpga {

const std::vector<ModelTerm>& switchable_terms() {
  static const std::vector<ModelTerm> terms{
      {"node_contention", "PCIe+MPI: extra seconds per PCIe transfer while another FPGA of the node transfers",
       "HPCC FPGA b_eff runs on both FPGAs of one node minus the single-FPGA runs (reference/hpcc_fpga_520n_beff.json)"},
      {"library_engine", "host: the MPI library's packing at the MPI_Pack bandwidth",
       "tb-beff --fit-out (networks/host_calibrated.json, key 'library')"},
      {"measured_messages",
       "host: each message at its measured time m(L) (linear between measured sizes, the fit's beta beyond the "
       "largest); a rank's sent and its received messages one after another, the larger of the two",
       "tb-beff --fit-out, key 'host.message_seconds_by_bytes': each size's exchange median_s / 2"},
      {"self_messages",
       "host: a rank's message to itself inside the MPI library (native's own block, local_remap's self part): "
       "contiguous at its measured time s(L), non-contiguous as one pass of the library's engine, instead of a memcpy",
       "tb-beff --fit-out, key 'host.self_message_seconds_by_bytes': each size's self exchange median_s (every rank "
       "sends itself one message at once)"},
      {"noncontiguous_messages",
       "host: a message with a non-contiguous side at its measured extra time over a contiguous one, by message "
       "size and bytes per block (the library's packing on its real path), instead of a pass of the library engine; "
       "a non-contiguous self message likewise where its own extra (below) is not measured",
       "tb-beff --fit-out, keys 'host.noncontiguous_send_extra_seconds' and '...recv...': per block size and message "
       "size, the median of paired exchanges with that side a vector minus the median of the same exchange contiguous"},
      {"noncontiguous_self_messages",
       "host: a message from a rank to itself with a non-contiguous side (native's own block) at its own measured "
       "extra over a contiguous one, by message size and bytes per block, instead of the pairs' extra: the library "
       "packs it alone on one core",
       "tb-beff --fit-out, keys 'host.self_noncontiguous_send_extra_seconds' and '...recv...': every rank exchanging "
       "with itself at once (MPI_Sendrecv), the median with that side a vector minus the median contiguous"},
      {"noncontiguous_overlap",
       "host: a rank whose messages of one phase are non-contiguous on both its sending and its receiving side "
       "pays the larger of the two measured extras, not their sum: the library packs and unpacks them in one "
       "pipeline per exchange",
       "experiments/probes/noncontiguous_message.c's 'vec both' column: an exchange with both sides vectors cost "
       "0.66-1.72x the larger one-sided extra (42 of 60 cells within 0.8-1.2x) and 0.46-0.84x their sum from "
       "1 MiB (three launches, 64 B - 512 KiB blocks, two cells out of line)"},
      {"node_handoff",
       "host: node_leader's unpack from the node's staging, which reads what other ranks just wrote, and the packs "
       "of pack_alltoallv, local_remap and ucx_zcopy into the buffers an on-node peer read in the previous call, "
       "at the measured extra time of such a copy over a copy of the rank's own bytes",
       "tb-beff --fit-out, key 'host.node_handoff_extra_seconds_by_bytes': ranks in pairs on one node, copy into a "
       "shared window, barrier, copy the partner's bytes out; the median minus the median of the same with both "
       "copies in the rank's own memory"},
      {"node_handoff_pieces",
       "host: node_leader's staged pairs of vector types: the pack into and the unpack from the staging, each "
       "half of the pair's handoff, in pieces as small as their side's blocks pay the measured extra of copies in "
       "64-byte pieces (log(block) weighs it against the contiguous extra, 0 at one block), instead of the "
       "contiguous extra: piece by piece, the other core's cache lines move one at a time. The packs of "
       "pack_alltoallv, local_remap and ucx_zcopy keep the contiguous extra (charged in pieces they were "
       "over-predicted)",
       "tb-beff --fit-out, key 'host.node_handoff_piece_extra_seconds_by_bytes': the node handoffs with the private "
       "side a vector of 64-byte blocks at a 128-byte stride, each copied on its own; the median minus the median of "
       "the same copies in the rank's own memory"},
      {"fresh_messages",
       "host: an on-node message whose sender has just written (packed) its bytes, as pack_alltoallv, "
       "local_remap and ucx_zcopy's packed peers send, also pays on its receiver's side the measured extra of such a message over the same "
       "message repeated (the library's copy reads bytes another core has just written)",
       "tb-beff --fit-out, key 'host.fresh_message_extra_seconds_by_bytes': ranks in pairs, MPI_Sendrecv of L bytes "
       "right after each rewrote its send buffer; the median minus the median of the same exchange settled (timed "
       "after 6 untimed repeats: tb_beff.cpp's kSettleExchanges)"},
      {"zero_copy_gets",
       "host: ucx_zcopy's pieces as one-sided gets by their receivers at the measured time of a get, a rank's gets "
       "one after another, instead of MPI messages",
       "tb-beff --fit-out, key 'host.get_seconds_by_bytes': ranks in pairs, gets of L bytes issued back to back on "
       "ucx_zcopy's UCX state; the median seconds per get"},
      {"cold_messages",
       "host: each message also pays, on its sender's and its receiver's side, the measured extra of its buffers "
       "being out of cache after the rank's memory traffic in the call (its working set and message bytes)",
       "tb-beff --fit-out, key 'host.cold_message_extra_seconds': ranks in pairs, MPI_Sendrecv of L bytes after "
       "each rank writes T bytes of other memory, per T; the median minus the median of the same exchange settled "
       "(timed after 6 untimed repeats: tb_beff.cpp's kSettleExchanges)"},
      {"cold_self_messages",
       "host: native's own block, a rank's message to itself inside the MPI library, also pays the measured extra of "
       "its buffers being out of cache after the rank's memory traffic in the call (not local_remap's self part, "
       "which its pack has just written)",
       "tb-beff --fit-out, key 'host.cold_self_message_extra_seconds': every rank exchanging with itself at once, "
       "MPI_Sendrecv of L bytes after each rank writes T bytes of other memory, per T; the median minus the median "
       "of the same exchange settled"},
      {"timing_barrier",
       "cluster: the testbed's timing barrier's uneven exits, which the first timed call waits out: the widest "
       "spread within one communicator, over the calls per timed loop (tb-model --inner)",
       "the cluster's routes and factors, and SMPI 3.32's default MPI_Barrier (ompi_basic_linear in SimGrid's "
       "smpi_default_selector.cpp), key 'cluster.barrier' written by experiments/platform_network.py"},
      {"copy_list_pieces",
       "local work: node_leader's copies at the measured cost of a piece of its copy lists (planned, merged in "
       "address order, then run) beyond a memcpy of the same bytes, by working set, instead of the packer's cost "
       "per block",
       "tb-model's memory measurement (--save-memory, key 'per_piece_seconds_by_bytes'): MergedCopy of 64-byte "
       "blocks at a 128-byte stride into a contiguous array minus one memcpy of the bytes, per piece"},
      {"packer_blocks",
       "local work: the testbed packer's blocks (pack_alltoallv's, local_remap's and ucx_zcopy's packs and "
       "unpacks) at their measured cost beyond a memcpy of the same bytes, by working set, instead of one cost per "
       "block",
       "tb-model's memory measurement (--save-memory, key 'per_block_seconds_by_bytes'): tb::pack of 64-byte blocks "
       "at a 128-byte stride into a contiguous array minus one memcpy of the bytes, per block"},
      {"streaming_stores", "local work: the testbed's copies from 4 MiB at the streaming-store bandwidth",
       "tb-model's memory measurement (--save-memory, key 'streaming_bandwidth_by_bytes')"},
      {"local_work", "every rank's copies and packing (the testbed's and the MPI library's)",
       "the memory model and the library engine above; SMPI with compute off charges none (run.py --compute off)"},
      {"working_set", "local work: copy bandwidth at the bytes a rank touches in the whole call",
       "tb-model's memory measurement (--save-memory, key 'bandwidth_by_bytes')"},
  };
  return terms;
}

void switch_off(const std::string& term, std::vector<Network>& networks, MemoryModel& memory) {
  if (term == "node_contention") {
    for (Network& n : networks) n.drop_node_contention();
  } else if (term == "library_engine") {
    for (Network& n : networks) n.drop_library();
  } else if (term == "measured_messages") {
    for (Network& n : networks) n.drop_measured_messages();
  } else if (term == "self_messages") {
    for (Network& n : networks) n.drop_self_messages();
  } else if (term == "noncontiguous_messages") {
    for (Network& n : networks) n.drop_noncontiguous_messages();
  } else if (term == "noncontiguous_self_messages") {
    for (Network& n : networks) n.drop_noncontiguous_self_messages();
  } else if (term == "noncontiguous_overlap") {
    for (Network& n : networks) n.drop_noncontiguous_overlap();
  } else if (term == "node_handoff") {
    for (Network& n : networks) n.drop_node_handoff();
  } else if (term == "node_handoff_pieces") {
    for (Network& n : networks) n.drop_node_handoff_pieces();
  } else if (term == "fresh_messages") {
    for (Network& n : networks) n.drop_fresh_messages();
  } else if (term == "cold_messages") {
    for (Network& n : networks) n.drop_cold_messages();
  } else if (term == "cold_self_messages") {
    for (Network& n : networks) n.drop_cold_self_messages();
  } else if (term == "zero_copy_gets") {
    for (Network& n : networks) n.drop_zero_copy_gets();
  } else if (term == "timing_barrier") {
    for (Network& n : networks) n.drop_barrier();
  } else if (term == "copy_list_pieces") {
    memory.per_piece_by_bytes.clear();  // pieces then cost as the packer's blocks
  } else if (term == "packer_blocks") {
    memory.per_block_by_bytes.clear();  // blocks then cost per_block_s at every working set
  } else if (term == "streaming_stores") {
    memory.streaming_bandwidth_by_bytes.clear();  // streaming copies then cost as plain ones
  } else if (term == "local_work") {
    memory.local_work = false;
    for (Network& n : networks) n.drop_library();  // the library's packing falls back to `memory`: free too
  } else if (term == "working_set") {
    memory.by_working_set = false;
  } else {
    std::string known;
    for (const ModelTerm& t : switchable_terms()) known += (known.empty() ? "" : ", ") + t.name;
    throw std::invalid_argument("no switchable model term '" + term + "' (known: " + known + ")");
  }
}

}  // namespace tb::fpga
