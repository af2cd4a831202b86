// linear_isend_irecv: a test-only algorithm, built as a plugin (TB_ALGORITHM_PLUGINS) to prove
// that an algorithm added outside the testbed reaches every tool, the conformance suite, the PMPI
// library and the cost model through the same registration a built-in algorithm uses.
//
// One Irecv and one Isend per peer with a non-empty block, all in flight at once, then one
// Waitall; the self block goes through MPI like any other. Per rank: up to P-1 messages each
// way, the user's datatypes unchanged. It is what Open MPI's coll/basic does for Alltoallw.
// MPI_IN_PLACE: every outgoing block is first packed out of the receive layout, then sent as
// bytes, so no receive can overwrite data not yet sent.
#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"

#include <cstdint>
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
      pack_outgoing(a, c.size);
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
        TB_MPI_CHECK(PMPI_Isend(packed_.data() + packed_at_[p], static_cast<int>(packed_at_[p + 1] - packed_at_[p]),
                                MPI_BYTE, p, kTag, comm, &requests_.back()));
      } else {
        TB_MPI_CHECK(PMPI_Isend(tb::at(send.buf, send.displs[p]), send.counts[p], send.types[p], p, kTag, comm,
                                &requests_.back()));
      }
    }
    TB_MPI_CHECK(PMPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }

  // Packs every peer's block of the receive layout into packed_: peer p's bytes are
  // [packed_at_[p], packed_at_[p + 1]). The testbed's packer, not MPI_Pack: MPICH 4.0.2's
  // MPI_Pack refuses MPI_BOTTOM (a null input) though its types may hold absolute addresses.
  void pack_outgoing(const tb::AlltoallwArgs& a, int size) {
    packed_at_.assign(static_cast<std::size_t>(size) + 1, 0);
    for (int p = 0; p < size; ++p) packed_at_[p + 1] = packed_at_[p] + tb::bytes_of(a.recvcounts[p], a.recvtypes[p]);
    packed_.resize(static_cast<std::size_t>(packed_at_[size]));
    for (int p = 0; p < size; ++p)
      if (packed_at_[p + 1] > packed_at_[p])
        tb::pack(tb::at(a.recvbuf, a.rdispls[p]), a.recvcounts[p], *tb::type_layout(a.recvtypes[p]),
                 packed_.data() + packed_at_[p]);
  }

 private:
  std::vector<MPI_Request> requests_;
  std::vector<std::byte> packed_;
  std::vector<std::int64_t> packed_at_;
};

const tb::AlltoallwRegistration registration({
    .name = "linear_isend_irecv",
    .summary = "test plugin: every Isend and Irecv at once, then Waitall",
    .make = &tb::make_algorithm<LinearAlltoallw>,
    .cost_schedule = "",
    .not_modelled = "a test-only plugin that declares no schedule",
});

}  // namespace
