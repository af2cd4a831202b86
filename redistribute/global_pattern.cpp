#include "redistribute/global_pattern.hpp"

#include <complex>
#include <vector>

namespace tb {
namespace {

// Distinct, exactly representable values: floats hold integers below 2^24.
template <class T>
T pattern_value(std::int64_t g) {
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(g % 16777213);
  else if constexpr (std::is_same_v<T, double>) return static_cast<double>(g);
  else {
    using R = typename T::value_type;
    const R re = pattern_value<R>(g);
    return T(re, -re - R(0.5));
  }
}

// Calls f(local_linear_index, global_linear_index) for each local element, in C order.
template <class F>
void for_each_element(const Pencil& pencil, F f) {
  const int d = pencil.ndim();
  const auto& shape = pencil.local_shape();
  const auto& start = pencil.local_start();
  const auto& global = pencil.global_shape();
  if (pencil.local_size() == 0) return;
  std::vector<std::int64_t> gstride(static_cast<std::size_t>(d));
  std::int64_t s = 1;
  for (int k = d - 1; k >= 0; --k) {
    gstride[k] = s;
    s *= global[k];
  }
  std::vector<std::int64_t> index(static_cast<std::size_t>(d), 0);
  std::int64_t local = 0;
  while (true) {
    std::int64_t g = 0;
    for (int k = 0; k < d; ++k) g += (start[k] + index[k]) * gstride[k];
    // The innermost axis is contiguous in both numberings.
    for (std::int64_t i = 0; i < shape[d - 1]; ++i) f(local++, g + i);
    int k = d - 2;
    for (; k >= 0; --k) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

template <class T>
void fill(const Pencil& pencil, T* data) {
  for_each_element(pencil, [&](std::int64_t l, std::int64_t g) { data[l] = pattern_value<T>(g); });
}

template <class T>
std::int64_t mismatches(const Pencil& pencil, const T* data) {
  std::int64_t bad = 0;
  for_each_element(pencil, [&](std::int64_t l, std::int64_t g) { bad += data[l] != pattern_value<T>(g); });
  return bad;
}

template <class F>
auto dispatch(ElementType type, F f) {
  switch (type) {
    case ElementType::f32: return f(float{});
    case ElementType::f64: return f(double{});
    case ElementType::c32: return f(std::complex<float>{});
    case ElementType::c64: break;
  }
  return f(std::complex<double>{});
}

}  // namespace

void fill_global_pattern(const Pencil& pencil, ElementType type, void* data) {
  dispatch(type, [&](auto zero) { fill(pencil, static_cast<decltype(zero)*>(data)); });
}

std::int64_t count_pattern_mismatches(const Pencil& pencil, ElementType type, const void* data) {
  return dispatch(type, [&](auto zero) { return mismatches(pencil, static_cast<const decltype(zero)*>(data)); });
}

}  // namespace tb
