// The MPI library's datatype engine as simulated time, under SimGrid SMPI (the smpi variant).
//
// A real MPI library spends time on a non-contiguous datatype inside its calls: MPICH's ch4
// packs every non-contiguous side of a message before sending and unpacks after receiving, on a
// slower path than a contiguous message's. SMPI 3.32 moves such bytes without charging any
// simulated time for them. A platform zone may carry one of two measured prices for that work,
// and the testbed then charges it, as simulated computation of the rank that does it, for each
// non-contiguous side of each message that native and pairwise hand to MPI on an
// intracommunicator (send sides before the MPI call, receive sides after it):
//
// - tb_noncontiguous_extra_seconds = '{"send": [{"block_bytes": B, "seconds_by_bytes": [[L, S],
//   ...]}, ...], "recv": [...]}': the measured extra time of a message of L bytes whose send
//   (receive) side is a vector of B-byte blocks, over the same message contiguous (tb-beff's
//   non-contiguous exchanges: its keys host.noncontiguous_{send,recv}_extra_seconds, which
//   experiments/host_platform.py --noncontiguous-extras copies). A side of L bytes in blocks of
//   B bytes on average is charged the table read as tb-model's noncontiguous_messages term reads
//   it (collectives/measured_curves.hpp): the platform's messages, fitted to contiguous ones,
//   already hold the copy that a pack replaces, so only the extra is missing. Two non-contiguous
//   sides of one message are each charged (tb-model's noncontiguous_overlap is not simulated).
//   Optional "self_send" and "self_recv" tables (both or neither) are the same extras of a rank's
//   message to itself (tb-beff's host.self_noncontiguous_{send,recv}_extra_seconds): native's own
//   block is then charged them, as tb-model's noncontiguous_self_messages term charges it.
// - tb_datatype_engine_bandwidth_by_bytes = "BYTES:BYTES_PER_S;...": one full pass of MPI_Pack
//   at its measured rate by size (host_platform.py --datatype-engine). An experiment kept for
//   comparison: on this host's slab redistributions it made native take 1.6-4.1x and pairwise
//   1.0-4.6x the measured time at 64 KiB - 1 MiB per peer, since the platform's messages already
//   pay the copy it adds (docs/results/2026-12-04-smpi-datatype-engine.md).
//
// Under SMPI native copies its message to itself in the testbed's timed code
// (collectives/algorithms/native.cpp), which stands for the contiguous self message; the real
// library's extra for a non-contiguous one is charged only from the self tables above (without
// them, and under the MPI_Pack pass, the own block is not charged). Nothing is charged when no zone of the host has either
// property, or when computation is not simulated (smpi/simulate-computation off, run.py --compute
// off), where no local work costs anything. A malformed property, or a host whose zones carry
// both, stops the simulation with a message naming it, at the first call that looks them up.
//
// Outside the smpi variant these are empty: the real library spends its own time.
#pragma once

#include "collectives/alltoallw.hpp"

#include <mpi.h>

#include <string>

namespace tb {

// Which side of a message a charge is for: the measured extras differ by side.
enum class MessageSide { send, receive };

#if defined(TB_SMPI)

// Charges the engine for `count` instances of `type` on one side of one message, when they are
// not one contiguous run.
void charge_datatype_engine(MessageSide side, int count, MPI_Datatype type);

// An MPI_Alltoallw call's sides on this rank: every non-contiguous send side to another rank
// (before the call), every non-contiguous receive side from another rank (after it), and the own
// block's two sides where the platform has the self tables and the call is not in place.
void charge_alltoallw_sends(const AlltoallwArgs& args, const AlltoallwComm& comm);
void charge_alltoallw_receives(const AlltoallwArgs& args, const AlltoallwComm& comm);

// What this run charges, for the run's metadata: "charged: <property value> (platform zone
// '<zone>')" for the MPI_Pack pass, "charged: measured non-contiguous extras, <n> block sizes per
// side (property ..., platform zone '<zone>')", or "not charged: <why>".
std::string simulated_datatype_engine_summary();

#else

inline void charge_datatype_engine(MessageSide, int, MPI_Datatype) {}
inline void charge_alltoallw_sends(const AlltoallwArgs&, const AlltoallwComm&) {}
inline void charge_alltoallw_receives(const AlltoallwArgs&, const AlltoallwComm&) {}

#endif

}  // namespace tb
