// Measured (bytes, seconds) curves read at any size, and tables of such curves by a second size
// (a block size): how the cost model (fpga_transport/link_models) and the smpi variant's charge
// for non-contiguous messages (simulated_datatype_engine) read tb-beff's measurements, one rule
// for both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace tb {

using SecondsByBytes = std::vector<std::pair<double, double>>;  // bytes strictly ascending, > 0

// The curve at `bytes`: linear between the two points around it, the first point's time below
// the first size, the last segment extended beyond the last size; never below 0. `points` has
// at least one point (its readers check the order where they load it).
inline double curve_at(const SecondsByBytes& points, double bytes) {
  if (bytes <= points.front().first || points.size() == 1) return points.front().second;
  std::size_t i = 1;
  while (i + 1 < points.size() && bytes > points[i].first) ++i;  // segment [i-1, i], or the last one beyond the end
  const auto& [x0, y0] = points[i - 1];
  const auto& [x1, y1] = points[i];
  return std::max(0.0, y0 + (bytes - x0) * (y1 - y0) / (x1 - x0));
}

// An extra time's curve at `bytes`: as curve_at, except below the first size, where the first
// extra is scaled down to 0 at 0 bytes (an extra grows with the bytes it is paid on).
inline double extra_curve_at(const SecondsByBytes& points, double bytes) {
  const auto& [first_bytes, first_s] = points.front();
  return bytes < first_bytes ? first_s * bytes / first_bytes : curve_at(points, bytes);
}

// A table of (size, curve) rows, sizes strictly ascending and > 0, read at `size`: `read(curve)`
// of the two rows around it blended on the straight line in log(size), the first or last row's
// beyond them. 0 for an empty table.
template <class Curve, class Read>
double blend_by_size(const std::vector<std::pair<double, Curve>>& rows, double size, Read read) {
  if (rows.empty()) return 0.0;
  if (size <= rows.front().first) return read(rows.front().second);
  if (size >= rows.back().first) return read(rows.back().second);
  std::size_t i = 1;
  while (size > rows[i].first) ++i;
  const auto& [s0, c0] = rows[i - 1];
  const auto& [s1, c1] = rows[i];
  const double w = std::log(size / s0) / std::log(s1 / s0);
  return (1.0 - w) * read(c0) + w * read(c1);
}

}  // namespace tb
