// Redistribution: moves a distributed array between two pencils that differ in their aligned axis.
//
// Input pencil aligned in axis a, output pencil = input.realigned(b): axis b becomes whole and
// axis a is distributed over the grid axis that distributed b. Only the ranks of that grid axis's
// 1-D sub-communicator exchange data; peer p receives the part of my block whose axis-a index lies
// in p's output block, and I receive from p the part of its block whose axis-b index lies in mine.
// The geometry (per peer: the box to send, the box to receive) is computed here once; the two
// methods differ only in how they move it:
//   SubarrayRedistribution  one MPI_Alltoallw of subarray datatypes (Dalcin, Mortensen, Keyes)
//   LocalRemap              pack, MPI_Alltoall(v), unpack (P3DFFT, 2DECOMP&FFT, heFFTe)
// Buffers: `in` has input().local_size() elements, `out` has output().local_size(); they must not
// overlap. Ranks with zero elements (axes shorter than their rank count) take part normally.
#pragma once

#include "collectives/alltoallw.hpp"
#include "redistribute/box.hpp"
#include "redistribute/element_type.hpp"
#include "redistribute/pencil.hpp"

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

class Redistribution {
 public:
  virtual ~Redistribution() = default;
  Redistribution(const Redistribution&) = delete;
  Redistribution& operator=(const Redistribution&) = delete;

  const Pencil& input() const { return in_; }
  const Pencil& output() const { return out_; }
  ElementType element_type() const { return type_; }
  MPI_Comm comm() const { return comm_; }  // the 1-D sub-communicator the exchange runs over
  // "alltoallw:<algorithm>" or "local_remap(alltoall|alltoallv)".
  virtual std::string method() const = 0;

  // input layout -> output layout, and back. Collective over comm().
  void forward(const void* in, void* out);
  void backward(const void* out, void* in);

  template <class T>
  void forward(std::span<const T> in, std::span<T> out) {
    check_spans<T>(in.size(), out.size());
    forward(static_cast<const void*>(in.data()), static_cast<void*>(out.data()));
  }
  template <class T>
  void backward(std::span<const T> out, std::span<T> in) {
    check_spans<T>(in.size(), out.size());
    backward(static_cast<const void*>(out.data()), static_cast<void*>(in.data()));
  }

 protected:
  Redistribution(const Pencil& in, const Pencil& out, ElementType type);

  virtual void do_forward(const void* in, void* out) = 0;
  virtual void do_backward(const void* out, void* in) = 0;

  int peers() const { return static_cast<int>(send_boxes_.size()); }
  // In the input array: what goes to peer p. In the output array: what comes from peer p.
  const Box& send_box(int p) const { return send_boxes_[static_cast<std::size_t>(p)]; }
  const Box& recv_box(int p) const { return recv_boxes_[static_cast<std::size_t>(p)]; }

 private:
  template <class T>
  void check_spans(std::size_t in_size, std::size_t out_size) const {
    if (element_type_of<T>() != type_)
      throw std::invalid_argument("Redistribution: buffers of " + std::string(element_type_name(element_type_of<T>())) +
                                  " given to a plan for " + std::string(element_type_name(type_)));
    check_sizes(in_size, out_size);
  }
  void check_sizes(std::size_t in_size, std::size_t out_size) const;
  void check_no_overlap(const void* in, const void* out) const;

  Pencil in_, out_;
  ElementType type_;
  MPI_Comm comm_ = MPI_COMM_SELF;
  std::vector<Box> send_boxes_, recv_boxes_;
};

// How a SubarrayRedistribution calls its Alltoallw: as a prepared (persistent) call, made once
// per pair of arrays and started at every call, or as a blocking call each time.
enum class AlltoallwCalls { persistent, blocking };

// One MPI_Alltoallw of subarray datatypes (counts 1, displacements 0), built once per plan.
// Persistent calls: a forward (backward) call with arrays other than the last call's runs blocking;
// the second call in a row with the same pair prepares the algorithm's call for them
// (AlltoallwAlgorithm::prepare) and starts it, and later ones start it. Whether every rank passes
// the same arrays as last time is agreed per call, since a rank that prepares anew while another
// starts would wait forever: through a shared-memory window where all ranks share one node (a cache
// line per rank, collectives/node_max.hpp), else with one MPI_Allreduce of a flag
// (TB_REDISTRIBUTION_AGREEMENT=each-call-allreduce takes the allreduce everywhere, to compare).
// Where the algorithm's prepared form rebinds (PreparedAlltoallw::rebinds: pairwise,
// pack_alltoallv, node_leader without direct copies, and forms that run the blocking call at each
// start), the prepared call then follows each rank's arrays by itself: no more agreements, and no
// blocking call for new arrays. For the others (native's MPI_Alltoallw_init, node_leader with
// direct copies), TB_REDISTRIBUTION_AGREEMENT=assume-same drops the agreement: the application
// asserts its ranks change the addresses they pass together (TB_CHECKED=1 verifies it and throws on
// every rank where it is false). It is about addresses: arrays freed and allocated anew on every
// rank may come back at the old address on some ranks only, and then the assertion is false.
class SubarrayRedistribution final : public Redistribution {
 public:
  // algorithm: registry name; empty = default ($TB_ALLTOALLW, else native).
  SubarrayRedistribution(const Pencil& in, const Pencil& out, ElementType type, std::string_view algorithm = {},
                         AlltoallwCalls calls = AlltoallwCalls::persistent);
  SubarrayRedistribution(const Pencil& in, const Pencil& out, ElementType type,
                         std::unique_ptr<AlltoallwAlgorithm> algorithm,
                         AlltoallwCalls calls = AlltoallwCalls::persistent);
  ~SubarrayRedistribution() override;
  std::string method() const override;
  AlltoallwAlgorithm& algorithm() { return *algorithm_; }

 private:
  // The arrays of the last call, and the call prepared for them (from their second call). A rank
  // holding no data passes null arrays: its first call has no "last" to match, hence `called`.
  struct Prepared {
    bool called = false;
    const void* from = nullptr;
    void* to = nullptr;
    std::unique_ptr<PreparedAlltoallw> call;
  };
  void do_forward(const void* in, void* out) override;
  void do_backward(const void* out, void* in) override;
  void exchange(const AlltoallwArgs& args, Prepared& prepared);
  void free_types() noexcept;

  std::unique_ptr<AlltoallwAlgorithm> algorithm_;
  AlltoallwCalls calls_;
  std::vector<int> send_counts_, recv_counts_, zero_displs_;
  std::vector<MPI_Datatype> send_types_, recv_types_;
  Prepared forward_, backward_;
};

// The traditional method: pack each peer's box into a contiguous buffer, MPI_Alltoall (all counts
// equal) or MPI_Alltoallv, unpack. Buffers are allocated once per plan.
class LocalRemap final : public Redistribution {
 public:
  LocalRemap(const Pencil& in, const Pencil& out, ElementType type);
  std::string method() const override;
  bool uses_alltoall() const { return uniform_; }

 private:
  void do_forward(const void* in, void* out) override;
  void do_backward(const void* out, void* in) override;
  void exchange(const std::byte* send, const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                std::byte* recv, const std::vector<int>& recv_counts, const std::vector<int>& recv_displs);

  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;  // elements
  bool uniform_ = false;
  std::vector<std::byte> send_buffer_, recv_buffer_;
};

// Redistribution method names for tools: "all" becomes every registered Alltoallw algorithm and
// then local_remap; other names must be registered algorithms or local_remap (the registry's
// "unknown algorithm" error otherwise).
std::vector<std::string> expand_redistribution_methods(const std::vector<std::string>& names);

// "local_remap" or the name of a registered Alltoallw algorithm (empty: the default algorithm).
// `calls` applies to the Alltoallw methods.
std::unique_ptr<Redistribution> make_redistribution(const Pencil& in, const Pencil& out, ElementType type,
                                                    std::string_view method = {},
                                                    AlltoallwCalls calls = AlltoallwCalls::persistent);

// How many agreements on the arrays SubarrayRedistributions of this process have made, and how
// many of them went through shared memory, for tests.
std::int64_t redistribution_agreements();
std::int64_t redistribution_shared_memory_agreements();

}  // namespace tb
