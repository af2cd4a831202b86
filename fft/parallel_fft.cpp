#include "fft/parallel_fft.hpp"

#include "collectives/mpi_error.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace tb {
namespace {

using IoDim = fftw_iodim64;  // the same struct as fftwf_iodim64

// FFTW's API for one precision, behind one set of names.
template <class R>
struct Fftw;

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  static Plan dft(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, int sign, unsigned f) {
    return fftw_plan_guru64_dft(r, d, hr, hd, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out), sign, f);
  }
  static Plan r2c(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, unsigned f) {
    return fftw_plan_guru64_dft_r2c(r, d, hr, hd, static_cast<double*>(in), static_cast<fftw_complex*>(out), f);
  }
  static Plan c2r(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, unsigned f) {
    return fftw_plan_guru64_dft_c2r(r, d, hr, hd, static_cast<fftw_complex*>(in), static_cast<double*>(out), f);
  }
  static void execute_dft(Plan p, void* in, void* out) {
    fftw_execute_dft(p, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out));
  }
  static void execute_r2c(Plan p, void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<fftw_complex*>(out));
  }
  static void execute_c2r(Plan p, void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<fftw_complex*>(in), static_cast<double*>(out));
  }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
  static int alignment_of(const void* p) { return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))); }
};

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  static Plan dft(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, int sign, unsigned f) {
    return fftwf_plan_guru64_dft(r, d, hr, hd, static_cast<fftwf_complex*>(in), static_cast<fftwf_complex*>(out), sign,
                                 f);
  }
  static Plan r2c(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, unsigned f) {
    return fftwf_plan_guru64_dft_r2c(r, d, hr, hd, static_cast<float*>(in), static_cast<fftwf_complex*>(out), f);
  }
  static Plan c2r(int r, const IoDim* d, int hr, const IoDim* hd, void* in, void* out, unsigned f) {
    return fftwf_plan_guru64_dft_c2r(r, d, hr, hd, static_cast<fftwf_complex*>(in), static_cast<float*>(out), f);
  }
  static void execute_dft(Plan p, void* in, void* out) {
    fftwf_execute_dft(p, static_cast<fftwf_complex*>(in), static_cast<fftwf_complex*>(out));
  }
  static void execute_r2c(Plan p, void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<fftwf_complex*>(out));
  }
  static void execute_c2r(Plan p, void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<fftwf_complex*>(in), static_cast<float*>(out));
  }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
  static int alignment_of(const void* p) { return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))); }
};

// An array from fftw_malloc: aligned as FFTW's SIMD code wants.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) {
      data_ = fftw_malloc(bytes);
      if (data_ == nullptr) throw std::bad_alloc();
    }
  }
  ~AlignedBuffer() { fftw_free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

unsigned planner_flag(FftPlanner p) {
  switch (p) {
    case FftPlanner::estimate: return FFTW_ESTIMATE;
    case FftPlanner::measure: return FFTW_MEASURE;
    case FftPlanner::patient: return FFTW_PATIENT;
  }
  return FFTW_MEASURE;
}

std::int64_t product(const std::vector<std::int64_t>& v, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// Drops loops of length 1: FFTW accepts them, the descriptions read better without.
std::vector<IoDim> loops(std::initializer_list<IoDim> dims) {
  std::vector<IoDim> out;
  for (const auto& d : dims)
    if (d.n != 1) out.push_back(d);
  return out;
}

bool any_empty(const std::vector<IoDim>& a, const std::vector<IoDim>& b) {
  auto zero = [](const IoDim& d) { return d.n == 0; };
  return std::any_of(a.begin(), a.end(), zero) || std::any_of(b.begin(), b.end(), zero);
}

enum class Op { dft_forward, dft_backward, r2c, c2r, copy };

// One FFTW guru64 plan with fixed dims and loops, executed on any pair of arrays through FFTW's
// new-array interface. It is planned on the plan's own aligned work arrays; arrays of another
// alignment run through an FFTW_UNALIGNED twin, made on first use on temporary arrays (so a
// measuring planner never overwrites live data).
template <class R>
class SerialPlan {
 public:
  SerialPlan() = default;
  SerialPlan(Op op, std::vector<IoDim> dims, std::vector<IoDim> howmany, unsigned flags, std::size_t in_bytes,
             std::size_t out_bytes, bool in_place, void* plan_in, void* plan_out)
      : op_(op), dims_(std::move(dims)), howmany_(std::move(howmany)), flags_(flags), in_bytes_(in_bytes),
        out_bytes_(out_bytes), in_place_(in_place) {
    if (any_empty(dims_, howmany_)) return;  // this rank holds nothing at this stage
    plan_ = make(flags_, plan_in, in_place_ ? plan_in : plan_out);
    planned_alignment_ = Fftw<R>::alignment_of(plan_in);
  }
  ~SerialPlan() {
    if (plan_) Fftw<R>::destroy(plan_);
    if (unaligned_) Fftw<R>::destroy(unaligned_);
  }
  SerialPlan(SerialPlan&& o) noexcept { swap(o); }
  SerialPlan& operator=(SerialPlan&& o) noexcept {
    swap(o);
    return *this;
  }

  void run(const void* src, void* dst) {
    if (!plan_) return;
    void* in = const_cast<void*>(src);  // FFTW's execute takes non-const; out-of-place dft and r2c do not write it
    const int a = Fftw<R>::alignment_of(in), b = Fftw<R>::alignment_of(dst);
    if (a == planned_alignment_ && b == planned_alignment_) {
      execute(plan_, in, dst);
      return;
    }
    if (!unaligned_) {
      AlignedBuffer tin(std::max(in_bytes_, out_bytes_)), tout(in_place_ ? 0 : out_bytes_);
      unaligned_ = make(flags_ | FFTW_UNALIGNED, tin.data(), in_place_ ? tin.data() : tout.data());
    }
    execute(unaligned_, in, dst);
  }
  bool empty() const { return plan_ == nullptr; }
  bool made_unaligned_twin() const { return unaligned_ != nullptr; }

 private:
  typename Fftw<R>::Plan make(unsigned flags, void* in, void* out) const {
    const int r = static_cast<int>(dims_.size()), hr = static_cast<int>(howmany_.size());
    typename Fftw<R>::Plan p = nullptr;
    switch (op_) {
      case Op::dft_forward: p = Fftw<R>::dft(r, dims_.data(), hr, howmany_.data(), in, out, FFTW_FORWARD, flags); break;
      case Op::dft_backward: p = Fftw<R>::dft(r, dims_.data(), hr, howmany_.data(), in, out, FFTW_BACKWARD, flags); break;
      case Op::copy: p = Fftw<R>::dft(0, nullptr, hr, howmany_.data(), in, out, FFTW_FORWARD, flags); break;
      case Op::r2c: p = Fftw<R>::r2c(r, dims_.data(), hr, howmany_.data(), in, out, flags); break;
      case Op::c2r: p = Fftw<R>::c2r(r, dims_.data(), hr, howmany_.data(), in, out, flags); break;
    }
    if (p == nullptr) throw std::runtime_error("ParallelFFT: FFTW could not make a plan for " + describe());
    return p;
  }
  void execute(typename Fftw<R>::Plan p, void* in, void* out) const {
    switch (op_) {
      case Op::dft_forward:
      case Op::dft_backward:
      case Op::copy: Fftw<R>::execute_dft(p, in, out); break;
      case Op::r2c: Fftw<R>::execute_r2c(p, in, out); break;
      case Op::c2r: Fftw<R>::execute_c2r(p, in, out); break;
    }
  }
  std::string describe() const {
    std::ostringstream s;
    s << "dims";
    for (const auto& d : dims_) s << " {n " << d.n << ", is " << d.is << ", os " << d.os << "}";
    s << " howmany";
    for (const auto& d : howmany_) s << " {n " << d.n << ", is " << d.is << ", os " << d.os << "}";
    return s.str();
  }
  void swap(SerialPlan& o) noexcept {
    std::swap(op_, o.op_);
    std::swap(dims_, o.dims_);
    std::swap(howmany_, o.howmany_);
    std::swap(flags_, o.flags_);
    std::swap(in_bytes_, o.in_bytes_);
    std::swap(out_bytes_, o.out_bytes_);
    std::swap(in_place_, o.in_place_);
    std::swap(plan_, o.plan_);
    std::swap(unaligned_, o.unaligned_);
    std::swap(planned_alignment_, o.planned_alignment_);
  }

  Op op_ = Op::copy;
  std::vector<IoDim> dims_, howmany_;
  unsigned flags_ = 0;
  std::size_t in_bytes_ = 0, out_bytes_ = 0;
  bool in_place_ = false;
  typename Fftw<R>::Plan plan_ = nullptr;
  typename Fftw<R>::Plan unaligned_ = nullptr;
  int planned_alignment_ = 0;
};

std::string axes_text(int first, int last) {
  std::string t;
  for (int a = first; a <= last; ++a) t += (t.empty() ? "" : ",") + std::to_string(a);
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Serial stages

class ParallelFFT::Stage {
 public:
  virtual ~Stage() = default;
  // src and dst may be equal (in place) where the stage was planned so.
  virtual void forward(const void* src, void* dst) = 0;
  virtual void backward(const void* src, void* dst) = 0;
  virtual bool uses_unaligned_plans() const = 0;
  std::string name;     // "fft axes 1,2 (r2c)"
  std::string how;      // "guru64 strided, in place" ...
};

namespace {

// Stage 0: the whole trailing axes first..d-1 of P_0, in one multi-dimensional plan, out of
// place between the user's real-space array and a work array.
template <class R>
class TrailingStage final : public ParallelFFT::Stage {
 public:
  TrailingStage(const Pencil& real, const Pencil& spectral, int first, bool r2c, unsigned flags, void* work_a,
                void* work_b) {
    const auto& lr = real.local_shape();
    const auto& lc = spectral.local_shape();
    const std::size_t d = lr.size(), f = static_cast<std::size_t>(first);
    const std::size_t real_elem = r2c ? sizeof(R) : 2 * sizeof(R), complex_elem = 2 * sizeof(R);
    std::vector<IoDim> fwd_dims, bwd_dims;
    for (std::size_t j = f; j < d; ++j) {
      const std::int64_t sr = product(lr, j + 1, d), sc = product(lc, j + 1, d);
      fwd_dims.push_back({lr[j], sr, sc});
      bwd_dims.push_back({lr[j], sc, sr});
    }
    const std::int64_t rows = product(lr, 0, f), block_r = product(lr, f, d), block_c = product(lc, f, d);
    const auto fwd_loop = loops({{rows, block_r, block_c}}), bwd_loop = loops({{rows, block_c, block_r}});
    const std::size_t real_bytes = static_cast<std::size_t>(rows * block_r) * real_elem;
    const std::size_t complex_bytes = static_cast<std::size_t>(rows * block_c) * complex_elem;
    forward_ = SerialPlan<R>(r2c ? Op::r2c : Op::dft_forward, fwd_dims, fwd_loop, flags, real_bytes, complex_bytes,
                             false, work_a, work_b);
    backward_ = SerialPlan<R>(r2c ? Op::c2r : Op::dft_backward, bwd_dims, bwd_loop, flags, complex_bytes, real_bytes,
                              false, work_a, work_b);
    name = (d - f > 1 ? "fft axes " : "fft axis ") + axes_text(first, static_cast<int>(d) - 1) +
           (r2c ? " (r2c/c2r)" : " (c2c)");
    how = "guru64, " + std::to_string(d - f) + "-d plan over the contiguous trailing axes, out of place";
  }
  void forward(const void* src, void* dst) override { forward_.run(src, dst); }
  void backward(const void* src, void* dst) override { backward_.run(src, dst); }
  bool uses_unaligned_plans() const override {
    return forward_.made_unaligned_twin() || backward_.made_unaligned_twin();
  }

 private:
  SerialPlan<R> forward_, backward_;
};

// Stage k >= 1: a 1-D c2c transform along `axis` of P_k (not the last local axis). Forward runs
// in place; backward runs out of place when `backward_out_of_place` (it then reads the user's
// spectral array) and in place otherwise.
template <class R>
class AxisStage final : public ParallelFFT::Stage {
 public:
  AxisStage(const Pencil& p, int axis, SerialLayout layout, bool backward_out_of_place, unsigned flags, void* work_a,
            void* work_b, void* scratch) {
    const auto& l = p.local_shape();
    const std::size_t a = static_cast<std::size_t>(axis), d = l.size();
    const std::int64_t n = l[a], s = product(l, a + 1, d), rows = product(l, 0, a);
    const std::size_t bytes = static_cast<std::size_t>(rows * n * s) * 2 * sizeof(R);
    contiguous_ = layout == SerialLayout::contiguous && s > 1;
    name = "fft axis " + std::to_string(axis) + " (c2c)";
    if (!contiguous_) {
      const auto dims = std::vector<IoDim>{{n, s, s}};
      const auto loop = loops({{rows, n * s, n * s}, {s, 1, 1}});
      forward_ = SerialPlan<R>(Op::dft_forward, dims, loop, flags, bytes, bytes, true, work_b, work_b);
      backward_ = SerialPlan<R>(Op::dft_backward, dims, loop, flags, bytes, bytes, !backward_out_of_place, work_a,
                                work_b);
      how = "guru64 strided (stride " + std::to_string(s) + "), no transpose";
    } else {
      // [rows][n][s] -> scratch [rows][s][n], contiguous transforms, and back.
      const auto to = loops({{rows, n * s, n * s}, {n, s, 1}, {s, 1, n}});
      const auto back = loops({{rows, n * s, n * s}, {n, 1, s}, {s, n, 1}});
      const auto dims = std::vector<IoDim>{{n, 1, 1}};
      const auto loop = loops({{rows * s, n, n}});
      gather_ = SerialPlan<R>(Op::copy, {}, to, flags, bytes, bytes, false, work_a, scratch);
      scatter_ = SerialPlan<R>(Op::copy, {}, back, flags, bytes, bytes, false, scratch, work_b);
      forward_ = SerialPlan<R>(Op::dft_forward, dims, loop, flags, bytes, bytes, true, scratch, scratch);
      backward_ = SerialPlan<R>(Op::dft_backward, dims, loop, flags, bytes, bytes, true, scratch, scratch);
      scratch_ = scratch;
      how = "transpose to contiguous (FFTW rank-0 plan), contiguous transforms, transpose back";
    }
  }
  void forward(const void* src, void* dst) override { run(forward_, src, dst); }
  void backward(const void* src, void* dst) override { run(backward_, src, dst); }
  bool uses_unaligned_plans() const override {
    return forward_.made_unaligned_twin() || backward_.made_unaligned_twin() || gather_.made_unaligned_twin() ||
           scatter_.made_unaligned_twin();
  }

 private:
  void run(SerialPlan<R>& fft, const void* src, void* dst) {
    if (!contiguous_) {
      fft.run(src, dst);
      return;
    }
    gather_.run(src, scratch_);
    fft.run(scratch_, scratch_);
    scatter_.run(scratch_, dst);
  }

  bool contiguous_ = false;
  void* scratch_ = nullptr;
  SerialPlan<R> forward_, backward_, gather_, scatter_;
};

template <class R>
void scale_array(void* data, std::int64_t reals, double factor) {
  R* p = static_cast<R*>(data);
  const R f = static_cast<R>(factor);
  for (std::int64_t i = 0; i < reals; ++i) p[i] *= f;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names

FftKind parse_fft_kind(std::string_view t) {
  if (t == "c2c") return FftKind::c2c;
  if (t == "r2c") return FftKind::r2c;
  throw std::invalid_argument("unknown FFT kind '" + std::string(t) + "' (expected c2c or r2c)");
}
FftPrecision parse_fft_precision(std::string_view t) {
  if (t == "double" || t == "f64") return FftPrecision::f64;
  if (t == "float" || t == "f32") return FftPrecision::f32;
  throw std::invalid_argument("unknown precision '" + std::string(t) + "' (expected double/f64 or float/f32)");
}
FftNormalization parse_fft_normalization(std::string_view t) {
  if (t == "none") return FftNormalization::none;
  if (t == "backward") return FftNormalization::backward;
  if (t == "ortho" || t == "orthonormal") return FftNormalization::orthonormal;
  throw std::invalid_argument("unknown normalisation '" + std::string(t) + "' (expected none, backward or ortho)");
}
FftPlanner parse_fft_planner(std::string_view t) {
  if (t == "estimate") return FftPlanner::estimate;
  if (t == "measure") return FftPlanner::measure;
  if (t == "patient") return FftPlanner::patient;
  throw std::invalid_argument("unknown FFTW planner '" + std::string(t) + "' (expected estimate, measure or patient)");
}
SerialLayout parse_serial_layout(std::string_view t) {
  if (t == "strided") return SerialLayout::strided;
  if (t == "contiguous") return SerialLayout::contiguous;
  throw std::invalid_argument("unknown serial layout '" + std::string(t) + "' (expected strided or contiguous)");
}
std::string_view fft_kind_name(FftKind k) { return k == FftKind::c2c ? "c2c" : "r2c"; }
std::string_view fft_precision_name(FftPrecision p) { return p == FftPrecision::f64 ? "double" : "float"; }
std::string_view fft_normalization_name(FftNormalization n) {
  switch (n) {
    case FftNormalization::none: return "none";
    case FftNormalization::backward: return "backward";
    case FftNormalization::orthonormal: return "ortho";
  }
  return "?";
}
std::string_view fft_planner_name(FftPlanner p) {
  switch (p) {
    case FftPlanner::estimate: return "estimate";
    case FftPlanner::measure: return "measure";
    case FftPlanner::patient: return "patient";
  }
  return "?";
}
std::string_view serial_layout_name(SerialLayout s) { return s == SerialLayout::strided ? "strided" : "contiguous"; }

// ---------------------------------------------------------------------------------------------
// The plan

struct ParallelFFT::Work {
  AlignedBuffer a, b, scratch;
};

namespace {

std::vector<std::int64_t> spectral_shape(std::vector<std::int64_t> shape, FftKind kind) {
  if (kind == FftKind::r2c && !shape.empty()) shape.back() = shape.back() / 2 + 1;
  return shape;
}

// P_0 is aligned in axis g, the first whole axis: the first realignment then distributes axis g
// and keeps the axes after it whole, so every peer's piece is made of long contiguous runs.
Pencil first_pencil(const std::shared_ptr<const ProcessGrid>& grid, const std::vector<std::int64_t>& shape) {
  if (!grid) throw std::invalid_argument("ParallelFFT: no process grid");
  if (shape.size() < 2)
    throw std::invalid_argument("ParallelFFT: the global shape needs at least 2 axes, got " + std::to_string(shape.size()));
  if (grid->ndims() < 1 || grid->ndims() > static_cast<int>(shape.size()) - 1)
    throw std::invalid_argument("ParallelFFT: a " + std::to_string(shape.size()) + "-d array takes a grid of 1 to " +
                                std::to_string(shape.size() - 1) + " dimensions, got " + std::to_string(grid->ndims()));
  return Pencil(grid, shape, grid->ndims());
}

}  // namespace

ParallelFFT::ParallelFFT(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape,
                         const FftOptions& options)
    : options_(options), shape_(std::move(global_shape)), input_(first_pencil(grid, shape_)), work_(new Work) {
  const int g = grid->ndims();
  if (g < 1) throw std::invalid_argument("ParallelFFT: the process grid needs at least one dimension");
  const bool r2c = options_.kind == FftKind::r2c;
  const ElementType ctype = output_type();

  pencils_.emplace_back(grid, spectral_shape(shape_, options_.kind), g);
  for (int k = 1; k <= g; ++k) pencils_.push_back(pencils_.back().realigned(g - k));

  std::size_t max_bytes = 0;
  for (const auto& p : pencils_) max_bytes = std::max(max_bytes, static_cast<std::size_t>(p.local_size()) * element_size(ctype));
  work_->a = AlignedBuffer(max_bytes);
  work_->b = AlignedBuffer(max_bytes);
  if (options_.serial == SerialLayout::contiguous) work_->scratch = AlignedBuffer(max_bytes);

  const unsigned flags = planner_flag(options_.planner);
  auto make_stages = [&]<class R>(R) {
    stages_.push_back(std::make_unique<TrailingStage<R>>(input_, pencils_[0], g, r2c, flags, work_->a.data(),
                                                         work_->b.data()));
    for (int k = 1; k <= g; ++k)
      stages_.push_back(std::make_unique<AxisStage<R>>(pencils_[k], g - k, options_.serial,
                                                       k == g && !options_.backward_destroys_input, flags,
                                                       work_->a.data(), work_->b.data(), work_->scratch.data()));
  };
  if (options_.precision == FftPrecision::f64) make_stages(double{});
  else make_stages(float{});

  for (int k = 1; k <= g; ++k)
    redistributions_.push_back(make_redistribution(pencils_[k - 1], pencils_[k], ctype, options_.method));

  // The step table, forward steps in execution order, then backward.
  auto add = [&](const char* direction, const char* kind, std::string name) {
    steps_.push_back({direction, kind, std::move(name), 0.0, 0});
    return static_cast<int>(steps_.size()) - 1;
  };
  auto redistribution_name = [&](int k) {
    return "redistribute " + std::to_string(pencils_[k - 1].aligned_axis()) + "->" +
           std::to_string(pencils_[k].aligned_axis()) + " (" + redistributions_[k - 1]->method() + ")";
  };
  forward_step_.push_back(add("forward", "fft", stages_[0]->name));
  for (int k = 1; k <= g; ++k) {
    forward_step_.push_back(add("forward", "redistribute", redistribution_name(k)));
    forward_step_.push_back(add("forward", "fft", stages_[k]->name));
  }
  if (options_.normalization == FftNormalization::orthonormal) forward_scale_step_ = add("forward", "scale", "scale 1/sqrt(N)");
  for (int k = g; k >= 1; --k) {
    backward_step_.push_back(add("backward", "fft", stages_[k]->name));
    backward_step_.push_back(add("backward", "redistribute", redistribution_name(k)));
  }
  backward_step_.push_back(add("backward", "fft", stages_[0]->name));
  if (options_.normalization != FftNormalization::none)
    backward_scale_step_ = add("backward", "scale", options_.normalization == FftNormalization::backward ? "scale 1/N" : "scale 1/sqrt(N)");
}

ParallelFFT::~ParallelFFT() = default;

ElementType ParallelFFT::output_type() const {
  return options_.precision == FftPrecision::f64 ? ElementType::c64 : ElementType::c32;
}
ElementType ParallelFFT::input_type() const {
  if (options_.kind == FftKind::c2c) return output_type();
  return options_.precision == FftPrecision::f64 ? ElementType::f64 : ElementType::f32;
}

void ParallelFFT::check_typed(ElementType in, std::size_t in_size, ElementType out, std::size_t out_size,
                              const char* call) const {
  if (in != input_type() || out != output_type())
    throw std::invalid_argument(std::string("ParallelFFT::") + call + ": arrays of " +
                                std::string(element_type_name(in)) + " and " + std::string(element_type_name(out)) +
                                " given to a plan for " + std::string(element_type_name(input_type())) + " -> " +
                                std::string(element_type_name(output_type())));
  if (in_size != static_cast<std::size_t>(input_size()) || out_size != static_cast<std::size_t>(output_size()))
    throw std::invalid_argument(std::string("ParallelFFT::") + call + ": arrays of " + std::to_string(in_size) +
                                " and " + std::to_string(out_size) + " elements; this rank's layouts need " +
                                std::to_string(input_size()) + " and " + std::to_string(output_size()));
}

void ParallelFFT::scale(void* data, std::int64_t elements, ElementType type, double factor, FftStep& step) {
  const double t0 = MPI_Wtime();
  const std::int64_t reals = elements * static_cast<std::int64_t>(element_size(type) / (options_.precision == FftPrecision::f64 ? 8 : 4));
  if (options_.precision == FftPrecision::f64) scale_array<double>(data, reals, factor);
  else scale_array<float>(data, reals, factor);
  step.record(MPI_Wtime() - t0);
}

namespace {
double global_points(const std::vector<std::int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), 1.0, [](double a, std::int64_t n) { return a * static_cast<double>(n); });
}
}  // namespace

void ParallelFFT::forward(const void* in, void* out) {
  const int g = static_cast<int>(redistributions_.size());
  if (in == nullptr && input_size() > 0) throw std::invalid_argument("ParallelFFT::forward: null input array");
  if (out == nullptr && output_size() > 0) throw std::invalid_argument("ParallelFFT::forward: null output array");
  // X_k: where the data lies after step k; X_g is the user's array, the others alternate A/B.
  auto x = [&](int k) -> void* { return k == g ? out : ((g - 1 - k) % 2 == 0 ? work_->a.data() : work_->b.data()); };
  auto timed = [&](int step, auto&& body) {
    const double t0 = MPI_Wtime();
    body();
    steps_[static_cast<std::size_t>(step)].record(MPI_Wtime() - t0);
  };
  std::size_t s = 0;
  timed(forward_step_[s++], [&] { stages_[0]->forward(in, x(0)); });
  for (int k = 1; k <= g; ++k) {
    timed(forward_step_[s++], [&] { redistributions_[k - 1]->forward(x(k - 1), x(k)); });
    timed(forward_step_[s++], [&] { stages_[k]->forward(x(k), x(k)); });
  }
  if (forward_scale_step_ >= 0)
    scale(out, output_size(), output_type(), 1.0 / std::sqrt(global_points(shape_)), steps_[forward_scale_step_]);
}

void ParallelFFT::backward(const void* out, void* in) {
  const int g = static_cast<int>(redistributions_.size());
  if (out == nullptr && output_size() > 0) throw std::invalid_argument("ParallelFFT::backward: null spectral array");
  if (in == nullptr && input_size() > 0) throw std::invalid_argument("ParallelFFT::backward: null output array");
  // Y_k: where the data lies before the inverse transform of stage k; alternates A/B from Y_g = A.
  // With backward_destroys_input the first inverse stage runs in place on `out` (Y_g = out).
  const bool in_place = options_.backward_destroys_input;
  auto y = [&](int k) -> void* {
    if (in_place && k == g) return const_cast<void*>(out);
    return (g - k - (in_place ? 1 : 0)) % 2 == 0 ? work_->a.data() : work_->b.data();
  };
  auto timed = [&](int step, auto&& body) {
    const double t0 = MPI_Wtime();
    body();
    steps_[static_cast<std::size_t>(step)].record(MPI_Wtime() - t0);
  };
  std::size_t s = 0;
  for (int k = g; k >= 1; --k) {
    timed(backward_step_[s++], [&] { stages_[k]->backward(k == g ? out : y(k), y(k)); });
    timed(backward_step_[s++], [&] { redistributions_[k - 1]->backward(y(k), y(k - 1)); });
  }
  timed(backward_step_[s++], [&] { stages_[0]->backward(y(0), in); });
  if (backward_scale_step_ >= 0) {
    const double n = global_points(shape_);
    const double f = options_.normalization == FftNormalization::backward ? 1.0 / n : 1.0 / std::sqrt(n);
    scale(in, input_size(), input_type(), f, steps_[backward_scale_step_]);
  }
}

void ParallelFFT::reset_timings() {
  for (auto& s : steps_) {
    s.seconds = 0.0;
    s.fastest_seconds = 0.0;
    s.calls = 0;
  }
}

std::string ParallelFFT::describe() const {
  std::ostringstream s;
  s << fft_kind_name(options_.kind) << " " << fft_precision_name(options_.precision) << ", grid "
    << input_.grid().describe() << ", FFTW " << fft_planner_name(options_.planner) << ", serial "
    << serial_layout_name(options_.serial) << ", normalisation " << fft_normalization_name(options_.normalization)
    << (options_.backward_destroys_input ? ", backward may overwrite its input" : "") << "\n";
  s << "  input  " << input_.describe() << "\n";
  for (std::size_t k = 0; k < pencils_.size(); ++k) {
    s << "  stage " << k << ": " << pencils_[k].describe() << "  " << stages_[k]->name << "; " << stages_[k]->how;
    if (stages_[k]->uses_unaligned_plans()) s << "; plus an FFTW_UNALIGNED plan for a user array";
    s << "\n";
    if (k + 1 < pencils_.size()) s << "  then " << redistributions_[k]->method() << "\n";
  }
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// Wisdom

bool import_fft_wisdom(FftPrecision precision, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  std::fclose(f);
  return (precision == FftPrecision::f64 ? fftw_import_wisdom_from_filename(path.c_str())
                                         : fftwf_import_wisdom_from_filename(path.c_str())) != 0;
}

bool export_fft_wisdom(MPI_Comm comm, FftPrecision precision, const std::string& path) {
  int rank = 0, size = 1;
  TB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  TB_MPI_CHECK(MPI_Comm_size(comm, &size));
  const bool f64 = precision == FftPrecision::f64;
  char* mine = f64 ? fftw_export_wisdom_to_string() : fftwf_export_wisdom_to_string();
  const std::string text = mine ? mine : "";
  std::free(mine);
  int length = static_cast<int>(text.size()) + 1;
  std::vector<int> lengths(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  TB_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    std::partial_sum(lengths.begin(), lengths.end() - 1, displs.begin() + 1);
    all.resize(static_cast<std::size_t>(displs.back() + lengths.back()));
  }
  TB_MPI_CHECK(MPI_Gatherv(text.c_str(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, 0, comm));
  int ok = 1;
  if (rank == 0) {
    for (int r = 1; r < size; ++r)  // merge the other ranks' plans into rank 0's wisdom
      ok &= (f64 ? fftw_import_wisdom_from_string(all.c_str() + displs[r])
                 : fftwf_import_wisdom_from_string(all.c_str() + displs[r])) != 0;
    ok &= (f64 ? fftw_export_wisdom_to_filename(path.c_str()) : fftwf_export_wisdom_to_filename(path.c_str())) != 0;
  }
  TB_MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  return ok != 0;
}

}  // namespace tb
