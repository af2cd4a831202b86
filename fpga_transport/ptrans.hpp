// PTRANS (HPCC): C = B + A^T for n x n matrices of doubles, distributed as HPCC FPGA does: blocks
// of nb x nb, block (I, J) on rank (I mod P, J mod Q) of a P x Q grid with P = Q, each rank's
// blocks stored as one row-major local matrix of (n/P) x (n/Q).
//
// With that distribution C's local matrix on rank (p, q) needs exactly the TRANSPOSE of the whole
// local A of rank (q, p). The transposition is one Alltoallw through the testbed's registry:
// every rank sends its local A as one contiguous block to its partner (q, p) and receives it with
// a derived datatype that stores rows as columns (a column vector resized to one element,
// repeated), so no local transpose is coded anywhere. Diagonal ranks send to themselves.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {
class AlltoallwAlgorithm;
}

namespace tb::fpga {

class Ptrans {
 public:
  // Collective over comm (its size must be a square P*P, and n a multiple of nb*P).
  Ptrans(MPI_Comm comm, std::int64_t n, std::int64_t nb, const std::string& algorithm);
  ~Ptrans();
  Ptrans(const Ptrans&) = delete;
  Ptrans& operator=(const Ptrans&) = delete;

  std::int64_t n() const { return n_; }
  std::int64_t local_rows() const { return m_; }
  int grid() const { return p_; }
  int partner() const { return partner_; }
  std::string algorithm_path() const;

  // Fills A and B from a function of the global index (the same on every grid).
  void fill();
  // C = B + A^T: one Alltoallw (A^T into the work array) and one local add. Collective.
  void run();
  // max |C - (B + A^T)| over all ranks, from the generating functions. Collective.
  double residual() const;
  // The global (row, column) of local element (r, c).
  std::int64_t global_row(std::int64_t r) const;
  std::int64_t global_col(std::int64_t c) const;

 private:
  MPI_Comm comm_;
  std::int64_t n_, nb_, m_;
  int p_ = 1, row_ = 0, col_ = 0, partner_ = 0, size_ = 1;
  std::vector<double> a_, b_, c_, at_;
  MPI_Datatype block_ = MPI_DATATYPE_NULL, transposed_ = MPI_DATATYPE_NULL;
  std::unique_ptr<AlltoallwAlgorithm> algorithm_;
  std::vector<int> send_counts_, recv_counts_, displs_;
  std::vector<MPI_Datatype> send_types_, recv_types_;
};

double ptrans_a(std::int64_t row, std::int64_t col);  // the generating functions
double ptrans_b(std::int64_t row, std::int64_t col);

}  // namespace tb::fpga
