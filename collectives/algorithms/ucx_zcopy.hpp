// ucx_zcopy: a receiver-driven, zero-copy MPI_Alltoallw over UCX RMA. Every contiguous piece
// moves straight from the sender's array into the receiver's array with ucp_get_nbx: no
// packing, no intermediate buffer (on one host UCX's single-copy transport is `cma`).
//
// Per communicator (cached with an attribute keyval, torn down when it is freed or at
// MPI_Finalize): a UCP context and one worker, worker addresses exchanged with
// MPI_Allgather(v), an endpoint to every peer. Per call:
//   1. each rank registers the span of its send array (ucp_mem_map; a registration cache keeps
//      the last ones, so the loops of benchmarks and plans register once) and sends every peer,
//      in one MPI_Alltoall(v) of metadata, the address of its send region, its block list for
//      that peer, and the packed rkey - only when that peer has not seen the registration yet;
//      A sender whose blocks for a peer average below TB_UCX_PACK_BELOW bytes (default 4 KiB,
//      the crossover measured here) packs them first - all such peers in one pass over its
//      array - and publishes the packed copy instead ("packed by the sender");
//   2. each receiver matches the sender's block list with its own receive layout (same
//      signature, different layouts) into (remote address, local address, length) pieces,
//      merges adjacent pieces and issues one ucp_get_nbx per piece; if the pieces would be
//      many more than the sender's blocks (a fragmented receive layout), it gets the sender's
//      blocks into a local staging buffer instead and unpacks ("staged get");
//   3. the receiver flushes its worker (all gets complete), then an MPI_Ibarrier completes
//      while every rank keeps progressing its worker (so a transport that emulates RMA in
//      software, e.g. tcp, still serves the others' gets) - no sender returns while a reader
//      may still read its array;
//   4. the self block is a local typed copy.
// Messages: two MPI collectives of metadata per call (counts, then bytes: 64 bytes + 16 per
// block per peer, + the rkey on first use), one UCX get per merged piece, one barrier.
// Volume: exactly the user's bytes, one copy each (two for staged gets).
// MPI_IN_PLACE: the receive array is first copied to a private send copy (path says so).
// Intercommunicators are delegated to native. A transport failure is an exception naming the
// UCX status, never a hang: every wait polls with a deadline (TB_UCX_TIMEOUT_S, default 60).
//
// Where it wins: large blocks between processes (one kernel-assisted copy, no packing); it
// loses for small blocks (one get per piece; see the crossover in README.md).
#pragma once

#include "collectives/alltoallw.hpp"
#include "collectives/pack.hpp"
#include "collectives/type_layout.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class UcxZcopyAlltoallw final : public AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "ucx_zcopy"; }

 protected:
  void exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) override;

 private:
  std::vector<std::shared_ptr<const TypeLayout>> slayout_, rlayout_;
  std::vector<std::byte> in_place_copy_, staging_, send_staging_;
  MergedCopy packer_;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<std::byte> meta_out_, meta_in_;
  std::vector<std::int64_t> sbytes_, rbytes_, packed_at_;
  std::vector<void*> requests_;  // ucs_status_ptr_t
};

// Facts about the UCX state on `comm` (for tests): registrations made so far (-1 before the
// first call), and the transports UCX reported for the context.
struct UcxZcopyStats {
  std::int64_t registrations = -1;
  std::int64_t rkeys_sent = -1;
  std::string transports;
};
UcxZcopyStats ucx_zcopy_stats(MPI_Comm comm);

}  // namespace tb
