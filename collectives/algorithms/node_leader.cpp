#include "collectives/algorithms/node_leader.hpp"

#include "collectives/algorithm_support.hpp"
#include "collectives/comm_cache.hpp"
#include "collectives/every_rank.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/node_layout.hpp"
#include "collectives/node_max.hpp"
#include "collectives/node_shared_buffer.hpp"
#include "collectives/pack.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>
#if defined(TB_SMPI)
#include <simgrid/cond.h>   // sg_cond_wait: a wait that takes no simulated time
#include <simgrid/mutex.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "node_leader",
    .summary = "on-node data through shared memory, one aggregated message per node pair via leaders",
    .make = &make_algorithm<NodeLeaderAlltoallw>,
    .cost_schedule = "node_leader",
    .not_modelled = "",
});

constexpr std::int64_t kAlign = 64;                     // staging slots start on cache lines
constexpr std::int64_t kChunk = std::int64_t{1} << 30;  // leader messages go in <= 1 GiB pieces

std::int64_t align_up(std::int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fields each rank publishes per peer, in its control record.
// SEND_* describe my send side for that peer, RECV_* my receive side. *_ORIGIN is the buffer
// origin when the region [origin + *_LO, origin + *_HI) lies in a NodeSharedBuffer the peer maps
// (else 0); *_BLOCKS is blocks per instance, *_RUNS contiguous runs in all (count x *_BLOCKS, or
// 1 for a dense layout).
enum Field : int {
  SEND_BYTES, SEND_ORIGIN, SEND_LO, SEND_HI, SEND_COUNT, SEND_EXTENT, SEND_BLOCKS, SEND_RUNS,
  RECV_BYTES, RECV_ORIGIN, RECV_LO, RECV_HI, RECV_COUNT, RECV_EXTENT, RECV_BLOCKS, RECV_RUNS,
  kFields
};
// How one on-node pair's data moves.
enum class Mode { staged, push, pull };
constexpr int kRecordHeader = 2;  // [0] whether this rank's leader messages failed, [1] unused

// The NUMA domain this process is bound inside, or -1 (unbound, or bound across domains).
int numa_domain() {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return -1;
  int id = -1;
  if (hwloc_topology_load(topology) == 0) {
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topology, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
      const int domains = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
      for (int i = 0; i < domains; ++i) {
        hwloc_obj_t numa = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        if (domains > 1 && hwloc_bitmap_isincluded(cpus, numa->cpuset)) id = static_cast<int>(numa->os_index);
      }
    }
    hwloc_bitmap_free(cpus);
  }
  hwloc_topology_destroy(topology);
  return id;
}

int g_live_states = 0;
#if defined(TB_SMPI)
int g_live_node_syncs = 0;  // node barrier mutexes and condition variables this rank created
#endif

// What this rank asks MPI_Win_allocate_shared for when the node shares one area of `bytes`
// addressed from local rank 0's segment: all of it on local rank 0, nothing elsewhere. SimGrid
// SMPI 3.32 allocates ONE block of rank 0's size x ranks (see node_shared_buffer.cpp), which would
// be the area times the node's ranks (32x on the XC40-like platform), so there every rank asks
// for its part and the block is the area, rounded up.
MPI_Aint share_of_area(std::int64_t bytes, int ranks_on_node, int local_rank) {
#if defined(TB_SMPI)
  (void)local_rank;
  return static_cast<MPI_Aint>((bytes + ranks_on_node - 1) / ranks_on_node);
#else
  (void)ranks_on_node;
  return local_rank == 0 ? static_cast<MPI_Aint>(bytes) : 0;
#endif
}

// The staging memory of one prepared call (NodeLeaderAlltoallw::prepare_exchange): a shared
// window on the node (rank 0 of the node holds it all), or private memory on a node of one
// rank. The node state owns it and frees it with the communicator; a prepared call holds it
// through a shared_ptr, so that dropping the call is local, and a later prepare lends it again
// once no rank of the node holds it (NodeState::lend_area).
struct PreparedArea {
  MPI_Win window = MPI_WIN_NULL;
  std::unique_ptr<std::byte[]> private_memory;
  std::byte* base = nullptr;
  std::int64_t capacity = 0;

  // Collective over the node communicator when it is a window.
  void release() {
    private_memory.reset();
    if (window != MPI_WIN_NULL) {
      PMPI_Win_unlock_all(window);
      PMPI_Win_free(&window);
    }
    base = nullptr;
    capacity = 0;
  }

  // (Re)allocates `bytes`; collective over node_comm when the node has more than one rank.
  // Nothing in it is read before the prepared call that borrows it has written it.
  void allocate(std::int64_t bytes, int ranks_on_node, int local_rank, MPI_Comm node_comm) {
    release();
    if (ranks_on_node == 1) {
      private_memory = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(bytes));
      base = private_memory.get();
    } else {
      void* mine = nullptr;
      const MPI_Aint size = share_of_area(bytes, ranks_on_node, local_rank);
      TB_MPI_CHECK(PMPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, node_comm, &mine, &window));
      MPI_Aint got = 0;
      int unit = 0;
      void* shared = nullptr;
      TB_MPI_CHECK(PMPI_Win_shared_query(window, 0, &got, &unit, &shared));
      TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, window));
      base = static_cast<std::byte*>(shared);
    }
    capacity = bytes;
  }
};

// What node_leader keeps per communicator.
struct NodeState {
  NodeState() { ++g_live_states; }
  NodeState(const NodeState&) = delete;
  NodeState& operator=(const NodeState&) = delete;
  int ranks = 0, rank = 0;                 // the communicator's size, my rank in it
  int nodes = 1, node = 0;                 // node count, my node
  int ranks_on_node = 1, local_rank = 0;   // ranks on my node, my index among them
  std::vector<int> node_of, local_rank_of;  // per comm rank
  std::vector<std::vector<int>> members;    // per node: comm ranks, local order
  std::vector<std::vector<int>> leaders;    // per node: comm ranks that lead
  std::vector<int> pids;                    // per local rank: its process id
#if defined(TB_SMPI)
  // The node's mutex and condition variable for the barrier under SMPI, created by local rank 0
  // and shared by address (create_control); local rank 0 destroys them with the state, once the
  // whole node has reached free_node_sync.
  sg_mutex_t node_mutex = nullptr;
  sg_cond_t node_cond = nullptr;
  bool node_sync_shared = false;  // every rank of the node holds them (create_control completed)
#endif
  std::string leader_rule;
  MPI_Comm node_comm = MPI_COMM_NULL;     // my node's ranks: windows and barriers
  MPI_Comm message_comm = MPI_COMM_NULL;  // a duplicate of the user's communicator for leader messages
  MPI_Win control_window = MPI_WIN_NULL;
  std::vector<std::int64_t*> control;  // per local rank: its control record (two parities)
  std::size_t record_size = 0;         // int64 per parity
  MPI_Win staging_window = MPI_WIN_NULL;
  std::byte* staging = nullptr;
  // A node of one rank shares nothing: its control records and staging area are private memory,
  // not MPI windows. (MPICH 4.0.2's ch4:ucx can hang in MPI_Finalize after shared windows on
  // one-rank communicators when UCX carries the inter-node traffic; see the README.)
  std::vector<std::int64_t> private_control;
  std::unique_ptr<std::byte[]> private_staging;
  std::int64_t capacity = 0, allocations = 0;  // of the staging area
  std::uint64_t calls = 0;
  std::int64_t barriers = 0;  // node barriers passed (the same count on every rank of the node)
  // Prepared calls' staging areas: as many as prepared calls were ever alive at once on this
  // communicator, each as large as the largest call it served.
  std::vector<std::shared_ptr<PreparedArea>> areas;

  std::int64_t& field(int local, int parity, Field f, int peer) const {
    return control[local][parity * record_size + kRecordHeader + static_cast<std::size_t>(f) * ranks + peer];
  }
  std::int64_t& leader_failed(int local, int parity) const { return control[local][parity * record_size]; }
  // After the two parity records, on a cache line of its own.
  std::int64_t& barrier_count(int local) const { return control[local][2 * record_size]; }
  // The rank of node `from` that sends node `to` its message and receives the one from `to`.
  int pair_leader(int from, int to) const {
    const auto& candidates = leaders[from];
    return candidates[static_cast<std::size_t>(to) % candidates.size()];
  }

  // A node barrier through the control window: each rank publishes its barrier count (release)
  // and waits until every rank of the node has reached it (acquire); spinning gives way to
  // sched_yield and MPI progress after a while (wait_for_node_peers). Faster than MPI_Barrier
  // on the node communicator for small messages (measured with tb-bench).
  // MPI_Win_sync keeps MPI's separate memory model satisfied around it.
  void barrier() { barrier_over(staging_window); }

  // The same barrier, around which `data` (the window the protocol's data lies in) is synced.
  void barrier_over(MPI_Win data) {
    if (ranks_on_node == 1) return;
    sync_windows(data);
    const std::int64_t target = ++barriers;
#if defined(TB_SMPI)
    smpi_bench_end();  // SMPI's compute-on mode: this rank's compute ends before it is counted in
#endif
    std::atomic_ref<std::int64_t>(barrier_count(local_rank)).store(target, std::memory_order_release);
#if defined(TB_SMPI)
    wait_for_node_simulated(target);
    smpi_bench_begin();
#else
    for (int local = 0; local < ranks_on_node; ++local) {
      std::atomic_ref<std::int64_t> count(barrier_count(local));
      for (int spin = 0; count.load(std::memory_order_acquire) < target; ++spin) wait_for_node_peers(spin, node_comm);
    }
#endif
    sync_windows(data);
  }

#if defined(TB_SMPI)
  // Under SimGrid SMPI every simulated rank is an actor, all in one OS thread, and another runs
  // only when this one enters the simulator, so spinning or sched_yield would wait forever.
  // Yielding (sg_actor_yield) would too: SimGrid advances simulated time only once no actor is
  // ready to run, so a peer that must first wait for time (a leader's messages, a compute
  // burst, a later exit from MPI_Barrier) would never arrive. A simulated sleep would add its
  // quantum to the barrier (smpi_usleep(1) made an on-node call 2-3 us), and suspending the
  // actor would also suspend its communications in flight. So the rank waits on the node's
  // condition variable, which takes no simulated time, and every rank that arrives wakes the
  // waiting ones, which check the counts again. With SMPI's one scheduling thread
  // (contexts/nthreads 1) nothing runs between a check and the wait, so no wake-up is lost.
  void wait_for_node_simulated(std::int64_t target) const {
    sg_mutex_lock(node_mutex);
    sg_cond_notify_all(node_cond);
    for (int local = 0; local < ranks_on_node; ++local) {
      std::atomic_ref<std::int64_t> count(barrier_count(local));
      while (count.load(std::memory_order_acquire) < target) sg_cond_wait(node_cond, node_mutex);
    }
    sg_mutex_unlock(node_mutex);
  }

  // Destroys the node's barrier mutex and condition variable. The state dies in the delete
  // callback of MPI_Comm_free, which every rank of the node calls; a rank can still be inside
  // sg_cond_wait, woken but not yet run, when another is already here, so the node first meets in
  // a barrier, after which none uses them. A state whose creation stopped part-way (an MPI error)
  // keeps them: its node may never reach that barrier.
  void free_node_sync() {
    if (!node_sync_shared) return;
    if (PMPI_Barrier(node_comm) != MPI_SUCCESS) return;  // a destructor cannot throw; they stay
    if (local_rank == 0) {
      sg_cond_destroy(node_cond);
      sg_mutex_destroy(node_mutex);
      --g_live_node_syncs;
    }
    node_cond = nullptr;
    node_mutex = nullptr;
  }
#endif

  void sync_windows(MPI_Win data) const {
    PMPI_Win_sync(control_window);
    if (data != MPI_WIN_NULL) PMPI_Win_sync(data);
  }

  // An area of at least `bytes` for a new prepared call: the smallest idle one that is large
  // enough, else the largest idle one grown, else a new one. Idle means no rank of the node
  // holds it (ranks drop prepared calls in different orders, so the node agrees with one
  // MPI_Allreduce). Collective over node_comm; every rank asks for the same `bytes`, and every
  // rank's list of areas is the same, so all choose the same one.
  std::shared_ptr<PreparedArea> lend_area(std::int64_t bytes) {
    std::vector<int> idle(areas.size());
    for (std::size_t i = 0; i < areas.size(); ++i) idle[i] = areas[i].use_count() == 1 ? 1 : 0;
    if (ranks_on_node > 1 && !idle.empty())
      TB_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, idle.data(), static_cast<int>(idle.size()), MPI_INT, MPI_MIN, node_comm));
    std::size_t pick = areas.size();
    for (std::size_t i = 0; i < areas.size(); ++i)  // the smallest idle one that fits
      if (idle[i] && areas[i]->capacity >= bytes && (pick == areas.size() || areas[i]->capacity < areas[pick]->capacity))
        pick = i;
    for (std::size_t i = 0; i < areas.size() && pick == areas.size(); ++i)  // else the first idle one, grown
      if (idle[i]) pick = i;
    if (pick == areas.size()) areas.push_back(std::make_shared<PreparedArea>());
    PreparedArea& area = *areas[pick];
    if (area.capacity < bytes) area.allocate(std::max(bytes, area.capacity + area.capacity / 2), ranks_on_node, local_rank, node_comm);
    return areas[pick];
  }

  void free_staging() {
    private_staging.reset();
    if (staging_window != MPI_WIN_NULL) {
      PMPI_Win_unlock_all(staging_window);
      PMPI_Win_free(&staging_window);
    }
    staging = nullptr;
    capacity = 0;
  }

  // Grows the staging area to at least `bytes`. Collective over node_comm when it grows; every
  // rank asks for the same `bytes`.
  void reserve(std::int64_t bytes) {
    if (bytes <= capacity) return;
    const std::int64_t want = std::max(bytes, capacity + capacity / 2);  // before freeing resets capacity
    free_staging();
    if (ranks_on_node == 1) {
      private_staging = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(want));
      staging = private_staging.get();
    } else {
      const MPI_Aint mine = share_of_area(want, ranks_on_node, local_rank);
      void* base = nullptr;
      TB_MPI_CHECK(PMPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, node_comm, &base, &staging_window));
      MPI_Aint size = 0;
      int unit = 0;
      TB_MPI_CHECK(PMPI_Win_shared_query(staging_window, 0, &size, &unit, &base));
      TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, staging_window));
      staging = static_cast<std::byte*>(base);
    }
    capacity = want;
    ++allocations;
  }

  ~NodeState() {
    --g_live_states;
#if defined(TB_SMPI)
    free_node_sync();
#endif
    free_staging();
    for (auto& area : areas) area->release();  // a prepared call still holding one keeps a dead area
    if (control_window != MPI_WIN_NULL) {
      PMPI_Win_unlock_all(control_window);
      PMPI_Win_free(&control_window);
    }
    if (message_comm != MPI_COMM_NULL) PMPI_Comm_free(&message_comm);
    if (node_comm != MPI_COMM_NULL) PMPI_Comm_free(&node_comm);
  }
};

// Which ranks of my node lead, per local rank (1 = leads), by the TB_NODE_LEADERS rule; names
// the rule in state.leader_rule.
std::vector<int> choose_leaders(const NodeLeaderRule& rule, NodeState& state) {
  std::vector<int> leads(static_cast<std::size_t>(state.ranks_on_node), 0);
  if (rule.numa) {
    const int mine = numa_domain();
    std::vector<int> domains(static_cast<std::size_t>(state.ranks_on_node));
    TB_MPI_CHECK(PMPI_Allgather(&mine, 1, MPI_INT, domains.data(), 1, MPI_INT, state.node_comm));
    for (int local = 0; local < state.ranks_on_node; ++local)  // the first rank of each domain
      leads[local] = std::find(domains.begin(), domains.end(), domains[local]) - domains.begin() == local;
    state.leader_rule = "numa (hwloc)";
  } else {
    const int count = std::min(rule.per_node, state.ranks_on_node);
    for (int i = 0; i < count; ++i) leads[static_cast<std::size_t>(i) * state.ranks_on_node / count] = 1;
    state.leader_rule = rule.per_node == 1 ? "first rank" : std::to_string(rule.per_node) + " per node";
  }
  return leads;
}

// Every rank learns every rank's node, local rank, leader role and process id.
void learn_ranks(const std::vector<int>& leads, NodeState& state) {
  const std::int64_t mine[4] = {state.node, state.local_rank, leads[state.local_rank], getpid()};
  std::vector<std::int64_t> all(4 * static_cast<std::size_t>(state.ranks));
  TB_MPI_CHECK(PMPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, state.message_comm));
  state.node_of.resize(state.ranks);
  state.local_rank_of.resize(state.ranks);
  state.members.assign(state.nodes, {});
  state.leaders.assign(state.nodes, {});
  for (int rank = 0; rank < state.ranks; ++rank) {
    state.node_of[rank] = static_cast<int>(all[4 * rank]);
    state.local_rank_of[rank] = static_cast<int>(all[4 * rank + 1]);
  }
  for (int rank = 0; rank < state.ranks; ++rank) {  // local order = rank order within the node (node_comm's key)
    state.members[state.node_of[rank]].push_back(rank);
    if (all[4 * rank + 2]) state.leaders[state.node_of[rank]].push_back(rank);
  }
  for (int rank : state.members[state.node]) state.pids.push_back(static_cast<int>(all[4 * rank + 3]));
}

// The control records: two parity records per rank, then the barrier count on a cache line of
// its own; in a shared window, or private memory on a node of one rank.
void create_control(NodeState& state) {
  state.record_size = kRecordHeader + static_cast<std::size_t>(kFields) * state.ranks;
  const std::size_t words = 2 * state.record_size + 8;
  if (state.ranks_on_node == 1) {
    state.private_control.assign(words, 0);
    state.control.push_back(state.private_control.data());
    return;
  }
  void* base = nullptr;
  MPI_Info info = MPI_INFO_NULL;
  TB_MPI_CHECK(PMPI_Info_create(&info));
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  const int rc = PMPI_Win_allocate_shared(static_cast<MPI_Aint>(words * sizeof(std::int64_t)), sizeof(std::int64_t),
                                          info, state.node_comm, &base, &state.control_window);
  PMPI_Info_free(&info);
  TB_MPI_CHECK(rc);
#if defined(TB_SMPI)
  // SimGrid SMPI 3.32's MPI_Win_shared_query answers the start of the whole window for every
  // rank; each rank's own base is right, and all simulated ranks share one address space, so
  // the ranks of the node tell each other their bases instead; local rank 0 also passes the
  // node's barrier mutex and condition variable (NodeState::wait_for_node_simulated).
  if (state.local_rank == 0) {
    state.node_mutex = sg_mutex_init();
    state.node_cond = sg_cond_init();
    ++g_live_node_syncs;
  }
  std::vector<std::int64_t> all(3 * static_cast<std::size_t>(state.ranks_on_node));
  const std::int64_t mine[3] = {reinterpret_cast<std::intptr_t>(base), reinterpret_cast<std::intptr_t>(state.node_mutex),
                                reinterpret_cast<std::intptr_t>(state.node_cond)};
  TB_MPI_CHECK(PMPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, state.node_comm));
  for (int local = 0; local < state.ranks_on_node; ++local)
    state.control.push_back(reinterpret_cast<std::int64_t*>(all[3 * local]));
  state.node_mutex = reinterpret_cast<sg_mutex_t>(all[1]);
  state.node_cond = reinterpret_cast<sg_cond_t>(all[2]);
#else
  for (int local = 0; local < state.ranks_on_node; ++local) {
    MPI_Aint size = 0;
    int unit = 0;
    void* record = nullptr;
    TB_MPI_CHECK(PMPI_Win_shared_query(state.control_window, local, &size, &unit, &record));
    state.control.push_back(static_cast<std::int64_t*>(record));
  }
#endif
  std::memset(state.control[state.local_rank], 0, words * sizeof(std::int64_t));
  TB_MPI_CHECK(PMPI_Win_lock_all(MPI_MODE_NOCHECK, state.control_window));
  TB_MPI_CHECK(PMPI_Barrier(state.node_comm));  // every record is zeroed before anyone counts barriers
#if defined(TB_SMPI)
  state.node_sync_shared = true;
#endif
}

NodeState* create_state(MPI_Comm comm) {
  const NodeLeaderRule rule = settings().node_leaders.get();
  const NodeLayout& layout = node_layout(comm);
  auto state = std::make_unique<NodeState>();
  TB_MPI_CHECK(PMPI_Comm_size(comm, &state->ranks));
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &state->rank));
  TB_MPI_CHECK(PMPI_Comm_dup(layout.node_comm, &state->node_comm));
  TB_MPI_CHECK(PMPI_Comm_dup(comm, &state->message_comm));
  TB_MPI_CHECK(PMPI_Comm_set_errhandler(state->message_comm, MPI_ERRORS_RETURN));
  state->ranks_on_node = layout.node_size;
  state->local_rank = layout.node_rank;
  state->nodes = layout.nodes;
  state->node = layout.node;
  learn_ranks(choose_leaders(rule, *state), *state);
  create_control(*state);
  return state.release();
}

NodeState* find_state(MPI_Comm comm) { return CommCache<NodeState>::find(comm); }

NodeState& node_state(MPI_Comm comm) { return CommCache<NodeState>::get(comm, create_state); }

void note(CallError& error, int error_class, const std::string& text) { error.note(error_class, text); }

int class_of(int code) {
  int error_class = MPI_ERR_OTHER;
  PMPI_Error_class(code, &error_class);
  return error_class;
}

// A sender-receiver mismatch, with its class (algorithm_support.hpp).
void note_mismatch(CallError& error, int sender, std::int64_t sent, int receiver, std::int64_t expected) {
  error.note(mismatch_class(sent, expected), mismatch_text("node_leader", sender, sent, receiver, expected));
}

// The span [lo, hi) of bytes that `count` instances of a layout touch, relative to the origin.
void span_of(const TypeLayout& layout, std::int64_t count, std::int64_t& lo, std::int64_t& hi) {
  lo = hi = layout.blocks.front().offset;
  for (const ByteBlock& block : layout.blocks) {
    lo = std::min(lo, block.offset);
    hi = std::max(hi, block.offset + block.length);
  }
  const std::int64_t shift = (count - 1) * layout.extent;
  lo += std::min<std::int64_t>(shift, 0);
  hi += std::max<std::int64_t>(shift, 0);
}

}  // namespace

int node_leader_live_states() { return g_live_states; }

#if defined(TB_SMPI)
int node_leader_live_node_syncs() { return g_live_node_syncs; }
#endif

NodeLeaderStats node_leader_stats(MPI_Comm comm) {
  NodeLeaderStats stats;
  if (const NodeState* state = find_state(comm)) {
    stats.window_allocations = state->allocations;
    stats.window_bytes = state->capacity;
    stats.shared_windows = state->control_window != MPI_WIN_NULL;
    stats.leaders_on_my_node = static_cast<int>(state->leaders[state->node].size());
    stats.leader_rule = state->leader_rule;
    stats.prepared_areas = static_cast<int>(state->areas.size());
    stats.prepared_areas_held = 0;
    stats.prepared_area_bytes = 0;
    for (const auto& area : state->areas) {
      stats.prepared_areas_held += area.use_count() > 1 ? 1 : 0;
      stats.prepared_area_bytes += area->capacity;
    }
  }
  return stats;
}

// One call: its arguments, this node's state, the plan every rank of the node derives from what
// all of them published (the same plan on each), and the protocol's steps in the order
// exchange() runs them. The first inconsistency seen goes to `error`, thrown only after the
// protocol has completed so that no rank of the node is left waiting. A prepared call
// (Prepared, below) runs the first two steps once and keeps the copy lists the add_* parts give.
struct NodeLeaderAlltoallw::Call {
  Call(NodeLeaderAlltoallw& algorithm, const AlltoallwArgs& args, NodeLeaderCopy copy);

  void publish();                  // 1. both sides of every peer; B1
  void plan();                     // 2. direct or staged per on-node pair; the staging layout
  void check_sizes();              //    what this rank can check of its receives before they move
  void use_node_staging();         //    the node's staging window, grown to the layout
  void stage();                    // 3. pack staged data, publish block lists; B2
  void start_leader_messages();    // 4. one message each way per node pair, by the leaders
  void push_on_node();             //    direct copies into partners' shared receive arrays
  void pull_on_node();             //    direct copies from partners' send arrays, staged slots
  void finish_leader_messages();   //    wait, check, tell the node; B3
  void unpack_from_other_nodes();  // 5. what the leaders received for this rank; B4
  std::string path() const;        // "node_leader (on-node: ...; inter-node: ...)"
  std::string routes() const;      // "on-node: ...; inter-node: ..."

  // The plan, read from the published records (the same on every rank of the node). field():
  // what local rank `local` published for comm rank `peer` in this call.
  std::int64_t field(int local, Field f, int peer) const { return state.field(local, parity, f, peer); }
  Mode mode(int local, int dest) const;
  std::int64_t slot_bytes(int local, int dest) const;
  std::int64_t header_bytes(int other_node) const;
  std::int64_t list_bytes(int local, int partner) const;
  std::int64_t& staged_for(int local, int to_node) const {
    return staged_bytes[static_cast<std::size_t>(local) * nodes + to_node];
  }
  bool sizes_match(int sender) const {
    return field(state.local_rank_of[sender], SEND_BYTES, me) == field(local_rank, RECV_BYTES, sender);
  }
  const ByteBlock* published_blocks(int local, int partner, bool receive_list) const;
  // Which copy stream the self block joins: the one over its more fragmented layout.
  enum class SelfIn { none, packs, pushes, pulls };
  SelfIn self_in() const;

  // The copies of the steps, added to a Sink: a MergedCopy the blocking call runs at once, or
  // the FixedStream a prepared call runs at every start. They read the staging layout at
  // `staging`.
  template <class Sink> void add_packs(Sink& sink);   // staged slots, from my send array
  template <class Sink> void add_pushes(Sink& sink);  // into partners' shared receive arrays
  template <class Sink> void add_pulls(Sink& sink);   // pulls and on-node staged slots
  template <class Sink> void add_from_node(Sink& sink, int from_node, const std::int64_t* header);
  template <class Sink> void add_pull(Sink& sink, int sender_local);
  template <class Sink> void add_staged_on_node(Sink& sink, int sender_local);
  template <class Sink> void add_self_copy(Sink& sink) const;

  // Parts of the steps.
  void lay_out_staging();
  void write_headers(std::byte* base) const;
  void publish_block_lists();
  void post(bool outgoing, int peer, std::byte* buffer, std::int64_t bytes);
  void unpack_from(int from_node);

  NodeState& state;
  const AlltoallwArgs& args;
  const SendSide send;  // the send arguments, or the receive side under MPI_IN_PLACE
  const bool in_place;
  const bool direct_allowed;  // TB_NODE_LEADER_COPY allows direct copies, and not in place
  const int parity;           // which of the two control records this call uses
  const int ranks, me, nodes, node, ranks_on_node, local_rank;
  const std::vector<int>& node_ranks;  // my node's comm ranks, in local order

  // The algorithm's tables (node_leader.hpp), which the steps fill.
  std::vector<std::shared_ptr<const TypeLayout>>& send_layouts;
  std::vector<std::shared_ptr<const TypeLayout>>& recv_layouts;
  std::vector<std::int64_t>& staged_bytes;
  std::vector<std::int64_t>& out_offset;
  std::vector<std::int64_t>& out_bytes;
  std::vector<std::int64_t>& in_offset;
  std::vector<std::int64_t>& in_bytes;
  std::vector<std::int64_t>& list_offsets;
  std::vector<MPI_Request>& requests;
  std::vector<std::int64_t>& expected_bytes;
  std::vector<MPI_Status>& statuses;
  MergedCopy& by_source;
  MergedCopy& by_dest;

  std::int64_t staging_total = 0;  // bytes of the staging layout
  std::byte* staging = nullptr;    // where it lies: the node's window, or a prepared call's area
  bool stage_all = false;          // every pair staged, direct copies allowed or not (prepared, small)
  bool any_direct = false;         // some on-node pair of the node copies directly
  bool any_push = false;           // this rank pushes to some partner
  bool self_copy = false;          // this rank copies its own block (not in place, sizes match)
  bool self_by_source = false;     // ... in the stream over its send array (the more fragmented)
  int messages = 0, pushed = 0, pulled = 0, staged = 0;  // for the path
  CallError error;         // the first problem, the same on every rank of the node where all can see it
  CallError leader_error;  // the first failure of this rank's leader messages
};

NodeLeaderAlltoallw::Call::Call(NodeLeaderAlltoallw& algorithm, const AlltoallwArgs& args, NodeLeaderCopy copy)
    : state(node_state(args.comm)),
      args(args),
      send(send_side(args)),
      in_place(args.sendbuf == MPI_IN_PLACE),
      direct_allowed(copy == NodeLeaderCopy::automatic && !in_place),
      parity(static_cast<int>(++state.calls & 1)),
      ranks(state.ranks),
      me(state.rank),
      nodes(state.nodes),
      node(state.node),
      ranks_on_node(state.ranks_on_node),
      local_rank(state.local_rank),
      node_ranks(state.members[state.node]),
      send_layouts(algorithm.send_layouts_),
      recv_layouts(algorithm.recv_layouts_),
      staged_bytes(algorithm.staged_bytes_),
      out_offset(algorithm.out_offset_),
      out_bytes(algorithm.out_bytes_),
      in_offset(algorithm.in_offset_),
      in_bytes(algorithm.in_bytes_),
      list_offsets(algorithm.list_offsets_),
      requests(algorithm.requests_),
      expected_bytes(algorithm.expected_bytes_),
      statuses(algorithm.statuses_),
      by_source(algorithm.by_source_),
      by_dest(algorithm.by_dest_) {}

// 1. Publish both sides of every peer, and where my arrays are readable by on-node peers; B1.
void NodeLeaderAlltoallw::Call::publish() {
  send_layouts.assign(ranks, nullptr);
  recv_layouts.assign(ranks, nullptr);
  state.leader_failed(local_rank, parity) = 0;
  for (int peer = 0; peer < ranks; ++peer) {
    std::int64_t value[kFields] = {};
    const bool shareable = direct_allowed && peer != me && state.node_of[peer] == node;
    const int peer_pid = shareable ? state.pids[state.local_rank_of[peer]] : 0;
    if (send.counts[peer] > 0) {
      send_layouts[peer] = type_layout(send.types[peer]);
      const TypeLayout& layout = *send_layouts[peer];
      value[SEND_BYTES] = send.counts[peer] * layout.size;
      value[SEND_COUNT] = send.counts[peer];
      value[SEND_EXTENT] = layout.extent;
      value[SEND_BLOCKS] = static_cast<std::int64_t>(layout.blocks.size());
      value[SEND_RUNS] = layout.dense() ? 1 : value[SEND_BLOCKS] * send.counts[peer];
      if (value[SEND_BYTES] > 0 && shareable) {
        span_of(layout, send.counts[peer], value[SEND_LO], value[SEND_HI]);
        const std::byte* origin = at(send.buf, send.displs[peer]);
        if (readable_by(origin + value[SEND_LO], value[SEND_HI] - value[SEND_LO], peer_pid))
          value[SEND_ORIGIN] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(origin));
      }
    }
    if (args.recvcounts[peer] > 0) {
      recv_layouts[peer] = type_layout(args.recvtypes[peer]);
      const TypeLayout& layout = *recv_layouts[peer];
      value[RECV_BYTES] = args.recvcounts[peer] * layout.size;
      value[RECV_COUNT] = args.recvcounts[peer];
      value[RECV_EXTENT] = layout.extent;
      value[RECV_BLOCKS] = static_cast<std::int64_t>(layout.blocks.size());
      value[RECV_RUNS] = layout.dense() ? 1 : value[RECV_BLOCKS] * args.recvcounts[peer];
      if (value[RECV_BYTES] > 0 && shareable) {
        span_of(layout, args.recvcounts[peer], value[RECV_LO], value[RECV_HI]);
        std::byte* origin = at(args.recvbuf, args.rdispls[peer]);
        if (readable_by(origin + value[RECV_LO], value[RECV_HI] - value[RECV_LO], peer_pid))
          value[RECV_ORIGIN] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(origin));
      }
    }
    for (int f = 0; f < kFields; ++f) state.field(local_rank, parity, static_cast<Field>(f), peer) = value[f];
  }
  state.barrier();  // B1
}

// The on-node pair (local rank `local` -> comm rank `dest`): a direct copy by whichever side's
// own layout is more fragmented (it then walks its own array in address order), or staged.
// Pairs with other nodes, and self, count as staged here.
Mode NodeLeaderAlltoallw::Call::mode(int local, int dest) const {
  const int sender = node_ranks[local];
  if (stage_all || dest == sender || state.node_of[dest] != node || field(local, SEND_BYTES, dest) == 0)
    return Mode::staged;
  const int dest_local = state.local_rank_of[dest];
  const bool can_pull = field(local, SEND_ORIGIN, dest) != 0;
  const bool can_push = field(dest_local, RECV_ORIGIN, sender) != 0;
  if (can_push && can_pull)
    return field(local, SEND_RUNS, dest) > field(dest_local, RECV_RUNS, sender) ? Mode::push : Mode::pull;
  return can_push ? Mode::push : can_pull ? Mode::pull : Mode::staged;
}

// The staging slot of the pair (local rank `local` -> comm rank `dest`), padded to a cache line:
// 0 unless the pair goes through the staging window.
std::int64_t NodeLeaderAlltoallw::Call::slot_bytes(int local, int dest) const {
  if (dest == node_ranks[local] || mode(local, dest) != Mode::staged) return 0;
  return align_up(field(local, SEND_BYTES, dest));
}

// The size header of the message between my node and `other_node`: one int64 per pair of a rank
// on the sending node and a rank on the receiving node.
std::int64_t NodeLeaderAlltoallw::Call::header_bytes(int other_node) const {
  if (other_node == node) return 0;
  return align_up(8 * static_cast<std::int64_t>(ranks_on_node) *
                  static_cast<std::int64_t>(state.members[other_node].size()));
}

// What local rank `local` publishes for the direct copies with comm rank `partner`: its send
// block list when the partner pulls from it, then its receive block list when the partner
// pushes to it.
std::int64_t NodeLeaderAlltoallw::Call::list_bytes(int local, int partner) const {
  std::int64_t blocks = 0;
  if (mode(local, partner) == Mode::pull) blocks += field(local, SEND_BLOCKS, partner);
  const int partner_local = state.node_of[partner] == node ? state.local_rank_of[partner] : -1;
  if (partner_local >= 0 && partner != node_ranks[local] && mode(partner_local, node_ranks[local]) == Mode::push)
    blocks += field(local, RECV_BLOCKS, partner);
  return blocks * static_cast<std::int64_t>(sizeof(ByteBlock));
}

// Where local rank `local`'s published block list for comm rank `partner` lies: its send list,
// or (receive_list) its receive list.
const ByteBlock* NodeLeaderAlltoallw::Call::published_blocks(int local, int partner, bool receive_list) const {
  std::int64_t offset = list_offsets[static_cast<std::size_t>(local) * ranks_on_node + state.local_rank_of[partner]];
  if (receive_list && mode(local, partner) == Mode::pull)
    offset += field(local, SEND_BLOCKS, partner) * static_cast<std::int64_t>(sizeof(ByteBlock));
  return reinterpret_cast<const ByteBlock*>(staging + offset);
}

// 2. Every rank derives the same plan from the published records: how each on-node pair moves,
// what each rank stages for each node, from that the staging layout, and how its own block goes
// (copied when not in place and its two sides agree, in the stream over the more fragmented).
void NodeLeaderAlltoallw::Call::plan() {
  messages = nodes - 1;
  staged_bytes.assign(static_cast<std::size_t>(ranks_on_node) * nodes, 0);
  any_direct = false;
  for (int local = 0; local < ranks_on_node; ++local)
    for (int dest = 0; dest < ranks; ++dest) {
      staged_for(local, state.node_of[dest]) += slot_bytes(local, dest);
      any_direct = any_direct ||
                   (state.node_of[dest] == node && dest != node_ranks[local] && mode(local, dest) != Mode::staged);
    }
  lay_out_staging();
  any_push = false;
  for (int dest : node_ranks) any_push = any_push || (dest != me && mode(local_rank, dest) == Mode::push);
  const std::int64_t sent = field(local_rank, SEND_BYTES, me), expected = field(local_rank, RECV_BYTES, me);
  self_copy = !in_place && sent == expected && sent > 0;
  self_by_source = field(local_rank, SEND_RUNS, me) > field(local_rank, RECV_RUNS, me);
}

NodeLeaderAlltoallw::Call::SelfIn NodeLeaderAlltoallw::Call::self_in() const {
  if (!self_copy) return SelfIn::none;
  if (!self_by_source) return SelfIn::pulls;
  return any_push ? SelfIn::pushes : SelfIn::packs;
}

// The staging window: per other node, what my node sends it (size header, then each local
// rank's staged data in local order); my node's on-node slots the same way without a header;
// per other node, where its message lands; then, when any pair copies directly, the block lists.
// Every rank of the node reaches the same size, staging_total.
void NodeLeaderAlltoallw::Call::lay_out_staging() {
  out_offset.assign(nodes, 0);
  out_bytes.assign(nodes, 0);
  in_offset.assign(nodes, 0);
  in_bytes.assign(nodes, 0);
  std::int64_t total = 0;
  for (int to_node = 0; to_node < nodes; ++to_node) {
    out_offset[to_node] = total;
    out_bytes[to_node] = header_bytes(to_node);
    for (int local = 0; local < ranks_on_node; ++local) out_bytes[to_node] += staged_for(local, to_node);
    total += out_bytes[to_node];
  }
  for (int from_node = 0; from_node < nodes; ++from_node) {
    if (from_node == node) continue;
    in_offset[from_node] = total;
    in_bytes[from_node] = header_bytes(from_node);
    for (int sender : state.members[from_node])
      for (int local = 0; local < ranks_on_node; ++local)
        in_bytes[from_node] += align_up(field(local, RECV_BYTES, sender));
    total += in_bytes[from_node];
  }
  list_offsets.assign(static_cast<std::size_t>(ranks_on_node) * ranks_on_node, 0);
  if (any_direct)
    for (int local = 0; local < ranks_on_node; ++local)
      for (int partner = 0; partner < ranks_on_node; ++partner) {
        list_offsets[static_cast<std::size_t>(local) * ranks_on_node + partner] = total;
        total += list_bytes(local, node_ranks[partner]);
      }
  staging_total = total;
}

// The checks every rank can make for its own receives before anything moves: what each on-node
// sender publishes against what this rank expects, and its own block (data from other nodes is
// checked against the message's header).
void NodeLeaderAlltoallw::Call::check_sizes() {
  // Every on-node pair, self blocks included, in the same order on every rank of the node: all of
  // them note the same first problem and raise it together.
  for (int receiver_local = 0; receiver_local < ranks_on_node; ++receiver_local)
    for (int sender_local = 0; sender_local < ranks_on_node; ++sender_local) {
      if (in_place && sender_local == receiver_local) continue;
      const int sender = node_ranks[sender_local], receiver = node_ranks[receiver_local];
      const std::int64_t sent = field(sender_local, SEND_BYTES, receiver);
      const std::int64_t expected = field(receiver_local, RECV_BYTES, sender);
      if (sent != expected) note_mismatch(error, sender, sent, receiver, expected);
    }
}

// The blocking call stages in the node's window, grown to this call's layout (collective over
// the node when it grows; every rank asks for the same size).
void NodeLeaderAlltoallw::Call::use_node_staging() {
  state.reserve(staging_total);
  staging = state.staging;
}

// The self block: from my send array into my receive array.
template <class Sink>
void NodeLeaderAlltoallw::Call::add_self_copy(Sink& sink) const {
  sink.add(at(args.sendbuf, args.sdispls[me]), args.sendcounts[me], *send_layouts[me],
           at(args.recvbuf, args.rdispls[me]), args.recvcounts[me], *recv_layouts[me]);
}

// 3. Pack what is staged (with the size headers) and publish the block lists direct partners
// walk; B2.
void NodeLeaderAlltoallw::Call::stage() {
  write_headers(staging);
  by_source.clear();
  add_packs(by_source);
  by_source.run(true);
  if (any_direct) publish_block_lists();
  state.barrier();  // B2
}

// My row of the size header of each message to another node: [sender's local rank][receiver].
void NodeLeaderAlltoallw::Call::write_headers(std::byte* base) const {
  for (int to_node = 0; to_node < nodes; ++to_node) {
    if (to_node == node) continue;
    const auto& receivers = state.members[to_node];
    auto* header = reinterpret_cast<std::int64_t*>(base + out_offset[to_node]);
    for (std::size_t j = 0; j < receivers.size(); ++j)
      header[static_cast<std::size_t>(local_rank) * receivers.size() + j] = field(local_rank, SEND_BYTES, receivers[j]);
  }
}

// My staged data (on-node slots not copied directly, everything for other nodes), as one stream
// in source address order; the self block joins it when its source is the fragmented side and
// nothing is pushed.
template <class Sink>
void NodeLeaderAlltoallw::Call::add_packs(Sink& sink) {
  for (int to_node = 0; to_node < nodes; ++to_node) {
    std::int64_t cursor = out_offset[to_node] + header_bytes(to_node);
    for (int local = 0; local < local_rank; ++local) cursor += staged_for(local, to_node);
    for (const int dest : state.members[to_node]) {
      if (dest == me || slot_bytes(local_rank, dest) == 0) continue;
      const ByteBlock stream{0, field(local_rank, SEND_BYTES, dest)};
      sink.add(at(send.buf, send.displs[dest]), send.counts[dest], *send_layouts[dest], staging + cursor, 1,
               contiguous_span(stream));
      cursor += slot_bytes(local_rank, dest);
    }
  }
  if (self_in() == SelfIn::packs) add_self_copy(sink);
}

// For each on-node partner: my send layout's blocks when it pulls from me, then my receive
// layout's blocks when it pushes to me.
void NodeLeaderAlltoallw::Call::publish_block_lists() {
  for (int partner_local = 0; partner_local < ranks_on_node; ++partner_local) {
    const int partner = node_ranks[partner_local];
    if (partner == me) continue;
    std::byte* out = staging + list_offsets[static_cast<std::size_t>(local_rank) * ranks_on_node + partner_local];
    if (mode(local_rank, partner) == Mode::pull) {
      const auto& blocks = send_layouts[partner]->blocks;
      std::memcpy(out, blocks.data(), blocks.size() * sizeof(ByteBlock));
      out += blocks.size() * sizeof(ByteBlock);
    }
    if (mode(partner_local, me) == Mode::push) {
      const auto& blocks = recv_layouts[partner]->blocks;
      std::memcpy(out, blocks.data(), blocks.size() * sizeof(ByteBlock));
    }
  }
}

// Posts one leader message, sent or received, in pieces of at most kChunk bytes.
void NodeLeaderAlltoallw::Call::post(bool outgoing, int peer, std::byte* buffer, std::int64_t bytes) {
  for (std::int64_t done = 0; done < bytes; done += kChunk) {
    const int piece = static_cast<int>(std::min(kChunk, bytes - done));
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc =
        outgoing ? PMPI_Isend(buffer + done, piece, MPI_BYTE, peer, tags::node_leader, state.message_comm, &request)
                : PMPI_Irecv(buffer + done, piece, MPI_BYTE, peer, tags::node_leader, state.message_comm, &request);
    if (rc != MPI_SUCCESS) {
      note(leader_error, class_of(rc),
           std::string(outgoing ? "node_leader: MPI_Isend" : "node_leader: MPI_Irecv") + " failed: " +
               mpi_error_string(rc));
      continue;
    }
    requests.push_back(request);
    expected_bytes.push_back(outgoing ? -1 : piece);
  }
}

// 4. The leaders start the node-pair messages: for each other node whose pair this rank leads,
// my node's region for it goes out and its message comes in.
void NodeLeaderAlltoallw::Call::start_leader_messages() {
  requests.clear();
  expected_bytes.clear();
  for (int other_node = 0; other_node < nodes; ++other_node) {
    if (other_node == node || state.pair_leader(node, other_node) != me) continue;
    const int peer = state.pair_leader(other_node, node);
    post(true, peer, staging + out_offset[other_node], out_bytes[other_node]);
    post(false, peer, staging + in_offset[other_node], in_bytes[other_node]);
  }
}

// 4. Pushes: my send array, in address order, into the shared receive arrays of the partners
// this rank pushes to.
void NodeLeaderAlltoallw::Call::push_on_node() {
  by_source.clear();
  add_pushes(by_source);
  by_source.run(true);
}

// Into the shared receive array of each partner I push to, walking the block list it published
// (with the self block when it goes by source and something is pushed).
template <class Sink>
void NodeLeaderAlltoallw::Call::add_pushes(Sink& sink) {
  for (int dest : node_ranks) {
    if (dest == me || mode(local_rank, dest) != Mode::push ||
        field(state.local_rank_of[dest], RECV_BYTES, me) != field(local_rank, SEND_BYTES, dest))
      continue;
    const int dest_local = state.local_rank_of[dest];
    const std::int64_t lo = field(dest_local, RECV_LO, me), hi = field(dest_local, RECV_HI, me);
    const std::int64_t origin = field(dest_local, RECV_ORIGIN, me);
    auto* view = const_cast<std::byte*>(shared_view(state.pids[dest_local], origin + lo, hi - lo));
    if (view == nullptr) throw std::logic_error("node_leader: a published shared receive buffer is not mapped here");
    const BlockSpan theirs(published_blocks(dest_local, me, true),
                           static_cast<std::size_t>(field(dest_local, RECV_BLOCKS, me)),
                           field(dest_local, RECV_BYTES, me) / field(dest_local, RECV_COUNT, me),
                           field(dest_local, RECV_EXTENT, me));
    sink.add(at(send.buf, send.displs[dest]), send.counts[dest], *send_layouts[dest], view - lo,
             field(dest_local, RECV_COUNT, me), theirs);
    ++pushed;
  }
  if (self_in() == SelfIn::pushes) add_self_copy(sink);
}

// 4. Pulls and on-node staged slots, into my receive array in address order.
void NodeLeaderAlltoallw::Call::pull_on_node() {
  by_dest.clear();
  add_pulls(by_dest);
  by_dest.run(false);
}

// Each on-node sender's data for me, pulled from its shared send array or read from its staged
// slot (with the self block when it goes by destination).
template <class Sink>
void NodeLeaderAlltoallw::Call::add_pulls(Sink& sink) {
  for (int sender_local = 0; sender_local < ranks_on_node; ++sender_local) {
    const int sender = node_ranks[sender_local];
    if (sender == me || field(local_rank, RECV_BYTES, sender) == 0 || !sizes_match(sender)) continue;
    const Mode how = mode(sender_local, me);
    if (how == Mode::pull) add_pull(sink, sender_local);
    if (how == Mode::staged) add_staged_on_node(sink, sender_local);
  }
  if (self_in() == SelfIn::pulls) add_self_copy(sink);
}

// From the sender's shared send array, walking the block list it published for me.
template <class Sink>
void NodeLeaderAlltoallw::Call::add_pull(Sink& sink, int sender_local) {
  const int sender = node_ranks[sender_local];
  const std::int64_t lo = field(sender_local, SEND_LO, me), hi = field(sender_local, SEND_HI, me);
  const std::byte* view = shared_view(state.pids[sender_local], field(sender_local, SEND_ORIGIN, me) + lo, hi - lo);
  if (view == nullptr) throw std::logic_error("node_leader: a published shared send buffer is not mapped here");
  const BlockSpan theirs(published_blocks(sender_local, me, false),
                         static_cast<std::size_t>(field(sender_local, SEND_BLOCKS, me)),
                         field(sender_local, SEND_BYTES, me) / field(sender_local, SEND_COUNT, me),
                         field(sender_local, SEND_EXTENT, me));
  sink.add(view - lo, field(sender_local, SEND_COUNT, me), theirs, at(args.recvbuf, args.rdispls[sender]),
           args.recvcounts[sender], *recv_layouts[sender]);
  ++pulled;
}

// From the sender's slot for me in my node's on-node region: after the rows of the local ranks
// before it, and its slots for the ranks before me.
template <class Sink>
void NodeLeaderAlltoallw::Call::add_staged_on_node(Sink& sink, int sender_local) {
  const int sender = node_ranks[sender_local];
  std::int64_t cursor = out_offset[node];
  for (int local = 0; local < sender_local; ++local) cursor += staged_for(local, node);
  for (int dest : node_ranks) {
    if (dest == me) break;
    cursor += slot_bytes(sender_local, dest);
  }
  const ByteBlock stream{0, field(local_rank, RECV_BYTES, sender)};
  sink.add(staging + cursor, 1, contiguous_span(stream), at(args.recvbuf, args.rdispls[sender]),
           args.recvcounts[sender], *recv_layouts[sender]);
  ++staged;
}

// 4. The leaders wait for their messages and check that each receive brought what the plan
// expects; every rank tells the node whether its leader messages failed; B3 when there are
// other nodes.
void NodeLeaderAlltoallw::Call::finish_leader_messages() {
  if (!requests.empty()) {
    statuses.resize(requests.size());
    const int rc = PMPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const int err = rc == MPI_ERR_IN_STATUS ? statuses[i].MPI_ERROR : rc;
      if (err != MPI_SUCCESS && err != MPI_ERR_PENDING) {
        note(leader_error, class_of(err), "node_leader: leader message failed: " + mpi_error_string(err));
        continue;
      }
      int got = 0;
      if (expected_bytes[i] >= 0 && PMPI_Get_count(&statuses[i], MPI_BYTE, &got) == MPI_SUCCESS &&
          got != expected_bytes[i])
        note(leader_error, mismatch_class(got, expected_bytes[i]), "node_leader: a node sent " + std::to_string(got) + " bytes where " +
                               std::to_string(expected_bytes[i]) + " were expected (type signatures differ)");
    }
  }
  state.leader_failed(local_rank, parity) = leader_error.error_class;  // MPI_SUCCESS (0) or the class
  if (nodes > 1) state.barrier();  // B3
}

// 5. Unpack what came from other nodes, into my receive array in address order; B4 when direct
// copies must be done with the partners' arrays before anyone returns.
void NodeLeaderAlltoallw::Call::unpack_from_other_nodes() {
  by_dest.clear();
  for (int from_node = 0; from_node < nodes; ++from_node)
    if (from_node != node) unpack_from(from_node);
  by_dest.run(false);
  if (any_direct) state.barrier();  // B4
}

// My part of the message from `from_node`, unless its leader's messages failed.
void NodeLeaderAlltoallw::Call::unpack_from(int from_node) {
  const int leader = state.pair_leader(node, from_node);  // my node's receiver for from_node
  const std::int64_t failed = state.leader_failed(state.local_rank_of[leader], parity);
  if (failed != MPI_SUCCESS) {
    note(error, static_cast<int>(failed),
         leader_error.empty() ? "node_leader: the message from node " + std::to_string(from_node) +
                                    " to leader rank " + std::to_string(leader) + " failed (its error names the cause)"
                              : leader_error.text);
    return;
  }
  add_from_node(by_dest, from_node, reinterpret_cast<const std::int64_t*>(staging + in_offset[from_node]));
}

// Each sender's slot for me in the message from `from_node`, after the slots of the local ranks
// before me. With its size `header` (the blocking call), every rank of the node checks the whole
// header, so that all raise the same problem, and a slot whose size disagrees is not copied; a
// prepared call (no header: sizes checked when prepared) copies every non-empty slot.
template <class Sink>
void NodeLeaderAlltoallw::Call::add_from_node(Sink& sink, int from_node, const std::int64_t* header) {
  const auto& senders = state.members[from_node];
  std::int64_t cursor = in_offset[from_node] + header_bytes(from_node);
  for (std::size_t i = 0; i < senders.size(); ++i) {
    const int sender = senders[i];
    for (int local = 0; local < local_rank; ++local) cursor += align_up(field(local, RECV_BYTES, sender));
    const std::int64_t bytes = field(local_rank, RECV_BYTES, sender);
    std::int64_t sent = bytes;
    if (header != nullptr) {
      for (int local = 0; local < ranks_on_node; ++local) {
        const std::int64_t for_local = header[i * static_cast<std::size_t>(ranks_on_node) + local];
        if (for_local != field(local, RECV_BYTES, sender))
          note_mismatch(error, sender, for_local, node_ranks[local], field(local, RECV_BYTES, sender));
      }
      sent = header[i * static_cast<std::size_t>(ranks_on_node) + local_rank];
    }
    if (sent == bytes && bytes > 0) {
      const ByteBlock stream{0, bytes};
      sink.add(staging + cursor, 1, contiguous_span(stream), at(args.recvbuf, args.rdispls[sender]),
               args.recvcounts[sender], *recv_layouts[sender]);
    }
    for (int local = local_rank; local < ranks_on_node; ++local) cursor += align_up(field(local, RECV_BYTES, sender));
  }
}

// Which routes this rank's data takes, e.g. "on-node: single-copy push; inter-node: 1
// aggregated message".
std::string NodeLeaderAlltoallw::Call::routes() const {
  std::string on_node;
  auto add = [&](int count, const char* what) {
    if (count > 0) on_node += (on_node.empty() ? "" : "+") + std::string(what);
  };
  add(pushed, "single-copy push");
  add(pulled, "single-copy pull");
  add(staged, "staged");
  if (on_node.empty()) on_node = "none";
  return "on-node: " + on_node + "; inter-node: " + std::to_string(messages) + " aggregated message" +
         (messages == 1 ? "" : "s");
}

// What this rank did, e.g. "node_leader (on-node: single-copy push; inter-node: 1 aggregated
// message)".
std::string NodeLeaderAlltoallw::Call::path() const {
  return std::string("node_leader (") + (in_place ? "in place; " : "") + routes() + ")";
}

// One call as the protocol's steps (node_leader.hpp); the node barriers B1-B4 are inside the
// steps. TB_NODE_LEADER_COPY is read before the node's state is built on first use.
void NodeLeaderAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm&) {
  const NodeLeaderCopy copy = settings().node_leader_copy.get();
  Call call(*this, args, copy);
  call.publish();
  call.plan();
  call.check_sizes();
  call.use_node_staging();
  call.stage();
  call.start_leader_messages();
  call.push_on_node();
  call.pull_on_node();
  call.finish_leader_messages();
  call.unpack_from_other_nodes();
  set_path(call.path());
  if (!call.error.empty()) call.error.raise();
}

// ---- The prepared form (node_leader.hpp) ----

namespace {

// A copy stream fixed when a call is prepared: the pieces of its copies, merged once into the
// address order MergedCopy would run them in (of the sources, or of the destinations), so that
// a start only copies. A side that lies in the first staging buffer is moved at run time to the
// buffer of the start's parity: one list serves both. Where no rank of the node copies directly,
// every other side is this rank's own send or receive array, which a rebound call moves too.
class FixedStream {
 public:
  // As MergedCopy::add: count_s instances of ls at src to count_d instances of ld at dst.
  void add(const std::byte* src, std::int64_t count_s, BlockSpan ls, std::byte* dst, std::int64_t count_d,
           BlockSpan ld) {
    if (count_s <= 0 || ls.size == 0) return;
    std::vector<Piece>& list = lists_.emplace_back();
    for_each_piece(count_s, ls, count_d, ld, [&](std::int64_t soff, std::int64_t doff, std::int64_t n) {
      if (!list.empty() && list.back().src + list.back().len == src + soff &&
          list.back().dst + list.back().len == dst + doff) {
        list.back().len += static_cast<std::uint64_t>(n);  // adjacent on both sides: one copy
        return;
      }
      Piece piece{};
      piece.src = src + soff;
      piece.dst = dst + doff;
      piece.len = static_cast<std::uint64_t>(n);
      list.push_back(piece);
    });
    bytes_ += count_s * ls.size;
  }

  // Merges the copies' pieces by source (or destination) address, and marks the sides that lie
  // in [buffer, buffer + bytes), the first staging buffer.
  void finish(bool by_source, const std::byte* buffer, std::int64_t bytes) {
    const auto lo = reinterpret_cast<std::uintptr_t>(buffer), hi = lo + static_cast<std::uintptr_t>(bytes);
    auto inside = [&](const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p) - lo < hi - lo; };
    auto key = [&](const Piece& p) { return reinterpret_cast<std::uintptr_t>(by_source ? p.src : p.dst); };
    std::vector<std::size_t> next(lists_.size(), 0);
    for (;;) {  // k-way merge: k is the number of copies, a handful per partner
      std::size_t best = lists_.size();
      for (std::size_t k = 0; k < lists_.size(); ++k)
        if (next[k] < lists_[k].size() && (best == lists_.size() || key(lists_[k][next[k]]) < key(lists_[best][next[best]])))
          best = k;
      if (best == lists_.size()) break;
      Piece piece = lists_[best][next[best]++];
      piece.shift_src = inside(piece.src) ? 1 : 0;
      piece.shift_dst = inside(piece.dst) ? 1 : 0;
      pieces_.push_back(piece);
    }
    lists_ = {};
  }

  // Copies every piece, staging sides moved by `shift` bytes (to the start's buffer), the others
  // by `other_src` (sources) and `other_dst` (destinations): a rebound call's own arrays.
  void run(std::ptrdiff_t shift, std::ptrdiff_t other_src = 0, std::ptrdiff_t other_dst = 0) const {
    if (pieces_.empty()) return;
    const BlockCopy copy(bytes_);  // streaming stores from kStreamingCopyBytes, as MergedCopy
    for (const Piece& p : pieces_)
      copy(moved(p.dst, p.shift_dst ? shift : other_dst), moved(p.src, p.shift_src ? shift : other_src),
           static_cast<std::int64_t>(p.len));
  }

 private:
  struct Piece {
    const std::byte* src;
    std::byte* dst;
    std::uint64_t len : 62, shift_src : 1, shift_dst : 1;
  };
  // `p` moved by `by` bytes, possibly into another allocation (hence the integer arithmetic).
  template <class T> static T* moved(T* p, std::ptrdiff_t by) {
    return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(by));
  }

  std::vector<std::vector<Piece>> lists_;  // per copy, until finish()
  std::vector<Piece> pieces_;              // merged
  std::int64_t bytes_ = 0;
};

}  // namespace

// On one node, a prepared call whose blocks between ranks are all smaller than this stages
// them even where direct copies are possible: a second copy of a small block costs less than the
// second node barrier a direct copy needs (measured with 2 ranks: staged 1 B-4 KiB
// 0.13-0.55 us per start, single-copy pull 0.6-0.85 us).
constexpr std::int64_t kStageBelowBytes = 8192;

// One prepared call: steps 1-2 of the blocking call, the staging area and the copy lists, done
// once; each start runs the copies, one or two node barriers and the leader messages.
class NodeLeaderAlltoallw::Prepared final : public PreparedExchange {
 public:
  Prepared(NodeLeaderAlltoallw& algorithm, const AlltoallwArgs& args, NodeLeaderCopy copy);  // collective
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() override;  // local
  void start() override;
  std::string path() const override { return path_; }
  bool rebinds() const override { return rebinds_; }
  void rebind(const void* sendbuf, void* recvbuf) override;

 private:
  static std::int64_t largest_on_node_block(const Call& call);
  void lay_out_area(const Call& call);
  void build_copies(Call& call);
  void create_leader_messages(const Call& call);
  void start_leader_messages(int buffer, CallError& leader_error);
  void finish_leader_messages(int buffer, CallError& leader_error);
  CallError unpack_from_other_nodes(int buffer, const CallError& leader_error);
  void barrier() { state_.barrier_over(area_->window); }
  std::int64_t& leader_failed(int local, int buffer) const {
    return *reinterpret_cast<std::int64_t*>(area_->base + (2 * local + buffer) * kAlign);
  }

  NodeState& state_;
  std::shared_ptr<PreparedArea> area_;  // lent by the node state; holds the flags and the buffers
  int buffers_ = 2;                     // staging buffers: 2 (used by start parity) or 1
  bool two_barriers_ = true;            // S2 as well as S1 (see start())
  std::int64_t buffer_bytes_ = 0;       // one buffer: the call's staging layout, whole cache lines
  std::byte* staging_ = nullptr;        // the first buffer, after the leader-failure flags
  FixedStream packs_, pushes_, pulls_, from_other_nodes_;
  std::vector<MPI_Request> requests_[2];   // persistent leader messages, per buffer
  std::vector<std::int64_t> expected_[2];  // per request: the bytes a receive brings; -1 for a send
  std::vector<MPI_Status> statuses_;
  std::vector<int> receiving_local_;  // per other node: the local rank whose messages bring its data
  CallError setup_error_;             // a leader message that could not be created
  std::uint64_t starts_ = 0;
  std::string path_;
  // Rebinding (no rank of the communicator copies directly, so each touches only the staging
  // area and its own arrays): the arrays prepared with, and how far a rebind moved them.
  bool rebinds_ = false;
  std::uintptr_t send_prepared_ = 0, recv_prepared_ = 0;
  std::ptrdiff_t send_moved_ = 0, recv_moved_ = 0;
};

// Steps 1-2 of the blocking call, then this call's own staging area, the size headers (the same
// at every start), the block lists direct partners walk (and a barrier so that they can), the
// copy lists and the persistent leader messages.
NodeLeaderAlltoallw::Prepared::Prepared(NodeLeaderAlltoallw& algorithm, const AlltoallwArgs& args,
                                        NodeLeaderCopy copy)
    : state_(node_state(args.comm)) {
  Call call(algorithm, args, copy);
  call.publish();  // B1 of the control records' parity
  call.stage_all = call.nodes == 1 && largest_on_node_block(call) < kStageBelowBytes;
  call.plan();
  lay_out_area(call);
  call.staging = staging_;
  for (int buffer = 0; buffer < buffers_; ++buffer) call.write_headers(staging_ + buffer * buffer_bytes_);
  if (call.any_direct) {
    call.publish_block_lists();
    barrier();
  }
  build_copies(call);
  create_leader_messages(call);
  std::int64_t direct_anywhere = 0;
  TB_MPI_CHECK(max_over_every_rank(call.any_direct ? 1 : 0, args.comm, &direct_anywhere));
  rebinds_ = direct_anywhere == 0;
  send_prepared_ = reinterpret_cast<std::uintptr_t>(call.send.buf);
  recv_prepared_ = reinterpret_cast<std::uintptr_t>(args.recvbuf);
  const int barriers = state_.ranks_on_node == 1 ? 0 : two_barriers_ ? 2 : 1;
  path_ = std::string("node_leader (persistent; ") + (call.in_place ? "in place; " : "") + call.routes() + "; " +
          std::to_string(barriers) + " node barrier" + (barriers == 1 ? "" : "s") + " per start)";
}

// The largest block between two ranks of the node (the same on every rank of the node).
std::int64_t NodeLeaderAlltoallw::Prepared::largest_on_node_block(const Call& call) {
  std::int64_t largest = 0;
  for (int local = 0; local < call.ranks_on_node; ++local)
    for (const int dest : call.node_ranks)
      if (dest != call.node_ranks[local]) largest = std::max(largest, call.field(local, SEND_BYTES, dest));
  return largest;
}

// Barriers and buffers per start: one node, all staged: S1 only, two buffers by start parity (a
// rank packs start N into buffer N%2 after S1 of start N-1, which every peer reached only once
// done reading start N-2's from it). One node with direct copies: S2 as well, after them (the
// partners' arrays are in use until then), which also frees the one buffer. Several nodes: S2
// after the leaders' messages, before the data from other nodes is unpacked; two buffers. A
// node of one rank: its barriers are no-ops and no one else reads its area, so one buffer.
void NodeLeaderAlltoallw::Prepared::lay_out_area(const Call& call) {
  const bool one_node = call.nodes == 1;
  two_barriers_ = !one_node || call.any_direct;
  buffers_ = (one_node && call.any_direct) || call.ranks_on_node == 1 ? 1 : 2;
  buffer_bytes_ = align_up(call.staging_total);
  const std::int64_t flags = 2 * kAlign * call.ranks_on_node;
  area_ = state_.lend_area(flags + buffers_ * buffer_bytes_);
  staging_ = area_->base + flags;
}

// The copy lists of every start, as the blocking call's steps add them.
void NodeLeaderAlltoallw::Prepared::build_copies(Call& call) {
  call.add_packs(packs_);
  packs_.finish(true, staging_, buffer_bytes_);
  call.add_pushes(pushes_);
  pushes_.finish(true, staging_, buffer_bytes_);
  call.add_pulls(pulls_);
  pulls_.finish(false, staging_, buffer_bytes_);
  for (int from_node = 0; from_node < call.nodes; ++from_node)
    if (from_node != call.node) call.add_from_node(from_other_nodes_, from_node, nullptr);
  from_other_nodes_.finish(false, staging_, buffer_bytes_);
}

// Persistent sends and receives for the node pairs this rank leads, per buffer, in pieces of at
// most kChunk bytes; and, per other node, which local rank receives its data.
void NodeLeaderAlltoallw::Prepared::create_leader_messages(const Call& call) {
  receiving_local_.assign(static_cast<std::size_t>(call.nodes), -1);
  for (int other = 0; other < call.nodes; ++other) {
    if (other == call.node) continue;
    receiving_local_[other] = state_.local_rank_of[state_.pair_leader(call.node, other)];
    if (state_.pair_leader(call.node, other) != call.me) continue;
    const int peer = state_.pair_leader(other, call.node);
    for (int buffer = 0; buffer < buffers_; ++buffer) {
      std::byte* base = staging_ + buffer * buffer_bytes_;
      for (const bool outgoing : {true, false}) {
        std::byte* message = base + (outgoing ? call.out_offset[other] : call.in_offset[other]);
        const std::int64_t bytes = outgoing ? call.out_bytes[other] : call.in_bytes[other];
        for (std::int64_t done = 0; done < bytes; done += kChunk) {
          const int piece = static_cast<int>(std::min(kChunk, bytes - done));
          MPI_Request request = MPI_REQUEST_NULL;
          const int rc = outgoing ? PMPI_Send_init(message + done, piece, MPI_BYTE, peer, tags::node_leader,
                                                   state_.message_comm, &request)
                                  : PMPI_Recv_init(message + done, piece, MPI_BYTE, peer, tags::node_leader,
                                                   state_.message_comm, &request);
          if (rc != MPI_SUCCESS) {
            note(setup_error_, class_of(rc), "node_leader: creating a persistent leader message failed: " +
                                                 mpi_error_string(rc));
            continue;
          }
          requests_[buffer].push_back(request);
          expected_[buffer].push_back(outgoing ? -1 : piece);
        }
      }
    }
  }
}

// Persistent requests are freed locally; none is active between starts.
NodeLeaderAlltoallw::Prepared::~Prepared() {
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& requests : requests_)
    for (MPI_Request& request : requests)
      if (request != MPI_REQUEST_NULL) PMPI_Request_free(&request);
}

// One start: pack into the start's buffer; S1; the leaders start their messages while every
// rank does its pushes, pulls and on-node staged slots; the leaders wait and flag failures; S2
// (see lay_out_area for when); everyone unpacks what came from other nodes. A failed leader
// message does not stop the barriers: every rank of the node raises after the last one.
void NodeLeaderAlltoallw::Prepared::start() {
  const int buffer = buffers_ == 2 ? static_cast<int>(starts_++ & 1) : 0;
  const std::ptrdiff_t shift = buffer * buffer_bytes_;
  CallError leader_error = setup_error_;
  packs_.run(shift, send_moved_, recv_moved_);
  barrier();  // S1: this start's slots are packed, and every rank of the node is in this start
  start_leader_messages(buffer, leader_error);
  pushes_.run(shift, send_moved_, recv_moved_);
  pulls_.run(shift, send_moved_, recv_moved_);
  finish_leader_messages(buffer, leader_error);
  if (two_barriers_) barrier();  // S2: direct copies done, other nodes' data arrived
  const CallError error = unpack_from_other_nodes(buffer, leader_error);
  if (!error.empty()) error.raise();
}

void NodeLeaderAlltoallw::Prepared::start_leader_messages(int buffer, CallError& leader_error) {
  std::vector<MPI_Request>& requests = requests_[buffer];
  if (requests.empty()) return;
  const int rc = PMPI_Startall(static_cast<int>(requests.size()), requests.data());
  if (rc != MPI_SUCCESS) note(leader_error, class_of(rc), "node_leader: MPI_Startall failed: " + mpi_error_string(rc));
}

// The leaders wait for their messages (an inactive request completes at once) and check each
// receive's size; every rank publishes whether its leader messages failed, before S2.
void NodeLeaderAlltoallw::Prepared::finish_leader_messages(int buffer, CallError& leader_error) {
  std::vector<MPI_Request>& requests = requests_[buffer];
  if (!requests.empty()) {
    statuses_.resize(requests.size());
    const int rc = PMPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses_.data());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const int err = rc == MPI_ERR_IN_STATUS ? statuses_[i].MPI_ERROR : rc;
      if (err != MPI_SUCCESS && err != MPI_ERR_PENDING) {
        note(leader_error, class_of(err), "node_leader: leader message failed: " + mpi_error_string(err));
        continue;
      }
      int got = 0;
      const std::int64_t expected = expected_[buffer][i];
      if (expected >= 0 && PMPI_Get_count(&statuses_[i], MPI_BYTE, &got) == MPI_SUCCESS && got != expected)
        note(leader_error, mismatch_class(got, expected),
             "node_leader: a node sent " + std::to_string(got) + " bytes where " + std::to_string(expected) +
                 " were expected");
    }
  }
  if (state_.nodes > 1) leader_failed(state_.local_rank, buffer) = leader_error.error_class;
}

// After S2: the data from other nodes, unless a leader message of this node failed (then no
// rank unpacks any, and all raise).
CallError NodeLeaderAlltoallw::Prepared::unpack_from_other_nodes(int buffer, const CallError& leader_error) {
  CallError error;
  if (state_.nodes == 1) return error;
  for (int other = 0; other < state_.nodes; ++other) {
    if (other == state_.node) continue;
    const std::int64_t failed = leader_failed(receiving_local_[other], buffer);
    if (failed != MPI_SUCCESS)
      note(error, static_cast<int>(failed),
           leader_error.empty() ? "node_leader: the message from node " + std::to_string(other) +
                                      " failed (its leader's error names the cause)"
                                : leader_error.text);
  }
  if (error.empty()) from_other_nodes_.run(buffer * buffer_bytes_, send_moved_, recv_moved_);
  return error;
}

// Under MPI_IN_PLACE the send side is the receive array (PreparedAlltoallw::rebind keeps that).
void NodeLeaderAlltoallw::Prepared::rebind(const void* sendbuf, void* recvbuf) {
  const void* send_side = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  send_moved_ = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(send_side) - send_prepared_);
  recv_moved_ = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(recvbuf) - recv_prepared_);
}

std::unique_ptr<PreparedExchange> NodeLeaderAlltoallw::prepare_exchange(const AlltoallwArgs& args,
                                                                        const AlltoallwComm&) {
  const NodeLeaderCopy copy = settings().node_leader_copy.get();  // before the node state is built
  return std::make_unique<Prepared>(*this, args, copy);
}

}  // namespace tb
