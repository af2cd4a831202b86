#include "redistribute/redistribution.hpp"

#include "collectives/registry.hpp"

#include "redistribute/block_distribution.hpp"

#include <cstdint>
#include <functional>

namespace tb {

Redistribution::Redistribution(const Pencil& in, const Pencil& out, ElementType type)
    : in_(in), out_(out), type_(type) {
  const int a = in.aligned_axis();
  const int b = out.aligned_axis();
  if (a == b)
    throw std::invalid_argument("Redistribution: both pencils are aligned in axis " + std::to_string(a) +
                                "; a redistribution changes the aligned axis");
  if (in.shared_grid() != out.shared_grid())
    throw std::invalid_argument("Redistribution: the two pencils live on different process grids");
  if (!(out == in.realigned(b)))
    throw std::invalid_argument("Redistribution: output pencil " + out.describe() + " is not input pencil " +
                                in.describe() + " realigned in axis " + std::to_string(b));

  // Axis b's grid axis in the input carries the exchange; none means every rank already holds
  // its whole output block (a 1-rank "exchange" over MPI_COMM_SELF).
  const int q = in.grid_axis(b);
  int ranks = 1;
  if (q >= 0) {
    comm_ = in.grid().subcomm(q);
    ranks = in.grid().dims()[q];
  }
  const BlockDistribution a_blocks(in.global_shape()[a], ranks);
  const BlockDistribution b_blocks(in.global_shape()[b], ranks);
  for (int p = 0; p < ranks; ++p) {
    Box send{std::vector<std::int64_t>(in.ndim(), 0), in.local_shape()};
    send.start[a] = a_blocks.start(p);
    send.size[a] = a_blocks.size(p);
    Box recv{std::vector<std::int64_t>(out.ndim(), 0), out.local_shape()};
    recv.start[b] = b_blocks.start(p);
    recv.size[b] = b_blocks.size(p);
    send_boxes_.push_back(std::move(send));
    recv_boxes_.push_back(std::move(recv));
  }
}

void Redistribution::check_sizes(std::size_t in_size, std::size_t out_size) const {
  if (in_size != static_cast<std::size_t>(in_.local_size()) || out_size != static_cast<std::size_t>(out_.local_size()))
    throw std::invalid_argument("Redistribution: buffers hold " + std::to_string(in_size) + " and " +
                                std::to_string(out_size) + " elements; this rank's pencils need " +
                                std::to_string(in_.local_size()) + " (input) and " + std::to_string(out_.local_size()) +
                                " (output)");
}

void Redistribution::check_no_overlap(const void* in, const void* out) const {
  const auto* i = static_cast<const std::byte*>(in);
  const auto* o = static_cast<const std::byte*>(out);
  const auto in_bytes = static_cast<std::size_t>(in_.local_size()) * element_size(type_);
  const auto out_bytes = static_cast<std::size_t>(out_.local_size()) * element_size(type_);
  if (in_bytes == 0 || out_bytes == 0) return;
  if (i == nullptr || o == nullptr) throw std::invalid_argument("Redistribution: null buffer for a non-empty local array");
  if (std::less<>{}(i, o + out_bytes) && std::less<>{}(o, i + in_bytes))
    throw std::invalid_argument("Redistribution: input and output buffers overlap");
}

void Redistribution::forward(const void* in, void* out) {
  check_no_overlap(in, out);
  do_forward(in, out);
}

void Redistribution::backward(const void* out, void* in) {
  check_no_overlap(in, out);
  do_backward(out, in);
}

std::vector<std::string> expand_redistribution_methods(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& m : names) {
    if (m == "all") {
      for (const auto& info : alltoallw_algorithms()) out.emplace_back(info.name);
      out.emplace_back("local_remap");
    } else if (m == "local_remap" || is_alltoallw_algorithm(m)) {
      out.push_back(m);
    } else {
      make_alltoallw(m);  // throws the registry's "unknown algorithm" error
    }
  }
  return out;
}

std::unique_ptr<Redistribution> make_redistribution(const Pencil& in, const Pencil& out, ElementType type,
                                                    std::string_view method, AlltoallwCalls calls) {
  if (method == "local_remap") return std::make_unique<LocalRemap>(in, out, type);
  return std::make_unique<SubarrayRedistribution>(in, out, type, method, calls);
}

}  // namespace tb
