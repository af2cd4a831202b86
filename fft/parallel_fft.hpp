// ParallelFFT: a d-dimensional FFT of a C-order array distributed on a Cartesian process grid
// (slab, pencil or higher), built from serial FFTW transforms along whole axes and global
// redistributions (Dalcin, Mortensen and Keyes, JPDC 2019).
//
// Layouts, with g = grid dimensions (1 <= g <= d-1) and the default Pencil layout:
//   input  (physical space) P_0 = [N0/g0, ..., N(g-1)/g(g-1), Ng, ..., N(d-1)]  aligned in g
//   P_k = P_(k-1).realigned(g-k), k = 1..g
//   output (spectral space) P_g, aligned in axis 0
// e.g. slab 3-D: [N0/P, N1, N2] -> [N0, N1/P, N2']; pencil 3-D: [N0/P, N1/Q, N2] ->
// [N0/P, N1, N2'/Q] -> [N0, N1/P, N2'/Q]. Aligning P_0 in g (its first whole axis) rather than
// d-1 makes the first realignment distribute axis g and keep the axes after it whole: each
// peer's piece is then made of long contiguous runs (FFTW-MPI's transposed layout does the same).
// Forward: stage 0 transforms the whole trailing axes g..d-1 together (one multi-dimensional FFTW
// plan; r2c halves axis d-1 to N(d-1)/2+1, FFTW's Hermitian convention); then for k = 1..g one
// redistribution P_(k-1) -> P_k and a 1-D transform of axis g-k. Backward runs the same stages in
// reverse with the inverse transforms.
//
// The serial transforms read the array where it lies: FFTW's guru64 interface with the axis's
// stride and the other axes as "howmany" loops, no local transposes (SerialLayout::strided). The
// alternative that copies the axis to be contiguous first (a transpose by an FFTW rank-0 plan),
// transforms and copies back is kept selectable for measurement (SerialLayout::contiguous).
//
// Buffers: forward(in, out) reads `in` (input_size() elements of input_type()) and writes `out`
// (output_size() elements of output_type()); backward(out, in) the reverse. Neither call modifies
// its source array (unless FftOptions::backward_destroys_input); they must not overlap. Intermediate arrays are owned by the plan. The arrays
// may have any alignment: a user array whose alignment differs from the one FFTW planned for
// gets an FFTW_UNALIGNED plan of its own, made on first use (listed by describe()).
//
// Normalisation: FFTW's transforms are unnormalised (forward then backward multiplies by N, the
// product of the global shape). Normalization::backward divides by N on backward (numpy's
// default), orthonormal divides by sqrt(N) both ways, none leaves FFTW's scaling.
#pragma once

#include "redistribute/element_type.hpp"
#include "redistribute/pencil.hpp"
#include "redistribute/process_grid.hpp"
#include "redistribute/redistribution.hpp"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

enum class FftKind { c2c, r2c };                           // r2c: real input, Hermitian-half output
enum class FftPrecision { f32, f64 };                      // float, double
enum class FftNormalization { none, backward, orthonormal };
enum class FftPlanner { estimate, measure, patient };      // FFTW_ESTIMATE / _MEASURE / _PATIENT
enum class SerialLayout { strided, contiguous };

struct FftOptions {
  FftKind kind = FftKind::c2c;
  FftPrecision precision = FftPrecision::f64;
  FftNormalization normalization = FftNormalization::backward;
  FftPlanner planner = FftPlanner::measure;
  SerialLayout serial = SerialLayout::strided;
  // backward(out, in) may use `out` as work space and leave it changed (FFTW's contract for c2r
  // transforms, FFTW-MPI's too): the first inverse stage then runs in place on it, which FFTW
  // does faster than out of place along a strided axis (tb-fft --backward-destroys-input shows it).
  bool backward_destroys_input = false;
  // Redistribution method: a registered Alltoallw algorithm, "local_remap", or empty for the
  // default algorithm ($TB_ALLTOALLW, else native).
  std::string method;
};

// Parsers for tools: each accepts the names printed by the matching *_name function and throws
// std::invalid_argument listing them otherwise.
FftKind parse_fft_kind(std::string_view text);                    // c2c, r2c
FftPrecision parse_fft_precision(std::string_view text);          // double|f64, float|f32
FftNormalization parse_fft_normalization(std::string_view text);  // none, backward, ortho
FftPlanner parse_fft_planner(std::string_view text);              // estimate, measure, patient
SerialLayout parse_serial_layout(std::string_view text);          // strided, contiguous
std::string_view fft_kind_name(FftKind k);
std::string_view fft_precision_name(FftPrecision p);
std::string_view fft_normalization_name(FftNormalization n);
std::string_view fft_planner_name(FftPlanner p);
std::string_view serial_layout_name(SerialLayout s);

// One step of a transform and the time spent in it since the last reset (this rank only).
struct FftStep {
  std::string direction;  // "forward" or "backward"
  std::string kind;       // "fft", "redistribute" or "scale"
  std::string name;       // e.g. "fft axes 1,2 (r2c)", "redistribute 2->0 (alltoallw:native)"
  double seconds = 0.0;          // total over `calls`
  double fastest_seconds = 0.0;  // the fastest single call (0 before the first)
  long calls = 0;
  void record(double call_seconds) {
    fastest_seconds = calls == 0 ? call_seconds : std::min(fastest_seconds, call_seconds);
    seconds += call_seconds;
    ++calls;
  }
};

class ParallelFFT {
 public:
  // Collective over grid->comm() (the redistribution plans are). Throws std::invalid_argument
  // for a bad shape or grid, and std::runtime_error when FFTW cannot make a plan.
  ParallelFFT(std::shared_ptr<const ProcessGrid> grid, std::vector<std::int64_t> global_shape,
              const FftOptions& options = {});
  ~ParallelFFT();
  ParallelFFT(const ParallelFFT&) = delete;
  ParallelFFT& operator=(const ParallelFFT&) = delete;

  const FftOptions& options() const { return options_; }
  const std::vector<std::int64_t>& global_shape() const { return shape_; }
  const Pencil& input_pencil() const { return input_; }    // real-space layout (global_shape)
  const Pencil& output_pencil() const { return pencils_.back(); }  // spectral layout
  ElementType input_type() const;   // f32/f64 for r2c, c32/c64 for c2c
  ElementType output_type() const;  // c32/c64
  std::int64_t input_size() const { return input_.local_size(); }
  std::int64_t output_size() const { return output_pencil().local_size(); }
  // Axis d-1 of the output is N(d-1)/2+1 long for r2c.
  const std::vector<std::int64_t>& output_shape() const { return output_pencil().global_shape(); }

  // Collective over the grid's communicator.
  void forward(const void* in, void* out);
  void backward(const void* out, void* in);

  template <class In, class Out>
  void forward(std::span<const In> in, std::span<Out> out) {
    check_typed(element_type_of<In>(), in.size(), element_type_of<Out>(), out.size(), "forward");
    forward(static_cast<const void*>(in.data()), static_cast<void*>(out.data()));
  }
  template <class In, class Out>
  void backward(std::span<const Out> out, std::span<In> in) {
    check_typed(element_type_of<In>(), in.size(), element_type_of<Out>(), out.size(), "backward");
    backward(static_cast<const void*>(out.data()), static_cast<void*>(in.data()));
  }

  // Per-step times of this rank since construction or the last reset, forward steps first.
  const std::vector<FftStep>& steps() const { return steps_; }
  void reset_timings();
  // Several lines: grid, pencils, each step with its FFTW plan kind and redistribution method.
  std::string describe() const;

  class Stage;  // one serial transform stage (defined in the .cpp)

 private:
  void check_typed(ElementType in, std::size_t in_size, ElementType out, std::size_t out_size, const char* call) const;
  void scale(void* data, std::int64_t elements, ElementType type, double factor, FftStep& step);

  FftOptions options_;
  std::vector<std::int64_t> shape_;
  Pencil input_;                  // P_0 with the real shape (equal to pencils_[0] for c2c)
  std::vector<Pencil> pencils_;   // P_0 .. P_g in the transform's element type
  std::vector<std::unique_ptr<Stage>> stages_;                 // g + 1 serial stages
  std::vector<std::unique_ptr<Redistribution>> redistributions_;  // g: P_(k-1) -> P_k
  std::vector<FftStep> steps_;
  // Forward steps: stages_[0], then (redistribution k, stage k); backward mirrored.
  std::vector<int> forward_step_, backward_step_;
  int forward_scale_step_ = -1, backward_scale_step_ = -1;
  struct Work;
  std::unique_ptr<Work> work_;    // two aligned intermediate arrays
};

// FFTW wisdom for one precision. import: true when the file existed and FFTW accepted it.
bool import_fft_wisdom(FftPrecision precision, const std::string& path);
// Collective over comm: every rank's wisdom is merged on rank 0, which writes the file.
// Returns true on every rank when the file was written.
bool export_fft_wisdom(MPI_Comm comm, FftPrecision precision, const std::string& path);

}  // namespace tb
