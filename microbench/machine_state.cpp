#include "microbench/machine_state.hpp"

#include "collectives/mpi_error.hpp"
#include "microbench/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace tb {

namespace {

// The ranks of each node of comm in pairs, node ranks 0-1, 2-3, ... (with `first_pair_only`, only
// 0-1): this rank's pair communicator (MPI_COMM_NULL: no partner) and whether any rank of comm
// has one. Collective over comm.
std::pair<MPI_Comm, bool> split_node_pairs(MPI_Comm comm, bool first_pair_only) {
  MPI_Comm node = MPI_COMM_NULL, pair = MPI_COMM_NULL;
  int local = 0, on_node = 1;
  TB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  TB_MPI_CHECK(MPI_Comm_rank(node, &local));
  TB_MPI_CHECK(MPI_Comm_size(node, &on_node));
  const bool paired = (local ^ 1) < on_node && (!first_pair_only || local < 2);
  const int split = MPI_Comm_split(node, paired ? local / 2 : MPI_UNDEFINED, local, &pair);
  MPI_Comm_free(&node);
  TB_MPI_CHECK(split);
  int any = paired ? 1 : 0;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm));
  return {pair, any != 0};
}

// Whether a destructor may free its MPI objects: not after MPI_Finalize, and not while an
// exception unwinds (a partner may wait in another collective: the tool aborts instead).
bool may_free_mpi_objects() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return !finalized && std::uncaught_exceptions() == 0;
}

}  // namespace

NodePairs::NodePairs(MPI_Comm comm, std::int64_t largest, bool first_pair_only) : comm_(comm), largest_(largest) {
  if (largest < 1) throw std::invalid_argument("NodePairs: a slot needs at least one byte");
  std::tie(pair_, any_) = split_node_pairs(comm, first_pair_only);
  if (pair_ == MPI_COMM_NULL) return;
  int mine = 0;
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
  if (!may_free_mpi_objects()) return;  // see the class comment
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

namespace {

constexpr std::int64_t kVectorBytes = 65536, kVectorBlock = 1024;
constexpr int kVectorLoops = 16;  // exchanges back to back per timing

}  // namespace

VectorPathProbe::VectorPathProbe(MPI_Comm comm) : comm_(comm) {
#if !defined(TB_SMPI)  // under SMPI the simulator moves the bytes, not the host's library
  std::tie(pair_, any_) = split_node_pairs(comm, /*first_pair_only=*/true);
  if (pair_ == MPI_COMM_NULL) return;
  int mine = 0;
  TB_MPI_CHECK(MPI_Comm_rank(pair_, &mine));
  partner_ = 1 - mine;
  send_.assign(kVectorBytes, 1);
  strided_.resize(2 * kVectorBytes);
  for (std::size_t i = 0; i < strided_.size(); ++i) strided_[i] = (i / kVectorBlock) % 2 ? 0 : 1;  // blocks sent: 1
  received_.assign(kVectorBytes, 0);
  TB_MPI_CHECK(MPI_Type_vector(kVectorBytes / kVectorBlock, kVectorBlock, 2 * kVectorBlock, MPI_BYTE, &vector_));
  TB_MPI_CHECK(MPI_Type_commit(&vector_));
#endif
}

VectorPathProbe::~VectorPathProbe() {
  if (!may_free_mpi_objects()) return;  // as NodePairs
  if (vector_ != MPI_DATATYPE_NULL) MPI_Type_free(&vector_);
  if (pair_ != MPI_COMM_NULL) MPI_Comm_free(&pair_);
}

double VectorPathProbe::exchange(bool vector) {
  TB_MPI_CHECK(MPI_Barrier(comm_));
  double seconds = MPI_Wtime();
  if (pair_ != MPI_COMM_NULL)
    for (int k = 0; k < kVectorLoops; ++k)
      TB_MPI_CHECK(MPI_Sendrecv(vector ? strided_.data() : send_.data(), vector ? 1 : static_cast<int>(kVectorBytes),
                                vector ? vector_ : MPI_BYTE, partner_, 0, received_.data(),
                                static_cast<int>(kVectorBytes), MPI_BYTE, partner_, 0, pair_, MPI_STATUS_IGNORE));
  seconds = (MPI_Wtime() - seconds) / kVectorLoops;
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return seconds;
}

nlohmann::json VectorPathProbe::measure() {
  if (!any_) return nullptr;
  Timing contiguous{.inner = 1, .seconds_per_op = {}}, vector{.inner = 1, .seconds_per_op = {}};
  long long wrong = 0;
  for (int rep = 0; rep < kRepetitions; ++rep) {
    contiguous.seconds_per_op.push_back(exchange(false));
    std::fill(received_.begin(), received_.end(), 0);
    vector.seconds_per_op.push_back(exchange(true));
    wrong += std::count(received_.begin(), received_.end(), 0);  // every byte sent is 1
  }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, comm_));
  if (wrong != 0) throw std::logic_error("vector_path: a vector message did not deliver its bytes");
  return {{"bytes", kVectorBytes},
          {"block_bytes", kVectorBlock},
          {"contiguous_us", contiguous.median() * 1e6},
          {"vector_us", vector.median() * 1e6},
          {"ratio", vector.median() / contiguous.median()}};
}

nlohmann::json vector_path(MPI_Comm comm) { return VectorPathProbe(comm).measure(); }

std::string vector_path_text(const nlohmann::json& metadata) {
  const auto found = metadata.find("vector_path");
  if (found == metadata.end() || found->is_null()) return {};
  const nlohmann::json& v = *found;
  const double ratio = v.at("ratio").get<double>();
  char text[160];
  std::snprintf(text, sizeof text, "vector message of %.0f KiB in %.0f B blocks: %.1f us, %.1f us contiguous (%.1fx)%s",
                v.at("bytes").get<double>() / 1024, v.at("block_bytes").get<double>(), v.at("vector_us").get<double>(),
                v.at("contiguous_us").get<double>(), ratio, ratio > kSlowVectorRatio ? " SLOW STATE" : "");
  return text;
}

}  // namespace tb
