// The tuning table: which Alltoallw algorithm to run, measured per node layout, layout class and
// message-size band. experiments/tune.py writes it (from tb-bench runs of every algorithm);
// `auto` (collectives/algorithms/auto.hpp) reads it from TB_TUNING_TABLE and looks a call up.
//
//   {"format": "tb-alltoallw-tuning", "version": 1,
//    "metadata": {...the tuning run: date, git commit, MPI library, host, command...},
//    "layout_classes": [{"name": "contiguous", "contiguous": true},
//                       {"name": "block64", "max_block_bytes": 512},
//                       {"name": "block4K", "max_block_bytes": null}],
//    "entries": [{"node_layout": {"ranks": 2, "nodes": 1, "ranks_per_node": 2},
//                 "layout_class": "contiguous", "bytes_per_peer": [0, 65536],
//                 "algorithm": "native", "alternatives": ["pairwise", "node_leader"]}, ...]}
//
// A call's layout class: "contiguous" when every peer's data is one block on both sides, else the
// first fragmented band (by max_block_bytes, null = unbounded) holding the call's mean bytes per
// contiguous block. bytes_per_peer is [min, max] inclusive, max null = unbounded. Lookups never
// fail for a node layout the table has: a class it lacks takes the nearest class, a size outside
// every band the nearest band. `alternatives` are the runners-up, fastest first: auto takes the
// first algorithm this build has registered (ucx_zcopy is absent in builds without UCX).
//
// "calls" says which calls an entry decides (TuningCalls): absent or "blocking", measured in the
// blocking form; "persistent", measured in the algorithms' prepared forms (experiments/tune.py
// --calls blocking,persistent); "prepared", the per-size bands of the blocking measurements, which
// tune.py keeps where its one-algorithm rule gave a node layout's blocking calls one algorithm
// (that rule saves blocking calls their per-call agreement; a prepared call agrees once, at
// prepare). Blocking calls see only blocking entries; a prepared call looks up the persistent
// entries at its node layout, else the prepared ones, else the blocking ones (prepared_calls).
// A node layout with persistent or prepared entries must have blocking ones too.
//
// Besides the keys above, an entry may hold the evidence tune.py records for people ("sizes",
// "median_s", "worst_over_fastest", "rule") and a class its "measured_block_bytes"; auto reads none
// of them. Any other key is refused, so that a misspelt key is not ignored.
//
// Errors: a missing, unreadable or non-JSON file, a directory, the wrong format or version, an
// unknown key, two classes of one name, a node layout no ranks can have (ranks_per_node is the
// largest node's), and any malformed field are std::invalid_argument naming the file (and the
// entry), never a crash or a default.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

struct TuningNodeLayout {
  int ranks = 0;
  int nodes = 0;
  int ranks_per_node = 0;  // the largest node's ranks
  bool operator==(const TuningNodeLayout&) const = default;
};

struct TuningLayoutClass {
  std::string name;
  bool contiguous = false;
  std::int64_t max_block_bytes = -1;  // fragmented bands: upper bound of mean block bytes; -1 = unbounded
};

// Which calls an entry decides: the table's "calls" (see the header comment).
enum class TuningCalls { blocking, prepared, persistent };

struct TuningEntry {
  TuningNodeLayout layout;
  std::string layout_class;
  std::int64_t min_bytes = 0, max_bytes = -1;  // bytes per peer, inclusive; max -1 = unbounded
  std::vector<std::string> algorithms;          // the choice first, then the alternatives
  TuningCalls calls = TuningCalls::blocking;
};

// What auto classifies a call by (agreed over the ranks where that matters).
struct CallClass {
  std::int64_t bytes_per_peer = 0;  // mean over peers, the larger of the send and receive side
  std::int64_t block_bytes = 0;     // mean bytes per contiguous block, the more fragmented side
  bool contiguous = true;           // every non-empty peer block is one piece on both sides
  bool operator==(const CallClass&) const = default;
};

class TuningTable {
 public:
  // Reads and checks `path`; throws std::invalid_argument naming it.
  static TuningTable read(const std::string& path);
  // Parses `text` as the table of `path` (which only names it in errors).
  static TuningTable parse(const std::string& text, const std::string& path);

  const std::string& path() const { return path_; }
  // Whether the table has entries of the kind at `layout`.
  bool has(const TuningNodeLayout& layout, TuningCalls calls = TuningCalls::blocking) const;
  // The kind of entries a prepared call looks up at `layout`: persistent, else prepared, else blocking.
  TuningCalls prepared_calls(const TuningNodeLayout& layout) const;
  // The entry of the kind for a call: nullptr only when there is none of that kind at the layout.
  const TuningEntry* find(const TuningNodeLayout& layout, const CallClass& call,
                          TuningCalls calls = TuningCalls::blocking) const;
  // The entries of the kind at one node layout, for auto's "one algorithm everywhere" test.
  std::vector<const TuningEntry*> entries_at(const TuningNodeLayout& layout,
                                             TuningCalls calls = TuningCalls::blocking) const;
  // The class name a call falls into, of those the table's entries of the kind have at `layout`
  // (empty: none).
  std::string class_of(const TuningNodeLayout& layout, const CallClass& call,
                       TuningCalls calls = TuningCalls::blocking) const;

 private:
  std::string path_;
  std::vector<TuningLayoutClass> classes_;
  std::vector<TuningEntry> entries_;
};

// The table at `path`, read once per process and path (later calls return the same object).
std::shared_ptr<const TuningTable> tuning_table(const std::string& path);

// "4 ranks on 2 nodes (2 per node)".
std::string describe(const TuningNodeLayout& layout);

}  // namespace tb
