// Block distribution of one axis of length n over p ranks. Uneven lengths are allowed: the first
// n mod p ranks hold one element more (mpi4py-fft's convention, so results compare). Ranks past n
// hold zero elements when n < p.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace tb {

class BlockDistribution {
 public:
  BlockDistribution(std::int64_t n, int p) : n_(n), p_(p) {
    if (n < 0) throw std::invalid_argument("BlockDistribution: negative axis length");
    if (p < 1) throw std::invalid_argument("BlockDistribution: number of ranks must be at least 1");
  }
  std::int64_t length() const { return n_; }
  int ranks() const { return p_; }
  std::int64_t size(int r) const { return n_ / p_ + (r < n_ % p_ ? 1 : 0); }
  std::int64_t start(int r) const { return r * (n_ / p_) + (r < n_ % p_ ? r : n_ % p_); }

 private:
  std::int64_t n_;
  int p_;
};

}  // namespace tb
