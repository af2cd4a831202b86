// linear_isend_irecv: a test-only algorithm, built as a plugin (TB_ALGORITHM_PLUGINS) to prove
// that an algorithm added outside the testbed reaches every tool, the conformance suite, the PMPI
// library and the cost model through the same registration a built-in algorithm uses.
//
// One Irecv and one Isend per peer with a non-empty block, all in flight at once, then one
// Waitall; the self block goes through MPI like any other. Per rank: up to P-1 messages each
// way, the user's datatypes unchanged. It is what Open MPI's coll/basic does for Alltoallw.
// MPI_IN_PLACE: every outgoing block is first packed (MPI_Pack) out of the receive layout, then
// sent as MPI_PACKED, so no receive can overwrite data not yet sent.
#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/registry.hpp"

#include <vector>

namespace {

constexpr int kTag = 9901;

class LinearAlltoallw final : public tb::AlltoallwAlgorithm {
 public:
  std::string_view name() const override { return "linear_isend_irecv"; }

 protected:
  void exchange(const tb::AlltoallwArgs& a, const tb::AlltoallwComm& c) override {
    const MPI_Comm comm = tb::private_comm(a.comm);
    const bool in_place = a.sendbuf == MPI_IN_PLACE;
    if (in_place) {
      set_path("linear_isend_irecv (in place, packed first)");
      pack_outgoing(a, c.size, comm);
    }
    requests_.clear();
    for (int p = 0; p < c.size; ++p) {
      if (tb::bytes_of(a.recvcounts[p], a.recvtypes[p]) == 0) continue;
      requests_.emplace_back();
      TB_MPI_CHECK(PMPI_Irecv(tb::at(a.recvbuf, a.rdispls[p]), a.recvcounts[p], a.recvtypes[p], p, kTag, comm,
                              &requests_.back()));
    }
    const tb::SendSide send = tb::send_side(a);
    for (int p = 0; p < c.size; ++p) {
      if (tb::bytes_of(send.counts[p], send.types[p]) == 0) continue;
      requests_.emplace_back();
      if (in_place) {
        TB_MPI_CHECK(PMPI_Isend(packed_.data() + packed_at_[p], packed_end_[p] - packed_at_[p], MPI_PACKED, p, kTag,
                                comm, &requests_.back()));
      } else {
        TB_MPI_CHECK(PMPI_Isend(tb::at(send.buf, send.displs[p]), send.counts[p], send.types[p], p, kTag, comm,
                                &requests_.back()));
      }
    }
    TB_MPI_CHECK(PMPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }

  // Packs every peer's block of the receive layout into packed_: peer p's bytes are
  // [packed_at_[p], packed_end_[p]).
  void pack_outgoing(const tb::AlltoallwArgs& a, int size, MPI_Comm comm) {
    packed_at_.assign(static_cast<std::size_t>(size) + 1, 0);
    for (int p = 0; p < size; ++p) {
      int bytes = 0;
      if (a.recvcounts[p] > 0) TB_MPI_CHECK(PMPI_Pack_size(a.recvcounts[p], a.recvtypes[p], comm, &bytes));
      packed_at_[p + 1] = packed_at_[p] + bytes;
    }
    packed_.resize(static_cast<std::size_t>(packed_at_[size]));
    packed_end_.assign(packed_at_.begin(), packed_at_.end() - 1);
    for (int p = 0; p < size; ++p)
      if (a.recvcounts[p] > 0)
        TB_MPI_CHECK(PMPI_Pack(tb::at(a.recvbuf, a.rdispls[p]), a.recvcounts[p], a.recvtypes[p], packed_.data(),
                               static_cast<int>(packed_.size()), &packed_end_[p], comm));
  }

 private:
  std::vector<MPI_Request> requests_;
  std::vector<std::byte> packed_;
  std::vector<int> packed_at_, packed_end_;
};

const tb::AlltoallwRegistration registration({
    .name = "linear_isend_irecv",
    .summary = "test plugin: every Isend and Irecv at once, then Waitall",
    .make = &tb::make_algorithm<LinearAlltoallw>,
    .cost_schedule = "",
    .not_modelled = "a test-only plugin that declares no schedule",
});

}  // namespace
