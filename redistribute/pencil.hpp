// A pencil: how a d-dimensional C-order global array is laid out on a process grid.
//
// Each array axis is either whole on every rank, or block-distributed over one grid axis (each
// grid axis distributes exactly one array axis). The aligned axis is a whole axis: the one the
// next serial operation (an FFT, say) runs along. realigned(b) is the pencil aligned in axis b:
// axis b becomes whole and the current aligned axis takes over b's grid axis - the pair of
// layouts one Redistribution moves between.
#pragma once

#include "redistribute/box.hpp"
#include "redistribute/process_grid.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class Pencil {
 public:
  // The default layout: grid axes 0..g-1 distribute the first g array axes other than `aligned_axis`.
  Pencil(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape, int aligned_axis);
  // An explicit layout: grid_axis_of[k] is the grid axis distributing array axis k, or -1 when
  // axis k is whole. The aligned axis must be whole; every grid axis distributes exactly one axis.
  Pencil(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape, int aligned_axis,
         std::vector<int> grid_axis_of);

  Pencil realigned(int axis) const;

  int ndim() const { return static_cast<int>(global_shape_.size()); }
  int aligned_axis() const { return aligned_; }
  int grid_axis(int axis) const { return grid_axis_of_.at(static_cast<std::size_t>(axis)); }  // -1: whole
  const std::vector<int>& grid_axes() const { return grid_axis_of_; }
  const std::vector<std::int64_t>& global_shape() const { return global_shape_; }
  const std::vector<std::int64_t>& local_shape() const { return local_shape_; }
  const std::vector<std::int64_t>& local_start() const { return local_start_; }
  std::int64_t local_size() const;  // elements on this rank (may be 0)
  Box local_box() const { return {local_start_, local_shape_}; }
  const ProcessGrid& grid() const { return *grid_; }
  const std::shared_ptr<const ProcessGrid>& shared_grid() const { return grid_; }

  // e.g. "[13/g0, 9, 7/g1] aligned 1": "/gq" marks an axis distributed over grid axis q.
  std::string describe() const;

  bool operator==(const Pencil& other) const;

 private:
  std::shared_ptr<const ProcessGrid> grid_;
  std::vector<std::int64_t> global_shape_;
  int aligned_;
  std::vector<int> grid_axis_of_;
  std::vector<std::int64_t> local_shape_;
  std::vector<std::int64_t> local_start_;
};

}  // namespace tb
