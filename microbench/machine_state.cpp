#include "microbench/machine_state.hpp"

#include "collectives/mpi_error.hpp"
#include "microbench/timing.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace tb {
namespace {

constexpr std::size_t kHandoffBytes = 1 << 20;
constexpr int kRepetitions = 5;

// Seconds of: copy `from` into `to_write`, barrier of `pair`, copy `to_read` into `into`.
double copy_barrier_copy(MPI_Comm pair, void* to_write, const void* from, void* into, const void* to_read) {
  TB_MPI_CHECK(MPI_Barrier(pair));
  const double start = MPI_Wtime();
  std::memcpy(to_write, from, kHandoffBytes);
  TB_MPI_CHECK(MPI_Barrier(pair));
  std::memcpy(into, to_read, kHandoffBytes);
  return MPI_Wtime() - start;
}

// {handoff, private} seconds of this rank (0 for ranks beyond the first two of their node).
std::pair<double, double> time_pair(MPI_Comm pair) {
  if (pair == MPI_COMM_NULL) return {0.0, 0.0};
  int mine = 0;
  TB_MPI_CHECK(MPI_Comm_rank(pair, &mine));
  char* slot = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  TB_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(kHandoffBytes), 1, MPI_INFO_NULL, pair, &slot, &window));
  MPI_Aint size = 0;
  int unit = 0;
  char* partner = nullptr;
  TB_MPI_CHECK(MPI_Win_shared_query(window, 1 - mine, &size, &unit, &partner));
  const char theirs = static_cast<char>(2 - mine);  // the partner's fill byte
  std::vector<char> own(kHandoffBytes, static_cast<char>(1 + mine)), received(kHandoffBytes), scratch(kHandoffBytes);
  Timing handoff{.inner = 1, .seconds_per_op = {}}, local{.inner = 1, .seconds_per_op = {}};
  bool wrong = false;  // read back, so that no copy is dead code the compiler may drop
  for (int rep = 0; rep < kRepetitions; ++rep) {
    handoff.seconds_per_op.push_back(copy_barrier_copy(pair, slot, own.data(), received.data(), partner));
    wrong |= received.front() != theirs || received.back() != theirs;
    local.seconds_per_op.push_back(copy_barrier_copy(pair, scratch.data(), own.data(), received.data(), scratch.data()));
    wrong |= received.front() != own.front() || received.back() != own.back();
  }
  TB_MPI_CHECK(MPI_Win_free(&window));
  if (wrong) throw std::logic_error("cross_core_handoff: a copy did not deliver the bytes it copied");
  return {handoff.median(), local.median()};
}

}  // namespace

nlohmann::json cross_core_handoff(MPI_Comm comm) {
#if defined(TB_SMPI)
  (void)comm;
  return nullptr;  // SMPI's shared windows are the simulator's, not the host's caches
#else
  MPI_Comm node = MPI_COMM_NULL, pair = MPI_COMM_NULL;
  TB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_rank = 0, node_size = 0;
  TB_MPI_CHECK(MPI_Comm_rank(node, &node_rank));
  TB_MPI_CHECK(MPI_Comm_size(node, &node_size));
  const bool paired = node_rank < 2 && node_size >= 2;
  TB_MPI_CHECK(MPI_Comm_split(node, paired ? 0 : MPI_UNDEFINED, node_rank, &pair));
  TB_MPI_CHECK(MPI_Comm_free(&node));
  // {handoff, private, handoff / private} of this rank; the MAX of each over the ranks, so the
  // ratio is the worst pair's even where nodes differ.
  double values[3] = {0.0, 0.0, 0.0};
  std::tie(values[0], values[1]) = time_pair(pair);
  if (values[1] > 0.0) values[2] = values[0] / values[1];
  if (pair != MPI_COMM_NULL) TB_MPI_CHECK(MPI_Comm_free(&pair));
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, 3, MPI_DOUBLE, MPI_MAX, comm));
  if (values[1] <= 0.0) return nullptr;  // no node with two ranks
  return {{"bytes", kHandoffBytes}, {"handoff_us", values[0] * 1e6}, {"private_us", values[1] * 1e6},
          {"ratio", values[2]}};
#endif
}

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
