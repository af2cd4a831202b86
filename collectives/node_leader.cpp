#include "collectives/node_leader.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/native.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/pack.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tb {
namespace {

constexpr std::int64_t kAlign = 64;             // staging slots start on cache lines
constexpr std::int64_t kChunk = std::int64_t{1} << 30;  // leader messages go in <= 1 GiB pieces
constexpr int kTag = 4242;

std::int64_t align_up(std::int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fields each rank publishes per peer, in its control record.
enum Field : int { SBYTES, RBYTES, FLAG, ADDR, LO, HI, NBLOCKS, COUNT, EXTENT, kFields };
enum Flag : std::int64_t { STAGED = 0, SINGLE_COPY = 1 };
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
  std::int64_t capacity = 0, allocations = 0;
  std::uint64_t calls = 0;

  std::int64_t& field(int local, int parity, Field f, int peer) const {
    return ctrl[local][parity * record + kHeader + static_cast<std::size_t>(f) * P + peer];
  }
  std::int64_t& header(int local, int parity, int i) const { return ctrl[local][parity * record + i]; }
  // The rank of node `a` that sends node `b` its message and receives the one from `b`.
  int handler(int a, int b) const {
    const auto& l = leaders[a];
    return l[static_cast<std::size_t>(b) % l.size()];
  }

  void sync() const {
    if (L == 1) return;
    PMPI_Win_sync(ctrl_win);
    if (data_win != MPI_WIN_NULL) PMPI_Win_sync(data_win);
    TB_MPI_CHECK(PMPI_Barrier(shm));
    PMPI_Win_sync(ctrl_win);
    if (data_win != MPI_WIN_NULL) PMPI_Win_sync(data_win);
  }

  void free_data_window() {
    if (data_win == MPI_WIN_NULL) return;
    PMPI_Win_unlock_all(data_win);
    PMPI_Win_free(&data_win);
    data = nullptr;
    capacity = 0;
  }

  // Collective over shm; every rank asks for the same `bytes`.
  void reserve(std::int64_t bytes) {
    if (bytes <= capacity) return;
    free_data_window();
    const std::int64_t want = std::max(bytes, capacity + capacity / 2);
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

int g_key = MPI_KEYVAL_INVALID;
int g_finalize_key = MPI_KEYVAL_INVALID;
bool g_finalizing = false;

int free_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<NodeState*>(value);
  // Once MPI_Finalize has begun, the node's other ranks may not free the windows with us (they
  // are collective); MPI reclaims them.
  if (!g_finalizing) delete state;
  return MPI_SUCCESS;
}

// Runs at the start of MPI_Finalize (MPI_COMM_SELF's attributes go first): frees the state on
// MPI_COMM_WORLD while every rank can still take part, then stops freeing.
int on_finalize(MPI_Comm, int, void*, void*) {
  if (g_key != MPI_KEYVAL_INVALID) PMPI_Comm_delete_attr(MPI_COMM_WORLD, g_key);
  g_finalizing = true;
  return MPI_SUCCESS;
}

std::string leader_setting() {
  const char* env = std::getenv("TB_NODE_LEADERS");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("1");
}

NodeState* create_state(MPI_Comm comm) {
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
  const std::string rule = leader_setting();
  std::vector<int> lead(static_cast<std::size_t>(st.L), 0);
  if (rule == "numa") {
    const int mine = numa_domain();
    std::vector<int> domains(static_cast<std::size_t>(st.L));
    TB_MPI_CHECK(PMPI_Allgather(&mine, 1, MPI_INT, domains.data(), 1, MPI_INT, st.shm));
    for (int l = 0; l < st.L; ++l)
      lead[l] = std::find(domains.begin(), domains.end(), domains[l]) - domains.begin() == l;
    st.leader_rule = "numa (hwloc)";
  } else {
    char* end = nullptr;
    const long k = std::strtol(rule.c_str(), &end, 10);
    if (*end != '\0' || k < 1 || k > INT_MAX)
      throw std::invalid_argument("TB_NODE_LEADERS='" + rule + "': use a positive integer or numa");
    const int leaders = static_cast<int>(std::min<long>(k, st.L));
    for (int i = 0; i < leaders; ++i) lead[static_cast<std::size_t>(i) * st.L / leaders] = 1;
    st.leader_rule = k == 1 ? "first rank" : std::to_string(k) + " per node";
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
  void* base = nullptr;
  MPI_Info info = MPI_INFO_NULL;
  TB_MPI_CHECK(PMPI_Info_create(&info));
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  const int rc = PMPI_Win_allocate_shared(static_cast<MPI_Aint>(2 * st.record * sizeof(std::int64_t)),
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
  std::memset(st.ctrl[st.lm], 0, 2 * st.record * sizeof(std::int64_t));
  TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, st.ctrl_win));
  st.sync();
  return state.release();
}

NodeState* find_state(MPI_Comm comm) {
  if (g_key == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  TB_MPI_CHECK(PMPI_Comm_get_attr(comm, g_key, &value, &found));
  return found ? static_cast<NodeState*>(value) : nullptr;
}

NodeState& node_state(MPI_Comm comm) {
  if (g_key == MPI_KEYVAL_INVALID) {
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_state, &g_key, nullptr));
    TB_MPI_CHECK(PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &g_finalize_key, nullptr));
    TB_MPI_CHECK(PMPI_Comm_set_attr(MPI_COMM_SELF, g_finalize_key, nullptr));
  }
  if (NodeState* st = find_state(comm)) return *st;
  NodeState* st = create_state(comm);
  const int rc = PMPI_Comm_set_attr(comm, g_key, st);
  if (rc != MPI_SUCCESS) {
    delete st;
    check_mpi(rc, "MPI_Comm_set_attr");
  }
  return *st;
}

const std::byte* at(const void* buf, int displ) { return static_cast<const std::byte*>(buf) + displ; }
std::byte* at(void* buf, int displ) { return static_cast<std::byte*>(buf) + displ; }

void note(std::string& error, const std::string& text) {
  if (error.empty()) error = text;
}

}  // namespace

int node_leader_live_states() { return g_live_states; }

NodeLeaderStats node_leader_stats(MPI_Comm comm) {
  NodeLeaderStats s;
  if (const NodeState* st = find_state(comm)) {
    s.window_allocations = st->allocations;
    s.window_bytes = st->capacity;
    s.leaders_on_my_node = static_cast<int>(st->leaders[st->node].size());
    s.leader_rule = st->leader_rule;
  }
  return s;
}

void NodeLeaderAlltoallw::run(const AlltoallwArgs& a) {
  const AlltoallwComm c = check_alltoallw_args(a, name());
  if (c.inter) {
    path_ = "native (intercommunicator)";
    native_alltoallw(a);
    return;
  }
  const char* copy_env = std::getenv("TB_NODE_LEADER_COPY");
  const std::string copy_mode = copy_env != nullptr && *copy_env != '\0' ? copy_env : "auto";
  if (copy_mode != "auto" && copy_mode != "staged")
    throw std::invalid_argument("TB_NODE_LEADER_COPY='" + copy_mode + "': use auto or staged");

  NodeState& st = node_state(a.comm);
  const bool in_place = a.sendbuf == MPI_IN_PLACE;
  const void* sbuf = in_place ? a.recvbuf : a.sendbuf;
  const int* scount = in_place ? a.recvcounts : a.sendcounts;
  const int* sdispl = in_place ? a.rdispls : a.sdispls;
  const MPI_Datatype* stype = in_place ? a.recvtypes : a.sendtypes;
  const int P = st.P, me = st.rank, lm = st.lm, L = st.L, N = st.nodes, node = st.node;
  const auto& local = st.members[node];
  const int par = static_cast<int>(++st.calls & 1);
  std::string error;  // the first inconsistency seen; thrown after the protocol completes

  // 1. Publish my counts and copy decisions.
  slayout_.assign(P, nullptr);
  rlayout_.assign(P, nullptr);
  st.header(lm, par, 0) = 0;
  for (int p = 0; p < P; ++p) {
    std::int64_t sb = 0, rb = 0;
    if (scount[p] > 0) {
      slayout_[p] = type_layout(stype[p]);
      sb = scount[p] * slayout_[p]->size;
    }
    if (a.recvcounts[p] > 0) {
      rlayout_[p] = type_layout(a.recvtypes[p]);
      rb = a.recvcounts[p] * rlayout_[p]->size;
    }
    std::int64_t flag = STAGED, addr = 0, lo = 0, hi = 0, nblocks = 0, extent = 0;
    if (sb > 0 && p != me && !in_place && copy_mode == "auto" && st.node_of[p] == node) {
      const TypeLayout& l = *slayout_[p];
      lo = hi = l.blocks.front().offset;
      for (const ByteBlock& b : l.blocks) {
        lo = std::min(lo, b.offset);
        hi = std::max(hi, b.offset + b.length);
      }
      const std::int64_t shift = (scount[p] - 1) * l.extent;
      lo += std::min<std::int64_t>(shift, 0);
      hi += std::max<std::int64_t>(shift, 0);
      const std::byte* origin = at(sbuf, sdispl[p]);
      if (readable_by(origin + lo, hi - lo, st.pid[st.local_of[p]])) {
        flag = SINGLE_COPY;
        addr = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(origin));
        nblocks = static_cast<std::int64_t>(l.blocks.size());
        extent = l.extent;
      }
    }
    const std::int64_t values[kFields] = {sb, rb, flag, addr, lo, hi, nblocks, scount[p], extent};
    for (int f = 0; f < kFields; ++f) st.field(lm, par, static_cast<Field>(f), p) = values[f];
  }
  st.sync();  // B1

  // 2. Everyone derives the same staging layout from the published counts.
  auto SB = [&](int l, int p) { return st.field(l, par, SBYTES, p); };
  auto RB = [&](int l, int p) { return st.field(l, par, RBYTES, p); };
  auto single = [&](int l, int p) { return st.field(l, par, FLAG, p) == SINGLE_COPY; };
  auto staged_size = [&](int l, int d) -> std::int64_t {
    if (d == local[l] || single(l, d)) return 0;
    return align_up(SB(l, d));
  };
  auto header_bytes = [&](int other) -> std::int64_t {
    return other == node ? 0 : align_up(8 * static_cast<std::int64_t>(L) * static_cast<std::int64_t>(st.members[other].size()));
  };
  // rows[l * N + X]: bytes local rank l stages for node X.
  std::vector<std::int64_t>& rows = offsets_;
  rows.assign(static_cast<std::size_t>(L) * N, 0);
  bool any_single = false;
  for (int l = 0; l < L; ++l)
    for (int d = 0; d < P; ++d) {
      rows[static_cast<std::size_t>(l) * N + st.node_of[d]] += staged_size(l, d);
      any_single = any_single || single(l, d);
    }
  std::vector<std::int64_t> out_base(N), out_size(N), in_base(N), in_size(N);
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
      for (int l = 0; l < L; ++l) in_size[Y] += align_up(RB(l, s));
    total += in_size[Y];
  }
  std::vector<std::int64_t> list_base(L);
  for (int l = 0; l < L; ++l) {
    list_base[l] = total;
    for (int d : local)
      if (single(l, d)) total += st.field(l, par, NBLOCKS, d) * static_cast<std::int64_t>(sizeof(ByteBlock));
  }
  st.reserve(total);  // collective on the node when it grows; the same decision everywhere

  // 3. Pack what leaves me, publish block lists, copy the self block.
  std::int64_t list_cursor = list_base[lm];
  for (int X = 0; X < N; ++X) {
    std::int64_t cursor = out_base[X] + header_bytes(X);
    for (int l = 0; l < lm; ++l) cursor += rows[static_cast<std::size_t>(l) * N + X];
    const auto& dest = st.members[X];
    for (std::size_t j = 0; j < dest.size(); ++j) {
      const int d = dest[j];
      if (X != node) reinterpret_cast<std::int64_t*>(st.data + out_base[X])[static_cast<std::size_t>(lm) * dest.size() + j] = SB(lm, d);
      if (d == me || SB(lm, d) == 0) continue;
      if (single(lm, d)) {
        const auto& blocks = slayout_[d]->blocks;
        std::memcpy(st.data + list_cursor, blocks.data(), blocks.size() * sizeof(ByteBlock));
        list_cursor += static_cast<std::int64_t>(blocks.size() * sizeof(ByteBlock));
        continue;
      }
      pack(at(sbuf, sdispl[d]), scount[d], *slayout_[d], st.data + cursor);
      cursor += staged_size(lm, d);
    }
  }
  if (!in_place) {
    if (SB(lm, me) != RB(lm, me))
      note(error, "node_leader: rank " + std::to_string(me) + " sends itself " + std::to_string(SB(lm, me)) +
                      " bytes but receives " + std::to_string(RB(lm, me)));
    else if (SB(lm, me) > 0)
      copy_typed(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                 a.recvcounts[me], *rlayout_[me]);
  }
  st.sync();  // B2

  // 4. Leaders start the node-pair messages; everyone takes its on-node data meanwhile.
  std::vector<MPI_Request> requests;
  std::vector<std::int64_t> expected;  // bytes each receive request should bring
  std::string leader_error;
  auto post = [&](bool send, int peer_rank, std::byte* buf, std::int64_t bytes) {
    for (std::int64_t done = 0; done < bytes; done += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, bytes - done));
      MPI_Request req = MPI_REQUEST_NULL;
      const int rc = send ? PMPI_Isend(buf + done, n, MPI_BYTE, peer_rank, kTag, st.peers, &req)
                          : PMPI_Irecv(buf + done, n, MPI_BYTE, peer_rank, kTag, st.peers, &req);
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
  int singles = 0, staged = 0;
  for (int l = 0; l < L; ++l) {
    const int s = local[l];
    if (s == me) continue;
    const std::int64_t bytes = RB(lm, s);
    if (SB(l, me) != bytes) {
      note(error, "node_leader: rank " + std::to_string(s) + " sends " + std::to_string(SB(l, me)) + " bytes to rank " +
                      std::to_string(me) + ", which expects " + std::to_string(bytes) + " (type signatures differ)");
      continue;
    }
    if (bytes == 0) continue;
    if (single(l, me)) {
      std::int64_t list = list_base[l];
      for (int d : local) {
        if (d == me) break;
        if (single(l, d)) list += st.field(l, par, NBLOCKS, d) * static_cast<std::int64_t>(sizeof(ByteBlock));
      }
      const std::int64_t lo = st.field(l, par, LO, me), hi = st.field(l, par, HI, me);
      const std::byte* view = shared_view(st.pid[l], st.field(l, par, ADDR, me) + lo, hi - lo);
      if (view == nullptr) throw std::logic_error("node_leader: a published shared send buffer is not mapped here");
      const std::int64_t count = st.field(l, par, COUNT, me);
      const BlockSpan span(reinterpret_cast<const ByteBlock*>(st.data + list),
                           static_cast<std::size_t>(st.field(l, par, NBLOCKS, me)), bytes / count,
                           st.field(l, par, EXTENT, me));
      copy_typed(view - lo, count, span, at(a.recvbuf, a.rdispls[s]), a.recvcounts[s], *rlayout_[s]);
      ++singles;
      continue;
    }
    std::int64_t cursor = out_base[node];
    for (int k = 0; k < l; ++k) cursor += rows[static_cast<std::size_t>(k) * N + node];
    for (int d : local) {
      if (d == me) break;
      cursor += staged_size(l, d);
    }
    unpack(st.data + cursor, a.recvcounts[s], *rlayout_[s], at(a.recvbuf, a.rdispls[s]));
    ++staged;
  }
  if (!requests.empty()) {
    std::vector<MPI_Status> statuses(requests.size());
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

  // 5. Unpack what came from other nodes.
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
      for (int l = 0; l < lm; ++l) cursor += align_up(RB(l, s));
      const std::int64_t bytes = RB(lm, s);
      if (head[i * static_cast<std::size_t>(L) + lm] != bytes)
        note(error, "node_leader: rank " + std::to_string(s) + " sends " +
                        std::to_string(head[i * static_cast<std::size_t>(L) + lm]) + " bytes to rank " +
                        std::to_string(me) + ", which expects " + std::to_string(bytes) + " (type signatures differ)");
      else if (bytes > 0)
        unpack(st.data + cursor, a.recvcounts[s], *rlayout_[s], at(a.recvbuf, a.rdispls[s]));
      for (int l = lm; l < L; ++l) cursor += align_up(RB(l, s));
    }
  }
  if (any_single) st.sync();  // B4: single-copy readers are done with the senders' arrays

  const char* on_node = singles > 0 && staged > 0 ? "single-copy+staged"
                        : singles > 0             ? "single-copy"
                        : staged > 0              ? "staged"
                                                  : "none";
  path_ = std::string("node_leader (") + (in_place ? "in place; " : "") + "on-node: " + on_node +
          "; inter-node: " + std::to_string(messages) + " aggregated message" + (messages == 1 ? "" : "s") + ")";
  if (!error.empty()) throw std::invalid_argument(error);
}

}  // namespace tb
