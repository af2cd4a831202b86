#include "microbench/machine_state.hpp"

#include "collectives/mpi_error.hpp"
#include "microbench/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace tb {

NodePairs::NodePairs(MPI_Comm comm, std::int64_t largest, bool first_pair_only) : comm_(comm), largest_(largest) {
  if (largest < 1) throw std::invalid_argument("NodePairs: a slot needs at least one byte");
  MPI_Comm node = MPI_COMM_NULL;
  int local = 0, on_node = 1;
  TB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  TB_MPI_CHECK(MPI_Comm_rank(node, &local));
  TB_MPI_CHECK(MPI_Comm_size(node, &on_node));
  const bool paired = (local ^ 1) < on_node && (!first_pair_only || local < 2);
  const int split = MPI_Comm_split(node, paired ? local / 2 : MPI_UNDEFINED, local, &pair_);
  MPI_Comm_free(&node);
  TB_MPI_CHECK(split);
  int mine = paired ? 1 : 0;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MAX, comm));
  any_ = mine != 0;
  if (pair_ == MPI_COMM_NULL) return;
  TB_MPI_CHECK(MPI_Comm_rank(pair_, &mine));
  TB_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(largest), 1, MPI_INFO_NULL, pair_, &slot_, &window_));
  TB_MPI_CHECK(MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN));  // failures reach TB_MPI_CHECK
  MPI_Aint size = 0;
  int unit = 0;
  TB_MPI_CHECK(MPI_Win_shared_query(window_, 1 - mine, &size, &unit, &partner_slot_));
  const auto n = static_cast<std::size_t>(largest);
  own_.assign(2 * n, static_cast<unsigned char>(1 + mine));
  partner_byte_ = static_cast<unsigned char>(2 - mine);
  received_.assign(2 * n, 0);
  scratch_.assign(n, 0);
}

NodePairs::~NodePairs() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || std::uncaught_exceptions() > 0) return;  // see the class comment
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (pair_ != MPI_COMM_NULL) MPI_Comm_free(&pair_);
}

namespace {

// Copies `bytes` between a contiguous side and a side that is contiguous (piece 0) or a vector of
// `piece`-byte blocks at stride 2 * piece, block by block.
void copy_pieces(unsigned char* to, const unsigned char* from, std::int64_t bytes, std::int64_t piece, bool vector_to) {
  if (piece <= 0) {
    std::memcpy(to, from, static_cast<std::size_t>(bytes));
    return;
  }
  const std::int64_t to_stride = vector_to ? 2 * piece : piece, from_stride = vector_to ? piece : 2 * piece;
  for (std::int64_t b = 0; b < bytes / piece; ++b)
    std::memcpy(to + b * to_stride, from + b * from_stride, static_cast<std::size_t>(piece));
}

}  // namespace

double NodePairs::copy_barrier_copy(unsigned char* to, const unsigned char* from, std::int64_t bytes, std::int64_t piece,
                                    unsigned char expected) {
  if (bytes < 1 || bytes > largest_)
    throw std::invalid_argument("NodePairs: " + std::to_string(bytes) + " bytes do not fit the slots of " +
                                std::to_string(largest_));
  if (piece < 0 || (piece > 0 && bytes % piece != 0))
    throw std::invalid_argument("NodePairs: " + std::to_string(bytes) + " bytes are not whole pieces of " +
                                std::to_string(piece));
  TB_MPI_CHECK(MPI_Barrier(comm_));
  double seconds = MPI_Wtime();
  if (pair_ != MPI_COMM_NULL) copy_pieces(to, own_.data(), bytes, piece, false);
  TB_MPI_CHECK(MPI_Barrier(comm_));
  if (pair_ != MPI_COMM_NULL) copy_pieces(received_.data(), from, bytes, piece, true);
  seconds = MPI_Wtime() - seconds;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm_));
  // Read back, so that no copy is dead code the compiler may drop.
  if (pair_ != MPI_COMM_NULL) {
    const std::int64_t stride = piece > 0 ? 2 * piece : bytes, length = piece > 0 ? piece : bytes;
    for (std::int64_t at = 0; at < (piece > 0 ? 2 * bytes : bytes); at += stride)
      wrong_ += std::count_if(received_.begin() + at, received_.begin() + at + length,
                              [&](unsigned char c) { return c != expected; });
  }
  return seconds;
}

double NodePairs::handoff(std::int64_t bytes, std::int64_t piece) {
  return copy_barrier_copy(slot_, partner_slot_, bytes, piece, partner_byte_);
}

double NodePairs::own(std::int64_t bytes, std::int64_t piece) {
  return copy_barrier_copy(scratch_.data(), scratch_.data(), bytes, piece, own_.empty() ? 0 : own_[0]);
}

long long NodePairs::wrong() {
  long long total = wrong_;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_LONG_LONG, MPI_SUM, comm_));
  return total;
}

namespace {

constexpr std::int64_t kHandoffBytes = 1 << 20;
constexpr int kRepetitions = 5;

}  // namespace

HandoffProbe::HandoffProbe(MPI_Comm comm) {
#if defined(TB_SMPI)
  (void)comm;  // SMPI's shared windows are the simulator's, not the host's caches
#else
  pairs_ = std::make_unique<NodePairs>(comm, kHandoffBytes, /*first_pair_only=*/true);
  if (!pairs_->any()) pairs_.reset();
#endif
}

HandoffProbe::~HandoffProbe() = default;

nlohmann::json HandoffProbe::measure() {
  if (!pairs_) return nullptr;
  Timing handoff{.inner = 1, .seconds_per_op = {}}, own{.inner = 1, .seconds_per_op = {}};
  for (int rep = 0; rep < kRepetitions; ++rep) {
    handoff.seconds_per_op.push_back(pairs_->handoff(kHandoffBytes));
    own.seconds_per_op.push_back(pairs_->own(kHandoffBytes));
  }
  if (pairs_->wrong() != 0) throw std::logic_error("cross_core_handoff: a copy did not deliver the bytes it copied");
  return {{"bytes", kHandoffBytes}, {"handoff_us", handoff.median() * 1e6}, {"private_us", own.median() * 1e6},
          {"ratio", handoff.median() / own.median()}};
}

nlohmann::json cross_core_handoff(MPI_Comm comm) { return HandoffProbe(comm).measure(); }

double handoff_ratio(const nlohmann::json& state) { return state.is_object() ? state.at("ratio").get<double>() : -1.0; }

std::string cross_core_handoff_text(const nlohmann::json& metadata) {
  const auto found = metadata.find("cross_core_handoff");
  if (found == metadata.end() || found->is_null()) return {};
  const nlohmann::json& h = *found;
  const double ratio = h.at("ratio").get<double>();
  char text[160];
  std::snprintf(text, sizeof text, "cross-core handoff of %.0f MiB: %.0f us, %.0f us within a core (%.1fx)%s",
                h.at("bytes").get<double>() / (1 << 20), h.at("handoff_us").get<double>(),
                h.at("private_us").get<double>(), ratio, ratio > kSlowHandoffRatio ? " SLOW STATE" : "");
  return text;
}

}  // namespace tb
