#include "collectives/algorithms/pack_alltoallv.hpp"

#include "collectives/pack.hpp"
#include "collectives/registry.hpp"

#include <climits>
#include <stdexcept>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "pack_alltoallv",
    .summary = "own packer from flattened block lists + MPI_Alltoallv of bytes",
    .make = &make_algorithm<PackAlltoallv>,
    .cost_schedule = "pack_alltoallv",
    .not_modelled = "",
});
// Lays out per-peer byte counts back to back; the self block (index self) gets no space.
void layout_counts(const std::vector<std::int64_t>& bytes, int self, std::vector<int>& counts, std::vector<int>& displs,
                   std::int64_t& total) {
  const auto n = bytes.size();
  counts.assign(n, 0);
  displs.assign(n, 0);
  total = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t b = static_cast<int>(p) == self ? 0 : bytes[p];
    if (b > INT_MAX || total > INT_MAX)
      throw std::invalid_argument("pack_alltoallv: " + std::to_string(b) + " bytes for peer " + std::to_string(p) +
                                  " at offset " + std::to_string(total) +
                                  " exceed MPI_Alltoallv's int counts; use another algorithm");
    counts[p] = static_cast<int>(b);
    displs[p] = static_cast<int>(total);
    total += b;
  }
}

}  // namespace

void PackAlltoallv::measure(const SendSide& send, const AlltoallwArgs& a, int size) {
  slayout_.assign(static_cast<std::size_t>(size), nullptr);
  rlayout_.assign(static_cast<std::size_t>(size), nullptr);
  sbytes_.assign(static_cast<std::size_t>(size), 0);
  rbytes_.assign(static_cast<std::size_t>(size), 0);
  for (int p = 0; p < size; ++p) {
    if (send.counts[p] > 0) {
      slayout_[p] = type_layout(send.types[p]);
      sbytes_[p] = send.counts[p] * slayout_[p]->size;
    }
    if (a.recvcounts[p] > 0) {
      rlayout_[p] = type_layout(a.recvtypes[p]);
      rbytes_[p] = a.recvcounts[p] * rlayout_[p]->size;
    }
  }
}

// Per-call tables and buffers live in the object: once warm, a call allocates nothing.
void PackAlltoallv::exchange(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  if (in_place) set_path("pack_alltoallv (in place)");
  const SendSide send = send_side(a);
  const int size = c.size, me = c.rank;
  measure(send, a, size);
  if (sbytes_[me] != rbytes_[me])
    throw std::invalid_argument("pack_alltoallv: the self block sends " + std::to_string(sbytes_[me]) +
                                " bytes but receives " + std::to_string(rbytes_[me]));
  std::int64_t stotal = 0, rtotal = 0;
  layout_counts(sbytes_, me, scounts_, sdispls_, stotal);
  layout_counts(rbytes_, me, rcounts_, rdispls_, rtotal);
  if (send_.size() < static_cast<std::size_t>(stotal)) send_.resize(static_cast<std::size_t>(stotal));
  if (recv_.size() < static_cast<std::size_t>(rtotal)) recv_.resize(static_cast<std::size_t>(rtotal));

  for (int p = 0; p < size; ++p)
    if (p != me && sbytes_[p] > 0) pack(at(send.buf, send.displs[p]), send.counts[p], *slayout_[p], send_.data() + sdispls_[p]);
  if (!in_place && sbytes_[me] > 0)
    copy_typed(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
               a.recvcounts[me], *rlayout_[me]);
  if (size > 1)
    TB_MPI_CHECK(PMPI_Alltoallv(send_.data(), scounts_.data(), sdispls_.data(), MPI_BYTE, recv_.data(), rcounts_.data(),
                                rdispls_.data(), MPI_BYTE, a.comm));
  for (int p = 0; p < size; ++p)
    if (p != me && rbytes_[p] > 0)
      unpack(recv_.data() + rdispls_[p], a.recvcounts[p], *rlayout_[p], at(a.recvbuf, a.rdispls[p]));
}

}  // namespace tb
