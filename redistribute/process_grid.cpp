#include "redistribute/process_grid.hpp"

#include "collectives/mpi_error.hpp"

#include <stdexcept>

namespace tb {

std::shared_ptr<const ProcessGrid> ProcessGrid::create(MPI_Comm comm, std::vector<int> dims) {
  return std::shared_ptr<const ProcessGrid>(new ProcessGrid(comm, std::move(dims)));
}

ProcessGrid::ProcessGrid(MPI_Comm comm, std::vector<int> dims) : dims_(std::move(dims)) {
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("ProcessGrid: communicator is MPI_COMM_NULL");
  if (dims_.empty()) throw std::invalid_argument("ProcessGrid: the grid needs at least one dimension");
  int size = 0;
  TB_MPI_CHECK(MPI_Comm_size(comm, &size));
  long fixed = 1;
  for (int d : dims_) {
    if (d < 0) throw std::invalid_argument("ProcessGrid: negative grid dimension " + std::to_string(d));
    if (d > 0) fixed *= d;
  }
  bool any_free = false;
  for (int d : dims_) any_free = any_free || d == 0;
  if (fixed > size || size % fixed != 0 || (!any_free && fixed != size))
    throw std::invalid_argument("ProcessGrid: grid " + describe() + " needs " + (any_free ? "a multiple of " : "") +
                                std::to_string(fixed) + " ranks, but the communicator has " + std::to_string(size));
  TB_MPI_CHECK(MPI_Dims_create(size, ndims(), dims_.data()));

  std::vector<int> periods(dims_.size(), 0);
  TB_MPI_CHECK(MPI_Cart_create(comm, ndims(), dims_.data(), periods.data(), /*reorder=*/0, &cart_));
  try {
    int rank = 0;
    TB_MPI_CHECK(MPI_Comm_rank(cart_, &rank));
    coords_.resize(dims_.size());
    TB_MPI_CHECK(MPI_Cart_coords(cart_, rank, ndims(), coords_.data()));
    for (int axis = 0; axis < ndims(); ++axis) {
      std::vector<int> keep(dims_.size(), 0);
      keep[static_cast<std::size_t>(axis)] = 1;
      MPI_Comm sub = MPI_COMM_NULL;
      TB_MPI_CHECK(MPI_Cart_sub(cart_, keep.data(), &sub));
      subcomms_.push_back(sub);
    }
  } catch (...) {
    for (MPI_Comm& c : subcomms_) MPI_Comm_free(&c);
    MPI_Comm_free(&cart_);
    throw;
  }
}

ProcessGrid::~ProcessGrid() {
  for (MPI_Comm& c : subcomms_) MPI_Comm_free(&c);
  if (cart_ != MPI_COMM_NULL) MPI_Comm_free(&cart_);
}

std::string ProcessGrid::describe() const {
  std::string text;
  for (int d : dims_) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

}  // namespace tb
