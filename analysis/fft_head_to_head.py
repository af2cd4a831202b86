#!/usr/bin/python3
"""Comparison table of the FFT head to head (experiments/fft_head_to_head.sh).

Reads the JSON files of tb-fft, tb-fftw-mpi and experiments/mpi4py_fft_bench.py, groups the rows
by global shape, and prints, per shape, every code's fastest and median forward+backward time with
its ratio to FFTW-MPI and to mpi4py-fft at the same rank count (fastest over fastest).

    /usr/bin/python3 analysis/fft_head_to_head.py results/fft_head_to_head/*.json

A file that cannot be read, is not JSON, has no metadata.ranks or no results, or a result without
a field the table needs, is an error that names it.
"""
import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alltoallw_sizes import number  # noqa: E402
from store import read_json  # noqa: E402


def text(where, row, field):
    """row[field], a string; ValueError naming `where` (the file and the result) and the field."""
    if not isinstance(row.get(field), str):
        raise ValueError(f"{where}: no {field}" if field not in row else f"{where}: {field} is not a string")
    return row[field]


def read_results(path):
    """(ranks, results) of one JSON file of tb-fft, tb-fftw-mpi or mpi4py_fft_bench.py; ValueError
    naming the file if it is none."""
    doc = read_json(path)
    metadata = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(metadata, dict):
        raise ValueError(f'{path}: no "metadata" object (a JSON file of tb-fft, tb-fftw-mpi or mpi4py_fft_bench.py?)')
    ranks = number(f"{path}: metadata", metadata, "ranks")
    results = doc.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError(f'{path}: no "results" list of objects')
    if not results:
        raise ValueError(f"{path}: holds no results")
    return ranks, results


def load(paths):
    rows = []
    for path in paths:
        ranks, results = read_results(path)
        for index, r in enumerate(results, 1):
            where = f"{path}: result {index}"
            code = text(where, r, "tool")
            if code == "tb-fft":
                code = f"tb-fft {text(where, r, 'method')} ({text(where, r, 'serial')})"
            if not isinstance(r.get("verified"), bool):
                raise ValueError(f"{where}: no verified (true or false)")
            rows.append({"shape": text(where, r, "global_shape"), "ranks": ranks, "code": code,
                         "verified": r["verified"], "fastest": number(where, r, "fastest_s"),
                         "median": number(where, r, "median_s")})
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
    parser = argparse.ArgumentParser(prog="fft_head_to_head.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON files of tb-fft, tb-fftw-mpi and "
                                                                 "experiments/mpi4py_fft_bench.py")
    try:
        rows = load(parser.parse_args(argv[1:]).files)
    except ValueError as e:
        parser.error(str(e))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
