// The registry of Alltoallw algorithms: the one list every tool, plan, test, the PMPI library
// and the cost model take their algorithms from.
//
// An algorithm registers itself from its own file with one AlltoallwRegistration object (like
// FFTW's solver table, but filled by the solvers): adding an algorithm is adding its .hpp/.cpp
// pair to collectives/algorithms/. Algorithms built outside the testbed register the same way
// from a shared library named in TB_ALGORITHM_PLUGINS, loaded on the registry's first use.
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
  // How fpga_transport costs it: the name of one of its schedules (fpga_transport/algorithm_cost.hpp),
  // usually the algorithm's own; or empty, with `not_modelled` saying why.
  std::string_view cost_schedule;
  std::string_view not_modelled;
};

// The `make` of an algorithm class with a default constructor.
template <class Algorithm>
std::unique_ptr<AlltoallwAlgorithm> make_algorithm() {
  return std::make_unique<Algorithm>();
}

// Registers `info` at static initialisation; define one at namespace scope in the algorithm's
// file. A second algorithm of the same name is an error reported on the registry's first use.
class AlltoallwRegistration {
 public:
  explicit AlltoallwRegistration(const AlltoallwAlgorithmInfo& info);
};

// Every registered algorithm: "native" first, then by name. Loads TB_ALGORITHM_PLUGINS on first
// use. Throws std::invalid_argument when a plugin cannot be loaded or a name is registered twice.
std::span<const AlltoallwAlgorithmInfo> alltoallw_algorithms();

// The registered algorithm called `name`, or nullptr.
const AlltoallwAlgorithmInfo* find_alltoallw(std::string_view name);

// The algorithm a plan uses when none is named: TB_ALLTOALLW if set, else "native".
std::string default_alltoallw_name();

// Creates the named algorithm; an empty name means default_alltoallw_name(). Throws
// std::invalid_argument listing the registered names when `name` is unknown.
std::unique_ptr<AlltoallwAlgorithm> make_alltoallw(std::string_view name = {});

// Whether `name` is registered.
bool is_alltoallw_algorithm(std::string_view name);

// A printable list, one algorithm per line ("name  summary"), for --list-algorithms.
std::string alltoallw_algorithm_list();

}  // namespace tb
