#include "collectives/algorithms/node_leader.hpp"

#include "collectives/comm_cache.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/algorithm_support.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/pack.hpp"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "node_leader",
    .summary = "on-node data through shared memory, one aggregated message per node pair via leaders",
    .make = &make_algorithm<NodeLeaderAlltoallw>,
    .cost_schedule = "node_leader",
    .not_modelled = "",
});

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

constexpr std::int64_t kAlign = 64;             // staging slots start on cache lines
constexpr std::int64_t kChunk = std::int64_t{1} << 30;  // leader messages go in <= 1 GiB pieces

std::int64_t align_up(std::int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fields each rank publishes per peer, in its control record.
// S* describe my send side for that peer, R* my receive side. *ADDR is the buffer origin when
// the region [origin + *LO, origin + *HI) lies in a NodeSharedBuffer the peer maps (else 0);
// *BLK is blocks per instance, *NB blocks in all (count x *BLK).
enum Field : int {
  SBYTES, SADDR, SLO, SHI, SCOUNT, SEXTENT, SBLK, SNB,
  RBYTES, RADDR, RLO, RHI, RCOUNT, REXTENT, RBLK, RNB,
  kFields
};
// How one on-node pair's data moves.
enum class Mode { staged, push, pull };
constexpr int kHeader = 2;  // [0] error seen by this rank as a leader, [1] unused

// The NUMA domain this process is bound inside, or -1 (unbound, or bound across domains).
int numa_domain() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return -1;
  int id = -1;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
      for (int i = 0; i < n; ++i) {
        hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        if (n > 1 && hwloc_bitmap_isincluded(set, numa->cpuset)) id = static_cast<int>(numa->os_index);
      }
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  return id;
}

int g_live_states = 0;

// What node_leader keeps per communicator.
struct NodeState {
  NodeState() { ++g_live_states; }
  NodeState(const NodeState&) = delete;
  NodeState& operator=(const NodeState&) = delete;
  int P = 0, rank = 0;
  int nodes = 1, node = 0;  // node count, my node
  int L = 1, lm = 0;        // ranks on my node, my index among them
  std::vector<int> node_of, local_of;       // per comm rank
  std::vector<std::vector<int>> members;    // per node: comm ranks, local order
  std::vector<std::vector<int>> leaders;    // per node: comm ranks that lead
  std::vector<int> pid;                     // per local index
  std::string leader_rule;
  MPI_Comm shm = MPI_COMM_NULL;    // my node's ranks: windows and barriers
  MPI_Comm peers = MPI_COMM_NULL;  // a duplicate of the user's communicator for leader messages
  MPI_Win ctrl_win = MPI_WIN_NULL;
  std::vector<std::int64_t*> ctrl;  // per local index: its control record (two parities)
  std::size_t record = 0;           // int64 per parity
  MPI_Win data_win = MPI_WIN_NULL;
  std::byte* data = nullptr;
  // A node of one rank shares nothing: its control records and staging area are private memory,
  // not MPI windows. (MPICH 4.0.2's ch4:ucx can hang in MPI_Finalize after shared windows on
  // one-rank communicators when UCX carries the inter-node traffic; see the README.)
  std::vector<std::int64_t> private_ctrl;
  std::unique_ptr<std::byte[]> private_data;
  std::int64_t capacity = 0, allocations = 0;
  std::uint64_t calls = 0;
  std::int64_t barriers = 0;  // node barriers passed (the same count on every rank of the node)

  std::int64_t& field(int local, int parity, Field f, int peer) const {
    return ctrl[local][parity * record + kHeader + static_cast<std::size_t>(f) * P + peer];
  }
  std::int64_t& header(int local, int parity, int i) const { return ctrl[local][parity * record + i]; }
  // The rank of node `a` that sends node `b` its message and receives the one from `b`.
  int handler(int a, int b) const {
    const auto& l = leaders[a];
    return l[static_cast<std::size_t>(b) % l.size()];
  }

  // A node barrier through the control window: each rank publishes its barrier count (release)
  // and waits until every rank of the node has reached it (acquire); spinning gives way to
  // sched_yield after a while, so oversubscribed ranks still progress. About 5x faster than
  // MPI_Barrier on the node communicator for small messages here (tb-bench, 2 ranks).
  // MPI_Win_sync keeps MPI's separate memory model satisfied around it.
  void sync() {
    if (L == 1) return;
    PMPI_Win_sync(ctrl_win);
    if (data_win != MPI_WIN_NULL) PMPI_Win_sync(data_win);
    const std::int64_t target = ++barriers;
    std::atomic_ref<std::int64_t>(ctrl[lm][2 * record]).store(target, std::memory_order_release);
    for (int l = 0; l < L; ++l) {
      std::atomic_ref<std::int64_t> count(ctrl[l][2 * record]);
      for (int spin = 0; count.load(std::memory_order_acquire) < target; ++spin) {
        if (spin < 2000) {
          cpu_relax();
        } else {
          sched_yield();
        }
      }
    }
    PMPI_Win_sync(ctrl_win);
    if (data_win != MPI_WIN_NULL) PMPI_Win_sync(data_win);
  }

  void free_data_window() {
    private_data.reset();
    if (data_win == MPI_WIN_NULL) {
      data = nullptr;
      capacity = 0;
      return;
    }
    PMPI_Win_unlock_all(data_win);
    PMPI_Win_free(&data_win);
    data = nullptr;
    capacity = 0;
  }

  // Collective over shm; every rank asks for the same `bytes`.
  void reserve(std::int64_t bytes) {
    if (bytes <= capacity) return;
    const std::int64_t want = std::max(bytes, capacity + capacity / 2);  // before freeing resets capacity
    free_data_window();
    if (L == 1) {
      private_data = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(want));
      data = private_data.get();
      capacity = want;
      ++allocations;
      return;
    }
    const MPI_Aint mine = lm == 0 ? static_cast<MPI_Aint>(want) : 0;
    void* base = nullptr;
    TB_MPI_CHECK(PMPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, shm, &base, &data_win));
    MPI_Aint size = 0;
    int unit = 0;
    TB_MPI_CHECK(PMPI_Win_shared_query(data_win, 0, &size, &unit, &base));
    TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, data_win));
    data = static_cast<std::byte*>(base);
    capacity = want;
    ++allocations;
  }

  ~NodeState() {
    --g_live_states;
    free_data_window();
    if (ctrl_win != MPI_WIN_NULL) {
      PMPI_Win_unlock_all(ctrl_win);
      PMPI_Win_free(&ctrl_win);
    }
    if (peers != MPI_COMM_NULL) PMPI_Comm_free(&peers);
    if (shm != MPI_COMM_NULL) PMPI_Comm_free(&shm);
  }
};


NodeState* create_state(MPI_Comm comm) {
  const NodeLeaderRule rule = settings().node_leaders.get();
  const NodeLayout& layout = node_layout(comm);
  auto state = std::make_unique<NodeState>();
  NodeState& st = *state;
  TB_MPI_CHECK(PMPI_Comm_size(comm, &st.P));
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &st.rank));
  TB_MPI_CHECK(PMPI_Comm_dup(layout.node_comm, &st.shm));
  TB_MPI_CHECK(PMPI_Comm_dup(comm, &st.peers));
  TB_MPI_CHECK(PMPI_Comm_set_errhandler(st.peers, MPI_ERRORS_RETURN));
  st.L = layout.node_size;
  st.lm = layout.node_rank;
  st.nodes = layout.nodes;
  st.node = layout.node;

  // Who leads on my node.
  std::vector<int> lead(static_cast<std::size_t>(st.L), 0);
  if (rule.numa) {
    const int mine = numa_domain();
    std::vector<int> domains(static_cast<std::size_t>(st.L));
    TB_MPI_CHECK(PMPI_Allgather(&mine, 1, MPI_INT, domains.data(), 1, MPI_INT, st.shm));
    for (int l = 0; l < st.L; ++l)
      lead[l] = std::find(domains.begin(), domains.end(), domains[l]) - domains.begin() == l;
    st.leader_rule = "numa (hwloc)";
  } else {
    const int leaders = std::min(rule.per_node, st.L);
    for (int i = 0; i < leaders; ++i) lead[static_cast<std::size_t>(i) * st.L / leaders] = 1;
    st.leader_rule = rule.per_node == 1 ? "first rank" : std::to_string(rule.per_node) + " per node";
  }

  // Every rank learns every rank's node, local index, leader role and process id.
  const std::int64_t me[4] = {st.node, st.lm, lead[st.lm], getpid()};
  std::vector<std::int64_t> all(4 * static_cast<std::size_t>(st.P));
  TB_MPI_CHECK(PMPI_Allgather(me, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, st.peers));
  st.node_of.resize(st.P);
  st.local_of.resize(st.P);
  st.members.assign(st.nodes, {});
  st.leaders.assign(st.nodes, {});
  for (int p = 0; p < st.P; ++p) {
    st.node_of[p] = static_cast<int>(all[4 * p]);
    st.local_of[p] = static_cast<int>(all[4 * p + 1]);
  }
  for (int p = 0; p < st.P; ++p) {  // local order = rank order within the node (node_comm's key)
    st.members[st.node_of[p]].push_back(p);
    if (all[4 * p + 2]) st.leaders[st.node_of[p]].push_back(p);
  }
  for (int p : st.members[st.node]) st.pid.push_back(static_cast<int>(all[4 * p + 3]));

  // The control window: two parity records per rank.
  st.record = kHeader + static_cast<std::size_t>(kFields) * st.P;
  if (st.L == 1) {
    st.private_ctrl.assign(2 * st.record + 8, 0);
    st.ctrl.push_back(st.private_ctrl.data());
    return state.release();
  }
  void* base = nullptr;
  MPI_Info info = MPI_INFO_NULL;
  TB_MPI_CHECK(PMPI_Info_create(&info));
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  // Two parity records, then the barrier count on a cache line of its own.
  const int rc = PMPI_Win_allocate_shared(static_cast<MPI_Aint>((2 * st.record + 8) * sizeof(std::int64_t)),
                                          sizeof(std::int64_t), info, st.shm, &base, &st.ctrl_win);
  PMPI_Info_free(&info);
  TB_MPI_CHECK(rc);
  for (int l = 0; l < st.L; ++l) {
    MPI_Aint size = 0;
    int unit = 0;
    void* rec = nullptr;
    TB_MPI_CHECK(PMPI_Win_shared_query(st.ctrl_win, l, &size, &unit, &rec));
    st.ctrl.push_back(static_cast<std::int64_t*>(rec));
  }
  std::memset(st.ctrl[st.lm], 0, (2 * st.record + 8) * sizeof(std::int64_t));
  TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, st.ctrl_win));
  TB_MPI_CHECK(PMPI_Barrier(st.shm));  // every record is zeroed before anyone counts barriers
  return state.release();
}

NodeState* find_state(MPI_Comm comm) { return CommCache<NodeState>::find(comm); }

NodeState& node_state(MPI_Comm comm) { return CommCache<NodeState>::get(comm, create_state); }


void note(std::string& error, const std::string& text) {
  if (error.empty()) error = text;
}

// The span [lo, hi) of bytes that `count` instances of a layout touch, relative to the origin.
void span_of(const TypeLayout& l, std::int64_t count, std::int64_t& lo, std::int64_t& hi) {
  lo = hi = l.blocks.front().offset;
  for (const ByteBlock& b : l.blocks) {
    lo = std::min(lo, b.offset);
    hi = std::max(hi, b.offset + b.length);
  }
  const std::int64_t shift = (count - 1) * l.extent;
  lo += std::min<std::int64_t>(shift, 0);
  hi += std::max<std::int64_t>(shift, 0);
}

}  // namespace

int node_leader_live_states() { return g_live_states; }

NodeLeaderStats node_leader_stats(MPI_Comm comm) {
  NodeLeaderStats s;
  if (const NodeState* st = find_state(comm)) {
    s.window_allocations = st->allocations;
    s.window_bytes = st->capacity;
    s.shared_windows = st->ctrl_win != MPI_WIN_NULL;
    s.leaders_on_my_node = static_cast<int>(st->leaders[st->node].size());
    s.leader_rule = st->leader_rule;
  }
  return s;
}

void NodeLeaderAlltoallw::exchange(const AlltoallwArgs& a, const AlltoallwComm&) {
  const NodeLeaderCopy copy_mode = settings().node_leader_copy.get();

  NodeState& st = node_state(a.comm);
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  const void* sbuf = in_place ? a.recvbuf : a.sendbuf;
  const int* scount = in_place ? a.recvcounts : a.sendcounts;
  const int* sdispl = in_place ? a.rdispls : a.sdispls;
  const MPI_Datatype* stype = in_place ? a.recvtypes : a.sendtypes;
  const int P = st.P, me = st.rank, lm = st.lm, L = st.L, N = st.nodes, node = st.node;
  const auto& local = st.members[node];
  const int par = static_cast<int>(++st.calls & 1);
  const bool direct_allowed = copy_mode == NodeLeaderCopy::automatic && !in_place;
  std::string error;  // the first inconsistency seen; thrown after the protocol completes

  // 1. Publish both sides of every peer, and where my arrays are readable by on-node peers.
  slayout_.assign(P, nullptr);
  rlayout_.assign(P, nullptr);
  st.header(lm, par, 0) = 0;
  for (int p = 0; p < P; ++p) {
    std::int64_t v[kFields] = {};
    const bool on_node_peer = p != me && st.node_of[p] == node;
    const int peer_pid = on_node_peer ? st.pid[st.local_of[p]] : 0;
    if (scount[p] > 0) {
      slayout_[p] = type_layout(stype[p]);
      const TypeLayout& l = *slayout_[p];
      v[SBYTES] = scount[p] * l.size;
      v[SCOUNT] = scount[p];
      v[SEXTENT] = l.extent;
      v[SBLK] = static_cast<std::int64_t>(l.blocks.size());
      v[SNB] = l.dense() ? 1 : v[SBLK] * scount[p];  // contiguous runs in all
      if (v[SBYTES] > 0 && on_node_peer && direct_allowed) {
        span_of(l, scount[p], v[SLO], v[SHI]);
        const std::byte* origin = at(sbuf, sdispl[p]);
        if (readable_by(origin + v[SLO], v[SHI] - v[SLO], peer_pid))
          v[SADDR] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(origin));
      }
    }
    if (a.recvcounts[p] > 0) {
      rlayout_[p] = type_layout(a.recvtypes[p]);
      const TypeLayout& l = *rlayout_[p];
      v[RBYTES] = a.recvcounts[p] * l.size;
      v[RCOUNT] = a.recvcounts[p];
      v[REXTENT] = l.extent;
      v[RBLK] = static_cast<std::int64_t>(l.blocks.size());
      v[RNB] = l.dense() ? 1 : v[RBLK] * a.recvcounts[p];
      if (v[RBYTES] > 0 && on_node_peer && direct_allowed) {
        span_of(l, a.recvcounts[p], v[RLO], v[RHI]);
        std::byte* origin = at(a.recvbuf, a.rdispls[p]);
        if (readable_by(origin + v[RLO], v[RHI] - v[RLO], peer_pid))
          v[RADDR] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(origin));
      }
    }
    for (int f = 0; f < kFields; ++f) st.field(lm, par, static_cast<Field>(f), p) = v[f];
  }
  st.sync();  // B1

  // 2. Everyone derives the same decisions and staging layout from the published values.
  auto F = [&](int l, Field f, int p) { return st.field(l, par, f, p); };
  // The on-node pair (local l -> comm rank d): a direct copy by whichever side's own layout is
  // more fragmented (it then walks its own array in address order), or staged.
  auto mode = [&](int l, int d) -> Mode {
    if (d == local[l] || st.node_of[d] != node || F(l, SBYTES, d) == 0) return Mode::staged;
    const int ld = st.local_of[d];
    const bool can_pull = F(l, SADDR, d) != 0, can_push = F(ld, RADDR, local[l]) != 0;
    if (can_push && can_pull) return F(l, SNB, d) > F(ld, RNB, local[l]) ? Mode::push : Mode::pull;
    return can_push ? Mode::push : can_pull ? Mode::pull : Mode::staged;
  };
  auto staged_size = [&](int l, int d) -> std::int64_t {
    if (d == local[l] || mode(l, d) != Mode::staged) return 0;
    return align_up(F(l, SBYTES, d));
  };
  auto header_bytes = [&](int other) -> std::int64_t {
    return other == node ? 0 : align_up(8 * static_cast<std::int64_t>(L) * static_cast<std::int64_t>(st.members[other].size()));
  };
  // Block lists published for direct copies: for the pair (l -> d), l's send list when d pulls,
  // d's receive list when l pushes; list_bytes(l) = what local rank l publishes.
  auto list_bytes = [&](int l, int p) -> std::int64_t {  // what l publishes for partner p
    std::int64_t b = 0;
    if (mode(l, p) == Mode::pull) b += F(l, SBLK, p);
    const int lp = st.node_of[p] == node ? st.local_of[p] : -1;
    if (lp >= 0 && p != local[l] && mode(lp, local[l]) == Mode::push) b += F(l, RBLK, p);
    return b * static_cast<std::int64_t>(sizeof(ByteBlock));
  };
  std::vector<std::int64_t>& rows = offsets_;  // rows[l * N + X]: bytes local rank l stages for node X
  rows.assign(static_cast<std::size_t>(L) * N, 0);
  bool any_direct = false;
  for (int l = 0; l < L; ++l)
    for (int d = 0; d < P; ++d) {
      rows[static_cast<std::size_t>(l) * N + st.node_of[d]] += staged_size(l, d);
      any_direct = any_direct || (st.node_of[d] == node && d != local[l] && mode(l, d) != Mode::staged);
    }
  // Per-call tables live in the object: once warm, a call allocates nothing.
  auto& out_base = out_base_;
  auto& out_size = out_size_;
  auto& in_base = in_base_;
  auto& in_size = in_size_;
  out_base.assign(N, 0);
  out_size.assign(N, 0);
  in_base.assign(N, 0);
  in_size.assign(N, 0);
  std::int64_t total = 0;
  for (int X = 0; X < N; ++X) {
    out_base[X] = total;
    out_size[X] = header_bytes(X);
    for (int l = 0; l < L; ++l) out_size[X] += rows[static_cast<std::size_t>(l) * N + X];
    total += out_size[X];
  }
  for (int Y = 0; Y < N; ++Y) {
    if (Y == node) continue;
    in_base[Y] = total;
    in_size[Y] = header_bytes(Y);
    for (int s : st.members[Y])
      for (int l = 0; l < L; ++l) in_size[Y] += align_up(F(l, RBYTES, s));
    total += in_size[Y];
  }
  // list_at[l * L + k]: where local rank l's lists for local partner k start.
  auto& list_at = list_at_;
  list_at.assign(static_cast<std::size_t>(L) * L, 0);
  if (any_direct)
    for (int l = 0; l < L; ++l)
      for (int k = 0; k < L; ++k) {
        list_at[static_cast<std::size_t>(l) * L + k] = total;
        total += list_bytes(l, local[k]);
      }
  st.reserve(total);  // collective on the node when it grows; the same decision everywhere

  // Pair checks every rank can make for its own receives (on-node; other nodes: the header).
  for (int l = 0; l < L; ++l) {
    const int s = local[l];
    if (s != me && F(l, SBYTES, me) != F(lm, RBYTES, s))
      note(error, "node_leader: rank " + std::to_string(s) + " sends " + std::to_string(F(l, SBYTES, me)) +
                      " bytes to rank " + std::to_string(me) + ", which expects " + std::to_string(F(lm, RBYTES, s)) +
                      " (type signatures differ)");
  }
  const bool self_ok = in_place || F(lm, SBYTES, me) == F(lm, RBYTES, me);
  if (!self_ok)
    note(error, "node_leader: rank " + std::to_string(me) + " sends itself " + std::to_string(F(lm, SBYTES, me)) +
                    " bytes but receives " + std::to_string(F(lm, RBYTES, me)));
  auto pair_ok = [&](int s) { return F(st.local_of[s], SBYTES, me) == F(lm, RBYTES, s); };

  // The self block joins the stream over the more fragmented of its two layouts.
  const bool self_copy = !in_place && self_ok && F(lm, SBYTES, me) > 0;
  const bool self_by_source = F(lm, SNB, me) > F(lm, RNB, me);
  bool pushes = false;
  for (int d : local) pushes = pushes || (d != me && mode(lm, d) == Mode::push);

  // 3. Before B2: pack what is staged (in source order, with the self block when its source
  //    is the fragmented side and nothing is pushed), publish block lists.
  MergedCopy& by_source = by_source_;
  by_source.clear();
  for (int X = 0; X < N; ++X) {
    std::int64_t cursor = out_base[X] + header_bytes(X);
    for (int l = 0; l < lm; ++l) cursor += rows[static_cast<std::size_t>(l) * N + X];
    const auto& dest = st.members[X];
    for (std::size_t j = 0; j < dest.size(); ++j) {
      const int d = dest[j];
      if (X != node) reinterpret_cast<std::int64_t*>(st.data + out_base[X])[static_cast<std::size_t>(lm) * dest.size() + j] = F(lm, SBYTES, d);
      if (d == me || staged_size(lm, d) == 0) continue;
      const ByteBlock stream{0, F(lm, SBYTES, d)};
      by_source.add(at(sbuf, sdispl[d]), scount[d], *slayout_[d], st.data + cursor, 1, contiguous_span(stream));
      cursor += staged_size(lm, d);
    }
  }
  if (self_copy && self_by_source && !pushes)
    by_source.add(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                  a.recvcounts[me], *rlayout_[me]);
  by_source.run(true);
  if (any_direct)
    for (int k = 0; k < L; ++k) {
      const int p = local[k];
      if (p == me) continue;
      std::byte* out = st.data + list_at[static_cast<std::size_t>(lm) * L + k];
      if (mode(lm, p) == Mode::pull) {
        const auto& b = slayout_[p]->blocks;
        std::memcpy(out, b.data(), b.size() * sizeof(ByteBlock));
        out += b.size() * sizeof(ByteBlock);
      }
      if (mode(k, me) == Mode::push) {
        const auto& b = rlayout_[p]->blocks;
        std::memcpy(out, b.data(), b.size() * sizeof(ByteBlock));
      }
    }
  st.sync();  // B2

  // 4. Leaders start the node-pair messages; everyone moves its on-node data meanwhile.
  auto& requests = requests_;
  auto& expected = expected_;  // bytes each receive request should bring
  requests.clear();
  expected.clear();
  std::string leader_error;
  auto post = [&](bool send, int peer_rank, std::byte* buf, std::int64_t bytes) {
    for (std::int64_t done = 0; done < bytes; done += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, bytes - done));
      MPI_Request req = MPI_REQUEST_NULL;
      const int rc = send ? PMPI_Isend(buf + done, n, MPI_BYTE, peer_rank, tags::node_leader, st.peers, &req)
                          : PMPI_Irecv(buf + done, n, MPI_BYTE, peer_rank, tags::node_leader, st.peers, &req);
      if (rc != MPI_SUCCESS) {
        note(leader_error, std::string(send ? "MPI_Isend" : "MPI_Irecv") + " failed: " + mpi_error_string(rc));
        continue;
      }
      requests.push_back(req);
      expected.push_back(send ? -1 : n);
    }
  };
  int messages = 0;
  for (int X = 0; X < N; ++X) {
    if (X == node) continue;
    ++messages;
    if (st.handler(node, X) != me) continue;
    post(true, st.handler(X, node), st.data + out_base[X], out_size[X]);
    post(false, st.handler(X, node), st.data + in_base[X], in_size[X]);
  }
  // Where local rank l's published block list for partner comm rank p starts, and its view.
  auto published = [&](int l, int p, bool receive_list) {
    std::int64_t at_ = list_at[static_cast<std::size_t>(l) * L + st.local_of[p]];
    if (receive_list && mode(l, p) == Mode::pull) at_ += F(l, SBLK, p) * static_cast<std::int64_t>(sizeof(ByteBlock));
    return reinterpret_cast<const ByteBlock*>(st.data + at_);
  };
  // Pushes: my array in address order into the partners' receive arrays.
  by_source.clear();
  int n_push = 0, n_pull = 0, n_staged = 0;
  for (int d : local) {
    if (d == me || mode(lm, d) != Mode::push || F(st.local_of[d], RBYTES, me) != F(lm, SBYTES, d)) continue;
    const int ld = st.local_of[d];
    const std::int64_t lo = F(ld, RLO, me), hi = F(ld, RHI, me);
    auto* view = const_cast<std::byte*>(shared_view(st.pid[ld], F(ld, RADDR, me) + lo, hi - lo));
    if (view == nullptr) throw std::logic_error("node_leader: a published shared receive buffer is not mapped here");
    const BlockSpan theirs(published(ld, me, true), static_cast<std::size_t>(F(ld, RBLK, me)),
                           F(ld, RBYTES, me) / F(ld, RCOUNT, me), F(ld, REXTENT, me));
    by_source.add(at(sbuf, sdispl[d]), scount[d], *slayout_[d], view - lo, F(ld, RCOUNT, me), theirs);
    ++n_push;
  }
  if (self_copy && self_by_source && pushes)
    by_source.add(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                  a.recvcounts[me], *rlayout_[me]);
  by_source.run(true);
  // Pulls and staged slots: into my receive array in address order.
  MergedCopy& by_dest = by_dest_;
  by_dest.clear();
  for (int l = 0; l < L; ++l) {
    const int s = local[l];
    if (s == me || F(lm, RBYTES, s) == 0 || !pair_ok(s)) continue;
    const Mode m = mode(l, me);
    if (m == Mode::push) continue;
    if (m == Mode::pull) {
      const std::int64_t lo = F(l, SLO, me), hi = F(l, SHI, me);
      const std::byte* view = shared_view(st.pid[l], F(l, SADDR, me) + lo, hi - lo);
      if (view == nullptr) throw std::logic_error("node_leader: a published shared send buffer is not mapped here");
      const BlockSpan theirs(published(l, me, false), static_cast<std::size_t>(F(l, SBLK, me)),
                             F(l, SBYTES, me) / F(l, SCOUNT, me), F(l, SEXTENT, me));
      by_dest.add(view - lo, F(l, SCOUNT, me), theirs, at(a.recvbuf, a.rdispls[s]), a.recvcounts[s], *rlayout_[s]);
      ++n_pull;
      continue;
    }
    std::int64_t cursor = out_base[node];
    for (int k = 0; k < l; ++k) cursor += rows[static_cast<std::size_t>(k) * N + node];
    for (int d : local) {
      if (d == me) break;
      cursor += staged_size(l, d);
    }
    const ByteBlock stream{0, F(lm, RBYTES, s)};
    by_dest.add(st.data + cursor, 1, contiguous_span(stream), at(a.recvbuf, a.rdispls[s]), a.recvcounts[s], *rlayout_[s]);
    ++n_staged;
  }
  if (self_copy && !self_by_source)
    by_dest.add(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                a.recvcounts[me], *rlayout_[me]);
  by_dest.run(false);

  if (!requests.empty()) {
    auto& statuses = statuses_;
    statuses.resize(requests.size());
    const int rc = PMPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const int err = rc == MPI_ERR_IN_STATUS ? statuses[i].MPI_ERROR : rc;
      if (err != MPI_SUCCESS && err != MPI_ERR_PENDING) {
        note(leader_error, "node_leader: leader message failed: " + mpi_error_string(err));
        continue;
      }
      int got = 0;
      if (expected[i] >= 0 && PMPI_Get_count(&statuses[i], MPI_BYTE, &got) == MPI_SUCCESS && got != expected[i])
        note(leader_error, "node_leader: a node sent " + std::to_string(got) + " bytes where " +
                               std::to_string(expected[i]) + " were expected (type signatures differ)");
    }
  }
  st.header(lm, par, 0) = leader_error.empty() ? 0 : 1;
  if (N > 1) st.sync();  // B3

  // 5. Unpack what came from other nodes, into my receive array in address order.
  by_dest.clear();
  for (int Y = 0; Y < N; ++Y) {
    if (Y == node) continue;
    const int leader = st.handler(node, Y);  // my node's receiver for Y
    if (st.header(st.local_of[leader], par, 0) != 0) {
      note(error, leader_error.empty() ? "node_leader: the message from node " + std::to_string(Y) + " failed"
                                       : leader_error);
      continue;
    }
    const auto& src = st.members[Y];
    const auto* head = reinterpret_cast<const std::int64_t*>(st.data + in_base[Y]);
    std::int64_t cursor = in_base[Y] + header_bytes(Y);
    for (std::size_t i = 0; i < src.size(); ++i) {
      const int s = src[i];
      for (int l = 0; l < lm; ++l) cursor += align_up(F(l, RBYTES, s));
      const std::int64_t bytes = F(lm, RBYTES, s);
      const std::int64_t sent = head[i * static_cast<std::size_t>(L) + lm];
      if (sent != bytes) {
        note(error, "node_leader: rank " + std::to_string(s) + " sends " + std::to_string(sent) + " bytes to rank " +
                        std::to_string(me) + ", which expects " + std::to_string(bytes) + " (type signatures differ)");
      } else if (bytes > 0) {
        const ByteBlock stream{0, bytes};
        by_dest.add(st.data + cursor, 1, contiguous_span(stream), at(a.recvbuf, a.rdispls[s]), a.recvcounts[s],
                    *rlayout_[s]);
      }
      for (int l = lm; l < L; ++l) cursor += align_up(F(l, RBYTES, s));
    }
  }
  by_dest.run(false);
  if (any_direct) st.sync();  // B4: direct copies are done with the partners' arrays

  std::string on_node;
  auto add = [&](int n, const char* what) {
    if (n > 0) on_node += (on_node.empty() ? "" : "+") + std::string(what);
  };
  add(n_push, "single-copy push");
  add(n_pull, "single-copy pull");
  add(n_staged, "staged");
  if (on_node.empty()) on_node = "none";
  set_path(std::string("node_leader (") + (in_place ? "in place; " : "") + "on-node: " + on_node +
          "; inter-node: " + std::to_string(messages) + " aggregated message" + (messages == 1 ? "" : "s") + ")");
  if (!error.empty()) throw std::invalid_argument(error);
}

}  // namespace tb
