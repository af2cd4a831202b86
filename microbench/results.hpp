// The one results format of the testbed's tools, and the checks that the files can be written.
//
// Every tool that writes JSON writes one document:
//   {"metadata": <run_metadata()>, "results": [ <row>, ... ]}
// one object per row. Rows that carry a timing use the same keys in every tool (the testbed's
// method, microbench/timing.hpp): "inner" (operations per timed loop), "outer" (timed loops),
// "fastest_s" and "median_s" (seconds per operation, each loop MAX over ranks), "samples_s"
// (every loop's seconds per operation; JSON only). Tools add their own keys beside them.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace tb {

struct Timing;

// Throws std::invalid_argument naming the option and the path when `path` cannot be opened for
// writing. An existing file is left as it is; a file the check creates is removed again. An
// empty path (the option not given) passes. Call it before the run, so that a typo in an output
// path costs nothing.
void check_writable(const std::string& option, const std::string& path);

// The same for a file that rank 0 of `comm` writes: collective, rank 0 checks, and every rank
// throws the same error (so a tool's validate step fails alike on every rank).
void check_writable(MPI_Comm comm, const std::string& option, const std::string& path);

// Throws std::invalid_argument when two of the outputs ({option, path}; empty paths are not
// given) name the same file (the same path after lexical normalisation, or one existing file):
// the second write would replace the first one's contents without a word.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// The timing keys of a result row: inner, outer, fastest_s, median_s, and with `samples`
// samples_s.
nlohmann::json timing_fields(const Timing& timing, bool samples);

// Writes {"metadata": metadata, "results": rows}; rows must be an array of objects. Throws
// std::runtime_error when the file cannot be written.
void write_results_json(const std::string& path, const nlohmann::json& metadata, const nlohmann::json& rows);

// Writes result rows (JSON objects) as CSV: the given columns, then the metadata every row
// carries (ranks, nodes, mpi_library, cores, numa_nodes, environment, git_commit). Throws
// std::runtime_error when the file cannot be written.
void write_results_csv(const std::string& path, const nlohmann::json& rows, const std::vector<std::string>& columns,
                       const nlohmann::json& metadata);

}  // namespace tb
