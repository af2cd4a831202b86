#!/usr/bin/python3
"""Comparison table of the FFT head to head (experiments/fft_head_to_head.sh).

Reads the JSON files of tb-fft, tb-fftw-mpi and experiments/mpi4py_fft_bench.py, groups the rows
by global shape, and prints, per shape, every code's fastest and median forward+backward time with
its ratio to FFTW-MPI and to mpi4py-fft at the same rank count (fastest over fastest).

    /usr/bin/python3 analysis/fft_head_to_head.py results/fft_head_to_head/*.json
"""
import json
import sys
from collections import defaultdict


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        ranks = doc["metadata"]["ranks"]
        for r in doc["results"]:
            code = r["tool"] if r["tool"] != "tb-fft" else f"tb-fft {r['method']} ({r['serial']})"
            rows.append({"shape": r["global_shape"], "ranks": ranks, "code": code, "verified": bool(r["verified"]),
                         "fastest": r["fastest_s"], "median": r["median_s"]})
    return rows


def table(rows):
    lines = []
    by_shape = defaultdict(list)
    for r in rows:
        by_shape[r["shape"]].append(r)
    for shape, group in by_shape.items():
        lines.append(f"\n{shape} r2c+c2r double, slab")
        lines.append("| code | ranks | verified | fastest ms | median ms | / FFTW-MPI | / mpi4py-fft |")
        lines.append("|---|---|---|---|---|---|---|")
        ref = {}
        for r in group:
            if r["code"] in ("tb-fftw-mpi", "mpi4py-fft"):
                ref[(r["code"], r["ranks"])] = r["fastest"]
        for r in sorted(group, key=lambda r: (r["ranks"], r["fastest"])):
            f = ref.get(("tb-fftw-mpi", r["ranks"]))
            m = ref.get(("mpi4py-fft", r["ranks"]))
            vs_fftw = f"{r['fastest'] / f:.2f}" if f else "-"
            vs_py = f"{r['fastest'] / m:.2f}" if m else "-"
            lines.append(f"| {r['code']} | {r['ranks']} | {'yes' if r['verified'] else 'FAILED'} | "
                         f"{r['fastest'] * 1e3:.2f} | {r['median'] * 1e3:.2f} | {vs_fftw} | {vs_py} |")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(table(load(argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
