// What every result row carries (docs/design.md): MPI library and version, ranks and nodes, the
// hwloc summary of the machine, the environment that steers MPI and UCX, and the git commit.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>

namespace tb {

const char* git_commit();

// A one-line name of the MPI library: "MPICH 4.0.2 (ch4:ucx)", "Open MPI v4.1.4".
std::string mpi_library_version();

// Collective over comm. Keys: mpi_library, mpi_library_full, mpi_standard, ranks, nodes,
// max_ranks_per_node, host, hwloc{cores, pus, numa_nodes, packages}, environment{...},
// cross_core_handoff and vector_path (microbench/machine_state.hpp: the states the run starts in,
// null where no node has two ranks), git_commit, compiler, timestamp_utc; in the smpi build also smpi_datatype_engine (what the
// simulation charges for the library's datatype engine, collectives/simulated_datatype_engine.hpp).
nlohmann::json run_metadata(MPI_Comm comm);

// The environment variables that change what MPI and UCX do, "NAME=value;NAME=value".
std::string relevant_environment_text(const nlohmann::json& metadata);

// The results writers are in microbench/results.hpp.

}  // namespace tb
