// LocalRemap: the traditional redistribution. Each peer's box is packed into a contiguous send
// buffer in C order, one MPI_Alltoall (every count equal) or MPI_Alltoallv moves the buffers,
// and each received block is unpacked into its box of the output array. Sender and receiver
// walk the same global index box in C order, so the packed orders agree. Two extra copies of
// the local array per redistribution; buffers are kept across calls.
#include "collectives/mpi_error.hpp"
#include "redistribute/redistribution.hpp"

#include <algorithm>
#include <climits>

namespace tb {
namespace {

int checked_int(std::int64_t v, const char* what) {
  if (v > INT_MAX)
    throw std::invalid_argument(std::string("LocalRemap: ") + what + " of " + std::to_string(v) +
                                " elements exceeds MPI's int range");
  return static_cast<int>(v);
}

}  // namespace

LocalRemap::LocalRemap(const Pencil& in, const Pencil& out, ElementType type) : Redistribution(in, out, type) {
  std::int64_t send_total = 0, recv_total = 0;
  for (int p = 0; p < peers(); ++p) {
    send_displs_.push_back(checked_int(send_total, "send displacement"));
    recv_displs_.push_back(checked_int(recv_total, "receive displacement"));
    send_counts_.push_back(checked_int(send_box(p).count(), "send count"));
    recv_counts_.push_back(checked_int(recv_box(p).count(), "receive count"));
    send_total += send_counts_.back();
    recv_total += recv_counts_.back();
  }
  // MPI_Alltoall needs one count on every rank of the sub-communicator: agree on it collectively.
  int local_uniform = std::all_of(send_counts_.begin(), send_counts_.end(), [&](int c) { return c == send_counts_[0]; }) &&
                      std::all_of(recv_counts_.begin(), recv_counts_.end(), [&](int c) { return c == send_counts_[0]; });
  int uniform = 0;
  TB_MPI_CHECK(MPI_Allreduce(&local_uniform, &uniform, 1, MPI_INT, MPI_LAND, comm()));
  uniform_ = uniform != 0;
  send_buffer_.resize(static_cast<std::size_t>(send_total) * element_size(type));
  recv_buffer_.resize(static_cast<std::size_t>(recv_total) * element_size(type));
}

std::string LocalRemap::method() const { return uniform_ ? "local_remap(alltoall)" : "local_remap(alltoallv)"; }

void LocalRemap::exchange(const std::byte* send, const std::vector<int>& send_counts,
                          const std::vector<int>& send_displs, std::byte* recv, const std::vector<int>& recv_counts,
                          const std::vector<int>& recv_displs) {
  const MPI_Datatype t = mpi_datatype(element_type());
  if (uniform_) {
    TB_MPI_CHECK(MPI_Alltoall(send, send_counts[0], t, recv, recv_counts[0], t, comm()));
  } else {
    TB_MPI_CHECK(MPI_Alltoallv(send, send_counts.data(), send_displs.data(), t, recv, recv_counts.data(),
                               recv_displs.data(), t, comm()));
  }
}

void LocalRemap::do_forward(const void* in, void* out) {
  const std::size_t es = element_size(element_type());
  for (int p = 0; p < peers(); ++p)
    copy_box_to_buffer(in, input().local_shape(), send_box(p), es, send_buffer_.data() + send_displs_[p] * es);
  exchange(send_buffer_.data(), send_counts_, send_displs_, recv_buffer_.data(), recv_counts_, recv_displs_);
  for (int p = 0; p < peers(); ++p)
    copy_buffer_to_box(recv_buffer_.data() + recv_displs_[p] * es, output().local_shape(), recv_box(p), es, out);
}

// The reverse exchange: what forward received is packed from the output array and sent back.
void LocalRemap::do_backward(const void* out, void* in) {
  const std::size_t es = element_size(element_type());
  for (int p = 0; p < peers(); ++p)
    copy_box_to_buffer(out, output().local_shape(), recv_box(p), es, recv_buffer_.data() + recv_displs_[p] * es);
  exchange(recv_buffer_.data(), recv_counts_, recv_displs_, send_buffer_.data(), send_counts_, send_displs_);
  for (int p = 0; p < peers(); ++p)
    copy_buffer_to_box(send_buffer_.data() + send_displs_[p] * es, input().local_shape(), send_box(p), es, in);
}

}  // namespace tb
