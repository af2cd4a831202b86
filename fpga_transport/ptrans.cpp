#include "fpga_transport/ptrans.hpp"

#include "collectives/mpi_error.hpp"
#include "collectives/registry.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tb::fpga {

double ptrans_a(std::int64_t row, std::int64_t col) { return static_cast<double>((row * 7 + col * 13) % 1021) * 0.5; }
double ptrans_b(std::int64_t row, std::int64_t col) { return static_cast<double>((row * 3 + col * 5) % 509) * 0.25; }

Ptrans::Ptrans(MPI_Comm comm, std::int64_t n, std::int64_t nb, const std::string& algorithm)
    : comm_(comm), n_(n), nb_(nb) {
  int rank = 0;
  TB_MPI_CHECK(MPI_Comm_size(comm, &size_));
  TB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  p_ = static_cast<int>(std::lround(std::sqrt(static_cast<double>(size_))));
  if (p_ * p_ != size_)
    throw std::invalid_argument("PTRANS needs a square P x P grid (as HPCC FPGA): " + std::to_string(size_) +
                                " ranks is not a square");
  if (n < 1 || nb < 1 || n % (nb * p_) != 0)
    throw std::invalid_argument("PTRANS: n = " + std::to_string(n) + " must be a positive multiple of nb * P = " +
                                std::to_string(nb * p_));
  row_ = rank / p_;
  col_ = rank % p_;
  partner_ = col_ * p_ + row_;
  m_ = n / p_;
  const std::size_t elems = static_cast<std::size_t>(m_ * m_);
  if (m_ * m_ > std::int64_t{1} << 31) throw std::invalid_argument("PTRANS: local matrix too large for one MPI count");
  a_.resize(elems);
  b_.resize(elems);
  c_.resize(elems);
  at_.resize(elems);

  // Send: the whole local A, contiguous. Receive: a row-major stream stored column by column.
  TB_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(m_ * m_), MPI_DOUBLE, &block_));
  TB_MPI_CHECK(MPI_Type_commit(&block_));
  MPI_Datatype column = MPI_DATATYPE_NULL, column1 = MPI_DATATYPE_NULL;
  TB_MPI_CHECK(MPI_Type_vector(static_cast<int>(m_), 1, static_cast<int>(m_), MPI_DOUBLE, &column));
  TB_MPI_CHECK(MPI_Type_create_resized(column, 0, sizeof(double), &column1));
  TB_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(m_), column1, &transposed_));
  TB_MPI_CHECK(MPI_Type_commit(&transposed_));
  MPI_Type_free(&column);
  MPI_Type_free(&column1);

  send_counts_.assign(static_cast<std::size_t>(size_), 0);
  recv_counts_.assign(static_cast<std::size_t>(size_), 0);
  displs_.assign(static_cast<std::size_t>(size_), 0);
  send_types_.assign(static_cast<std::size_t>(size_), MPI_BYTE);
  recv_types_.assign(static_cast<std::size_t>(size_), MPI_BYTE);
  send_counts_[partner_] = recv_counts_[partner_] = 1;
  send_types_[partner_] = block_;
  recv_types_[partner_] = transposed_;
  algorithm_ = make_alltoallw(algorithm);
}

Ptrans::~Ptrans() {
  if (block_ != MPI_DATATYPE_NULL) MPI_Type_free(&block_);
  if (transposed_ != MPI_DATATYPE_NULL) MPI_Type_free(&transposed_);
}

std::string Ptrans::algorithm_path() const { return algorithm_->last_path(); }

std::int64_t Ptrans::global_row(std::int64_t r) const { return ((r / nb_) * p_ + row_) * nb_ + r % nb_; }
std::int64_t Ptrans::global_col(std::int64_t c) const { return ((c / nb_) * p_ + col_) * nb_ + c % nb_; }

void Ptrans::fill() {
  for (std::int64_t r = 0; r < m_; ++r)
    for (std::int64_t c = 0; c < m_; ++c) {
      a_[static_cast<std::size_t>(r * m_ + c)] = ptrans_a(global_row(r), global_col(c));
      b_[static_cast<std::size_t>(r * m_ + c)] = ptrans_b(global_row(r), global_col(c));
    }
  std::fill(c_.begin(), c_.end(), -1.0);
}

void Ptrans::run() {
  AlltoallwArgs args;
  args.sendbuf = a_.data();
  args.sendcounts = send_counts_.data();
  args.sdispls = displs_.data();
  args.sendtypes = send_types_.data();
  args.recvbuf = at_.data();
  args.recvcounts = recv_counts_.data();
  args.rdispls = displs_.data();
  args.recvtypes = recv_types_.data();
  args.comm = comm_;
  algorithm_->run(args);
  const std::size_t elems = c_.size();
  for (std::size_t i = 0; i < elems; ++i) c_[i] = b_[i] + at_[i];
}

double Ptrans::residual() const {
  double worst = 0.0;
  for (std::int64_t r = 0; r < m_; ++r)
    for (std::int64_t c = 0; c < m_; ++c) {
      const double expect = ptrans_b(global_row(r), global_col(c)) + ptrans_a(global_col(c), global_row(r));
      worst = std::max(worst, std::abs(c_[static_cast<std::size_t>(r * m_ + c)] - expect));
    }
  TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return worst;
}

}  // namespace tb::fpga
