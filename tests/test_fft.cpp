// ParallelFFT against serial FFTW on the gathered global array.
//
// Every rank draws the same seeded random global array (seed: $TB_FFT_TEST_SEED, printed), takes
// its block of the input layout, runs the parallel forward transform, and all blocks of the output
// are gathered into the global spectrum, which must match one serial FFTW transform of the whole
// array (FFTW's own multi-dimensional plan: an independent path). Backward must give the input
// back. Cases: c2c and r2c, d = 2, 3, 4, uneven shapes (some with ranks holding nothing), slab,
// pencil and 3-D grids, float and double, at whatever rank count ctest runs.
#include "collectives/registry.hpp"
#include "collectives/settings.hpp"
#include "fft/parallel_fft.hpp"
#include "fft/plane_waves.hpp"
#include "mpi_test_support.hpp"
#include "redistribute/box.hpp"

#include <fftw3.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace tb {
namespace {

using test::world_rank;
using test::world_size;

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const std::uint64_t v = settings().fft_test_seed.get();
    if (world_rank() == 0) std::printf("test_fft: seed %llu (set TB_FFT_TEST_SEED to change)\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

std::int64_t points(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::string text(const std::vector<std::int64_t>& v) {
  std::string t;
  for (auto x : v) t += (t.empty() ? "" : "x") + std::to_string(x);
  return t;
}

// The global input: complex<R> for c2c, R for r2c, uniform in [-1, 1).
template <class T>
std::vector<T> random_global(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(u(gen));
    } else {
      const double re = u(gen), im = u(gen);
      x = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
    }
  }
  return v;
}

// Serial FFTW of the whole array (one multi-dimensional plan), forward.
template <class R>
std::vector<std::complex<R>> serial_forward(const std::vector<std::int64_t>& shape, bool r2c, const void* input) {
  std::vector<int> n(shape.begin(), shape.end());
  std::vector<std::int64_t> spectral = shape;
  if (r2c) spectral.back() = spectral.back() / 2 + 1;
  std::vector<std::complex<R>> out(static_cast<std::size_t>(points(spectral)));
  const int d = static_cast<int>(n.size());
  if constexpr (std::is_same_v<R, double>) {
    std::vector<std::complex<double>> in_c;
    std::vector<double> in_r;
    fftw_plan p;
    if (r2c) {
      in_r.assign(static_cast<const double*>(input), static_cast<const double*>(input) + points(shape));
      p = fftw_plan_dft_r2c(d, n.data(), in_r.data(), reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
    } else {
      auto src = static_cast<const std::complex<double>*>(input);
      in_c.assign(src, src + points(shape));
      p = fftw_plan_dft(d, n.data(), reinterpret_cast<fftw_complex*>(in_c.data()),
                        reinterpret_cast<fftw_complex*>(out.data()), FFTW_FORWARD, FFTW_ESTIMATE);
    }
    fftw_execute(p);
    fftw_destroy_plan(p);
  } else {
    std::vector<std::complex<float>> in_c;
    std::vector<float> in_r;
    fftwf_plan p;
    if (r2c) {
      in_r.assign(static_cast<const float*>(input), static_cast<const float*>(input) + points(shape));
      p = fftwf_plan_dft_r2c(d, n.data(), in_r.data(), reinterpret_cast<fftwf_complex*>(out.data()), FFTW_ESTIMATE);
    } else {
      auto src = static_cast<const std::complex<float>*>(input);
      in_c.assign(src, src + points(shape));
      p = fftwf_plan_dft(d, n.data(), reinterpret_cast<fftwf_complex*>(in_c.data()),
                         reinterpret_cast<fftwf_complex*>(out.data()), FFTW_FORWARD, FFTW_ESTIMATE);
    }
    fftwf_execute(p);
    fftwf_destroy_plan(p);
  }
  return out;
}

// Every rank's block of `p` (local data of `elem` bytes per element) assembled into the global
// array on every rank.
std::vector<std::byte> gather_global(const Pencil& p, const void* local, std::size_t elem, MPI_Comm comm) {
  const int n = world_size();
  const int d = p.ndim();
  std::vector<long long> box(2 * static_cast<std::size_t>(d));
  for (int a = 0; a < d; ++a) {
    box[a] = p.local_start()[a];
    box[d + a] = p.local_shape()[a];
  }
  std::vector<long long> boxes(box.size() * static_cast<std::size_t>(n));
  MPI_Allgather(box.data(), 2 * d, MPI_LONG_LONG, boxes.data(), 2 * d, MPI_LONG_LONG, comm);
  std::vector<int> bytes(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  int mine = static_cast<int>(p.local_size() * static_cast<std::int64_t>(elem));
  MPI_Allgather(&mine, 1, MPI_INT, bytes.data(), 1, MPI_INT, comm);
  for (int r = 1; r < n; ++r) displs[r] = displs[r - 1] + bytes[r - 1];
  std::vector<std::byte> all(static_cast<std::size_t>(displs[n - 1] + bytes[n - 1]));
  MPI_Allgatherv(local, mine, MPI_BYTE, all.data(), bytes.data(), displs.data(), MPI_BYTE, comm);
  std::vector<std::byte> global(static_cast<std::size_t>(points(p.global_shape())) * elem);
  for (int r = 0; r < n; ++r) {
    Box b;
    for (int a = 0; a < d; ++a) {
      b.start.push_back(boxes[static_cast<std::size_t>(r * 2 * d + a)]);
      b.size.push_back(boxes[static_cast<std::size_t>(r * 2 * d + d + a)]);
    }
    if (b.count() > 0) copy_buffer_to_box(all.data() + displs[r], p.global_shape(), b, elem, global.data());
  }
  return global;
}

// This rank's block of a global array.
std::vector<std::byte> local_block(const Pencil& p, const void* global, std::size_t elem) {
  std::vector<std::byte> local(static_cast<std::size_t>(p.local_size()) * elem);
  if (p.local_size() > 0) copy_box_to_buffer(global, p.global_shape(), p.local_box(), elem, local.data());
  return local;
}

template <class T>
double max_abs_diff(const T* a, const T* b, std::size_t n, double* scale) {
  double diff = 0.0, big = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    big = std::max(big, static_cast<double>(std::abs(a[i])));
  }
  if (scale) *scale = big;
  return diff;
}

struct Case {
  std::vector<std::int64_t> shape;
  int grid_dims;
  FftKind kind;
  FftPrecision precision;
};

std::string case_name(const Case& c) {
  return text(c.shape) + "_grid" + std::to_string(c.grid_dims) + "d_" + std::string(fft_kind_name(c.kind)) + "_" +
         std::string(fft_precision_name(c.precision));
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const std::vector<std::vector<std::int64_t>> shapes{{10, 12}, {9, 7},     {12, 13, 14}, {7, 9, 10},
                                                      {2, 3, 5}, {6, 5, 4, 7}};
  for (const auto& s : shapes)
    for (int g = 1; g < static_cast<int>(s.size()); ++g)
      for (FftKind k : {FftKind::c2c, FftKind::r2c})
        for (FftPrecision p : {FftPrecision::f64, FftPrecision::f32}) cases.push_back({s, g, k, p});
  return cases;
}

class FftAgainstSerial : public ::testing::TestWithParam<Case> {};

template <class R>
void check_case(const Case& c) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, std::vector<int>(static_cast<std::size_t>(c.grid_dims), 0));
  FftOptions o;
  o.kind = c.kind;
  o.precision = c.precision;
  o.planner = FftPlanner::estimate;
  ParallelFFT fft(grid, c.shape, o);
  const bool r2c = c.kind == FftKind::r2c;
  const std::size_t in_elem = element_size(fft.input_type()), out_elem = element_size(fft.output_type());
  const std::uint64_t seed = test_seed() + std::hash<std::string>{}(case_name(c)) % 1000;
  std::vector<std::byte> global_in;
  if (r2c) {
    auto v = random_global<R>(points(c.shape), seed);
    global_in.resize(v.size() * sizeof(R));
    std::memcpy(global_in.data(), v.data(), global_in.size());
  } else {
    auto v = random_global<std::complex<R>>(points(c.shape), seed);
    global_in.resize(v.size() * sizeof(std::complex<R>));
    std::memcpy(global_in.data(), v.data(), global_in.size());
  }
  const auto in = local_block(fft.input_pencil(), global_in.data(), in_elem);
  std::vector<std::byte> out(static_cast<std::size_t>(fft.output_size()) * out_elem, std::byte{0x7f});
  std::vector<std::byte> back(in.size(), std::byte{0x7f});
  fft.forward(in.data(), out.data());
  fft.backward(out.data(), back.data());

  const auto spectrum = gather_global(fft.output_pencil(), out.data(), out_elem, MPI_COMM_WORLD);
  const auto reference = serial_forward<R>(c.shape, r2c, global_in.data());
  ASSERT_EQ(spectrum.size(), reference.size() * sizeof(std::complex<R>));
  double scale = 0.0;
  const double err = max_abs_diff(reference.data(), reinterpret_cast<const std::complex<R>*>(spectrum.data()),
                                  reference.size(), &scale);
  const double tol = std::is_same_v<R, double> ? 1e-12 : 2e-5;
  EXPECT_LT(err / scale, tol) << case_name(c) << ": forward differs from serial FFTW (seed " << seed << ")";

  // backward(forward(u)) = u with the default normalisation (1/N on backward)
  const std::size_t reals = in.size() / sizeof(R);
  double in_scale = 0.0;
  const double trip = max_abs_diff(reinterpret_cast<const R*>(in.data()), reinterpret_cast<const R*>(back.data()),
                                   reals, &in_scale);
  double worst[2] = {trip, in_scale};
  MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LT(worst[0] / worst[1], tol) << case_name(c) << ": backward did not return the input (seed " << seed << ")";
}

TEST_P(FftAgainstSerial, ForwardMatchesSerialFftwAndBackwardReturnsTheInput) {
  const Case& c = GetParam();
  if (c.precision == FftPrecision::f64) check_case<double>(c);
  else check_case<float>(c);
}

INSTANTIATE_TEST_SUITE_P(Cases, FftAgainstSerial, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return case_name(info.param); });

// Runs forward and backward with the given options on the same random input; returns both outputs.
std::pair<std::vector<std::byte>, std::vector<std::byte>> run_once(const std::vector<std::int64_t>& shape, int grid_dims,
                                                                   FftOptions o) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, std::vector<int>(static_cast<std::size_t>(grid_dims), 0));
  ParallelFFT fft(grid, shape, o);
  const auto global = random_global<double>(points(shape), test_seed());
  auto in = local_block(fft.input_pencil(), global.data(), sizeof(double));
  std::vector<std::byte> out(static_cast<std::size_t>(fft.output_size()) * element_size(fft.output_type()));
  std::vector<std::byte> back(in.size());
  fft.forward(in.data(), out.data());
  auto spectrum = out;  // backward may overwrite `out` (backward_destroys_input)
  fft.backward(out.data(), back.data());
  return {spectrum, back};
}

// The redistribution only moves data, so every registered Alltoallw algorithm and local_remap must
// give bit-for-bit the result of native (same FFTW plans, same input).
TEST(ParallelFFT, EveryRedistributionMethodGivesTheSameBits) {
  FftOptions o;
  o.kind = FftKind::r2c;
  o.planner = FftPlanner::estimate;
  o.method = "native";
  const std::vector<std::int64_t> shape{12, 13, 14};
  const auto reference = run_once(shape, 2, o);
  std::vector<std::string> methods;
  for (const auto& info : alltoallw_algorithms()) methods.emplace_back(info.name);
  methods.emplace_back("local_remap");
  for (const auto& m : methods) {
    o.method = m;
    const auto got = run_once(shape, 2, o);
    EXPECT_EQ(got.first, reference.first) << m << ": forward output differs from native's";
    EXPECT_EQ(got.second, reference.second) << m << ": backward output differs from native's";
  }
}

// Strided (guru along the axis) and contiguous (transpose first) serial stages agree to round-off.
TEST(ParallelFFT, StridedAndContiguousSerialStagesAgree) {
  FftOptions o;
  o.kind = FftKind::r2c;
  o.planner = FftPlanner::estimate;
  const std::vector<std::int64_t> shape{6, 5, 4, 7};
  for (int g : {1, 2, 3}) {
    o.serial = SerialLayout::strided;
    const auto a = run_once(shape, g, o);
    o.serial = SerialLayout::contiguous;
    const auto b = run_once(shape, g, o);
    ASSERT_EQ(a.first.size(), b.first.size());
    double scale = 0.0;
    const auto* x = reinterpret_cast<const std::complex<double>*>(a.first.data());
    const auto* y = reinterpret_cast<const std::complex<double>*>(b.first.data());
    double v[2] = {max_abs_diff(x, y, a.first.size() / sizeof(*x), &scale), scale};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_LT(v[0], 1e-12 * v[1]) << "grid of " << g << " dims";
  }
}

// backward_destroys_input: the first inverse stage runs in place on the spectral array; the result
// agrees with the preserving path to round-off, on slab, pencil and 3-D grids.
TEST(ParallelFFT, BackwardThatMayDestroyItsInput) {
  FftOptions o;
  o.kind = FftKind::r2c;
  o.planner = FftPlanner::estimate;
  const std::vector<std::int64_t> shape{6, 5, 4, 7};
  for (int g : {1, 2, 3}) {
    for (SerialLayout layout : {SerialLayout::strided, SerialLayout::contiguous}) {
      o.serial = layout;
      o.backward_destroys_input = false;
      const auto a = run_once(shape, g, o);
      o.backward_destroys_input = true;
      const auto b = run_once(shape, g, o);
      ASSERT_EQ(a.second.size(), b.second.size());
      double scale = 0.0;
      const auto* x = reinterpret_cast<const double*>(a.second.data());
      const auto* y = reinterpret_cast<const double*>(b.second.data());
      double v[2] = {max_abs_diff(x, y, a.second.size() / sizeof(double), &scale), scale};
      MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_LT(v[0], 1e-13 * v[1]) << "grid of " << g << " dims, " << serial_layout_name(layout);
      EXPECT_EQ(a.first, b.first) << "forward must not change";
    }
  }
}

// none: backward(forward(u)) = N u; ortho: forward keeps the 2-norm (Parseval, c2c).
TEST(ParallelFFT, NormalisationOptions) {
  const std::vector<std::int64_t> shape{7, 9, 10};
  const double n = static_cast<double>(points(shape));
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  const auto global = random_global<std::complex<double>>(points(shape), test_seed());
  for (auto norm : {FftNormalization::none, FftNormalization::orthonormal}) {
    FftOptions o;
    o.planner = FftPlanner::estimate;
    o.normalization = norm;
    ParallelFFT fft(grid, shape, o);
    auto in = local_block(fft.input_pencil(), global.data(), sizeof(std::complex<double>));
    std::vector<std::complex<double>> out(static_cast<std::size_t>(fft.output_size()));
    std::vector<std::complex<double>> back(static_cast<std::size_t>(fft.input_size()));
    const auto* u = reinterpret_cast<const std::complex<double>*>(in.data());
    fft.forward(in.data(), out.data());
    fft.backward(out.data(), back.data());
    double sums[3] = {0, 0, 0};  // |u|^2, |U|^2, max |back - factor u|
    const double factor = norm == FftNormalization::none ? n : 1.0;
    for (std::size_t i = 0; i < back.size(); ++i) {
      sums[0] += std::norm(u[i]);
      sums[2] = std::max(sums[2], std::abs(back[i] - factor * u[i]));
    }
    for (const auto& x : out) sums[1] += std::norm(x);
    MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, sums + 2, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_LT(sums[2], 1e-12 * factor) << fft_normalization_name(norm) << ": round trip";
    if (norm == FftNormalization::orthonormal) EXPECT_NEAR(sums[1], sums[0], 1e-10 * sums[0]) << "Parseval";
    else EXPECT_NEAR(sums[1], n * sums[0], 1e-10 * n * sums[0]) << "Parseval with FFTW's scaling";
  }
}

// User arrays offset from FFTW's alignment run through FFTW_UNALIGNED plans and give the same bits.
TEST(ParallelFFT, MisalignedUserArrays) {
  FftOptions o;
  o.kind = FftKind::r2c;
  o.planner = FftPlanner::estimate;
  const std::vector<std::int64_t> shape{12, 13, 14};
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  ParallelFFT fft(grid, shape, o);
  const auto global = random_global<double>(points(shape), test_seed());
  const auto in = local_block(fft.input_pencil(), global.data(), sizeof(double));
  const std::size_t nin = static_cast<std::size_t>(fft.input_size()), nout = static_cast<std::size_t>(fft.output_size());
  // fftw_malloc'd arrays (aligned as planned) and arrays one element off
  double* in_a = fftw_alloc_real(nin + 1);
  fftw_complex* out_a = fftw_alloc_complex(nout + 1);
  std::memcpy(in_a, in.data(), in.size());
  fft.forward(in_a, out_a);
  std::vector<std::complex<double>> aligned(reinterpret_cast<std::complex<double>*>(out_a),
                                            reinterpret_cast<std::complex<double>*>(out_a) + nout);
  std::memcpy(in_a + 1, in.data(), in.size());
  fft.forward(in_a + 1, out_a + 1);
  std::vector<std::complex<double>> shifted(reinterpret_cast<std::complex<double>*>(out_a + 1),
                                            reinterpret_cast<std::complex<double>*>(out_a + 1) + nout);
  fft.backward(out_a + 1, in_a + 1);
  double scale = 0.0;
  const double aligned_vs_shifted = max_abs_diff(aligned.data(), shifted.data(), nout, &scale);
  const double trip = max_abs_diff(reinterpret_cast<const double*>(in.data()), in_a + 1, nin, &scale);
  fftw_free(in_a);
  fftw_free(out_a);
  double v[2] = {aligned_vs_shifted, trip};
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LT(v[0], 1e-12 * static_cast<double>(points(shape))) << "unaligned forward differs";
  EXPECT_LT(v[1], 1e-12) << "unaligned round trip";
  if (fft.input_size() > 0) {
    EXPECT_NE(fft.describe().find("FFTW_UNALIGNED"), std::string::npos) << fft.describe();
  }
}

// Per-step timings: every step of forward and backward counts each call, the fastest call is no
// slower than the mean, and reset_timings() starts again from nothing.
TEST(ParallelFFT, StepTimingsCountEveryCall) {
  FftOptions o;
  o.kind = FftKind::r2c;
  o.planner = FftPlanner::estimate;
  o.normalization = FftNormalization::backward;
  const std::vector<std::int64_t> shape{8, 6, 10};
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  ParallelFFT fft(grid, shape, o);
  std::vector<double> in(static_cast<std::size_t>(fft.input_size()), 1.0), back(in.size());
  std::vector<std::complex<double>> out(static_cast<std::size_t>(fft.output_size()));
  for (int call = 0; call < 3; ++call) {
    fft.forward(std::span<const double>(in), std::span<std::complex<double>>(out));
    fft.backward(std::span<const std::complex<double>>(out), std::span<double>(back));
  }
  int redistributions = 0, scales = 0;
  for (const FftStep& s : fft.steps()) {
    EXPECT_EQ(s.calls, 3) << s.direction << " " << s.name;
    EXPECT_GE(s.fastest_seconds, 0.0) << s.name;
    EXPECT_LE(s.fastest_seconds * 3, s.seconds * (1 + 1e-12)) << s.name << ": fastest above the mean";
    redistributions += s.kind == "redistribute";
    scales += s.kind == "scale";
  }
  EXPECT_EQ(redistributions, 2 * grid->ndims()) << "one per realignment, each way";
  EXPECT_EQ(scales, 1) << "backward normalisation only";
  fft.reset_timings();
  for (const FftStep& s : fft.steps()) {
    EXPECT_EQ(s.calls, 0);
    EXPECT_EQ(s.seconds, 0.0);
    EXPECT_EQ(s.fastest_seconds, 0.0);
  }
}

// Wisdom gathered from every rank is written by rank 0 and can be imported again.
TEST(ParallelFFT, WisdomExportAndImport) {
  FftOptions o;
  o.planner = FftPlanner::measure;
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0});
  { ParallelFFT fft(grid, {8, 6, 10}, o); }
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/tb_test_fft_wisdom.%d", [] {
    int pid = static_cast<int>(getpid());
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return pid;
  }());
  ASSERT_TRUE(export_fft_wisdom(MPI_COMM_WORLD, FftPrecision::f64, path));
  std::ifstream f(path);
  std::stringstream contents;
  contents << f.rdbuf();
  EXPECT_NE(contents.str().find("fftw_wisdom"), std::string::npos) << "wisdom file " << path;
  fftw_forget_wisdom();
  EXPECT_TRUE(import_fft_wisdom(FftPrecision::f64, path));
  EXPECT_FALSE(import_fft_wisdom(FftPrecision::f64, std::string(path) + ".missing"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path);
}

TEST(ParallelFFT, BadInputIsAClearError) {
  auto slab = ProcessGrid::create(MPI_COMM_WORLD, {0});
  EXPECT_THROW(ParallelFFT(slab, {16}), std::invalid_argument);
  auto grid3 = ProcessGrid::create(MPI_COMM_WORLD, {0, 0, 0});
  try {
    ParallelFFT fft(grid3, {8, 8, 8});
    ADD_FAILURE() << "a 3-d grid cannot distribute a 3-d array";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("grid"), std::string::npos) << e.what();
  }
  FftOptions o;
  o.method = "no_such_algorithm";
  EXPECT_THROW(ParallelFFT(slab, {8, 8}, o), std::invalid_argument);
  o.method = "";
  o.kind = FftKind::r2c;
  ParallelFFT fft(slab, {8, 8}, o);
  std::vector<std::complex<double>> wrong_in(static_cast<std::size_t>(fft.input_size()));
  std::vector<double> real_in(static_cast<std::size_t>(fft.input_size()));
  std::vector<std::complex<double>> out(static_cast<std::size_t>(fft.output_size()) + 1);
  EXPECT_THROW(fft.forward(std::span<const std::complex<double>>(wrong_in), std::span<std::complex<double>>(out)),
               std::invalid_argument);  // complex input to an r2c plan
  EXPECT_THROW(fft.forward(std::span<const double>(real_in), std::span<std::complex<double>>(out)),
               std::invalid_argument);  // output one element too long
  EXPECT_THROW(parse_fft_kind("r2r"), std::invalid_argument);
  EXPECT_THROW(parse_fft_planner("exhaustive"), std::invalid_argument);
}

// The input varies along every axis of two points or more, whatever the seed: on an axis of length 2
// three random waves are all constant along it once in 8 seeds, and a permutation of the input
// along that axis would go unseen.
TEST(ParallelFFT, PlaneWavesVaryAlongEveryAxis) {
  const std::uint64_t first = test_seed();
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{2, 3, 5}, {2, 2, 2}, {1, 2, 4}})
    for (std::uint64_t seed = first; seed < first + 200; ++seed) {
      const auto waves = random_plane_waves(shape, 3, seed);
      for (std::size_t a = 0; a < shape.size(); ++a) {
        const bool varies = std::any_of(waves.begin(), waves.end(), [&](const PlaneWave& w) { return w.k[a] != 0; });
        EXPECT_EQ(varies, shape[a] > 1) << "axis " << a << " of length " << shape[a] << ", seed " << seed;
        for (const PlaneWave& w : waves) EXPECT_TRUE(w.k[a] >= 0 && w.k[a] < shape[a]) << "seed " << seed;
      }
    }
}

// The plane-wave check the tool uses is itself right: exact spectrum, and it notices a wrong one.
TEST(ParallelFFT, PlaneWaveSpectrumCheck) {
  auto grid = ProcessGrid::create(MPI_COMM_WORLD, {0, 0});
  for (FftKind kind : {FftKind::c2c, FftKind::r2c}) {
    FftOptions o;
    o.kind = kind;
    o.planner = FftPlanner::estimate;
    ParallelFFT fft(grid, {9, 8, 11}, o);
    const auto waves = random_plane_waves(fft.global_shape(), 3, test_seed());
    std::vector<std::byte> in(static_cast<std::size_t>(fft.input_size()) * element_size(fft.input_type()));
    std::vector<std::complex<double>> out(static_cast<std::size_t>(fft.output_size()));
    fill_plane_waves(fft, waves, in.data());
    fft.forward(in.data(), out.data());
    double err[2] = {plane_wave_spectrum_error(fft, waves, out.data()), 0.0};
    for (auto& x : out) x = -x;  // a wrong spectrum
    err[1] = plane_wave_spectrum_error(fft, waves, out.data());
    MPI_Allreduce(MPI_IN_PLACE, err, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_LT(err[0], 1e-13) << fft_kind_name(kind);
    EXPECT_GT(err[1], 0.1) << fft_kind_name(kind) << ": the check must notice a conjugated spectrum";
  }
}

}  // namespace
}  // namespace tb
