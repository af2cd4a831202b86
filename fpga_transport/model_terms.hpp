// The terms of the cost model that can be switched off for a comparison (tb-model --without), by
// name: what each adds to a prediction and where its figures come from. docs/cost-model.md lists
// every term of the model, these and the fixed ones, with its source and its test.
//
//   node_contention   PCIe+MPI: the extra time of a PCIe transfer while another FPGA of the node
//                     transfers too (hpcc_reference.hpp)
//   library_engine    host: the MPI library's own packing on the MPI_Pack bandwidth measured by
//                     tb-beff, instead of the testbed's memory model
//   measured_messages host: one message's time from tb-beff's measured exchange medians by size
//                     (HostMessage), instead of the Hockney fit of the same exchanges
//   self_messages     host: a rank's message to itself inside the library (native's own block,
//                     local_remap's packed self part): contiguous at tb-beff's measured
//                     self-exchange time, non-contiguous as one pass of the library's engine,
//                     instead of one plain copy
//   noncontiguous_messages host: a message with a non-contiguous side at tb-beff's measured extra time
//                     over the same message contiguous, by message size and bytes per block,
//                     instead of a pass of the library's engine (non-contiguous self messages too,
//                     where their own extra is not measured)
//   noncontiguous_self_messages host: a non-contiguous message from a rank to itself at tb-beff's
//                     measured extra of such a self message, instead of the pairs' extra
//   noncontiguous_overlap host: a rank non-contiguous on both its sending and its receiving side
//                     in a phase pays the larger of the two measured extras, not their sum
//   node_handoff      host: node_leader's unpack from the node's staging (bytes other ranks just
//                     wrote), and packs into a buffer an on-node peer just read, at tb-beff's
//                     measured extra time of such a copy
//   node_handoff_pieces host: node_leader's staged pairs of vector types pay tb-beff's measured
//                     handoff extra of copies in 64-byte pieces for the share of their pack and
//                     unpack in small blocks (log-weighted on the block size), not the contiguous one
//   fresh_messages    host: an on-node message of bytes its sender just packed pays tb-beff's
//                     measured extra of such a message on its receiver
//   zero_copy_gets    host: ucx_zcopy's pieces as one-sided gets by their receivers at tb-beff's
//                     measured time per get, instead of MPI messages
//   cold_messages     host: a message's extra time when the rank's memory traffic in the call has
//                     pushed its buffers out of cache, at tb-beff's measured extra by traffic
//   cold_self_messages host: the same for native's own block, a message to itself inside the
//                     library, at tb-beff's measured extra of such a self message
//   timing_barrier    cluster: the uneven exits from the testbed's timing barrier (SMPI's linear
//                     barrier on the cluster's routes), which the first timed call of a loop waits out
//   copy_list_pieces  local work: node_leader's copies at tb-model's measured cost per piece of its
//                     copy lists (MergedCopy), instead of the packer's cost per block
//   packer_blocks     local work: the testbed packer's blocks at tb-model's measured cost per
//                     block by working set, instead of one cost per block
//   streaming_stores  local work: the testbed's copies of 4 MiB or more on the streaming-store
//                     bandwidth measured by tb-model, instead of the plain memcpy bandwidth
//   working_set       local work: the copy bandwidth looked up at the bytes a rank touches in the
//                     whole call (a piece of a large array streams from memory), instead of at
//                     the copy's own size
#pragma once

#include "fpga_transport/link_models.hpp"
#include "fpga_transport/network.hpp"

#include <string>
#include <vector>

namespace tb::fpga {

struct ModelTerm {
  std::string name;
  std::string adds;    // what the term adds to a prediction
  std::string source;  // where its figures come from
};

// The switchable terms, in the order above.
const std::vector<ModelTerm>& switchable_terms();

// Switches `term` off in every network and in the memory model. Throws std::invalid_argument for
// an unknown name, listing the known ones.
void switch_off(const std::string& term, std::vector<Network>& networks, MemoryModel& memory);

}  // namespace tb::fpga
