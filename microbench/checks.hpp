// Input checks every tool shares, so that bad input is one clear error naming the option and the
// value (never a crash, a hang, a silent default or a bare "stoll"):
//   - add_list_option: a comma-separated list whose elements are converted one by one. CLI11's
//     own delimiter drops empty elements, so "--shape 8,,8" would be a 2-D shape; here it is
//     "--shape: axis 1 is empty in '8,,8'".
//   - check_shape, check_array_fits: axis lengths, and the bytes a rank would allocate, computed
//     with overflow-safe arithmetic before anything is allocated.
//   - check_grid: the process grid against the array's axes and the job's ranks.
//   - finite_range: a CLI11 validator for floating-point options (CLI::Range lets NaN through).
//   - parse_size: a size in bytes with an optional K, M or G.
//   - check_no_repeats: a list option's entry given twice.
//   (use_tool_errors, CLI11's errors in the tools' format and decimal integers only, is in
//   mpi_tool.hpp, whose mpi_tool_main uses it.)
#pragma once

#include "microbench/mpi_tool.hpp"
#include "microbench/timing.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tb {

// The elements of "a,b,c" converted to T; an empty or unconvertible element names its index
// (`what`: "axis", "entry", ...) and the whole text.
template <class T>
std::vector<T> parse_list(const std::string& option, const std::string& text, const std::string& what) {
  std::vector<T> values;
  std::size_t start = 0;
  for (int index = 0;; ++index) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string where = what + " " + std::to_string(index);
    if (item.empty()) throw CLI::ValidationError(option, where + " is empty in '" + text + "'");
    T value{};
    if (!(std::is_integral_v<T> ? is_decimal_integer(item) : true) || !CLI::detail::lexical_cast(item, value))
      throw CLI::ValidationError(option, where + " is '" + item + "' in '" + text + "' (expected " +
                                             (std::is_integral_v<T> ? std::string("a decimal integer")
                                                                    : CLI::detail::type_name<T>()) +
                                             ")");
    values.push_back(value);
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

// A list option's entry given twice would run (or write) the same thing twice under one name.
inline void check_no_repeats(const std::string& option, const std::vector<std::string>& entries,
                             const char* note = "") {
  for (const auto& e : entries)
    if (std::count(entries.begin(), entries.end(), e) > 1)
      throw std::invalid_argument(option + ": '" + e + "' is listed twice" + note);
}

// A comma-separated list option stored in `values` (whose contents are the default).
template <class T>
CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::vector<T>& values, const std::string& help,
                             const std::string& what = "entry") {
  const std::string option = name.substr(0, name.find(','));
  return app
      .add_option_function<std::string>(
          name, [&values, option, what](const std::string& text) { values = parse_list<T>(option, text, what); },
          help)
      ->default_str(join(values, ","));
}

// f(), with std::invalid_argument's message prefixed by the option it checks ("--type: ...").
template <class F>
auto for_option(const std::string& option, F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(option + ": " + e.what());
  }
}

// Every axis at least 1 and at most INT_MAX (MPI's subarray types take int sizes); at least
// `min_axes` axes.
inline void check_shape(const std::string& option, const std::vector<std::int64_t>& shape, std::size_t min_axes) {
  if (shape.size() < min_axes)
    throw std::invalid_argument(option + " needs at least " + std::to_string(min_axes) + " axes, got " +
                                std::to_string(shape.size()) + " ('" + join(shape, ",") + "')");
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (shape[k] < 1 || shape[k] > INT_MAX)
      throw std::invalid_argument(option + ": axis " + std::to_string(k) + " is " + std::to_string(shape[k]) +
                                  " in '" + join(shape, ",") + "'; every axis needs a length from 1 to " +
                                  std::to_string(INT_MAX));
}

// This machine's physical memory in bytes (0 when unknown).
inline std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

// Throws naming `option` when `copies` arrays of the global `shape` (elements of `element_bytes`),
// shared out over `ranks`, would not fit: the bytes overflow, or one rank's share exceeds this
// machine's memory. Call after check_shape.
inline void check_array_fits(const std::string& option, const std::vector<std::int64_t>& shape,
                             std::int64_t element_bytes, int ranks, int copies) {
  const std::string text = join(shape, "x");
  std::int64_t elements = 1, bytes = 0;
  bool overflow = false;
  for (auto n : shape) overflow = overflow || __builtin_mul_overflow(elements, n, &elements);
  const std::int64_t per_rank = overflow ? 0 : (elements + ranks - 1) / std::max(ranks, 1);
  overflow = overflow || __builtin_mul_overflow(per_rank, element_bytes * copies, &bytes);
  if (overflow)
    throw std::invalid_argument(option + " " + text + ": the array does not fit: it would need more than 2^63 bytes");
  const std::int64_t memory = physical_memory_bytes();
  if (memory > 0 && bytes > memory)
    throw std::invalid_argument(option + " " + text + ": the array does not fit: it would need " +
                                std::to_string(bytes) + " bytes per rank (" + std::to_string(copies) + " arrays of " +
                                std::to_string(element_bytes) + "-byte elements over " + std::to_string(ranks) +
                                " ranks), this machine has " + std::to_string(memory) + " bytes of memory");
}

// A process grid of 1 to ndim-1 dimensions (0 = MPI_Dims_create chooses) for a `ndim`-d array on
// `ranks` ranks, with ProcessGrid's rules, checked before any communicator is made.
inline void check_grid(const std::string& option, const std::vector<int>& grid, std::size_t ndim, int ranks) {
  if (grid.empty() || grid.size() > ndim - 1)
    throw std::invalid_argument(option + ": a " + std::to_string(ndim) + "-d array takes a grid of 1 to " +
                                std::to_string(ndim - 1) + " dimensions, got " + std::to_string(grid.size()));
  long long fixed = 1;
  bool any_free = false;
  for (int g : grid) {
    if (g < 0)
      throw std::invalid_argument(option + " " + join(grid, ",") + ": dimension " + std::to_string(g) + " is negative");
    any_free = any_free || g == 0;
    if (g > 0) fixed = std::min<long long>(fixed * g, INT_MAX);  // saturates: the job never has INT_MAX ranks
  }
  if (any_free ? ranks % fixed != 0 : fixed != ranks)
    throw std::invalid_argument(option + ": grid " + join(grid, "x") + " needs " + (any_free ? "a multiple of " : "") +
                                std::to_string(fixed) + " ranks, the job has " + std::to_string(ranks));
}

// "64", "4K", "16M": bytes (K, M, G: powers of 1024), at least 1 and at most 1 G, checked before
// scaling (so no overflow); `what` names the bytes in the error over the limit.
inline std::int64_t parse_size(const std::string& text, const std::string& option,
                               const std::string& what = "bytes per peer") {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string suffix(end, text.data() + text.size());
  if (ec == std::errc::result_out_of_range)
    throw std::invalid_argument(option + ": '" + text + "' is more than the limit of 1G " + what);
  if (ec != std::errc{} || end == text.data())
    throw std::invalid_argument(option + ": '" + text + "' is not a size (bytes, e.g. 64, 4K, 16M)");
  std::int64_t scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1 << 10;
  else if (suffix == "M" || suffix == "m") scale = 1 << 20;
  else if (suffix == "G" || suffix == "g") scale = 1 << 30;
  else if (!suffix.empty())
    throw std::invalid_argument(option + ": unknown size suffix '" + suffix + "' in '" + text + "' (use K, M or G)");
  if (v < 1) throw std::invalid_argument(option + ": sizes must be at least 1 byte, got '" + text + "'");
  if (v > (std::int64_t{1} << 30) / scale)
    throw std::invalid_argument(option + ": '" + text + "' is more than the limit of 1G " + what);
  return v * scale;
}

// A CLI11 validator: a finite number in [low, high].
inline CLI::Validator finite_range(double low, double high) {
  const std::string range = "[" + CLI::detail::to_string(low) + ", " + CLI::detail::to_string(high) + "]";
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        if (!std::isfinite(v) || v < low || v > high) return "value " + text + " is not in " + range;
        return "";
      },
      "NUMBER in " + range);
}

// --inner, --outer and --max-seconds of the testbed's timing method, bounded so that a typo
// cannot start a run of days: 1..10^6 operations per loop, 1..10^5 loops, 0..10^6 seconds.
inline void add_timing_options(CLI::App& app, TimingOptions& timing, const std::string& inner_help,
                               const std::string& max_seconds_help) {
  app.add_option("--inner", timing.inner, inner_help)->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--outer", timing.outer, "maximum outer repetitions")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--max-seconds", timing.max_seconds, max_seconds_help)
      ->capture_default_str()
      ->check(finite_range(0, 1e6));
}

}  // namespace tb
