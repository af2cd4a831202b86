#!/usr/bin/env bash
# The parallel FFT head to head: tb-fft (every registered Alltoallw algorithm and local_remap),
# FFTW-MPI (tb-fftw-mpi: slab, r2c, FFTW_MPI_TRANSPOSED_OUT/_IN, FFTW_MEASURE) and mpi4py-fft
# (PFFT(..., backend='fftw'), slab) on the same shapes and rank counts, in one run, all timed
# with the testbed's method (forward+backward pairs, 3 inner x up to 50 outer, MAX over ranks,
# fastest/3 and median). r2c + c2r, double, slab grid, normalised round trip in every code.
# Runs on the Open MPI build: Debian's libfftw3-mpi and python3-mpi4py are built with Open MPI.
# A 1-rank FFTW-MPI run (serial FFTW underneath) is the single-core reference. tb-fft runs with
# --backward-destroys-input: backward may overwrite its spectral input, as FFTW-MPI's c2r does.
#
#   experiments/fft_head_to_head.sh [size ...]       default sizes: 128 256 (cubes)
#   TB_H2H_RANKS=2 TB_H2H_MAX_SECONDS=20 TB_H2H_METHODS=all   (environment knobs)
#   TB_H2H_BIN=build/openmpi/bin TB_H2H_OUT=results/fft_head_to_head
# Writes $TB_H2H_OUT/<size>-np<ranks>-<code>.json and prints the comparison table.
# Every code starts through experiments/launch.py, the launcher experiments/run.py uses (Open MPI,
# intra mode).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128 256)
ranks=${TB_H2H_RANKS:-2}
max_s=${TB_H2H_MAX_SECONDS:-20}
methods=${TB_H2H_METHODS:-all}
bin=${TB_H2H_BIN:-build/openmpi/bin}
[ -x "$bin/tb-fft" ] && [ -x "$bin/tb-fftw-mpi" ] || ./scripts/build.sh openmpi
if [ ! -x "$bin/tb-fftw-mpi" ]; then
  echo "fft_head_to_head: tb-fftw-mpi was not built (is libfftw3-mpi-dev installed? scripts/setup.sh)" >&2
  exit 1
fi
/usr/bin/python3 -c "import mpi4py_fft" 2>/dev/null || {
  echo "fft_head_to_head: mpi4py-fft missing (Debian package python3-mpi4py-fft; scripts/setup.sh)" >&2
  exit 1
}
launch() { /usr/bin/python3 experiments/launch.py --mpi openmpi --bin "$bin" "$@"; }
out=${TB_H2H_OUT:-results/fft_head_to_head}
mkdir -p "$out"
files=()
for n in "${sizes[@]}"; do
  shape=$n,$n,$n
  echo "== $shape, $ranks ranks: tb-fft ($methods)"
  launch -n "$ranks" --out "$out/$n-np$ranks-tb-fft.json" tb-fft --shape "$shape" --grid 0 --kind r2c --planner measure \
    --method "$methods" --backward-destroys-input --max-seconds "$max_s" | sed -n '/^  method/,/^$/p'
  echo "== $shape, $ranks ranks: FFTW-MPI"
  launch -n "$ranks" --out "$out/$n-np$ranks-fftw-mpi.json" tb-fftw-mpi --shape "$shape" --max-seconds "$max_s"
  echo "== $shape, $ranks ranks: mpi4py-fft"
  launch -n "$ranks" --output=--json --out "$out/$n-np$ranks-mpi4py-fft.json" /usr/bin/python3 \
    experiments/mpi4py_fft_bench.py --shape "$shape" --grid slab --max-seconds "$max_s"
  echo "== $shape, 1 rank: FFTW-MPI (serial reference)"
  launch -n 1 --out "$out/$n-np1-fftw-mpi.json" tb-fftw-mpi --shape "$shape" --max-seconds "$max_s"
  files+=("$out/$n-np$ranks-tb-fft.json" "$out/$n-np$ranks-fftw-mpi.json" "$out/$n-np$ranks-mpi4py-fft.json"
          "$out/$n-np1-fftw-mpi.json")
done
/usr/bin/python3 analysis/fft_head_to_head.py "${files[@]}"
