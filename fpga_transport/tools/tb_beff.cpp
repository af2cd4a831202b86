// tb-beff: the b_eff benchmark over MPI with HPCC FPGA's rules (fpga_transport/beff.hpp): ranks
// in a ring, each exchanging L bytes with both neighbours at once (two MPI_Isend, two MPI_Irecv,
// MPI_Waitall), L = 2^0 .. 2^max, ll(i) exchanges per size, the minimum over repetitions on each
// rank then the maximum over ranks. Every received byte is checked (it must equal log2(L) mod 256).
// It also fits the Hockney model of one exchange, alpha + beta * L, and can write it as the
// calibrated host network for tb-model (--fit-out), with the measured time of one message per
// size: each size's exchange median / 2 (key host.message_seconds_by_bytes), at b_eff's sizes and
// beyond them up to --messages-max-bytes (64 MiB), where the model is asked about messages too and
// a message's time is memory's, not the cache's. It also times, per
// size, every rank sending itself one message at once (MPI_Irecv and MPI_Isend to itself,
// MPI_Waitall): the library's own copy of a self part, as native's MPI_Alltoallw and local
// remap's MPI_Alltoall(v) make it (key host.self_message_seconds_by_bytes). And in pairs of ranks it
// times messages with a non-contiguous send or receive side against the same bytes contiguous
// (keys host.noncontiguous_send_extra_seconds, host.noncontiguous_recv_extra_seconds), and so each
// rank with itself (keys host.self_noncontiguous_{send,recv}_extra_seconds), and in pairs
// on one node what copying out bytes the partner has just written costs over copying one's own
// (key host.node_handoff_extra_seconds_by_bytes; in 64-byte pieces, as a vector type's pack and
// unpack copy, key host.node_handoff_piece_extra_seconds_by_bytes), and messages whose senders have just rewritten
// their bytes against the same messages settled (key
// host.fresh_message_extra_seconds_by_bytes). Where the testbed has UCX, it times in pairs the
// zero-copy gets ucx_zcopy makes, on ucx_zcopy's own UCX state (key host.get_seconds_by_bytes).
// And in pairs it times messages whose buffers other memory traffic has pushed out of cache
// against the same messages settled (key host.cold_message_extra_seconds), and so each rank with
// itself (key host.cold_self_message_extra_seconds).
//
//   mpiexec -n 2 tb-beff --json beff.json --fit-out host.json
#include "collectives/mpi_error.hpp"
#if TB_HAVE_UCX
#include "collectives/algorithms/ucx_zcopy.hpp"
#endif
#include "fpga_transport/beff.hpp"
#include "microbench/machine_state.hpp"
#include "microbench/mpi_tool.hpp"
#include "microbench/results.hpp"
#include "microbench/run_metadata.hpp"
#include "microbench/timing.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace {

struct Options {
  tb::fpga::BeffRules rules;
  int repetitions = 3;
  int loop_divisor = 1;
  std::int64_t pairs_max_bytes = 16 << 20;  // the largest size of the paired measurements
  std::int64_t messages_max_bytes = 64 << 20;  // the largest size of the message curves
  std::string noncontiguous_timing = "loop";  // the non-contiguous exchanges: loop or single (below)
  std::string json, fit_out;
};

// The loop rules' ranges are CLI11 validators (below); what relates two options is checked here.
// The Hockney fit needs two sizes: b_eff's sizes are 2^0 .. 2^max, distinct, so only
// --max-exponent 0 leaves it one (every other size is beyond b_eff and outside the fit). An
// explicit --messages-max-bytes below 2^max would be ignored: the message curves hold every
// b_eff size (the default, 64 MiB, may lie below a large 2^max; the curves then end there).
void validate(const Options& opt, bool messages_max_given) {
  if (opt.rules.max_exponent < 1)
    throw std::invalid_argument("--max-exponent " + std::to_string(opt.rules.max_exponent) +
                                ": the Hockney fit needs at least 2 sizes; use 1 or more");
  const std::int64_t beff_largest = std::int64_t{1} << opt.rules.max_exponent;
  if (messages_max_given && opt.messages_max_bytes < beff_largest)
    throw std::invalid_argument("--messages-max-bytes " + std::to_string(opt.messages_max_bytes) +
                                " is below b_eff's largest size 2^" + std::to_string(opt.rules.max_exponent) + " = " +
                                std::to_string(beff_largest) + " bytes: the message curves hold every b_eff size and "
                                "go on beyond it up to --messages-max-bytes; use " + std::to_string(beff_largest) +
                                " or more, or a smaller --max-exponent");
  if (opt.rules.u < opt.rules.l)
    throw std::invalid_argument("-u " + std::to_string(opt.rules.u) + " is below -l " + std::to_string(opt.rules.l) +
                                ": the loop length floor cannot exceed the loop length");
  tb::check_distinct_outputs({{"--json", opt.json}, {"--fit-out", opt.fit_out}});
  tb::check_writable(MPI_COMM_WORLD, "--json", opt.json);
  tb::check_writable(MPI_COMM_WORLD, "--fit-out", opt.fit_out);
}

// The loop length of size index i: b_eff's rule, divided by --loop-divisor (at least 1).
std::int64_t loop_length(const Options& opt, std::size_t i) {
  return std::max<std::int64_t>(1, tb::fpga::beff_loop_length(static_cast<int>(i), opt.rules) / opt.loop_divisor);
}

// The sizes the exchanges and the self messages are timed at, each with its loop length: b_eff's
// sizes by its loop rule, then, for the message curves only, the sizes beyond 2^max in steps of 2x
// up to --messages-max-bytes. b_eff's sizes are HPCC FPGA's, but the model prices messages up to
// the largest per-peer size it is asked about, and from a few MiB a message streams from memory at
// a fraction of the cached rate, which no extrapolation of the smaller sizes gives. A size beyond
// loops over the bytes of b_eff's largest size's loop (at least 2 exchanges), so that it costs
// about as long as that size.
struct TimedSize {
  std::int64_t bytes = 0, loops = 0;
};

std::vector<TimedSize> timed_sizes(const Options& opt) {
  const auto sizes = tb::fpga::beff_sizes(opt.rules);
  std::vector<TimedSize> timed;
  for (std::size_t i = 0; i < sizes.size(); ++i) timed.push_back({sizes[i], loop_length(opt, i)});
  const TimedSize largest = timed.back();
  for (std::int64_t bytes = 2 * largest.bytes; bytes <= opt.messages_max_bytes; bytes *= 2)
    timed.push_back({bytes, std::max<std::int64_t>(2, largest.bytes * largest.loops / bytes)});
  return timed;
}

// The ring exchanges of every timed size (b_eff's first).
struct Exchanges {
  std::vector<std::int64_t> bytes;
  std::vector<double> loop_seconds;       // b_eff's rule: each rank's fastest loop, then MAX over ranks
  std::vector<std::int64_t> loop_lengths;
  std::vector<tb::Timing> timings;        // the testbed's: each repetition MAX over ranks, per exchange
  long long wrong = 0;                    // received bytes with the wrong value, all ranks
};

Exchanges measure_exchanges(const Options& opt, int rank, int size) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const auto sizes = timed_sizes(opt);
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back().bytes);
  std::vector<unsigned char> send(max_bytes), from_left(max_bytes), from_right(max_bytes);

  Exchanges x;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int bytes = static_cast<int>(sizes[i].bytes);
    const unsigned char value = static_cast<unsigned char>(i % 256);
    const std::int64_t ll = sizes[i].loops;
    std::fill(send.begin(), send.begin() + bytes, value);
    // [0]: this rank's fastest loop; [1 + rep]: each repetition's loop. One MAX over ranks gives both rules.
    std::vector<double> seconds(1 + static_cast<std::size_t>(opt.repetitions));
    seconds[0] = 1e300;
    for (int rep = 0; rep < opt.repetitions; ++rep) {
      std::fill(from_left.begin(), from_left.begin() + bytes, static_cast<unsigned char>(~value));
      std::fill(from_right.begin(), from_right.begin() + bytes, static_cast<unsigned char>(~value));
      TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const double t0 = MPI_Wtime();
      for (std::int64_t k = 0; k < ll; ++k) {
        MPI_Request req[4];
        // tag 0 travels rightwards, tag 1 leftwards: distinct even when left == right
        TB_MPI_CHECK(MPI_Irecv(from_left.data(), bytes, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]));
        TB_MPI_CHECK(MPI_Irecv(from_right.data(), bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]));
        TB_MPI_CHECK(MPI_Isend(send.data(), bytes, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[2]));
        TB_MPI_CHECK(MPI_Isend(send.data(), bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[3]));
        TB_MPI_CHECK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
      }
      const double t = MPI_Wtime() - t0;
      seconds[0] = std::min(seconds[0], t);
      seconds[1 + static_cast<std::size_t>(rep)] = t;
      x.wrong += std::count_if(from_left.begin(), from_left.begin() + bytes, [&](unsigned char c) { return c != value; });
      x.wrong += std::count_if(from_right.begin(), from_right.begin() + bytes, [&](unsigned char c) { return c != value; });
    }
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                               MPI_COMM_WORLD));
    x.bytes.push_back(bytes);
    x.loop_seconds.push_back(seconds[0]);
    x.loop_lengths.push_back(ll);
    tb::Timing t;
    t.inner = static_cast<int>(ll);
    for (std::size_t r = 1; r < seconds.size(); ++r) t.seconds_per_op.push_back(seconds[r] / static_cast<double>(ll));
    x.timings.push_back(std::move(t));
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &x.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return x;
}

// Every rank sends itself one message of each timed size, all ranks at once, with the exchanges'
// loop lengths: per size the median over repetitions of the per-message time (each the MAX over
// ranks). Received bytes are checked as the exchanges' are (added to `wrong`).
tb::fpga::MeasuredCurve measure_self_messages(const Options& opt, int rank, long long& wrong) {
  const auto sizes = timed_sizes(opt);
  std::vector<unsigned char> send(static_cast<std::size_t>(sizes.back().bytes)), received(send.size());
  tb::fpga::MeasuredCurve curve;
  long long bad = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int bytes = static_cast<int>(sizes[i].bytes);
    const unsigned char value = static_cast<unsigned char>(i % 256);
    const std::int64_t ll = sizes[i].loops;
    std::fill(send.begin(), send.begin() + bytes, value);
    std::vector<double> seconds(static_cast<std::size_t>(opt.repetitions));
    for (double& s : seconds) {
      std::fill(received.begin(), received.begin() + bytes, static_cast<unsigned char>(~value));
      TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const double t0 = MPI_Wtime();
      for (std::int64_t k = 0; k < ll; ++k) {
        MPI_Request req[2];
        TB_MPI_CHECK(MPI_Irecv(received.data(), bytes, MPI_BYTE, rank, 2, MPI_COMM_WORLD, &req[0]));
        TB_MPI_CHECK(MPI_Isend(send.data(), bytes, MPI_BYTE, rank, 2, MPI_COMM_WORLD, &req[1]));
        TB_MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
      }
      s = (MPI_Wtime() - t0) / static_cast<double>(ll);
      bad += std::count_if(received.begin(), received.begin() + bytes, [&](unsigned char c) { return c != value; });
    }
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                               MPI_COMM_WORLD));
    curve.seconds_by_bytes.emplace_back(static_cast<double>(bytes), tb::Timing{.inner = static_cast<int>(ll), .seconds_per_op = seconds}.median());
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  wrong += bad;
  curve.check("tb-beff's self messages");
  return curve;
}

// The non-contiguous exchanges. Ranks in pairs (0-1, 2-3, ...; an odd last rank only waits), both
// ranks of a pair exchanging L bytes at once with MPI_Sendrecv: contiguous, with the send side a
// vector of B-byte blocks at stride 2B, and with the receive side such a vector, interleaved so
// that the three see the same machine. Per (B, L) and side: the median over repetitions (each the
// MAX over ranks) minus the contiguous median, never below 0: the extra time the library takes
// for a non-contiguous side on its real path. Every received byte is checked, and so are the gaps
// a vector receive must leave alone.
// Each timing is up to 1 MiB of exchanges back to back (--noncontiguous-timing loop). `single`
// times one exchange after a barrier instead, for comparison, with more repetitions (one exchange
// is noisier): below 1 MiB it gives a smaller extra, and the validation follows neither timing for
// both algorithms that pay it (docs/cost-model.md, the non-contiguous messages term).
constexpr int kNoncontiguousRepetitions = 5, kNoncontiguousSingleRepetitions = 9;
// The extra falls from 64-byte blocks to 1 KiB ones far faster than linearly in log(block), so the
// small block sizes are 4x apart (tb-model interpolates between the two around a block size).
constexpr std::int64_t kNoncontiguousBlocks[] = {64, 256, 1024, 16384, 262144};
// The sizes of the paired measurements (the node handoffs, the fresh and the cold messages), up to
// --pairs-max-bytes.
constexpr std::int64_t kPairSizes[] = {4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20};
// The non-contiguous exchanges' sizes: the paired ones with 2x steps up to 64 KiB, where the
// library's protocol changes from eager to rendezvous and the extra jumps.
constexpr std::int64_t kNoncontiguousSizes[] = {4096, 8192, 16384, 32768, 65536, 262144, 1 << 20, 4 << 20, 16 << 20};
constexpr std::int64_t kNoncontiguousLoopBytes = 1 << 20;  // loop: a small size loops up to this many bytes per timing

struct Noncontiguous {
  tb::fpga::NoncontiguousExtra send, recv;
};

enum Side { contiguous, vector_send, vector_receive };

// This rank's partner in the paired measurements (0-1, 2-3, ...); MPI_PROC_NULL for an odd last rank.
int pair_partner(int rank, int size) { return (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL; }

struct PairExchange {
  int partner = MPI_PROC_NULL;  // MPI_PROC_NULL: an odd last rank, which exchanges nothing
  std::vector<unsigned char> send, received, strided;  // strided: twice the largest size
  long long wrong = 0;
};

// Bytes of a vector receive (blocks of `block` at stride 2 * block) that differ from `value`, and
// gaps between them that differ from `gap`.
long long wrong_strided(const std::vector<unsigned char>& strided, std::int64_t bytes, std::int64_t block,
                        unsigned char value, unsigned char gap) {
  long long wrong = 0;
  for (std::int64_t i = 0; i < 2 * bytes; ++i) wrong += strided[static_cast<std::size_t>(i)] != ((i / block) % 2 ? gap : value);
  return wrong;
}

// Seconds per exchange of `bytes` with `side` non-contiguous (`vector`: blocks of `block` bytes),
// `loops` exchanges back to back.
double timed_exchange(PairExchange& x, std::int64_t bytes, std::int64_t block, MPI_Datatype vector, Side side,
                      std::int64_t loops) {
  const unsigned char value = static_cast<unsigned char>(side + 1), gap = 0xEE;
  std::fill(x.send.begin(), x.send.begin() + bytes, value);
  std::fill(x.received.begin(), x.received.begin() + bytes, gap);
  std::fill(x.strided.begin(), x.strided.begin() + 2 * bytes, side == vector_send ? value : gap);
  const bool send_vector = side == vector_send, receive_vector = side == vector_receive;
  const int count = static_cast<int>(bytes);
  TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const double t0 = MPI_Wtime();
  for (std::int64_t k = 0; k < loops; ++k)
    TB_MPI_CHECK(MPI_Sendrecv(send_vector ? x.strided.data() : x.send.data(), send_vector ? 1 : count,
                              send_vector ? vector : MPI_BYTE, x.partner, 3,
                              receive_vector ? x.strided.data() : x.received.data(), receive_vector ? 1 : count,
                              receive_vector ? vector : MPI_BYTE, x.partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  const double seconds = (MPI_Wtime() - t0) / static_cast<double>(loops);
  if (x.partner == MPI_PROC_NULL) return seconds;
  if (receive_vector)
    x.wrong += wrong_strided(x.strided, bytes, block, value, gap);
  else
    x.wrong += std::count_if(x.received.begin(), x.received.begin() + bytes, [&](unsigned char c) { return c != value; });
  return seconds;
}

// The three exchanges of one (block, bytes) point: the medians over repetitions, per side.
std::array<double, 3> exchange_medians(const Options& opt, PairExchange& x, std::int64_t bytes, std::int64_t block) {
  const bool loop = opt.noncontiguous_timing == "loop";
  const std::int64_t loops = loop ? std::max<std::int64_t>(1, kNoncontiguousLoopBytes / bytes) : 1;
  const int repetitions = loop ? kNoncontiguousRepetitions : kNoncontiguousSingleRepetitions;
  MPI_Datatype vector;
  TB_MPI_CHECK(MPI_Type_vector(static_cast<int>(bytes / block), static_cast<int>(block), static_cast<int>(2 * block),
                               MPI_BYTE, &vector));
  TB_MPI_CHECK(MPI_Type_commit(&vector));
  std::vector<double> seconds;  // repetition-major, three sides each
  for (int rep = 0; rep < repetitions; ++rep)
    for (Side side : {contiguous, vector_send, vector_receive})
      seconds.push_back(timed_exchange(x, bytes, block, vector, side, loops));
  TB_MPI_CHECK(MPI_Type_free(&vector));
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                             MPI_COMM_WORLD));
  std::array<double, 3> medians{};
  for (int side = 0; side < 3; ++side) {
    tb::Timing t{.inner = 1, .seconds_per_op = {}};
    for (int rep = 0; rep < repetitions; ++rep) t.seconds_per_op.push_back(seconds[static_cast<std::size_t>(3 * rep + side)]);
    medians[static_cast<std::size_t>(side)] = t.median();
  }
  return medians;
}

// The exchanges with `partner`: this rank's pair partner, or the rank itself (every rank at once:
// a self message, which the library copies on its own path rather than through another core).
Noncontiguous measure_noncontiguous(const Options& opt, int partner, const std::string& what, long long& wrong) {
  Noncontiguous n;
  PairExchange x;
  x.partner = partner;
  const auto largest = static_cast<std::size_t>(opt.pairs_max_bytes);
  x.send.resize(largest), x.received.resize(largest), x.strided.resize(2 * largest);
  for (std::int64_t block : kNoncontiguousBlocks) {
    tb::fpga::MeasuredCurve send, recv;
    for (std::int64_t bytes : kNoncontiguousSizes) {
      if (bytes < 4 * block || bytes > opt.pairs_max_bytes) continue;  // at least 4 blocks
      const auto m = exchange_medians(opt, x, bytes, block);
      send.seconds_by_bytes.emplace_back(static_cast<double>(bytes), std::max(0.0, m[vector_send] - m[contiguous]));
      recv.seconds_by_bytes.emplace_back(static_cast<double>(bytes), std::max(0.0, m[vector_receive] - m[contiguous]));
    }
    if (send.empty()) continue;  // no size of at least 4 such blocks within the largest
    n.send.by_block.emplace_back(static_cast<double>(block), std::move(send));
    n.recv.by_block.emplace_back(static_cast<double>(block), std::move(recv));
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &x.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  wrong += x.wrong;
  n.send.check("tb-beff's non-contiguous " + what + " sends");
  n.recv.check("tb-beff's non-contiguous " + what + " receives");
  return n;
}

// Needs a pair of ranks; on one rank nothing is measured (empty tables).
Noncontiguous measure_noncontiguous_pairs(const Options& opt, int rank, int size, long long& wrong) {
  return size < 2 ? Noncontiguous{} : measure_noncontiguous(opt, pair_partner(rank, size), "pair", wrong);
}

// Cold messages: ranks in pairs, every pair at once: MPI_Sendrecv of L bytes each way right after
// each rank wrote T bytes of a scratch array (other memory traffic between two uses of the
// message's buffers, as the rest of a call makes it), against the same exchange settled
// (settled_sendrecv_seconds). Cold self messages: the same with every rank exchanging with itself,
// all ranks at once (the library's own copy of a self part, its buffers out of cache as well).
// Per (T, L) the median over repetitions (each the MAX over ranks) of the first minus that of the
// second, never below 0. L: the paired sizes up to --pairs-max-bytes. Received bytes are checked.
constexpr int kColdRepetitions = 5;
constexpr std::int64_t kColdTraffic[] = {256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};

// Seconds of one MPI_Sendrecv of `bytes` each way with the partner; the slowest rank's.
double sendrecv_seconds(PairExchange& x, std::int64_t bytes) {
  const int count = static_cast<int>(bytes);
  TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double seconds = MPI_Wtime();
  TB_MPI_CHECK(MPI_Sendrecv(x.send.data(), count, MPI_BYTE, x.partner, 4, x.received.data(), count, MPI_BYTE,
                            x.partner, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  seconds = MPI_Wtime() - seconds;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return seconds;
}

// The baseline of the cold and fresh messages: the same exchange once it has settled, timed after
// kSettleExchanges untimed repeats. Right after its buffers were disturbed an exchange takes
// several repeats to come down to the steady time of the b_eff loops, whose medians are the
// message time the model adds these extras to; the first repeat alone still carries part of the
// extra.
constexpr int kSettleExchanges = 6;

double settled_sendrecv_seconds(PairExchange& x, std::int64_t bytes) {
  for (int k = 0; k < kSettleExchanges; ++k) sendrecv_seconds(x, bytes);
  return sendrecv_seconds(x, bytes);
}

// The cold exchanges with `partner`: this rank's pair partner, or the rank itself.
tb::fpga::ColdMessageExtra measure_cold(const Options& opt, int partner, const std::string& what, long long& wrong) {
  tb::fpga::ColdMessageExtra cold;
  PairExchange x;
  x.partner = partner;
  constexpr unsigned char value = 0x5A;
  const auto largest = static_cast<std::size_t>(opt.pairs_max_bytes);
  x.send.assign(largest, value), x.received.assign(largest, 0);
  std::vector<unsigned char> scratch(static_cast<std::size_t>(std::end(kColdTraffic)[-1]));
  for (std::int64_t traffic : kColdTraffic) {
    tb::fpga::MeasuredCurve curve;
    for (std::int64_t bytes : kPairSizes) {
      if (bytes > opt.pairs_max_bytes) break;
      tb::Timing after_traffic{.inner = 1, .seconds_per_op = {}}, again{.inner = 1, .seconds_per_op = {}};
      for (int rep = 0; rep < kColdRepetitions; ++rep) {
        std::fill(x.received.begin(), x.received.begin() + bytes, 0);  // before the traffic, which evicts it
        std::memset(scratch.data(), rep, static_cast<std::size_t>(traffic));
        asm volatile("" : : "r"(scratch.data()) : "memory");  // the writes happen: the scratch is never read
        after_traffic.seconds_per_op.push_back(sendrecv_seconds(x, bytes));
        if (x.partner != MPI_PROC_NULL)
          x.wrong += std::count_if(x.received.begin(), x.received.begin() + bytes, [](unsigned char c) { return c != value; });
        again.seconds_per_op.push_back(settled_sendrecv_seconds(x, bytes));
      }
      curve.seconds_by_bytes.emplace_back(static_cast<double>(bytes),
                                          std::max(0.0, after_traffic.median() - again.median()));
    }
    cold.table.by_block.emplace_back(static_cast<double>(traffic), std::move(curve));
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &x.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  wrong += x.wrong;
  cold.table.check("tb-beff's cold " + what + " messages");
  return cold;
}

// Needs a pair of ranks; on one rank nothing is measured (an empty table).
tb::fpga::ColdMessageExtra measure_cold_messages(const Options& opt, int rank, int size, long long& wrong) {
  return size < 2 ? tb::fpga::ColdMessageExtra{} : measure_cold(opt, pair_partner(rank, size), "pair", wrong);
}

// Fresh messages. Ranks in pairs exchange L bytes with MPI_Sendrecv right after each rewrote its
// send buffer (as pack_alltoallv and local_remap send what they have just packed), then the same
// exchange settled (settled_sendrecv_seconds), its buffer no longer fresh. Per L: the median of the first minus that
// of the second, never below 0: what the library's copy out of bytes the sender's core has just
// written costs beyond the measured message. The received bytes are checked.
constexpr int kFreshRepetitions = 7;

// Needs a pair of ranks; on one rank nothing is measured (an empty curve).
tb::fpga::MeasuredCurve measure_fresh_messages(const Options& opt, int rank, int size, long long& wrong) {
  tb::fpga::MeasuredCurve curve;
  if (size < 2) return curve;
  PairExchange x;
  x.partner = pair_partner(rank, size);
  const auto largest = static_cast<std::size_t>(opt.pairs_max_bytes);
  x.send.assign(largest, 0), x.received.assign(largest, 0);
  for (std::int64_t bytes : kPairSizes) {
    if (bytes > opt.pairs_max_bytes) break;
    tb::Timing fresh{.inner = 1, .seconds_per_op = {}}, again{.inner = 1, .seconds_per_op = {}};
    for (int rep = 0; rep < kFreshRepetitions; ++rep) {
      const auto value = static_cast<unsigned char>(1 + rep);  // a new value each time: every byte rewritten
      std::memset(x.send.data(), value, static_cast<std::size_t>(bytes));
      fresh.seconds_per_op.push_back(sendrecv_seconds(x, bytes));
      if (x.partner != MPI_PROC_NULL)
        x.wrong += std::count_if(x.received.begin(), x.received.begin() + bytes, [&](unsigned char c) { return c != value; });
      again.seconds_per_op.push_back(settled_sendrecv_seconds(x, bytes));
    }
    curve.seconds_by_bytes.emplace_back(static_cast<double>(bytes), std::max(0.0, fresh.median() - again.median()));
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &x.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  wrong += x.wrong;
  curve.check("tb-beff's fresh messages");
  return curve;
}

// The node handoffs. Ranks in pairs within a node (local ranks 0-1, 2-3, ...; a rank without a
// partner on its node only waits), every pair at once: each rank copies L bytes of its own into
// its slot of a window the pair shares, MPI_Barrier, and copies the partner's slot into a private
// array (node_leader's staged path); against the same two copies and barrier with the second copy
// reading the rank's own scratch. Per L (the non-contiguous exchanges' sizes): the median over
// repetitions (each the MAX over ranks) of the first minus that of the second, never below 0: the
// extra time of reading bytes another core has just written. The copied-out bytes are checked.
constexpr int kHandoffRepetitions = 9;

// The same in 64-byte pieces: the private side of both copies a vector of 64-byte blocks at a
// 128-byte stride, each block copied on its own (node_leader's copies of a vector type), against
// the same pieces in the rank's own memory. Each repetition times all four (contiguous and in
// pieces, handoff and own) one after another, so that the machine's state, which changes within
// seconds, weighs on both curves alike.
struct NodeHandoffs {
  tb::fpga::MeasuredCurve contiguous, pieces;
};

// Empty where no rank has a partner on its node.
NodeHandoffs measure_node_handoffs(const Options& opt, long long& wrong) {
  tb::NodePairs pairs(MPI_COMM_WORLD, opt.pairs_max_bytes);
  NodeHandoffs curves;
  const auto piece = static_cast<std::int64_t>(tb::fpga::HostMessage::kHandoffPieceBytes);
  for (std::int64_t bytes : kPairSizes) {
    if (!pairs.any() || bytes > opt.pairs_max_bytes) break;
    tb::Timing handoff[2] = {{.inner = 1, .seconds_per_op = {}}, {.inner = 1, .seconds_per_op = {}}};  // [1]: in pieces
    tb::Timing own[2] = {handoff[0], handoff[1]};
    for (int rep = 0; rep < kHandoffRepetitions; ++rep)
      for (int k : {0, 1}) {
        handoff[k].seconds_per_op.push_back(pairs.handoff(bytes, k * piece));
        own[k].seconds_per_op.push_back(pairs.own(bytes, k * piece));
      }
    for (int k : {0, 1})
      (k == 0 ? curves.contiguous : curves.pieces)
          .seconds_by_bytes.emplace_back(static_cast<double>(bytes),
                                         std::max(0.0, handoff[k].median() - own[k].median()));
  }
  wrong += pairs.wrong();
  curves.contiguous.check("tb-beff's node handoffs");
  curves.pieces.check("tb-beff's node handoffs in pieces");
  return curves;
}

// The zero-copy gets: ranks in pairs (0-1, 2-3, ...; a rank without a partner only waits), every
// pair at once, on ucx_zcopy's UCX state for MPI_COMM_WORLD: each rank gets L bytes at a time from
// its partner's registered array into its own, k gets issued back to back (k = 1 MiB / L, between
// 1 and 256), then waits for them and for every rank's, as one ucx_zcopy call does. Per L (64 B to
// 16 MiB in steps of 4x, up to --pairs-max-bytes): the median over repetitions (each the MAX over
// ranks) of the seconds per get. The bytes got are checked. Empty without UCX or a pair.
constexpr int kGetRepetitions = 5;
constexpr std::int64_t kGetSizes[] = {64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20};
constexpr std::int64_t kGetLoopBytes = 1 << 20;
constexpr std::int64_t kMostGetsPerTiming = 256;

#if TB_HAVE_UCX
tb::fpga::MeasuredCurve measure_gets(const Options& opt, int rank, int size, long long& wrong) {
  tb::fpga::MeasuredCurve curve;
  if (size < 2) return curve;
  const int partner = pair_partner(rank, size);
  const auto largest = static_cast<std::size_t>(opt.pairs_max_bytes);
  std::vector<std::byte> mine(largest, static_cast<std::byte>(1 + (rank & 1))), into(largest);
  const auto expected = static_cast<std::byte>(1 + ((rank ^ 1) & 1));  // the partner's bytes
  long long bad = 0;
  for (std::int64_t bytes : kGetSizes) {
    if (bytes > opt.pairs_max_bytes) break;
    const int gets = static_cast<int>(std::clamp<std::int64_t>(kGetLoopBytes / bytes, 1, kMostGetsPerTiming));
    tb::Timing timing{.inner = gets, .seconds_per_op = {}};
    for (int rep = 0; rep < kGetRepetitions; ++rep) {
      std::fill(into.begin(), into.begin() + bytes, std::byte{0});
      double seconds = tb::ucx_zcopy_time_gets(MPI_COMM_WORLD, partner, mine, into, bytes, gets);
      TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
      timing.seconds_per_op.push_back(seconds);
      if (partner != MPI_PROC_NULL)
        bad += std::count_if(into.begin(), into.begin() + bytes, [&](std::byte b) { return b != expected; });
    }
    curve.seconds_by_bytes.emplace_back(static_cast<double>(bytes), timing.median());
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  wrong += bad;
  curve.check("tb-beff's zero-copy gets");
  return curve;
}
#else
tb::fpga::MeasuredCurve measure_gets(const Options&, int, int, long long&) { return {}; }
#endif

// b_eff with the loop lengths actually run (they differ from the rules' only with --loop-divisor),
// the Hockney fit of one exchange, and the host's message model.
struct Beff {
  tb::fpga::BeffResult result;
  tb::fpga::Hockney exchange;
  tb::fpga::HostMessage host;
};

// One message's time per timed size: the exchange's median over repetitions (each the MAX over
// ranks), halved: an exchange sends two messages and receives two per rank, one after another in
// the host model (the same halving as the fit's alpha and beta).
tb::fpga::MeasuredCurve measured_messages(const Exchanges& x) {
  tb::fpga::MeasuredCurve curve;
  for (std::size_t i = 0; i < x.bytes.size(); ++i)
    curve.seconds_by_bytes.emplace_back(static_cast<double>(x.bytes[i]), x.timings[i].median() / 2.0);
  curve.check("tb-beff's measured messages");
  return curve;
}

Beff evaluate(const Options& opt, int size, const Exchanges& x) {
  Beff b;
  const std::size_t beff_count = tb::fpga::beff_sizes(opt.rules).size();  // the timed sizes b_eff counts
  b.result = tb::fpga::beff_from_times(size, opt.rules, {x.loop_seconds.begin(), x.loop_seconds.begin() + beff_count});
  double sum = 0.0;
  std::vector<std::pair<double, double>> fit_points;
  for (std::size_t i = 0; i < b.result.points.size(); ++i) {
    auto& p = b.result.points[i];
    p.loop_length = x.loop_lengths[i];
    p.bandwidth_bytes_per_s = 2.0 * size * static_cast<double>(p.bytes) * static_cast<double>(p.loop_length) / p.seconds;
    sum += p.bandwidth_bytes_per_s;
    fit_points.emplace_back(static_cast<double>(p.bytes), p.seconds / static_cast<double>(p.loop_length));
  }
  b.result.beff_bytes_per_s = sum / static_cast<double>(b.result.points.size());
  // One exchange sends and receives 2 messages per rank: the host model's 2 alpha + 2 L beta.
  b.exchange = tb::fpga::Hockney::fit(fit_points);
  b.host.fit = {std::max(0.0, b.exchange.alpha_s / 2.0), b.exchange.beta_s_per_byte / 2.0};
  b.host.measured = measured_messages(x);
  return b;
}

// The library's datatype engine: MPI_Pack of vectors of 64-byte and of 1 KiB blocks (stride 2x)
// at several totals; per total the two block sizes give bandwidth and cost per block. Every
// rank measures at once (as the ranks of a collective pack at once); rank 0's figures are kept.
// Each time is the median of 5 runs, as the validation's measured points are medians.
tb::fpga::MemoryModel measure_pack() {
  tb::fpga::MemoryModel library;
  std::vector<char> src(2 * (std::size_t{16} << 20), 1), packed(std::size_t{16} << 20);
  for (int total = 64 << 10; total <= (16 << 20); total *= 4) {
    double t[2];
    const int block[2] = {64, 1024};
    for (int k = 0; k < 2; ++k) {
      MPI_Datatype v;
      TB_MPI_CHECK(MPI_Type_vector(total / block[k], block[k], 2 * block[k], MPI_BYTE, &v));
      TB_MPI_CHECK(MPI_Type_commit(&v));
      std::vector<double> seconds;
      for (int r = 0; r < 5; ++r) {
        int pos = 0;
        TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        const double t0 = MPI_Wtime();
        TB_MPI_CHECK(MPI_Pack(src.data(), 1, v, packed.data(), total, &pos, MPI_COMM_SELF));
        seconds.push_back(MPI_Wtime() - t0);
      }
      t[k] = tb::Timing{.inner = 1, .seconds_per_op = std::move(seconds)}.median();
      MPI_Type_free(&v);
    }
    const double blocks64 = total / 64.0, blocks1k = total / 1024.0;
    const double per_block = std::max(0.0, (t[0] - t[1]) / (blocks64 - blocks1k));
    const double bandwidth = total / std::max(1e-12, t[1] - blocks1k * per_block);
    library.bandwidth_by_bytes.emplace_back(static_cast<double>(total), bandwidth);
    library.per_block_s = per_block;  // the largest total's: out of cache, as large calls are
    library.copy_bandwidth_bytes_per_s = bandwidth;
  }
  return library;
}

// The machine's states around the run (the cross-core handoff, the vector path), where probed.
void print_states(const nlohmann::json& meta) {
  if (const std::string state = tb::cross_core_handoff_text(meta); !state.empty()) std::printf("  at the start: %s\n", state.c_str());
  const nlohmann::json after = {{"cross_core_handoff", meta["cross_core_handoff_after"]}};
  if (const std::string state = tb::cross_core_handoff_text(after); !state.empty()) std::printf("  at the end: %s\n", state.c_str());
  if (const std::string state = tb::vector_path_text(meta); !state.empty())
    std::printf("  before the non-contiguous exchanges: %s\n", state.c_str());
  const nlohmann::json vector_after = {{"vector_path", meta["vector_path_after"]}};
  if (const std::string state = tb::vector_path_text(vector_after); !state.empty())
    std::printf("  after them: %s\n", state.c_str());
}

// b_eff's table and result, and the Hockney fit of the exchanges.
void print_beff(int size, const Exchanges& x, const Beff& b) {
  std::printf("  %10s %10s %14s %14s %16s\n", "bytes", "loops", "time s", "b(L) GB/s", "per rank GB/s");
  for (const auto& p : b.result.points)
    std::printf("  %10lld %10lld %14.6f %14.4f %16.4f\n", static_cast<long long>(p.bytes),
                static_cast<long long>(p.loop_length), p.seconds, p.bandwidth_bytes_per_s / 1e9,
                p.bandwidth_bytes_per_s / 1e9 / size);
  std::printf("  b_eff = %.4f GB/s (%.4f GB/s per rank); validation: %s (%lld wrong bytes)\n",
              b.result.beff_bytes_per_s / 1e9, b.result.per_rank_bytes_per_s() / 1e9, x.wrong == 0 ? "passed" : "FAILED",
              x.wrong);
  std::printf("  Hockney fit of one exchange: %.3f us + L / %.3f GB/s -> host model alpha %.3f us, %.3f GB/s\n",
              b.exchange.alpha_s * 1e6, b.exchange.bandwidth_bytes_per_s() / 1e9, b.host.fit.alpha_s * 1e6,
              b.host.fit.bandwidth_bytes_per_s() / 1e9);
}

// " (extrapolated)" after a value the report reads at `bytes` beyond --pairs-max-bytes: the paired
// measurements stop there, and the value is the curve carried on past its largest size, not a
// measurement (the network file holds only the measured sizes).
const char* extrapolated(const Options& opt, std::int64_t bytes) {
  return bytes > opt.pairs_max_bytes ? " (extrapolated)" : "";
}

// Each measured curve of the host model, at one or two sizes, or why it was not measured.
void print_measured_terms(const Options& opt, const Beff& b, const tb::fpga::MemoryModel& library) {
  constexpr std::int64_t k64 = 64 << 10, k1m = 1 << 20;  // the sizes the paired terms are shown at
  const auto x = [&](std::int64_t bytes) { return extrapolated(opt, bytes); };
  const auto& curve = b.host.measured.seconds_by_bytes;
  std::printf("  measured messages (exchange median / 2), %zu sizes: %.3f us at %.0f B .. %.3f us at %.0f B "
              "(%zu beyond b_eff's, to --messages-max-bytes)\n",
              curve.size(), curve.front().second * 1e6, curve.front().first, curve.back().second * 1e6,
              curve.back().first, curve.size() - b.result.points.size());
  const auto& self = b.host.self_measured.seconds_by_bytes;
  std::printf("  self messages (every rank to itself at once, median), %zu sizes: %.3f us at %.0f B .. %.3f us at %.0f B\n",
              self.size(), self.front().second * 1e6, self.front().first, self.back().second * 1e6, self.back().first);
  if (opt.pairs_max_bytes < k1m)
    std::printf("  paired measurements up to --pairs-max-bytes %lld B: values at larger sizes below are extrapolated\n",
                static_cast<long long>(opt.pairs_max_bytes));
  if (b.host.send_extra.empty())
    std::printf("  non-contiguous messages: not measured (they need a pair of ranks)\n");
  else
    std::printf("  non-contiguous messages (extra over contiguous, median, %s), 64 KiB in 64 B blocks: sent %.1f us%s; "
                "1 MiB in 64 B / 256 KiB blocks: sent %.1f / %.1f us, received %.1f / %.1f us%s\n",
                opt.noncontiguous_timing == "loop" ? "exchanges back to back" : "one exchange per barrier",
                b.host.send_extra.extra_s(k64, 64) * 1e6, x(k64), b.host.send_extra.extra_s(k1m, 64) * 1e6,
                b.host.send_extra.extra_s(k1m, 262144) * 1e6, b.host.recv_extra.extra_s(k1m, 64) * 1e6,
                b.host.recv_extra.extra_s(k1m, 262144) * 1e6, x(k1m));
  std::printf("  non-contiguous self messages (every rank to itself at once, extra over contiguous, median), 1 MiB "
              "in 64 B / 256 KiB blocks: sent %.1f / %.1f us, received %.1f / %.1f us%s\n",
              b.host.self_send_extra.extra_s(k1m, 64) * 1e6, b.host.self_send_extra.extra_s(k1m, 262144) * 1e6,
              b.host.self_recv_extra.extra_s(k1m, 64) * 1e6, b.host.self_recv_extra.extra_s(k1m, 262144) * 1e6, x(k1m));
  if (b.host.node_handoff.empty())
    std::printf("  node handoffs: not measured (they need two ranks on one node)\n");
  else
    std::printf("  node handoffs (copy out of a partner's fresh bytes, extra over own bytes, median): "
                "64 KiB %.2f us%s, 1 MiB %.2f us%s; in 64-byte pieces %.2f us%s, %.2f us%s\n",
                b.host.node_handoff_s(k64) * 1e6, x(k64), b.host.node_handoff_s(k1m) * 1e6, x(k1m),
                b.host.node_handoff_s(k64, k64) * 1e6, x(k64), b.host.node_handoff_s(k1m, k1m) * 1e6, x(k1m));
  if (b.host.fresh.empty())
    std::printf("  fresh messages: not measured (they need a pair of ranks)\n");
  else
    std::printf("  fresh messages (extra of a message just written by its sender, median): 64 KiB %.2f us%s, "
                "1 MiB %.2f us%s\n",
                b.host.fresh_message_s(k64) * 1e6, x(k64), b.host.fresh_message_s(k1m) * 1e6, x(k1m));
  if (b.host.gets.empty())
    std::printf("  zero-copy gets: not measured (they need UCX and a pair of ranks)\n");
  else
    std::printf("  zero-copy gets (ucx_zcopy's UCX gets in pairs, per get, median): 64 KiB %.2f us%s, "
                "1 MiB %.2f us%s\n",
                b.host.gets.time_s(k64) * 1e6, x(k64), b.host.gets.time_s(k1m) * 1e6, x(k1m));
  if (b.host.cold.empty())
    std::printf("  cold messages: not measured (they need a pair of ranks)\n");
  else
    std::printf("  cold messages (extra after other memory traffic, median), 1 MiB after 1 / 64 MiB: "
                "%.1f / %.1f us%s\n",
                b.host.cold.extra_s(k1m, k1m) * 1e6, b.host.cold.extra_s(k1m, 64 << 20) * 1e6, x(k1m));
  std::printf("  cold self messages (every rank to itself at once, extra after other memory traffic, median), "
              "1 MiB after 1 / 64 MiB: %.1f / %.1f us%s\n",
              b.host.self_cold.extra_s(k1m, k1m) * 1e6, b.host.self_cold.extra_s(k1m, 64 << 20) * 1e6, x(k1m));
  std::printf("  MPI_Pack (the library's datatype engine): %.3f GB/s + %.2f ns per block\n",
              library.copy_bandwidth_bytes_per_s / 1e9, library.per_block_s * 1e9);
}

void print_report(const Options& opt, int size, const nlohmann::json& meta, const Exchanges& x, const Beff& b,
                  const tb::fpga::MemoryModel& library) {
  std::printf("tb-beff  %d ranks in a ring (%s), sizes 2^0..2^%d, %d repetitions%s\n", size,
              meta["mpi_library"].get<std::string>().c_str(), opt.rules.max_exponent, opt.repetitions,
              opt.loop_divisor > 1 ? (", loop lengths / " + std::to_string(opt.loop_divisor)).c_str() : "");
  print_states(meta);
  print_beff(size, x, b);
  print_measured_terms(opt, b, library);
}

// One row per message size: b_eff's point (loop seconds by its rule, b(L)), the testbed's timing
// keys per exchange, and the run's b_eff, validation and fit.
nlohmann::json result_rows(const Options& opt, int size, const Exchanges& x, const Beff& b) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < b.result.points.size(); ++i) {
    const auto& p = b.result.points[i];
    nlohmann::json row = {{"tool", "tb-beff"}, {"ranks", size}, {"bytes", p.bytes}, {"loop_length", p.loop_length},
                          {"seconds", p.seconds}, {"bandwidth_bytes_per_s", p.bandwidth_bytes_per_s},
                          {"beff_bytes_per_s", b.result.beff_bytes_per_s},
                          {"beff_per_rank_bytes_per_s", b.result.per_rank_bytes_per_s()},
                          {"validated", x.wrong == 0}, {"verified", x.wrong == 0}, {"repetitions", opt.repetitions},
                          {"loop_divisor", opt.loop_divisor}, {"exchange_fit", b.exchange}};
    row.update(tb::timing_fields(x.timings[i], true));
    rows.push_back(std::move(row));
  }
  return rows;
}

void write_fit(const std::string& path, int size, const nlohmann::json& meta, const Beff& b,
               const tb::fpga::MemoryModel& library) {
  std::ofstream f(path);
  f << nlohmann::json{{"name", "host-calibrated"},
                      {"comment", "tb-beff exchanges on this machine: Hockney fit (alpha and beta per message) and "
                                  "message_seconds_by_bytes (each size's exchange median / 2; b_eff's sizes, then "
                                  "2x steps up to --messages-max-bytes), "
                                  "self_message_seconds_by_bytes (each such size's self exchange median), "
                                  "noncontiguous_{send,recv}_extra_seconds (per block size, a paired exchange's "
                                  "median with that side a vector minus its contiguous median), "
                                  "self_noncontiguous_{send,recv}_extra_seconds (the same, every rank exchanging "
                                  "with itself), "
                                  "node_handoff_extra_seconds_by_bytes (a copy out of a node partner's fresh bytes "
                                  "minus a copy of the rank's own), "
                                  "node_handoff_piece_extra_seconds_by_bytes (the same with the private side in "
                                  "64-byte pieces), "
                                  "fresh_message_extra_seconds_by_bytes (a paired exchange's median right after each "
                                  "rank rewrote its send buffer minus its median settled, after " + std::to_string(kSettleExchanges) +
                                      " repeats), "
                                  "get_seconds_by_bytes (ucx_zcopy's UCX gets in pairs, per get), "
                                  "cold_message_extra_seconds (per traffic size, a paired exchange's median after that "
                                  "much other memory traffic minus its median settled, after " + std::to_string(kSettleExchanges) +
                                      " repeats), "
                                  "cold_self_message_extra_seconds (the same, every rank exchanging with itself)"},
                      {"kind", "host"},
                      {"host", b.host},
                      {"library", library},
                      {"calibration", {{"ranks", size}, {"mpi_library", meta["mpi_library"]},
                                       {"timestamp_utc", meta["timestamp_utc"]}, {"git_commit", meta["git_commit"]},
                                       {"cross_core_handoff", meta["cross_core_handoff"]},
                                       {"cross_core_handoff_after", meta["cross_core_handoff_after"]},
                                       {"vector_path", meta["vector_path"]},
                                       {"noncontiguous_timing", meta["noncontiguous_timing"]},
                                       {"vector_path_after", meta["vector_path_after"]}}}}
           .dump(2)
    << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

int run(const Options& opt) {
  int rank = 0, size = 1;
  TB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  nlohmann::json meta = tb::run_metadata(MPI_COMM_WORLD);  // before the measurements: the state they start in
  Exchanges x = measure_exchanges(opt, rank, size);
  Beff b = evaluate(opt, size, x);
  b.host.self_measured = measure_self_messages(opt, rank, x.wrong);
  meta["vector_path"] = tb::vector_path(MPI_COMM_WORLD);  // the library's vector path around its extras
  meta["noncontiguous_timing"] = opt.noncontiguous_timing;
  const Noncontiguous noncontiguous = measure_noncontiguous_pairs(opt, rank, size, x.wrong);
  meta["vector_path_after"] = tb::vector_path(MPI_COMM_WORLD);
  b.host.send_extra = noncontiguous.send;
  b.host.recv_extra = noncontiguous.recv;
  const Noncontiguous self = measure_noncontiguous(opt, rank, "self", x.wrong);
  b.host.self_send_extra = self.send;
  b.host.self_recv_extra = self.recv;
  auto handoffs = measure_node_handoffs(opt, x.wrong);
  b.host.node_handoff = std::move(handoffs.contiguous);
  b.host.node_handoff_pieces = std::move(handoffs.pieces);
  b.host.fresh = measure_fresh_messages(opt, rank, size, x.wrong);
  b.host.gets = measure_gets(opt, rank, size, x.wrong);
  b.host.cold = measure_cold_messages(opt, rank, size, x.wrong);
  b.host.self_cold = measure_cold(opt, rank, "self", x.wrong);
  const tb::fpga::MemoryModel library = measure_pack();
  meta["cross_core_handoff_after"] = tb::cross_core_handoff(MPI_COMM_WORLD);  // the state they end in
  if (rank == 0) {
    print_report(opt, size, meta, x, b, library);
    if (!opt.json.empty()) tb::write_results_json(opt.json, meta, result_rows(opt, size, x, b));
    if (!opt.fit_out.empty()) write_fit(opt.fit_out, size, meta, b, library);
  }
  return x.wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"b_eff over MPI with HPCC FPGA's rules (ring, both neighbours, 2^0..2^20 bytes)"};
  app.add_option("--max-exponent", opt.rules.max_exponent, "largest message 2^max bytes")->capture_default_str()->check(CLI::Range(0, 30));
  // Bounded so that a typo cannot start a run of days: the default loop length is 2^16 exchanges.
  app.add_option("-u", opt.rules.u, "loop length u")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("-l", opt.rules.l, "loop length floor l")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("-o", opt.rules.o, "exponent o up to which the loop length is u")
      ->capture_default_str()
      ->check(CLI::Range(0, 30));
  app.add_option("-d", opt.rules.d, "loop length steps d")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--repetitions", opt.repetitions, "repetitions per size (minimum taken)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--loop-divisor", opt.loop_divisor, "divide every loop length (quick runs; the output says so)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--pairs-max-bytes", opt.pairs_max_bytes,
                 "largest size of the paired measurements, the non-contiguous exchanges, the node handoffs, the "
                 "fresh messages, the zero-copy gets and the cold messages and self messages (sizes up to 16 MiB in steps "
                 "of 4x, up to it)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{4096}, std::int64_t{16} << 20));
  const CLI::Option* messages_max =
      app.add_option("--messages-max-bytes", opt.messages_max_bytes,
                     "largest size of the measured message curves (--fit-out's host.message_seconds_by_bytes and "
                     "host.self_message_seconds_by_bytes), at least b_eff's 2^max: beyond it they go on in steps "
                     "of 2x up to this, outside b_eff")
          ->capture_default_str()
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  app.add_option("--noncontiguous-timing", opt.noncontiguous_timing,
                 "the non-contiguous exchanges' timings: loop (up to 1 MiB of exchanges back to back) or single "
                 "(one exchange after a barrier; for comparison)")
      ->capture_default_str()
      ->check(CLI::IsMember({"single", "loop"}));
  app.add_option("--json", opt.json, "write the table, b_eff and metadata as JSON (rank 0)");
  app.add_option("--fit-out", opt.fit_out, "write the fitted host network for tb-model (rank 0)");
  return tb::mpi_tool_main(
      argc, argv, "tb-beff", app, [&] { validate(opt, messages_max->count() > 0); }, [&] { return run(opt); });
}
