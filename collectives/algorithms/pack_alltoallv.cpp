#include "collectives/algorithms/pack_alltoallv.hpp"

#include "collectives/pack.hpp"
#include "collectives/registry.hpp"

#include <climits>
#include <cstring>
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
// Every non-empty block travels behind a header: the sender's byte count, so that the receiver
// unpacks what arrived and nothing past it (a shorter message leaves the rest of its receive
// block as it was, and staging bytes of an earlier call never reach the user's array).
constexpr std::int64_t kHeader = sizeof(std::int64_t);

// Lays out per-peer byte counts, each non-empty one behind its header, back to back; the self
// block (index self) gets no space.
void layout_counts(const std::vector<std::int64_t>& bytes, int self, std::vector<int>& counts, std::vector<int>& displs,
                   std::int64_t& total) {
  const auto n = bytes.size();
  counts.assign(n, 0);
  displs.assign(n, 0);
  total = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t b = static_cast<int>(p) == self || bytes[p] == 0 ? 0 : bytes[p] + kHeader;
    if (b > INT_MAX || total + b > INT_MAX)
      throw std::invalid_argument("pack_alltoallv: " + std::to_string(bytes[p]) + " bytes for peer " +
                                  std::to_string(p) + " at offset " + std::to_string(total) +
                                  " exceed MPI_Alltoallv's int counts; use another algorithm");
    counts[p] = static_cast<int>(b);
    displs[p] = static_cast<int>(total);
    total += b;
  }
}

// pack_alltoallv's prepared form: per-peer layouts, counts and displacements, and both staging
// buffers made once. prepare() has matched every sender's size with its receiver's, so blocks
// travel without the size header, and a start packs, exchanges and unpacks.
class PreparedPackAlltoallv final : public PreparedExchange {
 public:
  PreparedPackAlltoallv(const AlltoallwArgs& a, const AlltoallwComm& c);
  void start() override;
  std::string path() const override {
    return in_place_ ? "pack_alltoallv (persistent, in place)" : "pack_alltoallv (persistent)";
  }
  // The staging buffers are its own; the user's are read and written through args_ at each start.
  bool rebinds() const override { return true; }
  void rebind(const void* sendbuf, void* recvbuf) override {
    args_.sendbuf = sendbuf;
    args_.recvbuf = recvbuf;
    send_ = send_side(args_);
  }

 private:
  AlltoallwArgs args_;
  SendSide send_;
  int size_ = 0, me_ = 0;
  bool in_place_ = false;
  std::vector<std::shared_ptr<const TypeLayout>> slayout_, rlayout_;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
  std::vector<std::byte> sbuf_, rbuf_;
};

// The per-peer layouts and byte counts of one side (`counts`, `types`); the self block gets no
// staging space.
std::vector<std::int64_t> side_bytes(const int* counts, const MPI_Datatype* types, int size,
                                     std::vector<std::shared_ptr<const TypeLayout>>& layouts) {
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(size), 0);
  layouts.assign(static_cast<std::size_t>(size), nullptr);
  for (int p = 0; p < size; ++p)
    if (counts[p] > 0) {
      layouts[p] = type_layout(types[p]);
      bytes[p] = counts[p] * layouts[p]->size;
    }
  return bytes;
}

// Back-to-back int counts and displacements; throws when a block or the total passes INT_MAX.
void lay_out(std::vector<std::int64_t> bytes, int self, std::vector<int>& counts, std::vector<int>& displs,
             std::vector<std::byte>& buffer) {
  bytes[static_cast<std::size_t>(self)] = 0;
  counts.assign(bytes.size(), 0);
  displs.assign(bytes.size(), 0);
  std::int64_t total = 0;
  for (std::size_t p = 0; p < bytes.size(); ++p) {
    if (total + bytes[p] > INT_MAX)
      throw std::invalid_argument("pack_alltoallv: " + std::to_string(bytes[p]) + " bytes for peer " +
                                  std::to_string(p) + " at offset " + std::to_string(total) +
                                  " exceed MPI_Alltoallv's int counts; use another algorithm");
    counts[p] = static_cast<int>(bytes[p]);
    displs[p] = static_cast<int>(total);
    total += bytes[p];
  }
  buffer.resize(static_cast<std::size_t>(total));
}

PreparedPackAlltoallv::PreparedPackAlltoallv(const AlltoallwArgs& a, const AlltoallwComm& c)
    : args_(a), send_(send_side(a)), size_(c.size), me_(c.rank), in_place_(a.sendbuf == MPI_IN_PLACE) {
  lay_out(side_bytes(send_.counts, send_.types, size_, slayout_), me_, scounts_, sdispls_, sbuf_);
  lay_out(side_bytes(a.recvcounts, a.recvtypes, size_, rlayout_), me_, rcounts_, rdispls_, rbuf_);
}

void PreparedPackAlltoallv::start() {
  for (int p = 0; p < size_; ++p)
    if (p != me_ && scounts_[p] > 0) pack(at(send_.buf, send_.displs[p]), send_.counts[p], *slayout_[p], sbuf_.data() + sdispls_[p]);
  if (!in_place_ && slayout_[me_] && rlayout_[me_])
    copy_typed(at(args_.sendbuf, args_.sdispls[me_]), args_.sendcounts[me_], *slayout_[me_],
               at(args_.recvbuf, args_.rdispls[me_]), args_.recvcounts[me_], *rlayout_[me_]);
  if (size_ > 1)
    TB_MPI_CHECK(PMPI_Alltoallv(sbuf_.data(), scounts_.data(), sdispls_.data(), MPI_BYTE, rbuf_.data(), rcounts_.data(),
                                rdispls_.data(), MPI_BYTE, args_.comm));
  for (int p = 0; p < size_; ++p)
    if (p != me_ && rcounts_[p] > 0)
      unpack(rbuf_.data() + rdispls_[p], args_.recvcounts[p], *rlayout_[p], at(args_.recvbuf, args_.rdispls[p]));
}

}  // namespace

std::unique_ptr<PreparedExchange> PackAlltoallv::prepare_exchange(const AlltoallwArgs& args, const AlltoallwComm& comm) {
  return std::make_unique<PreparedPackAlltoallv>(args, comm);
}

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

// Per-call tables and buffers live in the object: once warm, a call allocates nothing. A
// mismatch does not end the call early: the exchange runs, what arrived is delivered, and the
// first problem is thrown at the end (classes: algorithm_support.hpp).
void PackAlltoallv::exchange(const AlltoallwArgs& a, const AlltoallwComm& c) {
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  if (in_place) set_path("pack_alltoallv (in place)");
  const SendSide send = send_side(a);
  const int size = c.size, me = c.rank;
  measure(send, a, size);
  CallError error;
  if (sbytes_[me] != rbytes_[me])
    error.note(mismatch_class(sbytes_[me], rbytes_[me]),
               mismatch_text("pack_alltoallv", me, sbytes_[me], me, rbytes_[me]) + " [the self block]");
  std::int64_t stotal = 0, rtotal = 0;
  layout_counts(sbytes_, me, scounts_, sdispls_, stotal);
  layout_counts(rbytes_, me, rcounts_, rdispls_, rtotal);
  if (send_.size() < static_cast<std::size_t>(stotal)) send_.resize(static_cast<std::size_t>(stotal));
  if (recv_.size() < static_cast<std::size_t>(rtotal)) recv_.resize(static_cast<std::size_t>(rtotal));

  for (int p = 0; p < size; ++p)
    if (p != me && sbytes_[p] > 0) {
      std::memcpy(send_.data() + sdispls_[p], &sbytes_[p], kHeader);
      pack(at(send.buf, send.displs[p]), send.counts[p], *slayout_[p], send_.data() + sdispls_[p] + kHeader);
    }
  // No header arrives from a peer whose message never came: -1 says so.
  constexpr std::int64_t none = -1;
  for (int p = 0; p < size; ++p)
    if (p != me && rbytes_[p] > 0) std::memcpy(recv_.data() + rdispls_[p], &none, kHeader);
  if (!in_place && sbytes_[me] > 0 && rbytes_[me] > 0)
    copy_typed_prefix(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                      a.recvcounts[me], *rlayout_[me]);
  int code = MPI_SUCCESS;
  if (size > 1)
    code = PMPI_Alltoallv(send_.data(), scounts_.data(), sdispls_.data(), MPI_BYTE, recv_.data(), rcounts_.data(),
                          rdispls_.data(), MPI_BYTE, a.comm);
  for (int p = 0; p < size; ++p) {
    if (p == me || rbytes_[p] == 0) continue;
    std::int64_t sent = 0;
    std::memcpy(&sent, recv_.data() + rdispls_[p], kHeader);
    if (sent < 0) {  // nothing arrived: the exchange failed there
      if (code != MPI_SUCCESS) {
        int error_class = MPI_ERR_OTHER;
        PMPI_Error_class(code, &error_class);
        error.note(error_class, error_class == MPI_ERR_TRUNCATE
                                    ? "pack_alltoallv: rank " + std::to_string(p) + " sends more than the " +
                                          std::to_string(rbytes_[p]) + " bytes rank " + std::to_string(me) +
                                          " expects (truncated by MPI_Alltoallv, nothing of it delivered): " +
                                          mpi_error_string(code)
                                    : "pack_alltoallv: MPI_Alltoallv failed, nothing arrived from rank " +
                                          std::to_string(p) + ": " + mpi_error_string(code));
      }
      continue;
    }
    if (sent != rbytes_[p]) error.note(mismatch_class(sent, rbytes_[p]), mismatch_text("pack_alltoallv", p, sent, me, rbytes_[p]));
    if (sent > rbytes_[p]) continue;  // truncated: the block is left as it was
    if (sent == rbytes_[p]) {
      unpack(recv_.data() + rdispls_[p] + kHeader, a.recvcounts[p], *rlayout_[p], at(a.recvbuf, a.rdispls[p]));
    } else {
      unpack_prefix(recv_.data() + rdispls_[p] + kHeader, sent, a.recvcounts[p], *rlayout_[p],
                    at(a.recvbuf, a.rdispls[p]));
    }
  }
  if (code != MPI_SUCCESS && error.empty()) check_mpi(code, "PMPI_Alltoallv");
  if (!error.empty()) error.raise();
}

}  // namespace tb
