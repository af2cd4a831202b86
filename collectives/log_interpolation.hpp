// A table of (bytes, value) rows read at any size: on the straight line in log(bytes) between the
// two rows around it, the first or last row's value beyond them. The cost model's measured
// bandwidth tables (fpga_transport/link_models) and the simulated datatype engine's
// (simulated_datatype_engine) are read this way.
#pragma once

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace tb {

// `table`: rows strictly ascending in bytes (no size twice: no line between two such rows), at
// least one, bytes > 0; its readers check this where they load a table.
inline double interpolate_log(const std::vector<std::pair<double, double>>& table, double bytes) {
  if (bytes <= table.front().first) return table.front().second;
  for (std::size_t i = 1; i < table.size(); ++i) {
    const auto& [x0, y0] = table[i - 1];
    const auto& [x1, y1] = table[i];
    if (bytes <= x1) return y0 + std::log(bytes / x0) / std::log(x1 / x0) * (y1 - y0);
  }
  return table.back().second;
}

}  // namespace tb
