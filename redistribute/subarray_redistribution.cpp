// SubarrayRedistribution: the whole redistribution is ONE MPI_Alltoallw. For each peer the send
// type is the subarray of the input array that goes to it and the receive type the subarray of
// the output array that comes from it; counts are 1 (0 for empty boxes) and displacements 0.
// No local transposes: the datatypes describe the rearrangement.
#include "collectives/comm_cache.hpp"
#include "collectives/every_rank.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_max.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "redistribute/redistribution.hpp"

#include <climits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace tb {
namespace {

// The subarray type of `box` in a C-order array of `shape`, or the plain element type with
// count 0 when the box is empty (MPI subarrays cannot describe empty boxes or arrays).
void make_box_type(const std::vector<std::int64_t>& shape, const Box& box, MPI_Datatype element, int& count,
                   MPI_Datatype& type) {
  if (box.count() == 0) {
    count = 0;
    type = element;
    return;
  }
  std::vector<int> sizes, subsizes, starts;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] > INT_MAX)
      throw std::invalid_argument("SubarrayRedistribution: local axis length " + std::to_string(shape[k]) +
                                  " exceeds MPI's int range");
    sizes.push_back(static_cast<int>(shape[k]));
    subsizes.push_back(static_cast<int>(box.size[k]));
    starts.push_back(static_cast<int>(box.start[k]));
  }
  TB_MPI_CHECK(MPI_Type_create_subarray(static_cast<int>(shape.size()), sizes.data(), subsizes.data(), starts.data(),
                                        MPI_ORDER_C, element, &type));
  try {
    TB_MPI_CHECK(MPI_Type_commit(&type));
  } catch (...) {
    MPI_Type_free(&type);
    throw;
  }
  count = 1;
}

std::int64_t g_agreements = 0;                // the agreements same_arrays_everywhere made, for tests
std::int64_t g_shared_memory_agreements = 0;  // those of them through shared memory

// The agreement's shared-memory reduction on a communicator whose ranks all share one node (not
// an emulated split of one: between real nodes there is no such memory, and an emulated split
// stands for them); null elsewhere, and under TB_SMPI. Cached on the communicator, since its
// window is freed collectively, with the communicator, and not with one rank's plan.
struct ArrayAgreement {
  std::unique_ptr<NodeMax> node_max;
};

ArrayAgreement* create_agreement(MPI_Comm comm) {
  auto agreement = std::make_unique<ArrayAgreement>();
  if (node_layout(comm).nodes == 1) agreement->node_max = NodeMax::create(comm);
  return agreement.release();
}

// {whether every rank's answer is yes, whether some rank's is}: the smallest and the largest
// answer. Every rank agrees at the same calls, so every rank creates the cached state at the
// same one. A rank alone (a plan without grid axes runs on MPI_COMM_SELF) has no one to ask, and
// caches nothing.
std::pair<bool, bool> all_and_any(bool mine, MPI_Comm comm, RedistributionAgreement how) {
  int size = 0;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &size));
  if (size == 1) return {mine, mine};
  const std::int64_t answer = mine ? 1 : 0;
  if (how == RedistributionAgreement::each_call) {
    if (NodeMax* node = CommCache<ArrayAgreement>::get(comm, create_agreement).node_max.get()) {
      const NodeMax::Values max = node->max({answer, -answer, 0});
      ++g_shared_memory_agreements;
      return {-max[1] == 1, max[0] == 1};
    }
  }
  std::int64_t low = 0, high = 0;
  TB_MPI_CHECK(range_over_every_rank(answer, comm, &low, &high));
  return {low == 1, high == 1};
}

// Whether every rank passes the same array addresses as at its last call, given this rank's
// answer. One agreement per call (through shared memory on one node, else one MPI_Allreduce),
// unless TB_REDISTRIBUTION_AGREEMENT=assume-same: the application then asserts that its ranks
// change those addresses together, and this rank's answer stands for all. Under TB_CHECKED=1 the
// assertion is verified (the agreement again) and every rank throws alike where it is false,
// rather than one rank starting the prepared call while another prepares anew.
bool same_arrays_everywhere(bool mine, MPI_Comm comm) {
  const RedistributionAgreement how = settings().redistribution_agreement.get();
  const bool assume = how == RedistributionAgreement::assume_same;
  if (assume && !settings().checked.get()) return mine;
  const auto [all, any] = all_and_any(mine, comm, assume ? RedistributionAgreement::each_call : how);
  ++g_agreements;
  if (assume && all != any)
    throw std::invalid_argument(
        "SubarrayRedistribution: TB_REDISTRIBUTION_AGREEMENT=assume-same, but some ranks passed the arrays of "
        "their last call and others new ones; change the arrays on every rank together, or unset "
        "TB_REDISTRIBUTION_AGREEMENT");
  return all;
}

}  // namespace

SubarrayRedistribution::SubarrayRedistribution(const Pencil& in, const Pencil& out, ElementType type,
                                               std::string_view algorithm, AlltoallwCalls calls)
    : SubarrayRedistribution(in, out, type, make_alltoallw(algorithm), calls) {}

SubarrayRedistribution::SubarrayRedistribution(const Pencil& in, const Pencil& out, ElementType type,
                                               std::unique_ptr<AlltoallwAlgorithm> algorithm, AlltoallwCalls calls)
    : Redistribution(in, out, type), algorithm_(std::move(algorithm)), calls_(calls) {
  if (!algorithm_) throw std::invalid_argument("SubarrayRedistribution: no Alltoallw algorithm");
  const auto n = static_cast<std::size_t>(peers());
  send_counts_.assign(n, 0);
  recv_counts_.assign(n, 0);
  zero_displs_.assign(n, 0);
  send_types_.assign(n, MPI_DATATYPE_NULL);
  recv_types_.assign(n, MPI_DATATYPE_NULL);
  try {
    for (int p = 0; p < peers(); ++p) {
      make_box_type(in.local_shape(), send_box(p), mpi_datatype(type), send_counts_[p], send_types_[p]);
      make_box_type(out.local_shape(), recv_box(p), mpi_datatype(type), recv_counts_[p], recv_types_[p]);
    }
  } catch (...) {
    free_types();
    throw;
  }
}

SubarrayRedistribution::~SubarrayRedistribution() {
  forward_.call.reset();  // they use the types and the algorithm
  backward_.call.reset();
  free_types();
}

void SubarrayRedistribution::free_types() noexcept {
  for (auto* types : {&send_types_, &recv_types_})
    for (MPI_Datatype& t : *types)
      if (t != MPI_DATATYPE_NULL && t != mpi_datatype(element_type())) MPI_Type_free(&t);
}

std::int64_t redistribution_agreements() { return g_agreements; }
std::int64_t redistribution_shared_memory_agreements() { return g_shared_memory_agreements; }

// After a run, the path the algorithm really took (it names a delegation, if any).
std::string SubarrayRedistribution::method() const { return "alltoallw:" + algorithm_->last_path(); }

void SubarrayRedistribution::do_forward(const void* in, void* out) {
  exchange({in, send_counts_.data(), zero_displs_.data(), send_types_.data(), out, recv_counts_.data(),
            zero_displs_.data(), recv_types_.data(), comm()},
           forward_);
}

void SubarrayRedistribution::do_backward(const void* out, void* in) {
  exchange({out, recv_counts_.data(), zero_displs_.data(), recv_types_.data(), in, send_counts_.data(),
            zero_displs_.data(), send_types_.data(), comm()},
           backward_);
}

// A call with new arrays runs blocking; from the second call in a row with the same arrays on
// every rank, the call is prepared once and started (a plan used once pays no preparation). A
// prepared call that rebinds (the same on every rank) then follows each rank's arrays by itself,
// and the agreement is no longer needed.
void SubarrayRedistribution::exchange(const AlltoallwArgs& args, Prepared& prepared) {
  if (calls_ == AlltoallwCalls::blocking) {
    algorithm_->run(args);
    return;
  }
  if (prepared.call && prepared.call->rebinds()) {
    prepared.call->rebind(args.sendbuf, args.recvbuf);
    prepared.call->start();
    return;
  }
  const bool mine = prepared.called && prepared.from == args.sendbuf && prepared.to == args.recvbuf;
  if (!same_arrays_everywhere(mine, comm())) {
    prepared.call.reset();
    prepared.called = true;
    prepared.from = args.sendbuf;
    prepared.to = args.recvbuf;
    algorithm_->run(args);
    return;
  }
  if (!prepared.call) prepared.call = algorithm_->prepare(args);
  prepared.call->start();
}

}  // namespace tb
