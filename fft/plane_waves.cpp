#include "fft/plane_waves.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <utility>

namespace tb {
namespace {

// Calls f(i, x) for every element of the local block, i its linear (C-order) index and x its
// global multi-index; the last axis runs fastest.
template <class F>
void for_each_local(const Pencil& p, F&& f) {
  const auto& shape = p.local_shape();
  const auto& start = p.local_start();
  const std::size_t d = shape.size();
  if (p.local_size() == 0) return;
  std::vector<std::int64_t> x(start);
  const std::int64_t total = p.local_size();
  for (std::int64_t i = 0; i < total; ++i) {
    f(i, x);
    for (std::size_t a = d; a-- > 0;) {
      if (++x[a] < start[a] + shape[a]) break;
      x[a] = start[a];
    }
  }
}

double global_points(const std::vector<std::int64_t>& shape) {
  double n = 1.0;
  for (auto s : shape) n *= static_cast<double>(s);
  return n;
}

}  // namespace

std::vector<PlaneWave> random_plane_waves(const std::vector<std::int64_t>& shape, int count, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> mag(0.5, 1.0), phase(0.0, 2.0 * std::numbers::pi);
  std::vector<PlaneWave> waves;
  for (int j = 0; j < count; ++j) {
    PlaneWave w;
    // The first wave varies along every axis that has two points or more (k from 1): an input
    // constant along an axis would hide a permutation along it.
    const std::int64_t lowest = j == 0 ? 1 : 0;
    for (auto n : shape)
      w.k.push_back(std::uniform_int_distribution<std::int64_t>(std::min(lowest, n - 1), n - 1)(gen));
    w.c = std::polar(mag(gen), phase(gen));
    waves.push_back(std::move(w));
  }
  return waves;
}

void fill_plane_waves(const ParallelFFT& fft, const std::vector<PlaneWave>& waves, void* input) {
  const Pencil& p = fft.input_pencil();
  const auto& shape = p.global_shape();
  const std::size_t d = shape.size();
  // Per wave and axis, exp(2 pi i k x / N) for the local x: the element value is a product.
  std::vector<std::vector<std::vector<std::complex<double>>>> phase(waves.size());
  for (std::size_t j = 0; j < waves.size(); ++j) {
    phase[j].resize(d);
    for (std::size_t a = 0; a < d; ++a) {
      for (std::int64_t x = 0; x < p.local_shape()[a]; ++x) {
        const std::int64_t g = p.local_start()[a] + x;
        // k*g mod N keeps the argument small, so the phase is exact to round-off at any size
        const double t = 2.0 * std::numbers::pi * static_cast<double>((waves[j].k[a] * g) % shape[a]) /
                         static_cast<double>(shape[a]);
        phase[j][a].push_back(std::polar(1.0, t));
      }
    }
  }
  const bool real = fft.options().kind == FftKind::r2c;
  const bool f64 = fft.options().precision == FftPrecision::f64;
  for_each_local(p, [&](std::int64_t i, const std::vector<std::int64_t>& x) {
    std::complex<double> v = 0.0;
    for (std::size_t j = 0; j < waves.size(); ++j) {
      std::complex<double> e = waves[j].c;
      for (std::size_t a = 0; a < d; ++a) e *= phase[j][a][static_cast<std::size_t>(x[a] - p.local_start()[a])];
      v += e;
    }
    if (real && f64) static_cast<double*>(input)[i] = v.real();
    else if (real) static_cast<float*>(input)[i] = static_cast<float>(v.real());
    else if (f64) static_cast<std::complex<double>*>(input)[i] = v;
    else static_cast<std::complex<float>*>(input)[i] = std::complex<float>(v);
  });
}

double plane_wave_spectrum_error(const ParallelFFT& fft, const std::vector<PlaneWave>& waves, const void* output) {
  const Pencil& p = fft.output_pencil();
  const auto& spectral = p.global_shape();
  const auto& shape = fft.global_shape();
  const std::size_t d = shape.size();
  const double n = global_points(shape);
  const bool real = fft.options().kind == FftKind::r2c;

  // The nonzero coefficients that lie in this rank's block, by local linear index.
  std::vector<std::pair<std::int64_t, std::complex<double>>> exact;
  auto add = [&](const std::vector<std::int64_t>& k, std::complex<double> value) {
    std::int64_t i = 0;
    for (std::size_t a = 0; a < d; ++a) {
      const std::int64_t x = k[a] - p.local_start()[a];
      if (k[a] >= spectral[a] || x < 0 || x >= p.local_shape()[a]) return;  // not here (or not stored, r2c)
      i = i * p.local_shape()[a] + x;
    }
    exact.emplace_back(i, value);
  };
  for (const auto& w : waves) {
    if (!real) {
      add(w.k, n * w.c);
      continue;
    }
    std::vector<std::int64_t> minus(d);
    for (std::size_t a = 0; a < d; ++a) minus[a] = (shape[a] - w.k[a]) % shape[a];
    add(w.k, n * w.c / 2.0);
    add(minus, n * std::conj(w.c) / 2.0);
  }
  std::sort(exact.begin(), exact.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Merge coinciding coefficients.
  std::vector<std::pair<std::int64_t, std::complex<double>>> merged;
  for (const auto& e : exact) {
    if (!merged.empty() && merged.back().first == e.first) merged.back().second += e.second;
    else merged.push_back(e);
  }

  const bool f64 = fft.options().precision == FftPrecision::f64;
  double worst = 0.0;
  std::size_t next = 0;
  const std::int64_t total = p.local_size();
  for (std::int64_t i = 0; i < total; ++i) {
    const std::complex<double> u = f64 ? static_cast<const std::complex<double>*>(output)[i]
                                       : std::complex<double>(static_cast<const std::complex<float>*>(output)[i]);
    std::complex<double> e = 0.0;
    if (next < merged.size() && merged[next].first == i) e = merged[next++].second;
    worst = std::max(worst, std::abs(u - e));
  }
  return worst / n;
}

}  // namespace tb
