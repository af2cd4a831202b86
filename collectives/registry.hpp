// The registry of Alltoallw algorithms: every tool, plan and the PMPI library select from it by
// name. The table lives in registry.cpp (one line per algorithm, like FFTW's solver table);
// adding an algorithm means adding its file and its line there.
#pragma once

#include "collectives/alltoallw.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tb {

struct AlltoallwAlgorithmInfo {
  std::string_view name;
  std::string_view summary;  // one line: what it does
  std::unique_ptr<AlltoallwAlgorithm> (*make)();
};

// Every registered algorithm, in a fixed order ("native" first).
std::span<const AlltoallwAlgorithmInfo> alltoallw_algorithms();

// The algorithm a plan uses when none is named: $TB_ALLTOALLW if set and non-empty, else "native".
std::string default_alltoallw_name();

// Creates the named algorithm; an empty name means default_alltoallw_name(). Throws
// std::invalid_argument listing the registered names when `name` is unknown.
std::unique_ptr<AlltoallwAlgorithm> make_alltoallw(std::string_view name = {});

// Whether `name` is registered.
bool is_alltoallw_algorithm(std::string_view name);

// A printable list, one algorithm per line ("name  summary"), for --list-algorithms.
std::string alltoallw_algorithm_list();

}  // namespace tb
