// Google Benchmark's own flags (--benchmark_*) as the testbed's Google Benchmark tools (tb-bench,
// tb-bench-pack) check them: before benchmark::Initialize, because Google Benchmark 1.7 answers
// a bad value with its usage and exit status 0 (--benchmark_format=xml, --benchmark_time_unit=h,
// an empty --benchmark_color), with a warning and nothing run (an invalid --benchmark_filter), a
// silent default (a bool flag that is no boolean, a negative or NaN --benchmark_min_time) or a
// crash (a negative --benchmark_repetitions: "vector::reserve"). Each check names the flag (or
// the environment variable BENCHMARK_<NAME> that Google Benchmark reads as its default), the
// value and what is wrong, as std::invalid_argument.
//
// A filter that matches no benchmark is known only once the benchmarks are matched:
// check_benchmarks_matched takes RunSpecifiedBenchmarks' count (0: nothing matched, nothing ran).
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb {

// The value Google Benchmark takes for its flag --<name>: the last --<name>=VALUE of args (a bool
// flag may stand alone, meaning true), else its environment variable BENCHMARK_<NAME>, else none.
struct BenchmarkFlag {
  std::string source;  // "--benchmark_format" or "BENCHMARK_FORMAT", for errors
  std::string value;
  bool given = false;
};

inline BenchmarkFlag benchmark_flag(const std::vector<char*>& args, const std::string& name, bool is_bool = false) {
  BenchmarkFlag flag{"--" + name, "", false};
  const std::string prefix = flag.source + "=";
  for (const char* a : args) {
    if (std::strncmp(a, prefix.c_str(), prefix.size()) == 0) flag = {flag.source, a + prefix.size(), true};
    else if (is_bool && flag.source == a) flag = {flag.source, "", true};
  }
  if (flag.given) return flag;
  std::string env = name;
  std::transform(env.begin(), env.end(), env.begin(), [](unsigned char c) { return std::toupper(c); });
  if (const char* value = std::getenv(env.c_str())) return {env, value, true};
  return flag;
}

// Throws unless `flag`'s value is one of `allowed` (in any case where `any_case`).
inline void check_benchmark_choice(const BenchmarkFlag& flag, std::initializer_list<const char*> allowed,
                                   bool any_case = false) {
  if (!flag.given) return;
  std::string value = flag.value, names;
  if (any_case)
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* a : allowed) {
    if (value == a) return;
    names += (names.empty() ? "" : ", ") + std::string(a);
  }
  throw std::invalid_argument(flag.source + ": '" + flag.value + "' is none of " + names);
}

// A bool flag: alone or empty (true, as Google Benchmark reads it) or one of the words below.
// Google Benchmark takes any other word as true ("--benchmark_list_tests=flase" would run every
// benchmark).
inline void check_benchmark_bool(const BenchmarkFlag& flag) {
  if (flag.value.empty()) return;
  check_benchmark_choice(flag, {"true", "false", "yes", "no", "on", "off", "1", "0"}, true);
}

// --benchmark_repetitions: a negative count fails inside Google Benchmark with "vector::reserve",
// 0 runs nothing.
inline void check_benchmark_repetitions(const BenchmarkFlag& flag) {
  if (!flag.given) return;
  const std::string& text = flag.value;
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > 1000000)
    throw std::invalid_argument(flag.source + ": '" + text + "' is not a count from 1 to 1000000");
}

// --benchmark_min_time, --benchmark_min_warmup_time: seconds, as strtod reads them (Google
// Benchmark's parser), finite and from 0 to 10^6 (NaN would never be reached: iterations grow
// to a billion; a negative time is one iteration without a word).
inline void check_benchmark_seconds(const BenchmarkFlag& flag) {
  if (!flag.given) return;
  char* end = nullptr;
  const double s = std::strtod(flag.value.c_str(), &end);
  if (flag.value.empty() || *end != '\0' || !std::isfinite(s) || s < 0 || s > 1e6)
    throw std::invalid_argument(flag.source + ": '" + flag.value + "' is not a number of seconds from 0 to 1000000");
}

// --benchmark_filter compiled as Google Benchmark compiles it: a leading '-' negates the rest,
// "" and "all" match every benchmark, and the libbenchmark this project links (Debian's 1.7.1)
// is built with std::regex, POSIX extended syntax (checked: it imports std::regex_error, not
// regcomp).
inline void check_benchmark_filter(const BenchmarkFlag& flag) {
  if (!flag.given) return;
  std::string spec = flag.value;
  if (spec.empty() || spec == "all") return;
  if (spec[0] == '-') spec.erase(0, 1);
  try {
    std::regex re(spec, std::regex_constants::extended);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(flag.source + ": '" + flag.value +
                                "' is not a regular expression (POSIX extended): " + e.what());
  }
}

// Every Google Benchmark flag of `args` (the whole command line, as every rank was given it) and
// of the environment whose bad value would not be a clear error; throws std::invalid_argument.
// Flags that Google Benchmark cannot parse at all (--benchmark_context=a, --v=x) it leaves in
// argv, where the tool reports them as unknown.
inline void check_benchmark_flags(const std::vector<char*>& args) {
  check_benchmark_repetitions(benchmark_flag(args, "benchmark_repetitions"));
  check_benchmark_seconds(benchmark_flag(args, "benchmark_min_time"));
  check_benchmark_seconds(benchmark_flag(args, "benchmark_min_warmup_time"));
  check_benchmark_choice(benchmark_flag(args, "benchmark_format"), {"console", "json", "csv"});
  check_benchmark_choice(benchmark_flag(args, "benchmark_out_format"), {"console", "json", "csv"});
  check_benchmark_choice(benchmark_flag(args, "benchmark_time_unit"), {"ns", "us", "ms", "s"});
  // auto or a bool word; empty prints Google Benchmark's usage
  check_benchmark_choice(benchmark_flag(args, "benchmark_color"),
                         {"auto", "true", "false", "yes", "no", "on", "off", "1", "0"}, true);
  for (const char* name : {"benchmark_list_tests", "benchmark_enable_random_interleaving",
                           "benchmark_report_aggregates_only", "benchmark_display_aggregates_only",
                           "benchmark_counters_tabular"})
    check_benchmark_bool(benchmark_flag(args, name, true));
  check_benchmark_filter(benchmark_flag(args, "benchmark_filter"));
}

// After RunSpecifiedBenchmarks: `matched` is its count of benchmarks, 0 when none matched (its
// filter's or none registered), so that nothing ran. Throws naming the filter.
inline void check_benchmarks_matched(std::size_t matched, const std::vector<char*>& args) {
  if (matched > 0) return;
  const BenchmarkFlag filter = benchmark_flag(args, "benchmark_filter");
  if (filter.given && !filter.value.empty() && filter.value != "all")
    throw std::invalid_argument(filter.source + ": '" + filter.value +
                                "' matches no benchmark, so none ran (--benchmark_list_tests=true lists them)");
  throw std::invalid_argument("no benchmark to run");
}

}  // namespace tb
