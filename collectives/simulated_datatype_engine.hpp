// The MPI library's datatype engine as simulated time, under SimGrid SMPI (the smpi variant).
//
// A real MPI library spends time on a non-contiguous datatype inside its calls: MPICH's ch4
// packs every non-contiguous side of a message into contiguous bytes before sending and
// unpacks after receiving (tb-beff --fit-out measures MPI_Pack's bandwidth: the calibration's
// key "library"). SMPI 3.32 moves such bytes without charging any simulated time for them.
//
// A platform may carry the engine as the zone property
//   tb_datatype_engine_bandwidth_by_bytes = "BYTES:BYTES_PER_S;BYTES:BYTES_PER_S;..."
// (experiments/host_platform.py --datatype-engine writes it from tb-beff's calibration), and the
// testbed then charges, as simulated computation of the rank that does it, one engine pass over
// each non-contiguous side of each message that native and pairwise hand to MPI on an
// intracommunicator: the message's bytes at the bandwidth interpolated at its size (in
// log(bytes), clamped at the ends), the bandwidth part of tb-model's library_engine term. Send
// sides are charged before the MPI call, receive sides after it. native's message to itself is
// not: under SMPI native copies it in the testbed's timed code (collectives/algorithms/native.cpp).
// Nothing is charged when no zone of the host has the property, or when computation is not
// simulated (smpi/simulate-computation off, run.py --compute off), where no local work costs
// anything. A property that is not such a list stops
// the simulation with a message naming it, at the first call that looks it up.
//
// It is an experiment, off on every shipped platform: on this host's slab redistributions the
// charge made native take 1.6-4.1x and pairwise 1.0-4.6x the measured time at 64 KiB - 1 MiB per
// peer, so the time SMPI misses there is not this pass
// (docs/results/2026-12-04-smpi-datatype-engine.md).
//
// Outside the smpi variant these are empty: the real library spends its own time.
#pragma once

#include "collectives/alltoallw.hpp"

#include <mpi.h>

#include <string>

namespace tb {

#if defined(TB_SMPI)

// Charges the engine for `count` instances of `type` on one side of one message, when they are
// not one contiguous run.
void charge_datatype_engine(int count, MPI_Datatype type);

// An MPI_Alltoallw call's sides on this rank: every non-contiguous send side to another rank
// (before the call), every non-contiguous receive side from another rank (after it).
void charge_alltoallw_sends(const AlltoallwArgs& args, const AlltoallwComm& comm);
void charge_alltoallw_receives(const AlltoallwArgs& args, const AlltoallwComm& comm);

// What this run charges, for the run's metadata: "charged: <property value> (platform zone
// '<zone>')", or "not charged: <why>".
std::string simulated_datatype_engine_summary();

#else

inline void charge_datatype_engine(int, MPI_Datatype) {}
inline void charge_alltoallw_sends(const AlltoallwArgs&, const AlltoallwComm&) {}
inline void charge_alltoallw_receives(const AlltoallwArgs&, const AlltoallwComm&) {}

#endif

}  // namespace tb
