// A verification input whose discrete Fourier transform is known exactly, so that a parallel FFT
// of any size can be checked on every rank without gathering: a sum of a few plane waves with
// random (seeded) wave vectors and amplitudes.
//   c2c: u(x) = sum_j c_j exp(+2 pi i sum_a k_ja x_a / N_a)   ->  U(k_j) += N c_j
//   r2c: u(x) = sum_j Re(c_j exp(...))                         ->  U(k_j) += N c_j / 2,
//                                                                  U(-k_j) += N conj(c_j) / 2
// (FFTW's forward sign is -1, N = product of the global shape). Every other coefficient is zero.
#pragma once

#include "fft/parallel_fft.hpp"

#include <complex>
#include <cstdint>
#include <vector>

namespace tb {

struct PlaneWave {
  std::vector<std::int64_t> k;  // wave vector, 0 <= k[a] < N[a]
  std::complex<double> c;       // amplitude, 0.5 <= |c| <= 1
};

// `count` waves for a global shape, from a seeded generator: the same on every rank. The first
// has k[a] >= 1 on every axis with N[a] >= 2, so that the input varies along every axis.
std::vector<PlaneWave> random_plane_waves(const std::vector<std::int64_t>& shape, int count, std::uint64_t seed);

// Writes this rank's part of u into the plan's input array (input_type(), input_size()).
void fill_plane_waves(const ParallelFFT& fft, const std::vector<PlaneWave>& waves, void* input);

// max |U - exact| over this rank's output, divided by N (so about machine epsilon times log N
// when correct and of order 1 when anything is misplaced).
double plane_wave_spectrum_error(const ParallelFFT& fft, const std::vector<PlaneWave>& waves, const void* output);

}  // namespace tb
