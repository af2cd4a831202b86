#include "redistribute/pencil.hpp"

#include "redistribute/block_distribution.hpp"

#include <stdexcept>

namespace tb {
namespace {

std::vector<int> default_layout(const ProcessGrid* grid, std::size_t ndim, int aligned) {
  std::vector<int> layout(ndim, -1);
  if (grid == nullptr) return layout;
  int next = 0;
  for (std::size_t k = 0; k < ndim && next < grid->ndims(); ++k)
    if (static_cast<int>(k) != aligned) layout[k] = next++;
  return layout;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text;
  for (auto n : shape) text += (text.empty() ? "" : "x") + std::to_string(n);
  return text;
}

}  // namespace

Pencil::Pencil(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape, int aligned_axis)
    : Pencil(grid, global_shape, aligned_axis, default_layout(grid.get(), global_shape.size(), aligned_axis)) {}

Pencil::Pencil(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape, int aligned_axis,
               std::vector<int> grid_axis_of)
    : grid_(std::move(grid)),
      global_shape_(std::move(global_shape)),
      aligned_(aligned_axis),
      grid_axis_of_(std::move(grid_axis_of)) {
  const int d = ndim();
  if (!grid_) throw std::invalid_argument("Pencil: no process grid");
  if (d < 2) throw std::invalid_argument("Pencil: the global shape needs at least 2 axes, got " + std::to_string(d));
  for (auto n : global_shape_)
    if (n < 1) throw std::invalid_argument("Pencil: global shape " + shape_text(global_shape_) + " has an axis shorter than 1");
  if (aligned_ < 0 || aligned_ >= d)
    throw std::invalid_argument("Pencil: aligned axis " + std::to_string(aligned_) + " is out of range for a " +
                                std::to_string(d) + "-dimensional array");
  if (grid_->ndims() > d - 1)
    throw std::invalid_argument("Pencil: a " + std::to_string(grid_->ndims()) + "-dimensional grid cannot distribute a " +
                                std::to_string(d) + "-dimensional array (at most d-1 = " + std::to_string(d - 1) +
                                " grid dimensions: one axis stays whole)");
  if (static_cast<int>(grid_axis_of_.size()) != d)
    throw std::invalid_argument("Pencil: the layout names " + std::to_string(grid_axis_of_.size()) + " axes, the shape has " +
                                std::to_string(d));
  std::vector<int> uses(static_cast<std::size_t>(grid_->ndims()), 0);
  for (int k = 0; k < d; ++k) {
    const int q = grid_axis_of_[k];
    if (q < -1 || q >= grid_->ndims())
      throw std::invalid_argument("Pencil: axis " + std::to_string(k) + " is mapped to grid axis " + std::to_string(q) +
                                  ", which the " + std::to_string(grid_->ndims()) + "-dimensional grid does not have");
    if (q >= 0) ++uses[q];
  }
  if (grid_axis_of_[aligned_] != -1)
    throw std::invalid_argument("Pencil: the aligned axis " + std::to_string(aligned_) + " must not be distributed");
  for (int q = 0; q < grid_->ndims(); ++q)
    if (uses[q] != 1)
      throw std::invalid_argument("Pencil: grid axis " + std::to_string(q) + " distributes " + std::to_string(uses[q]) +
                                  " array axes; it must distribute exactly one");

  local_shape_ = global_shape_;
  local_start_.assign(global_shape_.size(), 0);
  for (int k = 0; k < d; ++k) {
    const int q = grid_axis_of_[k];
    if (q < 0) continue;
    BlockDistribution dist(global_shape_[k], grid_->dims()[q]);
    local_shape_[k] = dist.size(grid_->coords()[q]);
    local_start_[k] = dist.start(grid_->coords()[q]);
  }
}

Pencil Pencil::realigned(int axis) const {
  if (axis < 0 || axis >= ndim())
    throw std::invalid_argument("Pencil::realigned: axis " + std::to_string(axis) + " is out of range for a " +
                                std::to_string(ndim()) + "-dimensional array");
  std::vector<int> layout = grid_axis_of_;
  layout[aligned_] = layout[axis];
  layout[axis] = -1;
  return Pencil(grid_, global_shape_, axis, std::move(layout));
}

std::int64_t Pencil::local_size() const {
  std::int64_t n = 1;
  for (auto s : local_shape_) n *= s;
  return n;
}

std::string Pencil::describe() const {
  std::string text = "[";
  for (int k = 0; k < ndim(); ++k) {
    if (k > 0) text += ", ";
    text += std::to_string(global_shape_[k]);
    if (grid_axis_of_[k] >= 0) text += "/g" + std::to_string(grid_axis_of_[k]);
  }
  return text + "] aligned " + std::to_string(aligned_);
}

bool Pencil::operator==(const Pencil& other) const {
  return grid_ == other.grid_ && global_shape_ == other.global_shape_ && aligned_ == other.aligned_ &&
         grid_axis_of_ == other.grid_axis_of_;
}

}  // namespace tb
