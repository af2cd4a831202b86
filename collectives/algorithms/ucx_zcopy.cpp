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

constexpr std::int64_t kMaxGet = std::int64_t{1} << 20;

// What ucx_zcopy keeps per communicator.
struct UcxState {
  int P = 0, rank = 0;
  MPI_Comm peers = MPI_COMM_NULL;  // a duplicate of the user's communicator for metadata
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
  std::string transports;
  double timeout = 60.0;

  struct Registration {
    std::uintptr_t addr = 0;
    std::size_t len = 0;
    ucp_mem_h memh = nullptr;
    std::vector<std::byte> rkey;
    std::int64_t serial = 0;
    std::uint64_t last_use = 0;
  };
  std::vector<Registration> regs;  // the registration cache, most recent use wins
  std::int64_t next_serial = 1, registrations = 0, rkeys_sent = 0;
  std::uint64_t uses = 0;
  std::vector<std::int64_t> sent_serial;  // per peer: the registration whose rkey it has
  struct PeerKey {
    std::int64_t serial = 0;
    ucp_rkey_h rkey = nullptr;
  };
  std::vector<PeerKey> peer_key;  // per peer: the rkey of its send registration

  ~UcxState() {
    for (PeerKey& k : peer_key)
      if (k.rkey != nullptr) ucp_rkey_destroy(k.rkey);
    for (Registration& r : regs) ucp_mem_unmap(context, r.memh);
    for (ucp_ep_h ep : eps) {
      if (ep == nullptr) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // local: never waits for the peer
      ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
      if (UCS_PTR_IS_PTR(req)) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (ucp_request_check_status(req) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
          ucp_worker_progress(worker);
        ucp_request_free(req);
      }
    }
    if (worker != nullptr) ucp_worker_destroy(worker);
    if (context != nullptr) ucp_cleanup(context);
    if (peers != MPI_COMM_NULL) PMPI_Comm_free(&peers);
  }

  // Waits for one request with the deadline, progressing the worker; frees it.
  void wait(ucs_status_ptr_t req, const char* what) {
    if (req == nullptr) return;
    if (UCS_PTR_IS_ERR(req)) throw std::runtime_error(ucx_error(what, UCS_PTR_STATUS(req)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    ucs_status_t status;
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
      ucp_worker_progress(worker);
      if (std::chrono::steady_clock::now() > deadline) {
        ucp_request_cancel(worker, req);
        ucp_request_free(req);
        throw std::runtime_error(std::string("ucx_zcopy: ") + what + " did not complete within " +
                                 std::to_string(timeout) + " s (TB_UCX_TIMEOUT_S)");
      }
    }
    ucp_request_free(req);
    if (status != UCS_OK) throw std::runtime_error(ucx_error(what, status));
  }

  // The registration covering [addr, addr + len), registering (and evicting the least recently
  // used of 16) when none does.
  Registration& registration(std::uintptr_t addr, std::size_t len) {
    ++uses;
    for (Registration& r : regs)
      if (addr >= r.addr && addr + len <= r.addr + r.len) {
        r.last_use = uses;
        return r;
      }
    if (regs.size() >= 16) {
      auto lru = std::min_element(regs.begin(), regs.end(),
                                  [](const Registration& a, const Registration& b) { return a.last_use < b.last_use; });
      ucp_mem_unmap(context, lru->memh);
      regs.erase(lru);
    }
    Registration r;
    r.addr = addr;
    r.len = std::max<std::size_t>(len, 1);
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = reinterpret_cast<void*>(addr);
    params.length = r.len;
    check_ucx(ucp_mem_map(context, &params, &r.memh), "ucp_mem_map");
    void* packed = nullptr;
    std::size_t size = 0;
    const ucs_status_t st = ucp_rkey_pack(context, r.memh, &packed, &size);
    if (st != UCS_OK) {
      ucp_mem_unmap(context, r.memh);
      throw std::runtime_error(ucx_error("ucp_rkey_pack", st));
    }
    r.rkey.assign(static_cast<std::byte*>(packed), static_cast<std::byte*>(packed) + size);
    ucp_rkey_buffer_release(packed);
    r.serial = next_serial++;
    r.last_use = uses;
    ++registrations;
    regs.push_back(std::move(r));
    return regs.back();
  }
};


UcxState* find_state(MPI_Comm comm) { return CommCache<UcxState>::find(comm); }

UcxState* create_state(MPI_Comm comm) {
  auto st = std::make_unique<UcxState>();
  TB_MPI_CHECK(PMPI_Comm_size(comm, &st->P));
  TB_MPI_CHECK(PMPI_Comm_rank(comm, &st->rank));
  TB_MPI_CHECK(PMPI_Comm_dup(comm, &st->peers));
  TB_MPI_CHECK(PMPI_Comm_set_errhandler(st->peers, MPI_ERRORS_RETURN));
  st->timeout = settings().ucx_timeout_s.get();

  // Every rank must get as far as its worker address, or report why to all: a failure on one
  // rank becomes an error on every rank (no one waits in the Allgather alone).
  std::string failure;
  std::vector<std::byte> address;
  try {
    ucp_config_t* config = nullptr;
    // TB_UCX_* variables (e.g. TB_UCX_TLS=self,tcp) configure this context alone, on top of
    // UCX_*; the MPI library's own UCX context keeps its settings.
    check_ucx(ucp_config_read("TB", nullptr, &config), "ucp_config_read");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    // TAG as well: UCX 1.13 adds its RMA bandwidth lanes (cma on one host) only for contexts
    // with the tag feature (openucx/ucx#8537 changed that later); with RMA alone the gets go
    // through posix in software, about 4x slower here.
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_TAG;
    const ucs_status_t s = ucp_init(&params, config, &st->context);
    ucp_config_release(config);
    check_ucx(s, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check_ucx(ucp_worker_create(st->context, &wp, &st->worker), "ucp_worker_create");
    ucp_address_t* addr = nullptr;
    std::size_t len = 0;
    check_ucx(ucp_worker_get_address(st->worker, &addr, &len), "ucp_worker_get_address");
    address.assign(reinterpret_cast<std::byte*>(addr), reinterpret_cast<std::byte*>(addr) + len);
    ucp_worker_release_address(st->worker, addr);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  int bad = failure.empty() ? 0 : 1, any_bad = 0;
  TB_MPI_CHECK(PMPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, st->peers));
  if (any_bad) throw std::runtime_error(failure.empty() ? "ucx_zcopy: UCX failed to start on another rank" : failure);

  int len = static_cast<int>(address.size());
  std::vector<int> lens(st->P), displs(st->P);
  TB_MPI_CHECK(PMPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, st->peers));
  int total = 0;
  for (int p = 0; p < st->P; ++p) {
    displs[p] = total;
    total += lens[p];
  }
  std::vector<std::byte> all(static_cast<std::size_t>(total));
  TB_MPI_CHECK(PMPI_Allgatherv(address.data(), len, MPI_BYTE, all.data(), lens.data(), displs.data(), MPI_BYTE, st->peers));
  st->eps.assign(st->P, nullptr);
  for (int p = 0; p < st->P; ++p) {
    if (p == st->rank) continue;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + displs[p]);
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    check_ucx(ucp_ep_create(st->worker, &ep, &st->eps[p]), "ucp_ep_create");
  }
  st->sent_serial.assign(st->P, 0);
  st->peer_key.assign(st->P, {});
  const std::string& own = settings().ucx_tls.get();
  const char* tls = std::getenv("UCX_TLS");
  st->transports = !own.empty() ? "TB_UCX_TLS=" + own
                   : tls != nullptr ? std::string("UCX_TLS=") + tls
                                    : "UCX's choice (TB_UCX_TLS and UCX_TLS unset)";
  return st.release();
}

UcxState& ucx_state(MPI_Comm comm) { return CommCache<UcxState>::get(comm, create_state); }

// The metadata one sender writes for one receiver, followed by rkey bytes and blocks.
struct Header {
  std::int64_t origin;   // sender's address of its buffer origin for this peer
  std::int64_t serial;   // the registration covering it
  std::int64_t rkey_len; // bytes of packed rkey that follow (0: the receiver has it)
  std::int64_t nblocks;  // blocks per instance that follow
  std::int64_t count, extent, size;  // instances, extent and data bytes per instance
};


template <class Incoming>
bool direct_wanted(const std::vector<Incoming>& incoming) {
  for (const auto& in : incoming)
    if (!in.staged) return true;
  return false;
}

}  // namespace

UcxZcopyStats ucx_zcopy_stats(MPI_Comm comm) {
  UcxZcopyStats s;
  if (const UcxState* st = find_state(comm)) {
    s.registrations = st->registrations;
    s.rkeys_sent = st->rkeys_sent;
    s.transports = st->transports;
  }
  return s;
}

void UcxZcopyAlltoallw::exchange(const AlltoallwArgs& a, const AlltoallwComm&) {
  UcxState& st = ucx_state(a.comm);
  const int P = st.P, me = st.rank;
  const bool in_place = a.sendbuf == MPI_IN_PLACE;

  // With MPI_IN_PLACE the data to send is in the receive array, which the gets overwrite:
  // send from a private copy of the receive array's span instead.
  const void* sbuf = a.sendbuf;
  const int* scount = a.sendcounts;
  const int* sdispl = a.sdispls;
  const MPI_Datatype* stype = a.sendtypes;
  slayout_.assign(P, nullptr);
  rlayout_.assign(P, nullptr);
  for (int p = 0; p < P; ++p)
    if (a.recvcounts[p] > 0) rlayout_[p] = type_layout(a.recvtypes[p]);
  std::int64_t rlo = 0, rhi = 0;  // the receive array's span (for in place)
  bool any_recv = false;
  for (int p = 0; p < P; ++p) {
    if (!rlayout_[p] || rlayout_[p]->size == 0) continue;
    const TypeLayout& l = *rlayout_[p];
    for (const ByteBlock& b : l.blocks)
      for (std::int64_t i : {std::int64_t{0}, a.recvcounts[p] - std::int64_t{1}}) {
        const std::int64_t lo = a.rdispls[p] + i * l.extent + b.offset, hi = lo + b.length;
        rlo = any_recv ? std::min(rlo, lo) : lo;
        rhi = any_recv ? std::max(rhi, hi) : hi;
        any_recv = true;
      }
  }
  if (in_place) {
    in_place_copy_.resize(static_cast<std::size_t>(any_recv ? rhi - rlo : 0));
    if (any_recv) std::memcpy(in_place_copy_.data(), at(a.recvbuf, static_cast<int>(rlo)), in_place_copy_.size());
    sbuf = in_place_copy_.data() - rlo;  // same displacements, shifted to the copy
    scount = a.recvcounts;
    sdispl = a.rdispls;
    stype = a.recvtypes;
  }
  // Senders pack what they send in small blocks (one get per block would cost more than the
  // copy): average block below TB_UCX_PACK_BELOW bytes (default 4 KiB: in tb-bench's crossover
  // here packing won clearly at 1 KiB blocks and tied at 4 KiB; 0 turns packing off).
  const std::int64_t pack_below = settings().ucx_pack_below.get();
  auto& sbytes = sbytes_;  // per-call tables live in the object: no allocation once warm
  auto& rbytes = rbytes_;
  auto& packed_at = packed_at_;
  sbytes.assign(P, 0);
  rbytes.assign(P, 0);
  packed_at.assign(P, -1);
  std::int64_t slo = 0, shi = 0, packed_total = 0;
  bool any_send = false;
  for (int p = 0; p < P; ++p) {
    if (rlayout_[p]) rbytes[p] = a.recvcounts[p] * rlayout_[p]->size;
    if (scount[p] <= 0) continue;
    slayout_[p] = type_layout(stype[p]);
    const TypeLayout& l = *slayout_[p];
    sbytes[p] = scount[p] * l.size;
    if (p == me || sbytes[p] == 0) continue;
    const std::int64_t blocks = l.dense() ? 1 : scount[p] * static_cast<std::int64_t>(l.blocks.size());
    if (blocks > 1 && sbytes[p] < pack_below * blocks) {
      packed_at[p] = packed_total;
      packed_total += (sbytes[p] + 63) / 64 * 64;
      continue;
    }
    for (const ByteBlock& b : l.blocks)
      for (std::int64_t i : {std::int64_t{0}, scount[p] - std::int64_t{1}}) {
        const std::int64_t lo = sdispl[p] + i * l.extent + b.offset, hi = lo + b.length;
        slo = any_send ? std::min(slo, lo) : lo;
        shi = any_send ? std::max(shi, hi) : hi;
        any_send = true;
      }
  }
  int packed_peers = 0;
  const bool self_copy_ok = !in_place && sbytes[me] > 0 && rlayout_[me] && sbytes[me] == rbytes[me];
  bool self_done = false;
  if (packed_total > 0) {  // one pass over my array in address order for all packed peers
    if (send_staging_.size() < static_cast<std::size_t>(packed_total)) send_staging_.resize(static_cast<std::size_t>(packed_total));
    packer_.clear();
    for (int p = 0; p < P; ++p)
      if (packed_at[p] >= 0) {
        const ByteBlock stream{0, sbytes[p]};
        packer_.add(at(sbuf, sdispl[p]), scount[p], *slayout_[p], send_staging_.data() + packed_at[p], 1,
                    contiguous_span(stream));
        ++packed_peers;
      }
    // The self block joins the same pass when its source is strided too, so the array is read
    // once, front to back.
    if (self_copy_ok && !slayout_[me]->dense()) {
      packer_.add(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                  a.recvcounts[me], *rlayout_[me]);
      self_done = true;
    }
    packer_.run(true);
  }

  // 1. Register what peers will read and tell each peer where, how, and with which rkey.
  struct Key {
    std::int64_t serial = 0;
    std::vector<std::byte> rkey;
  };
  auto key_of = [&](std::uintptr_t addr, std::size_t len) {
    const UcxState::Registration& r = st.registration(addr, len);
    return Key{r.serial, r.rkey};  // copied: a later registration may move the cache entries
  };
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(sbuf);
  const Key user = any_send ? key_of(base + static_cast<std::uintptr_t>(slo), static_cast<std::size_t>(shi - slo)) : Key{};
  const Key staged_key = packed_total > 0 ? key_of(reinterpret_cast<std::uintptr_t>(send_staging_.data()),
                                                   static_cast<std::size_t>(packed_total))
                                          : Key{};
  scounts_.assign(P, 0);
  sdispls_.assign(P, 0);
  meta_out_.clear();
  for (int p = 0; p < P; ++p) {
    sdispls_[p] = static_cast<int>(meta_out_.size());
    if (p == me) continue;
    Header h{};
    const Key* key = nullptr;
    ByteBlock whole{0, sbytes[p]};
    const ByteBlock* blocks = nullptr;
    if (sbytes[p] > 0 && packed_at[p] >= 0) {
      key = &staged_key;
      h = {static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(send_staging_.data())) + packed_at[p], key->serial, 0,
           1, 1, sbytes[p], sbytes[p]};
      blocks = &whole;
    } else if (sbytes[p] > 0) {
      const TypeLayout& l = *slayout_[p];
      key = &user;
      h = {static_cast<std::int64_t>(base + static_cast<std::uintptr_t>(sdispl[p])), key->serial, 0,
           static_cast<std::int64_t>(l.blocks.size()), scount[p], l.extent, l.size};
      blocks = l.blocks.data();
    }
    if (key != nullptr && st.sent_serial[p] != key->serial) h.rkey_len = static_cast<std::int64_t>(key->rkey.size());
    const auto* hb = reinterpret_cast<const std::byte*>(&h);
    meta_out_.insert(meta_out_.end(), hb, hb + sizeof h);
    if (h.rkey_len > 0) {
      meta_out_.insert(meta_out_.end(), key->rkey.begin(), key->rkey.end());
      st.sent_serial[p] = key->serial;
      ++st.rkeys_sent;
    }
    if (h.nblocks > 0) {
      const auto* bb = reinterpret_cast<const std::byte*>(blocks);
      meta_out_.insert(meta_out_.end(), bb, bb + h.nblocks * static_cast<std::int64_t>(sizeof(ByteBlock)));
    }
    scounts_[p] = static_cast<int>(meta_out_.size()) - sdispls_[p];
  }
  rcounts_.assign(P, 0);
  TB_MPI_CHECK(PMPI_Alltoall(scounts_.data(), 1, MPI_INT, rcounts_.data(), 1, MPI_INT, st.peers));
  rdispls_.assign(P, 0);
  int total = 0;
  for (int p = 0; p < P; ++p) {
    rdispls_[p] = total;
    total += rcounts_[p];
  }
  meta_in_.resize(static_cast<std::size_t>(total));
  TB_MPI_CHECK(PMPI_Alltoallv(meta_out_.data(), scounts_.data(), sdispls_.data(), MPI_BYTE, meta_in_.data(),
                              rcounts_.data(), rdispls_.data(), MPI_BYTE, st.peers));

  // 2. Gets, receiver-driven; the self block is a local copy meanwhile.
  std::string error;
  auto& requests = requests_;
  requests.clear();
  int direct = 0, staged = 0;
  std::int64_t gets = 0;
  struct Incoming {
    int peer;
    Header h;
    const ByteBlock* blocks;
    bool staged;
    std::size_t offset;  // in staging_
  };
  std::vector<Incoming> incoming;
  std::size_t staging_bytes = 0;
  try {
    for (int p = 0; p < P; ++p) {
      if (p == me || rcounts_[p] == 0) continue;
      const std::byte* m = meta_in_.data() + rdispls_[p];
      Header h;
      std::memcpy(&h, m, sizeof h);
      m += sizeof h;
      UcxState::PeerKey& key = st.peer_key[p];
      if (h.rkey_len > 0) {
        if (key.rkey != nullptr) ucp_rkey_destroy(key.rkey);
        key.rkey = nullptr;
        check_ucx(ucp_ep_rkey_unpack(st.eps[p], m, &key.rkey), "ucp_ep_rkey_unpack");
        key.serial = h.serial;
        m += h.rkey_len;
      }
      const std::int64_t sent = h.count * h.size;
      if (sent != rbytes[p]) {
        if (error.empty())
          error = "ucx_zcopy: rank " + std::to_string(p) + " sends " + std::to_string(sent) + " bytes to rank " +
                  std::to_string(me) + ", which expects " + std::to_string(rbytes[p]) + " (type signatures differ)";
        continue;
      }
      if (sent == 0) continue;
      if (key.rkey == nullptr || key.serial != h.serial)
        throw std::logic_error("ucx_zcopy: no rkey for rank " + std::to_string(p) + "'s registration");
      const auto* blocks = reinterpret_cast<const ByteBlock*>(m);
      const BlockSpan theirs(blocks, static_cast<std::size_t>(h.nblocks), h.size, h.extent);
      // Each get costs a fixed overhead: when my layout would cut the sender's blocks into many
      // more pieces, get the blocks whole into staging and unpack afterwards.
      std::int64_t pieces = 0, src_end = -1, dst_end = -1;  // gets after merging adjacent pieces
      for_each_piece(h.count, theirs, a.recvcounts[p], *rlayout_[p], [&](std::int64_t so, std::int64_t d, std::int64_t n) {
        if (so != src_end || d != dst_end) ++pieces;
        src_end = so + n;
        dst_end = d + n;
      });
      const std::int64_t sender_blocks = theirs.dense() ? 1 : h.count * h.nblocks;
      const bool stage = pieces > 2 * std::max<std::int64_t>(1, sender_blocks);
      incoming.push_back({p, h, blocks, stage, staging_bytes});
      if (stage) staging_bytes += static_cast<std::size_t>(sent);
    }
    if (staging_.size() < staging_bytes) staging_.resize(staging_bytes);
    // The receive array is registered too (the same cache), and direct gets carry its handle,
    // so transports that need registered local memory find it without a lookup per get.
    ucp_mem_h recv_memh = nullptr;
    if (any_recv && direct_wanted(incoming))
      recv_memh = st.registration(reinterpret_cast<std::uintptr_t>(a.recvbuf) + static_cast<std::uintptr_t>(rlo),
                                  static_cast<std::size_t>(rhi - rlo)).memh;
    for (const Incoming& in : incoming) {
      const int p = in.peer;
      const BlockSpan theirs(in.blocks, static_cast<std::size_t>(in.h.nblocks), in.h.size, in.h.extent);
      // Pieces adjacent on both sides become one get.
      std::int64_t run_remote = 0, run_len = 0;
      std::byte* run_local = nullptr;
      auto flush = [&] {
        // Long runs go as gets of at most kMaxGet bytes: single gets of tens of MiB ran 2-5x
        // slower than the same bytes in 512 KiB gets here (UCX 1.13, cma).
        for (std::int64_t done = 0; done < run_len; done += kMaxGet) {
          const std::int64_t n = std::min(kMaxGet, run_len - done);
          ucp_request_param_t param{};
          if (!in.staged && recv_memh != nullptr) {
            param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
            param.memh = recv_memh;
          }
          ucs_status_ptr_t req = ucp_get_nbx(st.eps[p], run_local + done, static_cast<std::size_t>(n),
                                             static_cast<std::uint64_t>(run_remote + done), st.peer_key[p].rkey, &param);
          if (UCS_PTR_IS_ERR(req)) throw std::runtime_error(ucx_error("ucp_get_nbx", UCS_PTR_STATUS(req)));
          requests.push_back(req);
          ++gets;
        }
      };
      auto add = [&](std::int64_t remote, std::byte* local, std::int64_t n) {
        if (run_len > 0 && run_remote + run_len == remote && run_local + run_len == local) {
          run_len += n;
          return;
        }
        flush();
        run_remote = remote;
        run_local = local;
        run_len = n;
      };
      if (in.staged) {
        const ByteBlock whole{0, in.h.count * in.h.size};
        std::byte* dst = staging_.data() + in.offset;
        for_each_piece(in.h.count, theirs, 1, contiguous_span(whole),
                       [&](std::int64_t so, std::int64_t doff, std::int64_t n) { add(in.h.origin + so, dst + doff, n); });
        ++staged;
      } else {
        std::byte* dst = at(a.recvbuf, a.rdispls[p]);
        for_each_piece(in.h.count, theirs, a.recvcounts[p], *rlayout_[p],
                       [&](std::int64_t so, std::int64_t doff, std::int64_t n) { add(in.h.origin + so, dst + doff, n); });
        ++direct;
      }
      flush();
    }
  } catch (const std::exception& e) {
    if (error.empty()) error = e.what();
  }
  if (!in_place && sbytes[me] > 0 && rlayout_[me]) {
    if (sbytes[me] != rbytes[me]) {
      if (error.empty()) error = "ucx_zcopy: the self block sends " + std::to_string(sbytes[me]) + " bytes but receives " +
                                 std::to_string(rbytes[me]);
    } else if (!self_done) {
      copy_typed(at(a.sendbuf, a.sdispls[me]), a.sendcounts[me], *slayout_[me], at(a.recvbuf, a.rdispls[me]),
                 a.recvcounts[me], *rlayout_[me]);
    }
  }
  // 3. Complete my gets, then hold my array until every reader is done, serving their gets.
  for (ucs_status_ptr_t req : requests) {
    try {
      st.wait(req, "ucp_get_nbx");
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
    }
  }
  MPI_Request barrier = MPI_REQUEST_NULL;
  TB_MPI_CHECK(PMPI_Ibarrier(st.peers, &barrier));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(st.timeout);
  for (int done = 0; !done;) {
    ucp_worker_progress(st.worker);
    TB_MPI_CHECK(PMPI_Test(&barrier, &done, MPI_STATUS_IGNORE));
    if (!done && std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("ucx_zcopy: the completion barrier did not finish within " + std::to_string(st.timeout) +
                               " s (TB_UCX_TIMEOUT_S)");
  }
  if (error.empty())
    for (const Incoming& in : incoming)
      if (in.staged) unpack(staging_.data() + in.offset, a.recvcounts[in.peer], *rlayout_[in.peer], at(a.recvbuf, a.rdispls[in.peer]));
  set_path(std::string("ucx_zcopy (") + (in_place ? "in place from a copy; " : "") + std::to_string(packed_peers) +
          " peers packed by the sender; " + std::to_string(direct) + " peers direct, " + std::to_string(staged) +
          " by staged get; " + std::to_string(gets) + " gets)");
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace tb
