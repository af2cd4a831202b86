// Link models: how long one message of L bytes takes on one link, with the units in the names.
//
//   IecLink        Intel External Channel between two FPGAs through the optical circuit switch
//                  (Bittware 520N, Stratix 10): a channel is 32 bytes wide at 156.25 MHz
//                  (5 GB/s per direction); a link bundles `channels_per_link` channels, data moves
//                  in whole chunks of width x channels, and every message pays the channel latency:
//                      t(L) = ceil(L / chunk) / f + latency      (ring: 2 channels, 64 B chunks)
//   Hockney        alpha-beta: t(L) = alpha + beta L. Fitted to measurements (tb-beff) for the host.
//   MeasuredCurve  seconds by bytes from measurements, linear between measured sizes.
//   HostMessage    the host's MPI message: the Hockney fit, or where tb-beff measured it, the
//                  measured time of one message by size (linear between the measured sizes,
//                  the fit's beta per byte beyond the largest).
//   PcieMpiPath    HPCC FPGA's "base" path: FPGA -> host over PCIe, host MPI, host -> FPGA:
//                      t(L) = 2 pcie(L) + host(L)
//                  with pcie(L) = pcie_latency + L / pcie_bandwidth and host(L) the Hockney host,
//                  or, where given, measured curves for either (hpcc_reference.hpp derives them
//                  from the publication's own b_eff runs). Where FPGAs share a node (its PCIe root
//                  complex, host memory and NIC), a transfer made while another FPGA of the node
//                  transfers too takes node_contention(L) longer (network.hpp applies it).
// A Network (network.hpp) says which model its links use; NetworkSpec files are JSON with these
// field names (fpga_transport/networks/*.json).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tb::fpga {

struct IecLink {
  double channel_width_bytes = 32.0;
  double clock_hz = 156.25e6;
  double latency_s = 520e-9;
  int channels_per_link = 2;
  double chunk_bytes() const { return channel_width_bytes * channels_per_link; }
  double bandwidth_bytes_per_s() const { return chunk_bytes() * clock_hz; }
  double message_time_s(double bytes) const;
  // Time for `bytes` that share the link with other messages: whole chunks, no latency.
  double transfer_time_s(double bytes) const;
};

struct Hockney {
  double alpha_s = 0.0;
  double beta_s_per_byte = 0.0;
  double message_time_s(double bytes) const { return alpha_s + beta_s_per_byte * bytes; }
  double bandwidth_bytes_per_s() const { return beta_s_per_byte > 0 ? 1.0 / beta_s_per_byte : 0.0; }
  // Least-squares fit of t = alpha + beta L to (bytes, seconds) points (at least two distinct
  // sizes), with alpha, beta >= 0: where the free fit has a negative term, the fit with that term
  // at 0. Throws std::invalid_argument without two distinct sizes.
  static Hockney fit(const std::vector<std::pair<double, double>>& bytes_seconds);
};

// Seconds for a message of L bytes from measured (bytes, seconds) points: linear between
// neighbouring points, the first point's time below it, and the last segment's slope continued
// beyond the last point. Points need strictly increasing bytes and times >= 0.
struct MeasuredCurve {
  std::vector<std::pair<double, double>> seconds_by_bytes;
  bool empty() const { return seconds_by_bytes.empty(); }
  double time_s(double bytes) const;
  void check(const std::string& what) const;  // throws std::invalid_argument naming `what`
};

// One host MPI message (network kind host), from `tb-beff --fit-out`. `fit` is the Hockney fit of
// its exchanges, halved per message. `measured` is the measured time of one message by size:
// each size's exchange median_s / 2 (an exchange is two messages sent and two received per
// rank, so the same halving as alpha = a / 2, beta = b / 2). When present it is used: linear
// between measured sizes, the first size's time below it, and beyond the largest size the last
// measured time plus the fit's beta per further byte (the curve's own last segment is one
// noisy pair of points; the fit spans every size). Empty: the Hockney fit alone.
// The extra time of a host message whose send (or receive) side is non-contiguous, over the same
// bytes sent contiguously: the MPI library moves such a datatype through its own engine and
// staging (MPICH's ch4:ucx packs it into UCX's bounce buffers piece by piece and loses the
// single-copy path), which costs far more than packing it alone. Measured by tb-beff per block
// size (bytes per contiguous block) as a curve of extra seconds by message bytes. extra_s(L, B):
// each curve read at L (below its first size, its first extra scaled by L / first size: no bytes,
// no extra), then interpolated on log(B) between the two measured block sizes around B, the
// nearest one's outside them.
struct NoncontiguousExtra {
  std::vector<std::pair<double, MeasuredCurve>> by_block;  // (block bytes, curve), block bytes increasing
  bool empty() const { return by_block.empty(); }
  double extra_s(double bytes, double block_bytes) const;
  void check(const std::string& what) const;  // throws std::invalid_argument naming `what`
};

// The measured extra time of a message whose buffers T bytes of other memory traffic have pushed
// out of the caches since their last use, over the same message sent again at once (tb-beff's cold
// messages), per T: read as NoncontiguousExtra reads its table, with T in place of the block size
// (the JSON names it traffic_bytes).
struct ColdMessageExtra {
  NoncontiguousExtra table;  // by_block holds (traffic bytes, curve)
  bool empty() const { return table.empty(); }
  double extra_s(double bytes, double traffic_bytes) const { return table.extra_s(bytes, traffic_bytes); }
};

// `self_measured` is the measured time of a message from a rank to itself (every rank sending
// one to itself at once: tb-beff's self exchanges), which the library copies on its own path;
// empty: no such measurement (the model then prices that copy as a plain memory copy).
// `send_extra` and `recv_extra`: the measured extra time of a message non-contiguous on that side
// (tb-beff's non-contiguous exchanges); empty: not measured. `self_send_extra` and
// `self_recv_extra`: the same of a message from a rank to itself (every rank at once; the library
// packs or unpacks it on its own path, without a second core); empty: not measured (a self message
// then pays the pairs' extra). `node_handoff`: the measured extra
// time of copying L bytes out of memory another rank of the node has just written (a shared
// window), over the same copy of bytes the rank wrote itself (tb-beff's node handoffs); empty:
// not measured. `node_handoff_pieces`: the same with the private side of both copies a vector of
// 64-byte blocks, each copied on its own (tb-beff's node handoffs in pieces); empty: not measured
// (copies in pieces then pay the contiguous extra). node_handoff_s(L, Lp) reads them as
// NoncontiguousExtra reads its curves (below the first size scaled to 0 at 0 bytes): Lp of the L
// bytes at the pieces' extra, the rest at the contiguous one; piece_share(L, B) is the share of a
// copy in blocks of B bytes counted as pieces, 1 at 64 B, 0 at one block, linear in log B
// between. `gets`: the measured time of one zero-copy get of L bytes,
// made by the receiver alone (tb-beff's gets: ucx_zcopy's UCX gets in pairs, issued back to back);
// empty: not measured. `cold`: the extra of a message after other memory traffic (above); empty:
// not measured. `self_cold`: the same of a message from a rank to itself (every rank at once);
// empty: not measured (self messages then pay no cold extra).
struct HostMessage {
  Hockney fit;
  MeasuredCurve measured;
  MeasuredCurve self_measured;
  NoncontiguousExtra send_extra, recv_extra;
  NoncontiguousExtra self_send_extra, self_recv_extra;
  MeasuredCurve node_handoff, node_handoff_pieces;
  static constexpr double kHandoffPieceBytes = 64;  // the pieces of node_handoff_pieces
  static double piece_share(double bytes, double block_bytes);
  double node_handoff_s(double bytes, double piece_bytes = 0) const;  // piece_bytes 0: contiguous
  // The extra of a message of L bytes whose sender has just written them, over the same message
  // repeated (tb-beff's fresh messages).
  MeasuredCurve fresh;
  double fresh_message_s(double bytes) const;
  MeasuredCurve gets;
  ColdMessageExtra cold, self_cold;
  bool is_measured() const { return !measured.empty(); }
  double message_time_s(double bytes) const;
};

struct PcieMpiPath {
  double pcie_bandwidth_bytes_per_s = 7.88e9;  // PCIe 3.0 x8, per direction
  double pcie_latency_s = 0.0;                 // per transfer (buffer read or write)
  Hockney host;                                // host-to-host MPI message
  // Measured alternatives: one blocking PCIe buffer transfer (read or write), and one host
  // MPI_Sendrecv moving L bytes each way. When present they replace the parameters above.
  MeasuredCurve pcie_transfer;
  MeasuredCurve host_exchange;
  // FPGAs per node (ranks are numbered node by node), and the seconds one PCIe transfer takes
  // longer when another FPGA of its node transfers at the same time (and the Sendrecv partner
  // waits for the slower of the two). Empty: no such term.
  int fpgas_per_node = 1;
  MeasuredCurve node_contention;
  std::string calibration;  // where the curves came from, for describe()
  double pcie_time_s(double bytes) const {
    return pcie_transfer.empty() ? pcie_latency_s + bytes / pcie_bandwidth_bytes_per_s : pcie_transfer.time_s(bytes);
  }
  double node_contention_s(double bytes) const { return node_contention.empty() ? 0.0 : node_contention.time_s(bytes); }
  double host_time_s(double bytes) const {
    return host_exchange.empty() ? host.message_time_s(bytes) : host_exchange.time_s(bytes);
  }
  double message_time_s(double bytes) const { return 2.0 * pcie_time_s(bytes) + host_time_s(bytes); }
};

// Local work (pack, unpack, copy) on one processor:
//   t = bytes / bandwidth(W) + blocks * per_block + pieces * per_piece(W),
// where W is the working set: the bytes the rank touches in the whole call (a piece of a large
// array streams from memory even when the piece itself would fit in cache). The bandwidth is a
// table of (bytes, bandwidth) points, interpolated in log(bytes) and held flat beyond its ends;
// without a table, copy_bandwidth_bytes_per_s throughout. The testbed's own copies of streaming_from_bytes or
// more use streaming stores (collectives/pack.hpp), costed on streaming_bandwidth_by_bytes where
// that table is given. Pieces are the copies of node_leader's copy lists (a blocking call plans
// them with for_each_piece, merges them in address order and runs them: MergedCopy), which cost
// more each than a block of the packer; per_piece_by_bytes is their extra time over a memcpy of
// the same bytes, per piece, by W (without the table, a piece costs per_block(W)).
// per_block(W) is per_block_by_bytes, the testbed packer's extra time per block over a memcpy,
// by W; without that table per_block_s at every W.
struct MemoryModel {
  double copy_bandwidth_bytes_per_s = 10e9;
  double per_block_s = 5e-9;
  // (bytes, value) rows, ascending in bytes, no size twice (from_json sorts and checks them)
  std::vector<std::pair<double, double>> bandwidth_by_bytes;            // bytes per second
  std::vector<std::pair<double, double>> streaming_bandwidth_by_bytes;  // bytes per second
  std::vector<std::pair<double, double>> per_piece_by_bytes;            // seconds per piece
  std::vector<std::pair<double, double>> per_block_by_bytes;            // seconds per block of the packer
  double streaming_from_bytes = 4.0 * (1 << 20);                       // kStreamingCopyBytes
  bool by_working_set = true;  // false: bandwidth at the copy's own size (tb-model --without working_set)
  bool local_work = true;      // false: copies take no time, as in SMPI with compute off (--without local_work)
  double bandwidth_at(double bytes, bool streaming = false) const;
  double per_piece_at(double bytes) const;
  double per_block_at(double bytes) const;
  double copy_time_s(double bytes, double blocks, double working_set_bytes = 0.0, bool streaming = false,
                     double pieces = 0.0) const {
    const double lookup = by_working_set ? std::max(bytes, working_set_bytes) : bytes;
    return bytes > 0 && local_work
               ? bytes / bandwidth_at(lookup, streaming) + blocks * per_block_at(lookup) + pieces * per_piece_at(lookup)
               : 0.0;
  }
};

// A memory model read from a file must give its copy bandwidth and its cost per block (each as a
// value or a table); the reader's defaults stand in only for fragments (tests). Throws
// std::invalid_argument naming the missing keys.
void require_copy_costs(const nlohmann::json& j);

// Strict reading of the model and network JSON files: a key the schema does not know, a value of
// the wrong type or a missing required key is std::invalid_argument naming the key, never a
// silent default. `where` prefixes the key in messages ("iec.", "" at the top level).
void check_keys(const nlohmann::json& j, const std::string& where, std::initializer_list<const char*> known);
// The value of `key` as T when present (required: else an error); numbers must be JSON numbers
// (integers for integral T), strings JSON strings.
template <class T>
void read_key(const nlohmann::json& j, const std::string& where, const char* key, T& value, bool required = false) {
  if (!j.contains(key)) {
    if (required) throw std::invalid_argument("missing required key '" + where + key + "'");
    return;
  }
  const nlohmann::json& v = j.at(key);
  const char* expected = nullptr;
  if constexpr (std::is_same_v<T, bool>) expected = v.is_boolean() ? nullptr : "true or false";
  else if constexpr (std::is_integral_v<T>) expected = v.is_number_integer() ? nullptr : "an integer";
  else if constexpr (std::is_floating_point_v<T>) expected = v.is_number() ? nullptr : "a number";
  else if constexpr (std::is_same_v<T, std::string>) expected = v.is_string() ? nullptr : "a string";
  if (expected == nullptr) {
    try {
      v.get_to(value);
      return;
    } catch (const nlohmann::json::exception&) {
      expected = "a value of another shape";
    }
  }
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  throw std::invalid_argument("key '" + where + key + "': expected " + expected + ", got " + v.type_name() + " " +
                              text);
}
// Throws naming `what` when j is not a JSON object.
void require_object(const nlohmann::json& j, const std::string& what);

void to_json(nlohmann::json& j, const IecLink& m);
void from_json(const nlohmann::json& j, IecLink& m);
void to_json(nlohmann::json& j, const Hockney& m);
void from_json(const nlohmann::json& j, Hockney& m);
void to_json(nlohmann::json& j, const HostMessage& m);
void from_json(const nlohmann::json& j, HostMessage& m);
void to_json(nlohmann::json& j, const MeasuredCurve& m);
void from_json(const nlohmann::json& j, MeasuredCurve& m);
void to_json(nlohmann::json& j, const PcieMpiPath& m);
void from_json(const nlohmann::json& j, PcieMpiPath& m);
void to_json(nlohmann::json& j, const NoncontiguousExtra& m);
void from_json(const nlohmann::json& j, NoncontiguousExtra& m);
void to_json(nlohmann::json& j, const ColdMessageExtra& m);
void from_json(const nlohmann::json& j, ColdMessageExtra& m);
void to_json(nlohmann::json& j, const MemoryModel& m);
void from_json(const nlohmann::json& j, MemoryModel& m);

}  // namespace tb::fpga
