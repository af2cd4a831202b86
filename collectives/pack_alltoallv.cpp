#include "collectives/pack_alltoallv.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/native.hpp"
#include "collectives/pack.hpp"

#include <climits>
#include <stdexcept>

namespace tb {
namespace {

const std::byte* at(const void* buf, int displ) { return static_cast<const std::byte*>(buf) + displ; }
std::byte* at(void* buf, int displ) { return static_cast<std::byte*>(buf) + displ; }

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

void PackAlltoallv::run(const AlltoallwArgs& a) {
  const AlltoallwComm c = check_alltoallw_args(a, name());
  if (delegate_intercommunicator(a, c, path_)) return;
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  path_ = in_place ? "pack_alltoallv (in place)" : "pack_alltoallv";
  // With MPI_IN_PLACE the data to send is what the receive layout holds now.
  const void* sbuf = in_place ? a.recvbuf : a.sendbuf;
  const int* scount = in_place ? a.recvcounts : a.sendcounts;
  const int* sdispl = in_place ? a.rdispls : a.sdispls;
  const MPI_Datatype* stype = in_place ? a.recvtypes : a.sendtypes;

  const int P = c.size, r = c.rank;
  // Per-call tables live in the object: once warm, a call allocates nothing.
  auto& slayout = slayout_;
  auto& rlayout = rlayout_;
  auto& sbytes = sbytes_;
  auto& rbytes = rbytes_;
  slayout.assign(static_cast<std::size_t>(P), nullptr);
  rlayout.assign(static_cast<std::size_t>(P), nullptr);
  sbytes.assign(static_cast<std::size_t>(P), 0);
  rbytes.assign(static_cast<std::size_t>(P), 0);
  for (int p = 0; p < P; ++p) {
    if (scount[p] > 0) {
      slayout[p] = type_layout(stype[p]);
      sbytes[p] = scount[p] * slayout[p]->size;
    }
    if (a.recvcounts[p] > 0) {
      rlayout[p] = type_layout(a.recvtypes[p]);
      rbytes[p] = a.recvcounts[p] * rlayout[p]->size;
    }
  }
  std::int64_t stotal = 0, rtotal = 0;
  layout_counts(sbytes, r, scounts_, sdispls_, stotal);
  layout_counts(rbytes, r, rcounts_, rdispls_, rtotal);
  if (send_.size() < static_cast<std::size_t>(stotal)) send_.resize(static_cast<std::size_t>(stotal));
  if (recv_.size() < static_cast<std::size_t>(rtotal)) recv_.resize(static_cast<std::size_t>(rtotal));

  for (int p = 0; p < P; ++p)
    if (p != r && sbytes[p] > 0) pack(at(sbuf, sdispl[p]), scount[p], *slayout[p], send_.data() + sdispls_[p]);
  if (sbytes[r] != rbytes[r])
    throw std::invalid_argument("pack_alltoallv: the self block sends " + std::to_string(sbytes[r]) +
                                " bytes but receives " + std::to_string(rbytes[r]));
  if (!in_place && sbytes[r] > 0)
    copy_typed(at(a.sendbuf, a.sdispls[r]), a.sendcounts[r], *slayout[r], at(a.recvbuf, a.rdispls[r]), a.recvcounts[r],
               *rlayout[r]);
  if (P > 1)
    TB_MPI_CHECK(PMPI_Alltoallv(send_.data(), scounts_.data(), sdispls_.data(), MPI_BYTE, recv_.data(), rcounts_.data(),
                                rdispls_.data(), MPI_BYTE, a.comm));
  for (int p = 0; p < P; ++p)
    if (p != r && rbytes[p] > 0) unpack(recv_.data() + rdispls_[p], a.recvcounts[p], *rlayout[p], at(a.recvbuf, a.rdispls[p]));
}

}  // namespace tb
