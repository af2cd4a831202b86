// The machine's state for cross-core handoffs, measured when a tool takes its run_metadata (at its
// start) and recorded with its results ("cross_core_handoff").
//
// On some hosts (the 2-core AMD EPYC VM of docs/results/2026-12-04-cross-core-handoff-state.md) a
// read of bytes another core has just written takes about 9x its usual time for seconds to tens
// of seconds at a time, while copies within one core do not slow down (large ones even speed up). Every
// algorithm that hands data over through shared memory (node_leader's staging, ucx_zcopy's gets)
// is then several times slower, and a benchmark or a calibration run in that state disagrees
// with one run outside it. The state cannot be chosen; it can be recorded, so that every result
// says which state it was measured in.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>

namespace tb {

// The first two ranks of each node of comm (MPI_COMM_TYPE_SHARED) each write kHandoffBytes into
// their slot of a shared window, wait for each other, and copy the partner's slot into a private
// array; then the same with both copies within the rank. Median of 5 each. Collective over comm,
// an intracommunicator. Returns {"bytes", "handoff_us", "private_us", "ratio"}: each the MAX over
// the ranks (ratio: of each rank's handoff over its private copies), or null where no node has
// two ranks or shared windows are not real memory (smpi).
nlohmann::json cross_core_handoff(MPI_Comm comm);

// The ratio above which cross_core_handoff's state is called slow in reports: both states are
// far from it (about 1 and about 9 on the host above).
inline constexpr double kSlowHandoffRatio = 3.0;

// One line for a tool's printout: "cross-core handoff of 1 MiB: 52 us, 50 us within a core
// (1.0x)", with " SLOW STATE" above kSlowHandoffRatio; "" where the metadata has none.
std::string cross_core_handoff_text(const nlohmann::json& metadata);

}  // namespace tb
