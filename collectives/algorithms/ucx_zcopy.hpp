// ucx_zcopy: a receiver-driven, zero-copy MPI_Alltoallw over UCX RMA. Every contiguous piece
// moves straight from the sender's array into the receiver's array with ucp_get_nbx: no
// packing, no intermediate buffer (on one host UCX's single-copy transport is `cma`).
//
// Per communicator (cached with an attribute keyval, torn down when it is freed or at
// MPI_Finalize): a UCP context and one worker, worker addresses exchanged with
// MPI_Allgather(v), an endpoint to every peer. Per call:
//   1. register and publish: each rank registers the span of its send array (ucp_mem_map; a
//      registration cache keeps the last ones, so the loops of benchmarks and plans register
//      once) and sends every peer, in one MPI_Alltoall(v) of metadata, the address of its send
//      region, its block list for that peer, and the packed rkey - only when that peer has not
//      seen the registration yet. A sender whose blocks for a peer average below
//      TB_UCX_PACK_BELOW bytes (default 4 KiB, the crossover tb-bench's block-size sweep
//      measures: docs/results/*-ucx-zcopy-block-crossover.md) packs them first - all such peers
//      in one pass over its array - and publishes the packed copy instead ("packed by the
//      sender");
//   2. match: each receiver matches the sender's block list with its own receive layout (same
//      signature, different layouts) into (remote address, local address, length) pieces and
//      merges adjacent pieces; if the pieces would be many more than the sender's blocks (a
//      fragmented receive layout), it chooses to get the sender's blocks into a local staging
//      buffer instead and unpack ("staged get");
//   3. get: one ucp_get_nbx per merged piece;
//   4. complete: the receiver waits for all its gets, then an MPI_Ibarrier completes while every
//      rank keeps progressing its worker (so a transport that emulates RMA in software, e.g.
//      tcp, still serves the others' gets) - no sender returns while a reader may still read its
//      array; staged gets are unpacked, and the self block is a local typed copy.
// Messages: two MPI collectives of metadata per call (counts, then bytes: a 56-byte header + 16
// per block per peer, + the rkey on first use), one UCX get per merged piece, one barrier.
// Volume: exactly the user's bytes, one copy each (two for staged gets).
// MPI_IN_PLACE: the receive array is first copied to a private send copy (path says so).
// Intercommunicators are delegated to native. A transport failure is an exception naming the
// UCX status, never a hang: every wait polls with a deadline (TB_UCX_TIMEOUT_S, default 60).
//
// Where it wins: large blocks between processes (one kernel-assisted copy, no packing); it
// loses for small blocks (one get per piece; see the crossover in docs/results/).
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/pack.hpp"
#include "collectives/type_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tb {

class UcxZcopyAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "ucx_zcopy"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;

 private:
  struct Call;  // one call's arguments, UCX state, findings and tallies (defined in the .cpp)

  // A peer this rank gets data from in this call: the region its sender published and how this
  // rank reads it.
  struct IncomingPeer {
    int peer = 0;
    std::int64_t origin = 0;                       // the sender's address of the region's origin
    std::int64_t count = 0, extent = 0, size = 0;  // instances, bytes between them, data bytes in one
    std::size_t first_block = 0, blocks = 0;       // the sender's block list, in received_blocks_
    bool staged = false;                           // got whole into recv_staging_, then unpacked
    std::size_t staging_offset = 0;                // where in recv_staging_
  };

  // The steps of exchange(), in order; publish() writes and exchanges the metadata, and
  // read_from_peers() matches and gets.
  void describe_receives(Call& call);
  void describe_sends(Call& call);
  void pack_small_blocks(Call& call);
  void publish(Call& call);
  void write_metadata(Call& call);
  void append_metadata(Call& call, int peer);
  void exchange_metadata(Call& call);
  void read_from_peers(Call& call);
  void match(Call& call);
  void issue_gets(Call& call);
  void copy_self_block(Call& call);
  void complete(Call& call);

  bool has_self_block(const Call& call) const;  // a typed copy to itself (never in place)

  // Scratch kept between calls, one member per use, so that a warm call allocates nothing.
  std::vector<std::shared_ptr<const TypeLayout>> send_layouts_, recv_layouts_;  // per peer
  std::vector<std::int64_t> send_bytes_, recv_bytes_;                           // per peer
  std::vector<std::int64_t> packed_offsets_;  // per peer: where in packed_sends_ (-1: not packed)
  std::vector<std::byte> in_place_copy_;      // under MPI_IN_PLACE: the send side, a copy of the receive array
  std::vector<std::byte> packed_sends_;       // what small-block peers read, packed by this rank
  std::vector<std::byte> recv_staging_;       // where staged gets land before unpacking
  MergedCopy packer_;
  std::vector<std::byte> send_rkey_, packed_rkey_;  // the rkeys of this call's two registrations
  std::vector<int> meta_send_counts_, meta_send_displs_, meta_recv_counts_, meta_recv_displs_;
  std::vector<std::byte> meta_out_, meta_in_;
  std::vector<ByteBlock> received_blocks_;  // the senders' block lists, copied out aligned
  std::vector<IncomingPeer> incoming_;
  std::vector<void*> requests_;  // the gets in flight (ucs_status_ptr_t)
};

// Facts about the UCX state on `comm` (for tests): registrations made so far (-1 before the
// first call), and the transports UCX reported for the context.
struct UcxZcopyStats {
  std::int64_t registrations = -1;
  std::int64_t rkeys_sent = -1;
  std::string transports;
};
UcxZcopyStats ucx_zcopy_stats(MPI_Comm comm);

// The measurement behind tb-model's zero-copy gets (tb-beff): on `comm`'s ucx_zcopy state (its
// context, endpoints and registration cache), this rank makes `gets` gets of `bytes` each, issued
// back to back, from its partner's array (the partner's `mine`) into its own `into` (both registered; the
// pieces laid end to end from the start of both arrays, starting again from the start where the
// next would not fit), waits for them and then for every rank's, as a call's completion does.
// Collective over `comm`: every rank calls it, one without a partner with MPI_PROC_NULL; partners
// name each other; the gets stay within the smaller of the two arrays, which must hold `bytes`.
// Returns this rank's seconds per get (its wait for the others included, once per timing). A
// failure on any rank (UCX, or arrays too small) is an exception on every rank, after every get
// has completed.
double ucx_zcopy_time_gets(MPI_Comm comm, int partner, std::span<std::byte> mine, std::span<std::byte> into,
                           std::int64_t bytes, int gets);

}  // namespace tb
