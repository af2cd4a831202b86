// A Cartesian process grid over a communicator, with one 1-D sub-communicator per grid axis
// (mpi4py-fft's Subcomm). The grid owns its communicators and frees them on destruction; it is
// shared (std::shared_ptr) by the pencils and plans that refer to it.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

namespace tb {

class ProcessGrid {
 public:
  // dims: one entry per grid axis; 0 lets MPI_Dims_create choose. The grid must use every rank
  // of `comm`: a product of fixed dims that does not divide the communicator size is an error.
  static std::shared_ptr<const ProcessGrid> create(MPI_Comm comm, std::vector<int> dims);

  ProcessGrid(const ProcessGrid&) = delete;
  ProcessGrid& operator=(const ProcessGrid&) = delete;
  ~ProcessGrid();

  int ndims() const { return static_cast<int>(dims_.size()); }
  const std::vector<int>& dims() const { return dims_; }
  const std::vector<int>& coords() const { return coords_; }
  MPI_Comm comm() const { return cart_; }
  MPI_Comm subcomm(int grid_axis) const { return subcomms_.at(static_cast<std::size_t>(grid_axis)); }
  std::string describe() const;  // e.g. "2x3"

 private:
  ProcessGrid(MPI_Comm comm, std::vector<int> dims);
  std::vector<int> dims_;
  std::vector<int> coords_;
  MPI_Comm cart_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> subcomms_;
};

}  // namespace tb
