// The per-peer pattern of one Alltoallw call: for every (source, destination) pair the bytes and
// the number of contiguous blocks on the sending and on the receiving side. That is all a cost
// model needs to know about the datatypes.
//
// Sources: a redistribution plan's geometry (shape, grid, axes, element size; computed here with
// the same block distribution and pencils as redistribute/, no MPI needed), or a file recorded
// from a real program by the PMPI library (TB_ALLTOALLW_RECORD=path; one JSON object per call).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tb::fpga {

struct PairTraffic {
  std::int64_t bytes = 0;
  std::int64_t send_blocks = 0;  // contiguous runs in the sender's array
  std::int64_t recv_blocks = 0;  // contiguous runs in the receiver's array
};

class CommPattern {
 public:
  explicit CommPattern(int ranks = 1);
  int ranks() const { return ranks_; }
  PairTraffic& at(int src, int dst) { return pairs_[static_cast<std::size_t>(src * ranks_ + dst)]; }
  const PairTraffic& at(int src, int dst) const { return pairs_[static_cast<std::size_t>(src * ranks_ + dst)]; }
  std::int64_t total_bytes() const;
  std::string description;  // where it came from
  // The communicators the call runs on, each its ranks in rank order: for a redistribution, the
  // sub-communicators of the grid (they call at once, each on its own); empty means one
  // communicator of all ranks (a recorded call, a pattern made by hand).
  std::vector<std::vector<int>> communicators;
  std::vector<std::vector<int>> communicators_or_all() const;

  nlohmann::json to_json() const;
  static CommPattern from_json(const nlohmann::json& j);

 private:
  int ranks_;
  std::vector<PairTraffic> pairs_;
};

// One redistribution of a C-order array of `shape` on a grid of `grid_dims` (every entry >= 1),
// from the default pencil aligned in `from_axis` to its realignment in `to_axis`, as
// redistribute/ plans it. Ranks are numbered in the grid's row-major order; the pattern covers
// all of them (only the ranks of one sub-communicator exchange data with each other).
CommPattern redistribution_pattern(const std::vector<std::int64_t>& shape, const std::vector<int>& grid_dims,
                                   int from_axis, int to_axis, std::int64_t element_bytes);

// Reads a file written by the PMPI library's record mode; `call` picks one recorded call
// (0-based). Throws std::invalid_argument naming the problem.
CommPattern recorded_pattern(const std::string& path, int call = 0);

}  // namespace tb::fpga
