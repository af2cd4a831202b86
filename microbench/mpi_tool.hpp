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

// The help text of --list-settings, the same in every tool.
inline constexpr const char* kListSettingsHelp = "print the TB_* settings (default, value here, meaning) and exit";

inline int mpi_tool_main(int argc, char** argv, const char* tool, CLI::App& app, const std::function<void()>& validate,
                         const std::function<int()>& run,
                         const std::function<std::string()>& algorithm_list = {}) {
  bool list_settings = false, list_algorithms = false;
  if (algorithm_list) app.add_flag("--list-algorithms", list_algorithms, "print the registered Alltoallw algorithms and exit");
  app.add_flag("--list-settings", list_settings, kListSettingsHelp);
  // CLI11's parse errors in the tools' own format: "<tool>: error: <option>: <problem>".
  app.failure_message([tool](const CLI::App*, const CLI::Error& e) {
    return std::string(tool) + ": error: " + e.what() + "\n";
  });

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
