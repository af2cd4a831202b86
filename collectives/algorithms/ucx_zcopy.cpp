#include "collectives/algorithms/ucx_zcopy.hpp"

#include "collectives/comm_cache.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/algorithm_support.hpp"
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>

namespace tb {
namespace {

const AlltoallwRegistration registration({
    .name = "ucx_zcopy",
    .summary = "receiver-driven UCX gets of every contiguous piece, sender array to receiver array",
    .make = &make_algorithm<UcxZcopyAlltoallw>,
    .cost_schedule = "ucx_zcopy",
    .not_modelled = "",
});

std::string ucx_error(const char* call, ucs_status_t status) {
  return std::string("ucx_zcopy: ") + call + " failed: " + ucs_status_string(status);
}

void check_ucx(ucs_status_t status, const char* call) {
  if (status != UCS_OK) throw std::runtime_error(ucx_error(call, status));
}

std::runtime_error timeout_error(const std::string& what, double timeout) {
  return std::runtime_error("ucx_zcopy: " + what + " within " + std::to_string(timeout) + " s (TB_UCX_TIMEOUT_S)");
}

// The longest single get: with UCX 1.13's cma, single gets of tens of MiB are slower than the
// same bytes in sub-MiB gets.
constexpr std::int64_t kMaxGet = std::int64_t{1} << 20;

// The registrations the cache keeps before it evicts the least recently used.
constexpr std::size_t kCachedRegistrations = 16;

// What ucx_zcopy keeps per communicator.
struct UcxState {
  int size = 0, rank = 0;
  MPI_Comm peers = MPI_COMM_NULL;  // a duplicate of the user's communicator for metadata
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> endpoints;  // per peer; none to itself
  std::string transports;
  double timeout = 60.0;

  struct Registration {
    std::uintptr_t address = 0;
    std::size_t length = 0;
    ucp_mem_h memh = nullptr;
    std::vector<std::byte> rkey;  // packed
    std::int64_t serial = 0;
    std::uint64_t last_use = 0;
  };
  std::vector<Registration> cache;  // the registration cache, most recent use wins
  std::int64_t next_serial = 1, registrations = 0, rkeys_sent = 0;
  std::uint64_t use_clock = 0;
  std::vector<std::int64_t> serial_sent_to;  // per peer: the registration whose rkey it has
  struct PeerRkey {
    std::int64_t serial = 0;
    ucp_rkey_h rkey = nullptr;
  };
  std::vector<PeerRkey> peer_rkeys;  // per peer: the rkey of its send registration

  ~UcxState() {
    for (PeerRkey& key : peer_rkeys)
      if (key.rkey != nullptr) ucp_rkey_destroy(key.rkey);
    for (Registration& entry : cache) ucp_mem_unmap(context, entry.memh);
    for (ucp_ep_h endpoint : endpoints)
      if (endpoint != nullptr) close_endpoint(endpoint);
    if (worker != nullptr) ucp_worker_destroy(worker);
    if (context != nullptr) ucp_cleanup(context);
    if (peers != MPI_COMM_NULL) PMPI_Comm_free(&peers);
  }

  // Closes one endpoint locally (never waiting for the peer), giving it 5 s to finish.
  void close_endpoint(ucp_ep_h endpoint) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t request = ucp_ep_close_nbx(endpoint, &param);
    if (!UCS_PTR_IS_PTR(request)) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (ucp_request_check_status(request) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
      ucp_worker_progress(worker);
    ucp_request_free(request);
  }

  // Waits for one request with the deadline, progressing the worker; frees it.
  void wait(ucs_status_ptr_t request, const char* what) {
    if (request == nullptr) return;
    if (UCS_PTR_IS_ERR(request)) throw std::runtime_error(ucx_error(what, UCS_PTR_STATUS(request)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
      ucp_worker_progress(worker);
      if (std::chrono::steady_clock::now() > deadline) {
        ucp_request_cancel(worker, request);
        ucp_request_free(request);
        throw timeout_error(std::string(what) + " did not complete", timeout);
      }
    }
    ucp_request_free(request);
    if (status != UCS_OK) throw std::runtime_error(ucx_error(what, status));
  }

  // The completion barrier, which also says whether any rank found a problem: an MPI_Iallreduce
  // (MPI_MAX) of a flag completes, like a barrier, only when every rank has joined. It is
  // completed with the deadline, progressing the worker meanwhile so that a transport emulating
  // RMA in software still serves the other ranks' gets. Only when a rank found one do the
  // records travel (agree_on_problem, after every get is done), so that every rank learns the
  // worst. The flags live in the state: a timed-out reduction may still write.
  ProblemRecord agree(const ProblemRecord& mine) {
    flag_in = mine.severity;
    MPI_Request request = MPI_REQUEST_NULL;
    TB_MPI_CHECK(PMPI_Iallreduce(&flag_in, &flag_out, 1, MPI_INT64_T, MPI_MAX, peers, &request));
    wait_for(request, "the completion barrier");
    if (flag_out == 0) return {};
    return agree_on_problem(mine, peers);
  }
  std::int64_t flag_in = 0, flag_out = 0;

  void wait_for(MPI_Request& request, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    for (int done = 0; !done;) {
      ucp_worker_progress(worker);
      TB_MPI_CHECK(PMPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (!done && std::chrono::steady_clock::now() > deadline)
        throw timeout_error(std::string(what) + " did not finish", timeout);
    }
  }

  // The registration covering [address, address + length), registering (and evicting the least
  // recently used when the cache is full) when none does.
  Registration& registration(std::uintptr_t address, std::size_t length) {
    ++use_clock;
    for (Registration& entry : cache)
      if (address >= entry.address && address + length <= entry.address + entry.length) {
        entry.last_use = use_clock;
        return entry;
      }
    if (cache.size() >= kCachedRegistrations) {
      auto oldest = std::min_element(cache.begin(), cache.end(), [](const Registration& a, const Registration& b) {
        return a.last_use < b.last_use;
      });
      ucp_mem_unmap(context, oldest->memh);
      cache.erase(oldest);
    }
    cache.push_back(map_memory(address, std::max<std::size_t>(length, 1)));
    return cache.back();
  }

  // Registers [address, address + length) with the context and packs its rkey.
  Registration map_memory(std::uintptr_t address, std::size_t length) {
    Registration entry;
    entry.address = address;
    entry.length = length;
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = reinterpret_cast<void*>(address);
    params.length = length;
    check_ucx(ucp_mem_map(context, &params, &entry.memh), "ucp_mem_map");
    void* packed = nullptr;
    std::size_t packed_size = 0;
    const ucs_status_t status = ucp_rkey_pack(context, entry.memh, &packed, &packed_size);
    if (status != UCS_OK) {
      ucp_mem_unmap(context, entry.memh);
      throw std::runtime_error(ucx_error("ucp_rkey_pack", status));
    }
    entry.rkey.assign(static_cast<std::byte*>(packed), static_cast<std::byte*>(packed) + packed_size);
    ucp_rkey_buffer_release(packed);
    entry.serial = next_serial++;
    entry.last_use = use_clock;
    ++registrations;
    return entry;
  }

  // Replaces the rkey held for `peer` with the one packed at `packed`, for its registration `serial`.
  void unpack_rkey(int peer, const std::byte* packed, std::int64_t serial) {
    PeerRkey& key = peer_rkeys[peer];
    if (key.rkey != nullptr) ucp_rkey_destroy(key.rkey);
    key.rkey = nullptr;
    check_ucx(ucp_ep_rkey_unpack(endpoints[peer], packed, &key.rkey), "ucp_ep_rkey_unpack");
    key.serial = serial;
  }
};

UcxState* find_state(MPI_Comm comm) { return CommCache<UcxState>::find(comm); }

// Creates this rank's UCP context and worker; returns the worker's address.
std::vector<std::byte> start_worker(UcxState& state) {
  ucp_config_t* config = nullptr;
  // TB_UCX_* variables (e.g. TB_UCX_TLS=self,tcp) configure this context alone, on top of
  // UCX_*; the MPI library's own UCX context keeps its settings.
  check_ucx(ucp_config_read("TB", nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // TAG as well: UCX 1.13 adds its RMA bandwidth lanes (cma on one host) only for contexts
  // with the tag feature (openucx/ucx#8537 changed that later); with RMA alone the gets go
  // through posix in software, several times slower (docs/results/*-single-copy-candidates.md).
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_TAG;
  const ucs_status_t status = ucp_init(&params, config, &state.context);
  ucp_config_release(config);
  check_ucx(status, "ucp_init");
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  check_ucx(ucp_worker_create(state.context, &worker_params, &state.worker), "ucp_worker_create");
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  check_ucx(ucp_worker_get_address(state.worker, &address, &length), "ucp_worker_get_address");
  const auto* bytes = reinterpret_cast<const std::byte*>(address);
  std::vector<std::byte> copy(bytes, bytes + length);
  ucp_worker_release_address(state.worker, address);
  return copy;
}

// start_worker() on every rank: a failure on one rank becomes an error on every rank (no one
// waits in the address exchange alone).
std::vector<std::byte> start_worker_everywhere(UcxState& state) {
  std::string failure;
  std::vector<std::byte> address;
  try {
    address = start_worker(state);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  int failed = failure.empty() ? 0 : 1, any_failed = 0;
  TB_MPI_CHECK(PMPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, state.peers));
  if (any_failed)
    throw std::runtime_error(failure.empty() ? "ucx_zcopy: UCX failed to start on another rank" : failure);
  return address;
}

// Exchanges the worker addresses (MPI_Allgather of lengths, MPI_Allgatherv of bytes) and creates
// an endpoint to every other rank.
void connect_peers(UcxState& state, const std::vector<std::byte>& address) {
  int length = static_cast<int>(address.size());
  std::vector<int> lengths(state.size), displs(state.size);
  TB_MPI_CHECK(PMPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, state.peers));
  int total = 0;
  for (int peer = 0; peer < state.size; ++peer) {
    displs[peer] = total;
    total += lengths[peer];
  }
  std::vector<std::byte> addresses(static_cast<std::size_t>(total));
  TB_MPI_CHECK(PMPI_Allgatherv(address.data(), length, MPI_BYTE, addresses.data(), lengths.data(), displs.data(),
                               MPI_BYTE, state.peers));
  state.endpoints.assign(state.size, nullptr);
  for (int peer = 0; peer < state.size; ++peer) {
    if (peer == state.rank) continue;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses.data() + displs[peer]);
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    check_ucx(ucp_ep_create(state.worker, &params, &state.endpoints[peer]), "ucp_ep_create");
  }
}

// What chose the context's transports, for ucx_zcopy_stats().
std::string transport_setting() {
  const std::string& own = settings().ucx_tls.get();
  const char* tls = std::getenv("UCX_TLS");
  return !own.empty()     ? "TB_UCX_TLS=" + own
         : tls != nullptr ? std::string("UCX_TLS=") + tls
                          : "UCX's choice (TB_UCX_TLS and UCX_TLS unset)";
}

UcxState* create_state(MPI_Comm comm) {
  auto state = std::make_unique<UcxState>();
  TB_MPI_CHECK(PMPI_Comm_size(comm, &state->size));
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &state->rank));
  TB_MPI_CHECK(PMPI_Comm_dup(comm, &state->peers));
  TB_MPI_CHECK(PMPI_Comm_set_errhandler(state->peers, MPI_ERRORS_RETURN));
  state->timeout = settings().ucx_timeout_s.get();
  connect_peers(*state, start_worker_everywhere(*state));
  state->serial_sent_to.assign(state->size, 0);
  state->peer_rkeys.assign(state->size, {});
  state->transports = transport_setting();
  return state.release();
}

UcxState& ucx_state(MPI_Comm comm) { return CommCache<UcxState>::get(comm, create_state); }

// The metadata one sender writes for one receiver, followed by rkey bytes and blocks. The rkey's
// length varies, so the block list that follows is not aligned: the receiver copies it out.
struct MetadataHeader {
  std::int64_t origin;      // sender's address of its buffer origin for this peer
  std::int64_t serial;      // the registration covering it
  std::int64_t rkey_bytes;  // bytes of packed rkey that follow (0: the receiver has it)
  std::int64_t blocks;      // blocks per instance that follow
  std::int64_t count, extent, size;  // instances, extent and data bytes per instance
};
static_assert(sizeof(MetadataHeader) == 56, "the header comment in ucx_zcopy.hpp gives its size");

// The address `offset` bytes from `buf`, as an integer (what UCX and the metadata carry).
std::uintptr_t address_at(const void* buf, std::int64_t offset) {
  return reinterpret_cast<std::uintptr_t>(buf) + static_cast<std::uintptr_t>(offset);
}

void append_bytes(std::vector<std::byte>& out, const void* data, std::size_t bytes) {
  const auto* begin = static_cast<const std::byte*>(data);
  out.insert(out.end(), begin, begin + bytes);
}

// The bytes [lo, hi) that typed regions touch, relative to their buffer's origin.
struct ByteSpan {
  std::int64_t lo = 0, hi = 0;
  bool touched = false;
  // Adds `count` instances of `layout` at `displ` (the first and the last instance bound them).
  void add(const TypeLayout& layout, std::int64_t count, std::int64_t displ) {
    for (const ByteBlock& block : layout.blocks)
      for (std::int64_t instance : {std::int64_t{0}, count - 1}) {
        const std::int64_t begin = displ + instance * layout.extent + block.offset, end = begin + block.length;
        lo = touched ? std::min(lo, begin) : begin;
        hi = touched ? std::max(hi, end) : end;
        touched = true;
      }
  }
  std::int64_t bytes() const { return hi - lo; }
};

// Whether a receiver gets a sender's blocks whole into staging and unpacks them: when its own
// layout would cut them into more than twice as many gets (each get has a fixed cost).
bool staging_pays(std::int64_t count, BlockSpan theirs, std::int64_t recv_count, BlockSpan mine) {
  std::int64_t pieces = 0, remote_end = -1, local_end = -1;  // gets after merging adjacent pieces
  for_each_piece(count, theirs, recv_count, mine, [&](std::int64_t remote, std::int64_t local, std::int64_t length) {
    if (remote != remote_end || local != local_end) ++pieces;
    remote_end = remote + length;
    local_end = local + length;
  });
  const std::int64_t sender_blocks = theirs.dense() ? 1 : count * static_cast<std::int64_t>(theirs.count);
  return pieces > 2 * std::max<std::int64_t>(1, sender_blocks);
}

// The gets from one peer: pieces adjacent on both sides join into one run, and each run goes as
// gets of at most kMaxGet bytes. A local memory handle, when given, goes with every get, so
// transports that need registered local memory find it without a lookup per get.
class PeerGets {
 public:
  PeerGets(ucp_ep_h endpoint, ucp_rkey_h rkey, ucp_mem_h local_memh, std::vector<void*>& requests,
           std::int64_t& gets)
      : endpoint_(endpoint), rkey_(rkey), local_memh_(local_memh), requests_(requests), gets_(gets) {}

  void add(std::int64_t remote, std::byte* local, std::int64_t length) {
    if (length_ > 0 && remote_ + length_ == remote && local_ + length_ == local) {
      length_ += length;
      return;
    }
    flush();
    remote_ = remote;
    local_ = local;
    length_ = length;
  }

  // Issues the run so far.
  void flush() {
    for (std::int64_t done = 0; done < length_; done += kMaxGet) {
      const std::int64_t bytes = std::min(kMaxGet, length_ - done);
      ucp_request_param_t param{};
      if (local_memh_ != nullptr) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
        param.memh = local_memh_;
      }
      ucs_status_ptr_t request = ucp_get_nbx(endpoint_, local_ + done, static_cast<std::size_t>(bytes),
                                             static_cast<std::uint64_t>(remote_ + done), rkey_, &param);
      if (UCS_PTR_IS_ERR(request)) throw std::runtime_error(ucx_error("ucp_get_nbx", UCS_PTR_STATUS(request)));
      requests_.push_back(request);
      ++gets_;
    }
    length_ = 0;
  }

 private:
  ucp_ep_h endpoint_;
  ucp_rkey_h rkey_;
  ucp_mem_h local_memh_;
  std::vector<void*>& requests_;
  std::int64_t& gets_;
  std::int64_t remote_ = 0, length_ = 0;  // the run so far
  std::byte* local_ = nullptr;
};

}  // namespace

// One call: its arguments, the communicator's UCX state, what the steps find, and what the path
// reports.
struct UcxZcopyAlltoallw::Call {
  const AlltoallwArgs& args;
  UcxState& state;
  bool in_place = false;
  SendSide send{};       // what this rank sends; under MPI_IN_PLACE from in_place_copy_
  ByteSpan recv_span{};  // of the receive array, from recvbuf
  ByteSpan send_span{};  // of what peers read directly from send.buf (packed peers excluded)
  std::int64_t packed_bytes = 0;  // of packed_sends_ in use
  std::int64_t send_serial = 0, packed_serial = 0;  // the registrations published
  bool self_copied = false;  // the self block went with the packing pass
  int packed_peers = 0, direct_peers = 0, staged_peers = 0;
  std::int64_t gets = 0;
  CallError error{};       // the first failure, thrown once the barrier has released every reader
  ProblemRecord problem{};  // the same as a record, which the barrier spreads to every rank

  int size() const { return state.size; }
  int rank() const { return state.rank; }
  void fail(int error_class, const std::string& what) {
    if (!error.empty()) return;
    error.note(error_class, what);
    problem = error_record(rank(), error_class);
  }
  void fail_mismatch(int sender, std::int64_t sent, int receiver, std::int64_t expected) {
    if (!error.empty()) return;
    error.note(mismatch_class(sent, expected), mismatch_text("ucx_zcopy", sender, sent, receiver, expected));
    problem = mismatch_record(rank(), sender, sent, receiver, expected);
  }
  void fail(const std::exception& e) {
    const auto* mpi = dynamic_cast<const MpiError*>(&e);
    int error_class = MPI_ERR_OTHER;
    if (mpi != nullptr) PMPI_Error_class(mpi->code(), &error_class);
    fail(error_class, e.what());
  }
};

UcxZcopyStats ucx_zcopy_stats(MPI_Comm comm) {
  UcxZcopyStats stats;
  if (const UcxState* state = find_state(comm)) {
    stats.registrations = state->registrations;
    stats.rkeys_sent = state->rkeys_sent;
    stats.transports = state->transports;
  }
  return stats;
}

namespace {
// The partner's array for ucx_zcopy_time_gets(): its address and size and an rkey of this rank's
// own, destroyed with it (the calls' rkeys per peer are left as they are).
struct PartnerArray {
  std::int64_t origin = 0, size = 0;
  ucp_rkey_h rkey = nullptr;
  PartnerArray() = default;
  PartnerArray(const PartnerArray&) = delete;
  PartnerArray& operator=(const PartnerArray&) = delete;
  ~PartnerArray() {
    if (rkey != nullptr) ucp_rkey_destroy(rkey);
  }
};

// Registers `mine` and swaps its address, size and packed rkey with `partner`'s. A UCX failure
// on either side is returned as its text, after the swap, so that neither partner waits alone.
std::string exchange_arrays(UcxState& state, int partner, std::span<std::byte> mine, PartnerArray& theirs) {
  std::string failure;
  std::vector<std::byte> rkey;
  try {
    rkey = state.registration(address_at(mine.data(), 0), mine.size()).rkey;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const std::int64_t out[3] = {static_cast<std::int64_t>(address_at(mine.data(), 0)),
                               static_cast<std::int64_t>(mine.size()), static_cast<std::int64_t>(rkey.size())};
  std::int64_t in[3] = {0, 0, 0};
  TB_MPI_CHECK(PMPI_Sendrecv(out, 3, MPI_INT64_T, partner, 0, in, 3, MPI_INT64_T, partner, 0, state.peers,
                             MPI_STATUS_IGNORE));
  std::vector<std::byte> packed(static_cast<std::size_t>(in[2]));
  TB_MPI_CHECK(PMPI_Sendrecv(rkey.data(), static_cast<int>(rkey.size()), MPI_BYTE, partner, 1, packed.data(),
                             static_cast<int>(packed.size()), MPI_BYTE, partner, 1, state.peers, MPI_STATUS_IGNORE));
  theirs.origin = in[0];
  theirs.size = in[1];
  if (failure.empty() && packed.empty()) failure = "the partner could not register its array";
  if (failure.empty()) {
    const ucs_status_t status = ucp_ep_rkey_unpack(state.endpoints[partner], packed.data(), &theirs.rkey);
    if (status != UCS_OK) failure = ucx_error("ucp_ep_rkey_unpack", status);
  }
  return failure;
}

// Issues `gets` gets of `bytes` from the partner's array into `into`, laid end to end from the
// start of both and starting again where the next would not fit within `span` bytes.
void issue_timed_gets(UcxState& state, int partner, const PartnerArray& theirs, ucp_mem_h local, std::byte* into,
                      std::int64_t span, std::int64_t bytes, int gets, std::vector<void*>& requests) {
  std::int64_t issued = 0;
  PeerGets run(state.endpoints[partner], theirs.rkey, local, requests, issued);
  for (std::int64_t i = 0, offset = 0; i < gets; ++i, offset += bytes) {
    if (offset + bytes > span) offset = 0;
    run.add(theirs.origin + offset, into + offset, bytes);
    run.flush();  // one get each, never merged with the next
  }
}
}  // namespace

double ucx_zcopy_time_gets(MPI_Comm comm, int partner, std::span<std::byte> mine, std::span<std::byte> into,
                           std::int64_t bytes, int gets) {
  UcxState& state = ucx_state(comm);
  PartnerArray theirs;
  std::string failure;
  ucp_mem_h local = nullptr;
  const bool paired = partner != MPI_PROC_NULL;
  if (paired) failure = exchange_arrays(state, partner, mine, theirs);
  const std::int64_t span = std::min(static_cast<std::int64_t>(into.size()), theirs.size);
  if (failure.empty() && (bytes <= 0 || gets <= 0 || (paired && span < bytes)))
    failure = std::to_string(gets) + " gets of " + std::to_string(bytes) + " bytes between arrays of " +
              std::to_string(into.size()) + " and " + std::to_string(theirs.size) + " bytes";
  try {
    if (paired && failure.empty()) local = state.registration(address_at(into.data(), 0), into.size()).memh;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::vector<void*> requests;
  requests.reserve(static_cast<std::size_t>(std::max(0, gets)));  // no allocation while timed
  TB_MPI_CHECK(PMPI_Barrier(state.peers));
  const double start = PMPI_Wtime();
  try {
    if (paired && failure.empty()) issue_timed_gets(state, partner, theirs, local, into.data(), span, bytes, gets, requests);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  for (void* request : requests) {
    try {
      state.wait(request, "ucp_get_nbx");
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
    }
  }
  // The completion barrier, which also tells every rank whether any failed.
  const ProblemRecord all = state.agree(failure.empty() ? ProblemRecord{} : error_record(state.rank, MPI_ERR_OTHER));
  const double seconds = (PMPI_Wtime() - start) / std::max(1, gets);
  if (!failure.empty()) throw std::runtime_error("ucx_zcopy_time_gets: " + failure);
  if (all.severity != 0) throw std::runtime_error(problem_text("ucx_zcopy_time_gets", all));
  return seconds;
}

// The protocol's steps (ucx_zcopy.hpp): describe both sides, register and publish, match and get,
// complete. Failures after the metadata exchange wait for the barrier, so no rank hangs in it.
void UcxZcopyAlltoallw::exchange(const AlltoallwArgs& args, const AlltoallwComm&) {
  Call call{.args = args, .state = ucx_state(args.comm), .in_place = args.sendbuf == MPI_IN_PLACE,
            .send = send_side(args)};
  describe_receives(call);
  describe_sends(call);
  pack_small_blocks(call);
  publish(call);
  read_from_peers(call);
  copy_self_block(call);
  complete(call);
  set_path(std::string("ucx_zcopy (") + (call.in_place ? "in place from a copy; " : "") +
           std::to_string(call.packed_peers) + " peers packed by the sender; " + std::to_string(call.direct_peers) +
           " peers direct, " + std::to_string(call.staged_peers) + " by staged get; " + std::to_string(call.gets) +
           " gets)");
  if (!call.error.empty()) call.error.raise();
}

// The receive side: layouts, bytes per peer, and the span of the receive array.
void UcxZcopyAlltoallw::describe_receives(Call& call) {
  const AlltoallwArgs& args = call.args;
  recv_layouts_.assign(call.size(), nullptr);
  recv_bytes_.assign(call.size(), 0);
  for (int peer = 0; peer < call.size(); ++peer) {
    if (args.recvcounts[peer] <= 0) continue;
    recv_layouts_[peer] = type_layout(args.recvtypes[peer]);
    const TypeLayout& layout = *recv_layouts_[peer];
    recv_bytes_[peer] = args.recvcounts[peer] * layout.size;
    if (layout.size > 0) call.recv_span.add(layout, args.recvcounts[peer], args.rdispls[peer]);
  }
}

// The send side: under MPI_IN_PLACE a private copy of the receive array; layouts and bytes per
// peer; which peers get a packed copy; the span that peers read directly.
void UcxZcopyAlltoallw::describe_sends(Call& call) {
  if (call.in_place) {
    // The data to send is in the receive array, which the gets overwrite.
    const ByteSpan& span = call.recv_span;
    in_place_copy_.resize(static_cast<std::size_t>(span.touched ? span.bytes() : 0));
    if (span.touched)
      std::memcpy(in_place_copy_.data(), at(call.args.recvbuf, span.lo), in_place_copy_.size());
    call.send.buf = at(in_place_copy_.data(), -span.lo);  // the same displacements, shifted to the copy
  }
  // Small blocks are packed by the sender (one get per block would cost more than the copy):
  // average block below TB_UCX_PACK_BELOW bytes (the crossover tb-bench's block-size sweep
  // measures, docs/results/*-ucx-zcopy-block-crossover.md; 0 turns packing off).
  const std::int64_t pack_below = settings().ucx_pack_below.get();
  send_layouts_.assign(call.size(), nullptr);
  send_bytes_.assign(call.size(), 0);
  packed_offsets_.assign(call.size(), -1);
  for (int peer = 0; peer < call.size(); ++peer) {
    const int count = call.send.counts[peer];
    if (count <= 0) continue;
    send_layouts_[peer] = type_layout(call.send.types[peer]);
    const TypeLayout& layout = *send_layouts_[peer];
    send_bytes_[peer] = count * layout.size;
    if (peer == call.rank() || send_bytes_[peer] == 0) continue;
    const std::int64_t blocks = layout.dense() ? 1 : count * static_cast<std::int64_t>(layout.blocks.size());
    if (blocks > 1 && send_bytes_[peer] < pack_below * blocks) {
      packed_offsets_[peer] = call.packed_bytes;
      call.packed_bytes += (send_bytes_[peer] + 63) / 64 * 64;  // each packed copy starts a cache line
    } else {
      call.send_span.add(layout, count, call.send.displs[peer]);
    }
  }
}

// Whether this rank copies a block to itself (never in place: the receive array holds it).
bool UcxZcopyAlltoallw::has_self_block(const Call& call) const {
  const int self = call.rank();
  return !call.in_place && send_bytes_[self] > 0 && recv_layouts_[self];
}

// Packs what the small-block peers read into packed_sends_, in one pass over the send array in
// address order. The self block joins the pass when its source is strided too, so the array is
// read once, front to back.
void UcxZcopyAlltoallw::pack_small_blocks(Call& call) {
  if (call.packed_bytes == 0) return;
  const auto packed_bytes = static_cast<std::size_t>(call.packed_bytes);
  if (packed_sends_.size() < packed_bytes) packed_sends_.resize(packed_bytes);
  const SendSide& send = call.send;
  packer_.clear();
  for (int peer = 0; peer < call.size(); ++peer) {
    if (packed_offsets_[peer] < 0) continue;
    const ByteBlock stream{0, send_bytes_[peer]};
    packer_.add(at(send.buf, send.displs[peer]), send.counts[peer], *send_layouts_[peer],
                packed_sends_.data() + packed_offsets_[peer], 1, contiguous_span(stream));
    ++call.packed_peers;
  }
  const int self = call.rank();
  if (has_self_block(call) && send_bytes_[self] == recv_bytes_[self] && !send_layouts_[self]->dense()) {
    const AlltoallwArgs& args = call.args;
    packer_.add(at(send.buf, send.displs[self]), send.counts[self], *send_layouts_[self],
                at(args.recvbuf, args.rdispls[self]), args.recvcounts[self], *recv_layouts_[self]);
    call.self_copied = true;
  }
  packer_.run(true);
}

// Registers what peers will read (the send array's span, the packed copy) and tells each peer
// where, how, and with which rkey.
void UcxZcopyAlltoallw::publish(Call& call) {
  // The rkeys are copied: a later registration may move the cache's entries.
  auto register_span = [&](std::uintptr_t address, std::int64_t bytes, std::vector<std::byte>& rkey) {
    const UcxState::Registration& entry = call.state.registration(address, static_cast<std::size_t>(bytes));
    rkey.assign(entry.rkey.begin(), entry.rkey.end());
    return entry.serial;
  };
  const ByteSpan& span = call.send_span;
  if (span.touched) call.send_serial = register_span(address_at(call.send.buf, span.lo), span.bytes(), send_rkey_);
  if (call.packed_bytes > 0)
    call.packed_serial = register_span(address_at(packed_sends_.data(), 0), call.packed_bytes, packed_rkey_);
  write_metadata(call);
  exchange_metadata(call);
}

// Lays out the metadata for every peer in meta_out_ (none for this rank itself).
void UcxZcopyAlltoallw::write_metadata(Call& call) {
  meta_send_counts_.assign(call.size(), 0);
  meta_send_displs_.assign(call.size(), 0);
  meta_out_.clear();
  for (int peer = 0; peer < call.size(); ++peer) {
    meta_send_displs_[peer] = static_cast<int>(meta_out_.size());
    if (peer == call.rank()) continue;
    append_metadata(call, peer);
    meta_send_counts_[peer] = static_cast<int>(meta_out_.size()) - meta_send_displs_[peer];
  }
}

// One peer's metadata: the header, the rkey when the peer has not seen this registration, and
// the block list (a packed copy is one block).
void UcxZcopyAlltoallw::append_metadata(Call& call, int peer) {
  const std::int64_t bytes = send_bytes_[peer];
  MetadataHeader header{};
  const std::vector<std::byte>* rkey = nullptr;
  const ByteBlock whole{0, bytes};
  const ByteBlock* blocks = nullptr;
  if (bytes > 0 && packed_offsets_[peer] >= 0) {
    rkey = &packed_rkey_;
    header = {.origin = static_cast<std::int64_t>(address_at(packed_sends_.data(), packed_offsets_[peer])),
              .serial = call.packed_serial, .rkey_bytes = 0, .blocks = 1, .count = 1, .extent = bytes, .size = bytes};
    blocks = &whole;
  } else if (bytes > 0) {
    const TypeLayout& layout = *send_layouts_[peer];
    rkey = &send_rkey_;
    header = {.origin = static_cast<std::int64_t>(address_at(call.send.buf, call.send.displs[peer])),
              .serial = call.send_serial, .rkey_bytes = 0, .blocks = static_cast<std::int64_t>(layout.blocks.size()),
              .count = call.send.counts[peer], .extent = layout.extent, .size = layout.size};
    blocks = layout.blocks.data();
  }
  UcxState& state = call.state;
  if (rkey != nullptr && state.serial_sent_to[peer] != header.serial)
    header.rkey_bytes = static_cast<std::int64_t>(rkey->size());
  append_bytes(meta_out_, &header, sizeof header);
  if (header.rkey_bytes > 0) {
    append_bytes(meta_out_, rkey->data(), rkey->size());
    state.serial_sent_to[peer] = header.serial;
    ++state.rkeys_sent;
  }
  if (header.blocks > 0) append_bytes(meta_out_, blocks, static_cast<std::size_t>(header.blocks) * sizeof(ByteBlock));
}

// Sends every peer its metadata: the byte counts (MPI_Alltoall), then the bytes (MPI_Alltoallv).
void UcxZcopyAlltoallw::exchange_metadata(Call& call) {
  meta_recv_counts_.assign(call.size(), 0);
  TB_MPI_CHECK(PMPI_Alltoall(meta_send_counts_.data(), 1, MPI_INT, meta_recv_counts_.data(), 1, MPI_INT,
                             call.state.peers));
  meta_recv_displs_.assign(call.size(), 0);
  int total = 0;
  for (int peer = 0; peer < call.size(); ++peer) {
    meta_recv_displs_[peer] = total;
    total += meta_recv_counts_[peer];
  }
  meta_in_.resize(static_cast<std::size_t>(total));
  TB_MPI_CHECK(PMPI_Alltoallv(meta_out_.data(), meta_send_counts_.data(), meta_send_displs_.data(), MPI_BYTE,
                              meta_in_.data(), meta_recv_counts_.data(), meta_recv_displs_.data(), MPI_BYTE,
                              call.state.peers));
}

// Matches and gets. A failure is kept for after the barrier, so that every rank still reaches it.
void UcxZcopyAlltoallw::read_from_peers(Call& call) {
  incoming_.clear();
  received_blocks_.clear();
  requests_.clear();
  try {
    match(call);
    issue_gets(call);
  } catch (const std::exception& e) {
    call.fail(e);
  }
}

// Reads each sender's metadata: takes in a new rkey, checks the sender's bytes against the
// receive layout's, and chooses between direct gets and a staged get.
void UcxZcopyAlltoallw::match(Call& call) {
  std::size_t staging_bytes = 0;
  for (int peer = 0; peer < call.size(); ++peer) {
    if (peer == call.rank() || meta_recv_counts_[peer] == 0) continue;
    const std::byte* cursor = meta_in_.data() + meta_recv_displs_[peer];
    MetadataHeader header;
    std::memcpy(&header, cursor, sizeof header);
    cursor += sizeof header;
    if (header.rkey_bytes > 0) {
      call.state.unpack_rkey(peer, cursor, header.serial);
      cursor += header.rkey_bytes;
    }
    const std::int64_t sent = header.count * header.size;
    if (sent != recv_bytes_[peer]) {
      call.fail_mismatch(peer, sent, call.rank(), recv_bytes_[peer]);
      continue;
    }
    if (sent == 0) continue;
    const UcxState::PeerRkey& key = call.state.peer_rkeys[peer];
    if (key.rkey == nullptr || key.serial != header.serial)
      throw std::logic_error("ucx_zcopy: no rkey for rank " + std::to_string(peer) + "'s registration");
    IncomingPeer in{.peer = peer, .origin = header.origin, .count = header.count, .extent = header.extent,
                    .size = header.size, .first_block = received_blocks_.size(),
                    .blocks = static_cast<std::size_t>(header.blocks), .staging_offset = staging_bytes};
    received_blocks_.resize(in.first_block + in.blocks);
    if (in.blocks > 0) std::memcpy(received_blocks_.data() + in.first_block, cursor, in.blocks * sizeof(ByteBlock));
    const BlockSpan theirs(received_blocks_.data() + in.first_block, in.blocks, in.size, in.extent);
    in.staged = staging_pays(in.count, theirs, call.args.recvcounts[peer], *recv_layouts_[peer]);
    if (in.staged) staging_bytes += static_cast<std::size_t>(sent);
    incoming_.push_back(in);
  }
  if (recv_staging_.size() < staging_bytes) recv_staging_.resize(staging_bytes);
}

// Issues the gets: per peer, the pieces in which the sender's blocks meet the receive layout
// (or the staging buffer), adjacent pieces merged.
void UcxZcopyAlltoallw::issue_gets(Call& call) {
  const AlltoallwArgs& args = call.args;
  UcxState& state = call.state;
  // The receive array is registered too (the same cache), and direct gets carry its handle.
  ucp_mem_h recv_memh = nullptr;
  const ByteSpan& span = call.recv_span;
  const bool any_direct =
      std::any_of(incoming_.begin(), incoming_.end(), [](const IncomingPeer& in) { return !in.staged; });
  if (span.touched && any_direct)
    recv_memh = state.registration(address_at(args.recvbuf, span.lo), static_cast<std::size_t>(span.bytes())).memh;
  for (const IncomingPeer& in : incoming_) {
    const int peer = in.peer;
    const BlockSpan theirs(received_blocks_.data() + in.first_block, in.blocks, in.size, in.extent);
    PeerGets gets(state.endpoints[peer], state.peer_rkeys[peer].rkey, in.staged ? nullptr : recv_memh, requests_,
                  call.gets);
    auto get_piece = [&](std::byte* local) {
      return [&gets, &in, local](std::int64_t remote, std::int64_t offset, std::int64_t length) {
        gets.add(in.origin + remote, local + offset, length);
      };
    };
    if (in.staged) {
      const ByteBlock whole{0, in.count * in.size};
      for_each_piece(in.count, theirs, 1, contiguous_span(whole), get_piece(recv_staging_.data() + in.staging_offset));
      ++call.staged_peers;
    } else {
      for_each_piece(in.count, theirs, args.recvcounts[peer], *recv_layouts_[peer],
                     get_piece(at(args.recvbuf, args.rdispls[peer])));
      ++call.direct_peers;
    }
    gets.flush();
  }
}

// The self block: a local typed copy, unless it went with the packing pass. Runs while the gets
// are in flight.
void UcxZcopyAlltoallw::copy_self_block(Call& call) {
  if (!has_self_block(call)) return;
  const int self = call.rank();
  const AlltoallwArgs& args = call.args;
  if (send_bytes_[self] != recv_bytes_[self]) {
    call.fail_mismatch(self, send_bytes_[self], self, recv_bytes_[self]);
  } else if (!call.self_copied) {
    copy_typed(at(call.send.buf, call.send.displs[self]), call.send.counts[self], *send_layouts_[self],
               at(args.recvbuf, args.rdispls[self]), args.recvcounts[self], *recv_layouts_[self]);
  }
}

// Completes this rank's gets, then holds its arrays until every reader is done (serving their
// gets meanwhile), then unpacks the staged gets.
void UcxZcopyAlltoallw::complete(Call& call) {
  for (void* request : requests_) {
    try {
      call.state.wait(request, "ucp_get_nbx");
    } catch (const std::exception& e) {
      call.fail(e);
    }
  }
  // Every rank learns the worst problem of the call (a mismatch is seen by its receiver alone),
  // and all raise it: the receiver with its own words, the others naming both sides' figures.
  const ProblemRecord all = call.state.agree(call.problem);
  if (all.severity != 0 && call.error.empty()) call.error.note(static_cast<int>(all.error_class), problem_text("ucx_zcopy", all));
  if (!call.error.empty()) return;
  const AlltoallwArgs& args = call.args;
  for (const IncomingPeer& in : incoming_)
    if (in.staged)
      unpack(recv_staging_.data() + in.staging_offset, args.recvcounts[in.peer], *recv_layouts_[in.peer],
             at(args.recvbuf, args.rdispls[in.peer]));
}

}  // namespace tb
