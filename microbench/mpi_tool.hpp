// The frame every MPI tool of the testbed runs in (tb-redistribute, tb-fft, tb-fftw-mpi, tb-beff,
// tb-ptrans), so that they treat bad input and failures alike:
//   1. MPI_Init; MPI errors return codes on MPI_COMM_WORLD and MPI_COMM_SELF (the tools check them).
//   2. `app` parses on every rank. Help and parse errors ("<tool>: error: ...") are printed by
//      rank 0; every rank exits with CLI11's code. The frame adds --list-settings (the TB_* table,
//      exit 0) and, when the tool gives `algorithm_list`, --list-algorithms (its text, exit 0);
//      rank 0 prints them.
//   3. The settings are checked (tb::check_settings), then `validate` (may be empty) checks the
//      options, on every rank before any collective: an exception there (or in --list-algorithms)
//      is "<tool>: error: ..." from rank 0 and exit code 2 on every rank.
//   4. `run` returns the exit code. An exception on any rank prints "<tool> (rank r): error: ..."
//      and aborts the job, because the other ranks may be waiting in a collective. The abort
//      waits a moment first, so that the launcher forwards the line; without it the message is
//      sometimes lost.
#pragma once

#include "collectives/settings.hpp"

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace tb {

// "a<sep>b<sep>c" from any range whose elements stream (shapes, grids, method lists in tool output).
std::string join(const auto& values, const char* sep) {
  std::ostringstream s;
  bool first = true;
  for (const auto& v : values) {
    s << (first ? "" : sep) << v;
    first = false;
  }
  return s.str();
}

// Whether `text` is a decimal integer as a person types one: an optional sign, then digits, with
// no leading zero but in "0". CLI11 2.1 converts integers with strtoll(text, 0): "010" would be
// 8 and "0x10" 16, a different size from the one typed, without a word.
inline bool is_decimal_integer(const std::string& text) {
  const std::size_t start = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const std::string digits = text.substr(start);
  return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         (digits == "0" || digits[0] != '0');
}

// CLI11's parse errors (bad values, unknown options, validators) in the tools' format,
// "<tool>: error: <option>: <problem>", and every integer option's text a decimal integer
// (checked when parsing is complete, before any value is used).
inline void use_tool_errors(CLI::App& app, const std::string& tool) {
  app.failure_message([tool](const CLI::App*, const CLI::Error& e) {
    return tool + ": error: " + e.what() + "\n";
  });
  app.parse_complete_callback([&app] {
    for (const CLI::Option* option : app.get_options()) {
      const std::string type = option->get_type_name();
      if (type.rfind("INT", 0) != 0 && type.rfind("UINT", 0) != 0) continue;
      for (const std::string& text : option->results())
        if (!is_decimal_integer(text))
          throw CLI::ValidationError(option->get_name(), "'" + text + "' is not a decimal integer (no leading zero, "
                                                                       "no 0x)");
    }
  });
}

// The help text of --list-settings, the same in every tool.
inline constexpr const char* kListSettingsHelp = "print the TB_* settings (default, value here, meaning) and exit";

inline int mpi_tool_main(int argc, char** argv, const char* tool, CLI::App& app, const std::function<void()>& validate,
                         const std::function<int()>& run,
                         const std::function<std::string()>& algorithm_list = {}) {
  bool list_settings = false, list_algorithms = false;
  if (algorithm_list) app.add_flag("--list-algorithms", list_algorithms, "print the registered Alltoallw algorithms and exit");
  app.add_flag("--list-settings", list_settings, kListSettingsHelp);
  use_tool_errors(app, tool);

  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code;
  }
  if (list_settings) {
    if (rank == 0) std::fputs(settings_table().c_str(), stdout);
    MPI_Finalize();
    return 0;
  }
  try {
    check_settings();
    if (list_algorithms) {
      const std::string text = algorithm_list();
      if (rank == 0) std::fputs(text.c_str(), stdout);
      MPI_Finalize();
      return 0;
    }
    if (validate) validate();
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    MPI_Finalize();
    return 2;
  }
  try {
    code = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s (rank %d): error: %s\n", tool, rank, e.what());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}

}  // namespace tb
