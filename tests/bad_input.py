#!/usr/bin/env python3
"""Bad input to every tool must be a clear, named error: a table of cases, each run once.

A case passes when the command exits non-zero, was not killed by a signal (nor reports one: MPI
launchers print "BAD TERMINATION" or "signal"), printed no uncaught-exception or sanitizer text,
finished within the time limit, and its output (stdout and stderr) matches the case's regex,
which names the problem. MPI tools run under --mpiexec with 1 or 2 ranks; tb-model and the
Python runners run directly. A tool that this build does not have (tb-fftw-mpi is built only
where libfftw3-mpi is found: the Open MPI build) is reported as skipped with the reason.

    tests/bad_input.py --bin build/mpich/bin --mpiexec mpiexec.mpich
    tests/bad_input.py --bin build/openmpi/bin --mpiexec mpiexec.openmpi --mpiexec-flag=--oversubscribe
    tests/bad_input.py --bin build/mpich/bin -k tb-model --markdown cases.md
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
MPI_TOOLS = {"tb-bench", "tb-bench-pack", "tb-soak", "tb-redistribute", "tb-fft", "tb-fftw-mpi", "tb-beff", "tb-ptrans"}
PYTHON_TOOLS = {"run.py": "experiments/run.py", "launch.py": "experiments/launch.py", "report.py": "analysis/report.py",
                "platform_network.py": "experiments/platform_network.py", "model_vs_smpi.py": "analysis/model_vs_smpi.py",
                "tune.py": "experiments/tune.py"}
SHELL_TOOLS = {"build.sh": "mpich/build.sh"}  # run with bash; their cases stop before any work
NOT_BUILT = {"tb-fftw-mpi": "built only where libfftw3-mpi is found (the Open MPI build)"}
# An output path that cannot be written, even by root: a folder under a regular file (ENOTDIR), where
# a missing folder would be created by a tool that makes its output folders.
NOWHERE = "{tmp}/garbage.txt/x"

# Text that means the tool crashed, aborted or let an exception escape, whatever its exit code
# (a sanitizer build's leak report at exit is not among them: MPI libraries leak by design).
CRASH = re.compile(r"BAD TERMINATION|KILLED BY SIGNAL|[Ss]ignal \d+|Segmentation fault|terminate called|"
                   r"what\(\): |Traceback \(most recent call last\)|MPI_Abort|MPI_ABORT|ERROR: AddressSanitizer|"
                   r"runtime error: |std::bad_alloc|\bstoll\b|\bstoi\b")


@dataclass
class Case:
    name: str
    tool: str
    args: list
    expect: str  # regex that names the problem
    ranks: int = 1
    env: dict = field(default_factory=dict)


def C(name, tool, args, expect, ranks=1, **env):
    return Case(name, tool, args, expect, ranks, env)


# Input files the cases read ({tmp}/NAME); JSON values are dumped, strings written as they are.
FILES = {
    "garbage.txt": "this is not JSON nor FFTW wisdom\n",
    "net-unknown-key.json": {"name": "n", "kind": "host", "host": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10},
                             "bandwdith": 5},
    "net-wrong-type.json": {"name": "n", "kind": "host", "host": {"alpha_s": "fast", "beta_s_per_byte": 1e-10}},
    "net-nested-unknown.json": {"name": "n", "kind": "iec", "iec": {"clock_hz": 1e8, "clokc_hz": 2e8}},
    "net-no-kind.json": {"name": "n", "host": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10}},
    "net-host-missing.json": {"name": "n", "kind": "host"},
    "net-host-curve-unsorted.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "message_seconds_by_bytes": [[2048, 3e-6], [1024, 2e-6]]}},
    "net-host-self-curve-negative.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "self_message_seconds_by_bytes": [[1, -2e-6]]}},
    "net-host-noncontiguous-one-side.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10,
        "noncontiguous_send_extra_seconds": [{"block_bytes": 64, "seconds_by_bytes": [[4096, 1e-6]]}]}},
    "net-host-handoff-negative.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "node_handoff_extra_seconds_by_bytes": [[4096, -1e-6]]}},
    "net-host-gets-unsorted.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "get_seconds_by_bytes": [[65536, 2e-5], [4096, 2e-6]]}},
    "net-host-cold-block-key.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10,
        "cold_message_extra_seconds": [{"block_bytes": 64, "seconds_by_bytes": [[4096, 1e-6]]}]}},
    "net-host-cold-self-traffic-unsorted.json": {"name": "n", "kind": "host", "host": {
        "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "cold_self_message_extra_seconds": [
            {"traffic_bytes": 4194304, "seconds_by_bytes": [[4096, 1e-6]]},
            {"traffic_bytes": 1048576, "seconds_by_bytes": [[4096, 1e-6]]}]}},
    "net-array.json": [1, 2, 3],
    "net-cluster-torus.json": {"name": "n", "kind": "cluster", "cluster": {
        "topology": "TORUS", "nodes": 4, "cores_per_node": 2, "bandwidth_bytes_per_s": 1e9, "latency_s": 1e-6,
        "loopback_bandwidth_bytes_per_s": 1e10, "loopback_latency_s": 1e-6, "bandwidth_factor": [[0, 1]],
        "latency_factor": [[0, 1]]}},
    "net-cluster-small.json": {"name": "n", "kind": "cluster", "cluster": {
        "topology": "FLAT", "nodes": 1, "cores_per_node": 2, "bandwidth_bytes_per_s": 1e9, "latency_s": 1e-6,
        "loopback_bandwidth_bytes_per_s": 1e10, "loopback_latency_s": 1e-6, "bandwidth_factor": [[0, 1]],
        "latency_factor": [[0, 1]]}},
    "net-cluster-no-section.json": {"name": "n", "kind": "cluster"},
    "net-cluster-barrier.json": {"name": "n", "kind": "cluster", "cluster": {
        "topology": "FLAT", "nodes": 1, "cores_per_node": 2, "bandwidth_bytes_per_s": 1e9, "latency_s": 1e-6,
        "loopback_bandwidth_bytes_per_s": 1e10, "loopback_latency_s": 1e-6, "bandwidth_factor": [[0, 1]],
        "latency_factor": [[0, 1]], "barrier": "binomial"}},
    "net-bad-links.json": {"name": "n", "kind": "iec", "topology": "links", "links": [[0]]},
    "net-channels-float.json": {"name": "n", "kind": "iec", "channels_per_fpga": 2.5},
    "memory-unknown-key.json": {"copy_bandwidth_bytes_per_s": 1e10, "per_blok_s": 1e-9},
    "memory-wrong-type.json": {"copy_bandwidth_bytes_per_s": "10 GB/s"},
    "overheads-no-benchmarks.json": {"context": {}},
    "overheads-bad-time.json": {"benchmarks": [{"name": "alltoallw/contiguous/native/1/manual_time",
                                                 "real_time": "fast", "time_unit": "us"}]},
    "pattern-negative.jsonl": json.dumps({"ranks": 2, "pairs": [[0, 1, -64, 1, 1]]}) + "\n",
    "pattern-zero-ranks.jsonl": json.dumps({"ranks": 0, "pairs": []}) + "\n",
    "pattern-huge-ranks.jsonl": json.dumps({"ranks": 1000000, "pairs": []}) + "\n",
    "pattern-unknown-key.jsonl": json.dumps({"ranks": 2, "pairs": [], "pears": []}) + "\n",
    "pattern-outside.jsonl": json.dumps({"ranks": 2, "pairs": [[0, 5, 64, 1, 1]]}) + "\n",
    "pattern-short-row.jsonl": json.dumps({"ranks": 2, "pairs": [[0, 1, 64]]}) + "\n",
    "pattern-ok.jsonl": json.dumps({"ranks": 2, "pairs": [[0, 1, 64, 1, 1]]}) + "\n",
    "definition-list.json": [1],
    "definition-no-tool.json": {"name": "x", "ranks": [1]},
    "definition-not-json.json": "{name: x\n",
    "definition-ok.json": {"name": "x", "tool": "tb-model", "args": {"--shape": "8,8,8"}},
    "empty-store.jsonl": "",
    "memory-no-block-cost.json": {"copy_bandwidth_bytes_per_s": 1e10},
    "net-host-empty.json": {"kind": "host", "host": {}},
    "net-host-two-betas.json": {"kind": "host", "host": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-9,
                                                         "bandwidth_bytes_per_s": 1e9}},
    "net-library-empty.json": {"kind": "host", "host": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-9}, "library": {}},
}

CASES = [
    # tb-bench: message sizes, names, counts, output
    C("tb-bench.m-not-a-number", "tb-bench", ["-m", "abc"], r"tb-bench: error: -m: 'abc' is not a size"),
    C("tb-bench.m-not-a-number.np2", "tb-bench", ["-m", "abc"], r"-m: 'abc' is not a size", ranks=2),
    C("tb-bench.m-bad-suffix", "tb-bench", ["-m", "4X"], r"-m: unknown size suffix 'X' in '4X'"),
    C("tb-bench.m-zero", "tb-bench", ["-m", "0"], r"-m: sizes must be at least 1 byte, got '0'"),
    C("tb-bench.m-overflow", "tb-bench", ["-m", "1:99999999999999999999"],
      r"-m: '99999999999999999999' is more than the limit of 1G bytes per peer"),
    C("tb-bench.m-over-limit", "tb-bench", ["-m", "1:2G"], r"-m: '2G' is more than the limit of 1G bytes per peer"),
    C("tb-bench.m-max-below-min", "tb-bench", ["-m", "64:8"], r"-m 64:8: max below min"),
    C("tb-bench.m-not-power-of-two", "tb-bench", ["-m", "3:8"], r"-m 3:8: the minimum must be a power of two"),
    C("tb-bench.algorithm-unknown", "tb-bench", ["--algorithms", "nosuch"],
      r"--algorithms: unknown Alltoallw algorithm 'nosuch'"),
    C("tb-bench.algorithms-empty-entry", "tb-bench", ["--algorithms", "native,,pairwise"],
      r"--algorithms: name 1 is empty in 'native,,pairwise'"),
    C("tb-bench.layout-unknown", "tb-bench", ["--layouts", "bogus"], r"--layouts: unknown layout 'bogus'"),
    C("tb-bench.layout-vector-not-power-of-two", "tb-bench", ["--layouts", "vector3"],
      r"--layouts: layout 'vector3': use vector<B> with B a power of two"),
    C("tb-bench.layout-vector-over-limit", "tb-bench", ["--layouts", "vector2G"],
      r"layout 'vector2G': its block size: '2G' is more than the limit of 1G bytes per block"),
    C("tb-bench.algorithm-twice", "tb-bench", ["--algorithms", "native,native"], r"--algorithms: 'native' is listed twice"),
    C("tb-bench.algorithm-in-all-too", "tb-bench", ["--algorithms", "all,pairwise"],
      r"'pairwise' is listed twice \('all' includes every registered one\)"),
    C("tb-bench.iterations-negative", "tb-bench", ["-i", "-1"], r"--iterations: Value -1 not in range"),
    C("tb-bench.warmup-huge", "tb-bench", ["-x", "99999999"], r"--warmup: Value 99999999 not in range"),
    C("tb-bench.buffers-unknown", "tb-bench", ["--buffers", "gpu"], r"--buffers: gpu not in \{private,shared\}"),
    C("tb-bench.paper-max-seconds-nan", "tb-bench", ["--paper-max-seconds", "nan"],
      r"--paper-max-seconds: value nan is not in \[0"),
    C("tb-bench.benchmark-out-unwritable", "tb-bench", [f"--benchmark_out={NOWHERE}.json"],
      r"--benchmark_out \S*garbage.txt/x.json: cannot be written"),
    C("tb-bench.unknown-option", "tb-bench", ["--bogus"], r"tb-bench: error: .*--bogus"),
    C("tb-bench.benchmark-repetitions-negative", "tb-bench", ["--benchmark_repetitions=-1"],
      r"--benchmark_repetitions: '-1' is not a count from 1"),
    C("tb-bench.redistribution-layouts-too-small", "tb-bench", ["--layouts", "slab,pencil", "-m", "1:8"],
      r"-m 1:8: the slab and pencil layouts need at least 16 bytes per peer"),
    # tb-bench: Google Benchmark's flags (microbench/benchmark_flags.hpp), checked before Google Benchmark reads them
    C("tb-bench.benchmark-repetitions-zero", "tb-bench", ["--benchmark_repetitions=0"],
      r"--benchmark_repetitions: '0' is not a count from 1 to 1000000"),
    C("tb-bench.benchmark-format-unknown", "tb-bench", ["--benchmark_format=xml"],
      r"tb-bench: error: --benchmark_format: 'xml' is none of console, json, csv"),
    C("tb-bench.benchmark-format-unknown-env", "tb-bench", [], r"BENCHMARK_FORMAT: 'xml' is none of console, json, csv",
      BENCHMARK_FORMAT="xml"),
    C("tb-bench.benchmark-out-format-unknown.np2", "tb-bench", ["--benchmark_out_format=xml", "--benchmark_out={tmp}/b.json"],
      r"--benchmark_out_format: 'xml' is none of console, json, csv", ranks=2),
    C("tb-bench.benchmark-time-unit-unknown", "tb-bench", ["--benchmark_time_unit=h"],
      r"--benchmark_time_unit: 'h' is none of ns, us, ms, s"),
    C("tb-bench.benchmark-color-empty", "tb-bench", ["--benchmark_color="], r"--benchmark_color: '' is none of auto, true"),
    C("tb-bench.benchmark-bool-not-a-word", "tb-bench", ["--benchmark_list_tests=flase"],
      r"--benchmark_list_tests: 'flase' is none of true, false"),
    C("tb-bench.benchmark-min-time-nan", "tb-bench", ["--benchmark_min_time=nan"],
      r"--benchmark_min_time: 'nan' is not a number of seconds from 0 to 1000000"),
    C("tb-bench.benchmark-min-time-negative", "tb-bench", ["--benchmark_min_time=-1"],
      r"--benchmark_min_time: '-1' is not a number of seconds from 0"),
    C("tb-bench.benchmark-filter-invalid", "tb-bench", ["--benchmark_filter=["],
      r"--benchmark_filter: '\[' is not a regular expression \(POSIX extended\)"),
    C("tb-bench.benchmark-filter-no-match.np2", "tb-bench",
      ["--algorithms", "native", "-m", "64", "--state-probes", "off", "--benchmark_filter=nomatch"],
      r"tb-bench: error: --benchmark_filter: 'nomatch' matches no benchmark, so none ran", ranks=2),
    C("tb-bench.no-benchmark-selected", "tb-bench", ["--algorithms", "local_remap", "--layouts", "contiguous"],
      r"--algorithms, --layouts, --calls and -m select no benchmark \(local_remap runs on the slab and pencil"),
    C("tb-bench.no-benchmark-selected-persistent", "tb-bench",
      ["--algorithms", "local_remap", "--layouts", "slab", "--calls", "persistent"], r"select no benchmark"),
    # tb-bench-pack (Google Benchmark's flags only)
    C("tb-bench-pack.unknown-option", "tb-bench-pack", ["--bogus"], r"unrecognized command-line flag: --bogus"),
    C("tb-bench-pack.setting-malformed", "tb-bench-pack", [], r"TB_STREAMING_STORES='sometimes': use auto, never or always",
      TB_STREAMING_STORES="sometimes"),
    # tb-bench-pack: Google Benchmark's flags, with tb-bench's checks
    C("tb-bench-pack.benchmark-repetitions-negative", "tb-bench-pack",
      ["--benchmark_filter=^BM_Memcpy$", "--benchmark_repetitions=-1"],
      r"tb-bench-pack: error: --benchmark_repetitions: '-1' is not a count from 1 to 1000000"),
    C("tb-bench-pack.benchmark-repetitions-zero", "tb-bench-pack",
      ["--benchmark_filter=^BM_Memcpy$", "--benchmark_repetitions=0"],
      r"--benchmark_repetitions: '0' is not a count from 1 to 1000000"),
    C("tb-bench-pack.benchmark-format-unknown", "tb-bench-pack", ["--benchmark_format=xml"],
      r"tb-bench-pack: error: --benchmark_format: 'xml' is none of console, json, csv"),
    C("tb-bench-pack.benchmark-out-format-unknown", "tb-bench-pack",
      ["--benchmark_out_format=xml", "--benchmark_out={tmp}/b.json"],
      r"--benchmark_out_format: 'xml' is none of console, json, csv"),
    C("tb-bench-pack.benchmark-out-unwritable", "tb-bench-pack", [f"--benchmark_out={NOWHERE}.json"],
      r"--benchmark_out \S*garbage.txt/x.json: cannot be written"),
    C("tb-bench-pack.benchmark-time-unit-unknown", "tb-bench-pack", ["--benchmark_time_unit=h"],
      r"--benchmark_time_unit: 'h' is none of ns, us, ms, s"),
    C("tb-bench-pack.benchmark-min-time-nan", "tb-bench-pack", ["--benchmark_min_time=nan"],
      r"--benchmark_min_time: 'nan' is not a number of seconds from 0 to 1000000"),
    C("tb-bench-pack.benchmark-filter-invalid", "tb-bench-pack", ["--benchmark_filter=["],
      r"--benchmark_filter: '\[' is not a regular expression \(POSIX extended\)"),
    C("tb-bench-pack.benchmark-filter-no-match", "tb-bench-pack", ["--benchmark_filter=nomatch"],
      r"tb-bench-pack: error: --benchmark_filter: 'nomatch' matches no benchmark, so none ran"),
    C("tb-bench-pack.benchmark-filter-negated-all", "tb-bench-pack", ["--benchmark_filter=-."],
      r"--benchmark_filter: '-\.' matches no benchmark"),
    # tb-soak: counts, sizes, names
    C("tb-soak.calls-zero", "tb-soak", ["--calls", "0"], r"--calls: Value 0 not in range"),
    C("tb-soak.bytes-not-blocks", "tb-soak", ["--bytes", "100"], r"--bytes: 100 is neither at most 64 nor a multiple of 64"),
    C("tb-soak.bytes-huge", "tb-soak", ["--bytes", "99999999999"], r"--bytes: Value 99999999999 not in range"),
    C("tb-soak.algorithm-unknown", "tb-soak", ["--algorithms", "pairwise,nope"], r"--algorithms: .*nope", ranks=2),
    C("tb-soak.algorithms-empty-entry", "tb-soak", ["--algorithms", "pairwise,,native"], r"--algorithms: entry 1 is empty"),
    C("tb-soak.check-every-zero", "tb-soak", ["--check-every", "0"], r"--check-every"),
    C("tb-soak.fresh-comm-negative", "tb-soak", ["--fresh-comm", "-1"], r"--fresh-comm"),
    # tb-soak: algorithms listed twice
    C("tb-soak.algorithm-twice", "tb-soak", ["--calls", "10", "--algorithms", "pairwise,pairwise"],
      r"--algorithms: 'pairwise' is listed twice", ranks=2),
    C("tb-soak.algorithm-in-all-too", "tb-soak", ["--calls", "10", "--algorithms", "all,pairwise"],
      r"--algorithms: 'pairwise' is listed twice \('all' includes every registered one\)"),
    # tb-redistribute: shapes, grids, axes, names, counts, outputs
    C("tb-redistribute.shape-empty-axis", "tb-redistribute", ["--shape", "8,,8"],
      r"tb-redistribute: error: --shape: axis 1 is empty in '8,,8'", ranks=2),
    C("tb-redistribute.shape-one-axis", "tb-redistribute", ["--shape", "8"], r"--shape needs at least 2 axes, got 1", ranks=2),
    C("tb-redistribute.shape-zero-axis", "tb-redistribute", ["--shape", "0,8,8"], r"--shape: axis 0 is 0 in '0,8,8'", ranks=2),
    C("tb-redistribute.shape-negative-axis", "tb-redistribute", ["--shape", "8,-4,8"], r"--shape: axis 1 is -4", ranks=2),
    C("tb-redistribute.shape-octal", "tb-redistribute", ["--shape", "8,010"],
      r"--shape: axis 1 is '010' in '8,010' \(expected a decimal integer\)"),
    C("tb-redistribute.shape-hex", "tb-redistribute", ["--shape", "8,0x8"], r"axis 1 is '0x8' .*decimal integer"),
    C("tb-redistribute.shape-not-a-number", "tb-redistribute", ["--shape", "8,x,8"], r"--shape: axis 1 is 'x' in '8,x,8'"),
    C("tb-redistribute.shape-huge", "tb-redistribute", ["--shape", "100000,100000,100000"],
      r"--shape 100000x100000x100000: the array does not fit: it would need \d+ bytes per rank", ranks=2),
    C("tb-redistribute.shape-overflow", "tb-redistribute", ["--shape", "2000000000,2000000000,2000000000"],
      r"--shape 2000000000x2000000000x2000000000: the array does not fit: it would need more than 2\^63 bytes"),
    C("tb-redistribute.shape-axis-over-int", "tb-redistribute", ["--shape", "8,3000000000"],
      r"--shape: axis 1 is 3000000000 .*from 1 to 2147483647"),
    C("tb-redistribute.grid-negative", "tb-redistribute", ["--grid", "-1"], r"--grid -1: dimension -1 is negative", ranks=2),
    C("tb-redistribute.grid-too-many-dimensions", "tb-redistribute", ["--shape", "8,8", "--grid", "1,1"],
      r"--grid: a 2-d array takes a grid of 1 to 1 dimensions, got 2"),
    C("tb-redistribute.grid-wrong-ranks", "tb-redistribute", ["--grid", "3"], r"--grid: grid 3 needs 3 ranks, the job has 2",
      ranks=2),
    C("tb-redistribute.grid-empty-entry", "tb-redistribute", ["--grid", "1,,2"], r"--grid: entry 1 is empty in '1,,2'"),
    C("tb-redistribute.axes-equal", "tb-redistribute", ["--from-axis", "1", "--to-axis", "1"],
      r"--from-axis and --to-axis must differ"),
    C("tb-redistribute.from-axis-negative", "tb-redistribute", ["--from-axis", "-5"], r"--from-axis: Value -5 not in range"),
    C("tb-redistribute.axis-out-of-range", "tb-redistribute", ["--to-axis", "5"],
      r"--from-axis and --to-axis must lie in 0..2, got 2 and 5"),
    C("tb-redistribute.type-unknown", "tb-redistribute", ["--type", "f16"], r"--type: unknown element type 'f16'"),
    C("tb-redistribute.method-unknown", "tb-redistribute", ["--method", "nosuch"],
      r"--method: unknown Alltoallw algorithm 'nosuch'", ranks=2),
    C("tb-redistribute.method-empty-entry", "tb-redistribute", ["--method", "native,"], r"--method: name 1 is empty in 'native,'"),
    C("tb-redistribute.inner-zero", "tb-redistribute", ["--inner", "0"], r"--inner: Value 0 not in range"),
    C("tb-redistribute.outer-huge", "tb-redistribute", ["--outer", "1000000000"], r"--outer: Value 1000000000 not in range"),
    C("tb-redistribute.max-seconds-negative", "tb-redistribute", ["--max-seconds", "-1"],
      r"--max-seconds: value -1 is not in \[0"),
    C("tb-redistribute.inner-not-a-number", "tb-redistribute", ["--inner", "many"], r"--inner.*many"),
    C("tb-redistribute.buffers-unknown", "tb-redistribute", ["--buffers", "gpu"], r"--buffers: gpu not in"),
    C("tb-redistribute.csv-unwritable", "tb-redistribute", ["--csv", NOWHERE + ".csv"],
      r"--csv \S*garbage.txt/x.csv: cannot be written", ranks=2),
    C("tb-redistribute.json-unwritable", "tb-redistribute", ["--json", NOWHERE + ".json"],
      r"--json \S*garbage.txt/x.json: cannot be written"),
    C("tb-redistribute.unknown-option", "tb-redistribute", ["--shpae", "8,8"], r"tb-redistribute: error: .*--shpae"),
    # tb-redistribute: two outputs on one file, entries listed twice
    C("tb-redistribute.csv-and-json-same-file", "tb-redistribute", ["--csv", "{tmp}/same.out", "--json", "{tmp}/same.out"],
      r"--csv and --json name the same file", ranks=2),
    C("tb-redistribute.method-twice", "tb-redistribute", ["--method", "local_remap,local_remap"],
      r"--method: 'local_remap' is listed twice"),
    C("tb-redistribute.method-in-all-too", "tb-redistribute", ["--method", "all,native"],
      r"--method: 'native' is listed twice \('all' includes every registered algorithm and local_remap\)"),
    C("tb-redistribute.calls-twice", "tb-redistribute", ["--calls", "blocking,blocking"],
      r"--calls: 'blocking' is listed twice"),
    # TB_* settings (collectives/settings.cpp), checked by every tool before any work
    C("settings.TB_CHECKED", "tb-redistribute", [], r"TB_CHECKED='2': use 0 or 1", ranks=2, TB_CHECKED="2"),
    C("settings.TB_NUM_NODES", "tb-redistribute", [], r"TB_NUM_NODES='abc': use a positive integer", TB_NUM_NODES="abc"),
    C("settings.TB_RANKS_PER_NODE-zero", "tb-fft", [], r"TB_RANKS_PER_NODE='0': use a positive integer",
      TB_RANKS_PER_NODE="0"),
    C("settings.TB_NODE_LEADERS", "tb-bench", [], r"TB_NODE_LEADERS='0': use a positive integer or numa",
      TB_NODE_LEADERS="0"),
    C("settings.TB_UCX_TIMEOUT_S", "tb-ptrans", [], r"TB_UCX_TIMEOUT_S='-1': use seconds > 0", TB_UCX_TIMEOUT_S="-1"),
    C("settings.TB_ALLTOALLW_VERBOSE", "tb-beff", [], r"TB_ALLTOALLW_VERBOSE='3': use 0, 1 or 2", ranks=2,
      TB_ALLTOALLW_VERBOSE="3"),
    C("settings.TB_UCX_PACK_BELOW", "tb-model", [], r"TB_UCX_PACK_BELOW='-5'", TB_UCX_PACK_BELOW="-5"),
    C("settings.TB_ALLTOALLW-unknown", "tb-redistribute", ["--method", "native"],
      r"TB_ALLTOALLW.*unknown Alltoallw algorithm 'nosuch'|unknown Alltoallw algorithm 'nosuch'.*TB_ALLTOALLW",
      TB_ALLTOALLW="nosuch"),
    C("settings.TB_ALGORITHM_PLUGINS", "tb-bench", ["--algorithms", "all"], r"TB_ALGORITHM_PLUGINS: cannot load '/no/such/plugin.so'",
      TB_ALGORITHM_PLUGINS="/no/such/plugin.so"),
    # TB_* settings: an unwritable record path, both ways of forming virtual nodes, UCX's own TB_UCX_<NAME>
    # settings (empty, or a value UCX refuses), whole numbers with spaces or signs, the limits, and a plugin
    # library that registers no algorithm
    C("settings.TB_ALLTOALLW_RECORD-no-folder", "tb-model", [],
      r"TB_ALLTOALLW_RECORD='/no/such/folder/rec.jsonl': cannot be written \(folder /no/such/folder: No such file",
      TB_ALLTOALLW_RECORD="/no/such/folder/rec.jsonl"),
    C("settings.TB_ALLTOALLW_RECORD-directory", "tb-redistribute", ["--shape", "8,8", "--outer", "1"],
      r"TB_ALLTOALLW_RECORD='/tmp': cannot be written \(it is a directory\)", ranks=2, TB_ALLTOALLW_RECORD="/tmp"),
    C("settings.TB_RANKS_PER_NODE-and-TB_NUM_NODES", "tb-redistribute",
      ["--shape", "8,8", "--outer", "1", "--method", "native"],
      r"TB_RANKS_PER_NODE and TB_NUM_NODES are both set; set one", ranks=2, TB_RANKS_PER_NODE="1", TB_NUM_NODES="2"),
    C("settings.TB_UCX_TLS-empty", "tb-redistribute", ["--shape", "8,8", "--outer", "1", "--method", "ucx_zcopy"],
      r"TB_UCX_TLS is set but empty", ranks=2, TB_UCX_TLS=""),
    C("settings.TB_UCX_RNDV_THRESH", "tb-redistribute", ["--shape", "8,8", "--outer", "1", "--method", "ucx_zcopy"],
      r"TB_UCX_RNDV_THRESH='abc': UCX refuses it|ucx_zcopy.*not in this build", ranks=2, TB_UCX_RNDV_THRESH="abc"),
    C("settings.TB_CONFORMANCE_SEED-space-minus", "tb-model", [], r"TB_CONFORMANCE_SEED=' -1': use an unsigned integer",
      TB_CONFORMANCE_SEED=" -1"),
    C("settings.TB_FFT_TEST_SEED-space-minus", "tb-fft", [], r"TB_FFT_TEST_SEED=' -5': use an unsigned integer",
      TB_FFT_TEST_SEED=" -5"),
    C("settings.TB_ALLTOALLW_VERBOSE-space", "tb-bench", [], r"TB_ALLTOALLW_VERBOSE=' 1': use 0, 1 or 2",
      TB_ALLTOALLW_VERBOSE=" 1"),
    C("settings.TB_RANKS_PER_NODE-too-large", "tb-ptrans", [],
      r"TB_RANKS_PER_NODE='1048577': use a positive integer \(at most 1048576\)", TB_RANKS_PER_NODE="1048577"),
    C("settings.TB_UCX_TIMEOUT_S-too-large", "tb-beff", [],
      r"TB_UCX_TIMEOUT_S='1000000001': use seconds > 0, at most 1e9", TB_UCX_TIMEOUT_S="1000000001"),
    C("settings.TB_ALGORITHM_PLUGINS-not-a-plugin", "tb-model", [],
      r"TB_ALGORITHM_PLUGINS: 'libz.so.1' registered no algorithm", TB_ALGORITHM_PLUGINS="libz.so.1"),
    C("settings.TB_ALGORITHM_PLUGINS-twice", "tb-redistribute", ["--shape", "8,8", "--outer", "1"],
      r"TB_ALGORITHM_PLUGINS: 'libz.so.1' is listed twice", TB_ALGORITHM_PLUGINS="libz.so.1:libz.so.1"),
    # tb-fft
    C("tb-fft.shape-empty-axis", "tb-fft", ["--shape", "8,,8"], r"tb-fft: error: --shape: axis 1 is empty in '8,,8'"),
    C("tb-fft.shape-zero-axis", "tb-fft", ["--shape", "8,0"], r"--shape: axis 1 is 0", ranks=2),
    C("tb-fft.shape-huge", "tb-fft", ["--shape", "100000,100000,100000"], r"--shape 100000x100000x100000: the array does not fit"),
    C("tb-fft.wisdom-unreadable", "tb-fft", ["--wisdom", "{tmp}/garbage.txt", "--shape", "8,8"],
      r"--wisdom .*/garbage.txt: FFTW cannot read it", ranks=2),
    C("tb-fft.wisdom-unwritable", "tb-fft", ["--wisdom", NOWHERE + ".wisdom"], r"--wisdom \S*garbage.txt/x.wisdom: cannot be written"),
    C("tb-fft.kind-unknown", "tb-fft", ["--kind", "r2r"], r"--kind: unknown FFT kind 'r2r'"),
    C("tb-fft.precision-unknown", "tb-fft", ["--precision", "half"], r"--precision: unknown precision 'half'"),
    C("tb-fft.planner-unknown", "tb-fft", ["--planner", "quick"], r"--planner: unknown FFTW planner 'quick'"),
    C("tb-fft.normalization-unknown", "tb-fft", ["--normalization", "unit"], r"--normalization: unknown normalisation 'unit'"),
    C("tb-fft.serial-unknown", "tb-fft", ["--serial", "strided,diagonal"], r"--serial: unknown serial layout 'diagonal'"),
    C("tb-fft.grid-too-many-dimensions", "tb-fft", ["--shape", "8,8,8", "--grid", "1,1,1"],
      r"--grid: a 3-d array takes a grid of 1 to 2 dimensions, got 3"),
    C("tb-fft.grid-wrong-ranks", "tb-fft", ["--grid", "2,2"], r"--grid: grid 2x2 needs 4 ranks, the job has 2", ranks=2),
    C("tb-fft.seed-negative", "tb-fft", ["--seed", "-1"], r"--seed.*-1"),
    C("tb-fft.method-unknown", "tb-fft", ["--method", "nosuch"], r"--method: unknown Alltoallw algorithm 'nosuch'"),
    C("tb-fft.outer-zero", "tb-fft", ["--outer", "0"], r"--outer: Value 0 not in range"),
    C("tb-fft.csv-unwritable", "tb-fft", ["--csv", NOWHERE + ".csv"], r"--csv \S*garbage.txt/x.csv: cannot be written", ranks=2),
    # tb-fft: two outputs on one file (the wisdom too: it is written after the run), entries listed twice
    C("tb-fft.csv-and-json-same-file", "tb-fft", ["--csv", "{tmp}/same.out", "--json", "{tmp}/same.out"],
      r"--csv and --json name the same file"),
    C("tb-fft.wisdom-and-csv-same-file", "tb-fft", ["--wisdom", "{tmp}/same.wisdom", "--csv", "{tmp}/same.wisdom"],
      r"--csv and --wisdom name the same file", ranks=2),
    C("tb-fft.method-twice", "tb-fft", ["--method", "native,native"], r"--method: 'native' is listed twice"),
    C("tb-fft.method-in-all-too", "tb-fft", ["--method", "all,local_remap"],
      r"--method: 'local_remap' is listed twice \('all' includes every registered algorithm and local_remap\)"),
    C("tb-fft.serial-twice", "tb-fft", ["--serial", "strided,strided"], r"--serial: 'strided' is listed twice"),
    # tb-fftw-mpi (Open MPI build)
    C("tb-fftw-mpi.shape-zero-axis", "tb-fftw-mpi", ["--shape", "0,8,8"], r"tb-fftw-mpi: error: --shape: axis 0 is 0", ranks=2),
    C("tb-fftw-mpi.shape-negative-axis", "tb-fftw-mpi", ["--shape", "-4,8,8"], r"--shape: axis 0 is -4", ranks=2),
    C("tb-fftw-mpi.shape-two-axes", "tb-fftw-mpi", ["--shape", "8,8"], r"--shape needs at least 3 axes, got 2"),
    C("tb-fftw-mpi.shape-empty-axis", "tb-fftw-mpi", ["--shape", "8,,8"], r"--shape: axis 1 is empty in '8,,8'"),
    C("tb-fftw-mpi.shape-huge", "tb-fftw-mpi", ["--shape", "100000,100000,100000"], r"the array does not fit"),
    C("tb-fftw-mpi.planner-unknown", "tb-fftw-mpi", ["--planner", "quick"], r"--planner: quick not in"),
    C("tb-fftw-mpi.inner-zero", "tb-fftw-mpi", ["--inner", "0"], r"--inner: Value 0 not in range"),
    C("tb-fftw-mpi.json-unwritable", "tb-fftw-mpi", ["--json", NOWHERE + ".json"], r"--json \S*garbage.txt/x.json: cannot be written"),
    # tb-beff: loop rules bounded
    C("tb-beff.u-huge", "tb-beff", ["-u", "2147483647"], r"tb-beff: error: -u: Value 2147483647 not in range", ranks=2),
    C("tb-beff.l-above-u", "tb-beff", ["-u", "10", "-l", "20"], r"-u 10 is below -l 20", ranks=2),
    C("tb-beff.d-zero", "tb-beff", ["-d", "0"], r"-d: Value 0 not in range"),
    C("tb-beff.max-exponent-too-big", "tb-beff", ["--max-exponent", "31"], r"--max-exponent: Value 31 not in range"),
    C("tb-beff.repetitions-zero", "tb-beff", ["--repetitions", "0"], r"--repetitions: Value 0 not in range"),
    C("tb-beff.noncontiguous-timing-unknown", "tb-beff", ["--noncontiguous-timing", "burst"],
      r"--noncontiguous-timing: burst not in \{single,loop\}"),
    C("tb-beff.pairs-max-bytes-small", "tb-beff", ["--pairs-max-bytes", "100"],
      r"--pairs-max-bytes: Value 100 not in range"),
    C("tb-beff.messages-max-bytes-huge", "tb-beff", ["--messages-max-bytes", "2147483648"],
      r"--messages-max-bytes: Value 2147483648 not in range"),
    C("tb-beff.loop-divisor-negative", "tb-beff", ["--loop-divisor", "-3"], r"--loop-divisor: Value -3 not in range"),
    C("tb-beff.fit-out-unwritable", "tb-beff", ["--fit-out", NOWHERE + ".json"],
      r"--fit-out \S*garbage.txt/x.json: cannot be written", ranks=2),
    # tb-beff: the Hockney fit's sizes, the message curves' largest size, two outputs on one file
    C("tb-beff.max-exponent-zero", "tb-beff", ["--max-exponent", "0"],
      r"tb-beff: error: --max-exponent 0: the Hockney fit needs at least 2 sizes; use 1 or more", ranks=2),
    C("tb-beff.messages-max-bytes-below-beff", "tb-beff", ["--max-exponent", "4", "--messages-max-bytes", "2"],
      r"--messages-max-bytes 2 is below b_eff's largest size 2\^4 = 16 bytes"),
    C("tb-beff.json-and-fit-out-same-file", "tb-beff", ["--json", "{tmp}/same.json", "--fit-out", "{tmp}/./same.json"],
      r"--json and --fit-out name the same file", ranks=2),
    # tb-ptrans
    C("tb-ptrans.not-square", "tb-ptrans", ["--n", "64"], r"needs a square P x P grid", ranks=2),
    C("tb-ptrans.n-not-multiple", "tb-ptrans", ["--n", "100", "--nb", "64"], r"--n 100 must be a multiple of --nb \* P = 64 \* 1"),
    C("tb-ptrans.n-zero", "tb-ptrans", ["--n", "0"], r"--n: Value 0 not in range"),
    C("tb-ptrans.n-huge", "tb-ptrans", ["--n", "2000000000", "--nb", "1"], r"--n 2000000000: the local .* too large for one MPI count"),
    C("tb-ptrans.algorithm-unknown", "tb-ptrans", ["--algorithm", "nosuch"], r"--algorithm: unknown Alltoallw algorithm 'nosuch'"),
    C("tb-ptrans.iec-unknown-key", "tb-ptrans", ["--iec", "{tmp}/net-nested-unknown.json"],
      r"--iec .*net-nested-unknown.json: in 'iec': unknown key 'clokc_hz'"),
    C("tb-ptrans.iec-not-json", "tb-ptrans", ["--iec", "{tmp}/garbage.txt"], r"--iec .*garbage.txt: not JSON"),
    C("tb-ptrans.iec-missing", "tb-ptrans", ["--iec", "/nonexistent.json"], r"--iec /nonexistent.json: cannot be read"),
    C("tb-ptrans.json-unwritable", "tb-ptrans", ["--json", NOWHERE + ".json"], r"--json \S*garbage.txt/x.json: cannot be written"),
    C("tb-ptrans.n-octal", "tb-ptrans", ["--n", "0100"], r"--n: '0100' is not a decimal integer"),
    C("tb-ptrans.repetitions-zero", "tb-ptrans", ["--repetitions", "0"], r"--repetitions: Value 0 not in range"),
    # tb-ptrans: an --iec file that gives no IEC link parameters (net-host-missing.json is of kind host,
    # net-channels-float.json of kind iec without the 'iec' section)
    C("tb-ptrans.iec-kind-host", "tb-ptrans", ["--iec", "{tmp}/net-host-missing.json"],
      r"--iec .*net-host-missing.json: kind 'host' is not an IEC network"),
    C("tb-ptrans.iec-no-section", "tb-ptrans", ["--iec", "{tmp}/net-channels-float.json"],
      r"--iec .*net-channels-float.json: needs the key 'iec'"),
    # tb-model: network, memory, overheads and pattern files; shapes; outputs
    C("tb-model.network-unknown-key", "tb-model", ["--network", "{tmp}/net-unknown-key.json"],
      r"network file .*net-unknown-key.json: unknown key 'bandwdith'"),
    C("tb-model.network-wrong-type", "tb-model", ["--network", "{tmp}/net-wrong-type.json"],
      r"network file .*net-wrong-type.json: in 'host': key 'alpha_s': expected a number, got string"),
    C("tb-model.network-nested-unknown-key", "tb-model", ["--network", "{tmp}/net-nested-unknown.json"],
      r"network file .*: in 'iec': unknown key 'clokc_hz'"),
    C("tb-model.network-no-kind", "tb-model", ["--network", "{tmp}/net-no-kind.json"],
      r"network file .*net-no-kind.json: missing required key 'kind'"),
    C("tb-model.network-host-section-missing", "tb-model", ["--network", "{tmp}/net-host-missing.json"],
      r"network file .*: .*kind host needs the key 'host'"),
    C("tb-model.network-host-curve-unsorted", "tb-model", ["--network", "{tmp}/net-host-curve-unsorted.json"],
      r"network file .*: in 'host': key 'message_seconds_by_bytes': measured curve: bytes must increase strictly"),
    C("tb-model.network-host-self-curve-negative", "tb-model", ["--network", "{tmp}/net-host-self-curve-negative.json"],
      r"network file .*: in 'host': key 'self_message_seconds_by_bytes': measured curve: point 0 needs bytes > 0 and "
      r"seconds >= 0"),
    C("tb-model.network-host-noncontiguous-one-side", "tb-model", ["--network", "{tmp}/net-host-noncontiguous-one-side.json"],
      r"network file .*: in 'host': keys 'noncontiguous_send_extra_seconds' and 'noncontiguous_recv_extra_seconds' come "
      r"together"),
    C("tb-model.network-host-handoff-negative", "tb-model", ["--network", "{tmp}/net-host-handoff-negative.json"],
      r"network file .*: in 'host': key 'node_handoff_extra_seconds_by_bytes': measured curve: point 0 needs bytes > 0 "
      r"and seconds >= 0"),
    C("tb-model.network-host-gets-unsorted", "tb-model", ["--network", "{tmp}/net-host-gets-unsorted.json"],
      r"network file .*: in 'host': key 'get_seconds_by_bytes': measured curve: bytes must increase strictly"),
    C("tb-model.network-host-cold-block-key", "tb-model", ["--network", "{tmp}/net-host-cold-block-key.json"],
      r"network file .*: in 'host': key 'cold_message_extra_seconds': .*unknown key '\[0\]\.block_bytes'"),
    C("tb-model.network-host-cold-self-traffic-unsorted", "tb-model",
      ["--network", "{tmp}/net-host-cold-self-traffic-unsorted.json"],
      r"network file .*: in 'host': key 'cold_self_message_extra_seconds': cold message extra: the entries' sizes "
      r"must be positive and increase strictly \(entry 1\)"),
    C("tb-model.network-cluster-topology", "tb-model", ["--network", "{tmp}/net-cluster-torus.json"],
      r"network file .*: in 'cluster': cluster: topology must be FLAT or DRAGONFLY, got 'TORUS'"),
    C("tb-model.network-cluster-section-missing", "tb-model", ["--network", "{tmp}/net-cluster-no-section.json"],
      r"network file .*: .*kind cluster needs the key 'cluster'"),
    C("tb-model.network-cluster-too-small", "tb-model",
      ["--network", "{tmp}/net-cluster-small.json", "--shape", "8,8,8", "--grid", "4"],
      r"network file .*: network n: 4 ranks do not fit on its 1 nodes at 2 per node"),
    C("tb-model.cluster-ranks-per-node-above-cores", "tb-model",
      ["--network", "{tmp}/net-cluster-small.json", "--shape", "8,8,8", "--grid", "2", "--ranks-per-node", "3"],
      r"network n: 3 ranks per node, but its nodes have 2 cores"),
    C("tb-model.network-cluster-barrier", "tb-model", ["--network", "{tmp}/net-cluster-barrier.json"],
      r"network file .*: in 'cluster': cluster: barrier 'binomial' is not modelled \(known: ompi_basic_linear\)"),
    C("tb-model.inner-zero", "tb-model", ["--inner", "0"], r"--inner: Value 0 not in range"),
    C("tb-model.values-at-zero", "tb-model", ["--values-at", "0"], r"--values-at: sizes must be at least 1 byte, got '0'"),
    C("tb-model.values-at-unit", "tb-model", ["--values-at", "4Q"], r"--values-at: unknown size suffix 'Q' in '4Q'"),
    C("tb-model.values-at-fraction", "tb-model", ["--values-at", "1.5K"], r"--values-at: unknown size suffix '.5K'"),
    C("tb-model.values-at-with-csv", "tb-model", ["--values-at", "1M", "--csv", "{tmp}/v.csv"],
      r"--csv excludes --values-at"),
    C("tb-model.values-at-empty", "tb-model", ["--values-at", ""], r"--values-at: '' is not a size"),
    C("tb-model.values-at-with-shape", "tb-model", ["--values-at", "1M", "--shape", "8,8,8"],
      r"--shape excludes --values-at"),
    C("tb-model.network-directory", "tb-model", ["--network", "{tmp}"], r"network file .* is a directory"),
    C("tb-model.memory-directory", "tb-model", ["--memory", "{tmp}"], r"--memory .*: is a directory"),
    C("tb-model.network-host-empty", "tb-model", ["--network", "{tmp}/net-host-empty.json"],
      r"in 'host': missing required key 'alpha_s'"),
    C("tb-model.network-host-two-betas", "tb-model", ["--network", "{tmp}/net-host-two-betas.json"],
      r"in 'host': give exactly one of 'beta_s_per_byte' and 'bandwidth_bytes_per_s'"),
    C("tb-model.network-library-empty", "tb-model", ["--network", "{tmp}/net-library-empty.json"],
      r"in 'library': a memory model needs its copy bandwidth: 'copy_bandwidth_bytes_per_s' or 'bandwidth_by_bytes'"),
    C("tb-model.memory-no-block-cost", "tb-model", ["--memory", "{tmp}/memory-no-block-cost.json"],
      r"--memory .*: a memory model needs its cost per block: 'per_block_s' or 'per_block_seconds_by_bytes'"),
    C("tb-model.traffic-alone", "tb-model", ["--traffic", "1M"], r"--traffic requires --values-at"),
    C("tb-model.block-alone", "tb-model", ["--block", "64"], r"--block requires --values-at"),
    C("tb-model.traffic-zero", "tb-model", ["--values-at", "1M", "--traffic", "0"],
      r"--traffic: sizes must be at least 1 byte, got '0'"),
    C("tb-model.values-at-unknown-term", "tb-model", ["--values-at", "1M", "--without", "cache_fairies"],
      r"--without cache_fairies: not a switchable model term"),
    C("tb-model.network-not-an-object", "tb-model", ["--network", "{tmp}/net-array.json"],
      r"network file .*net-array.json: .*must be a JSON object"),
    C("tb-model.network-bad-links", "tb-model", ["--network", "{tmp}/net-bad-links.json"],
      r"network file .*: .*every entry of 'links' is \[u, v\]"),
    C("tb-model.network-integer-expected", "tb-model", ["--network", "{tmp}/net-channels-float.json"],
      r"key 'channels_per_fpga': expected an integer, got number 2.5"),
    C("tb-model.network-not-json", "tb-model", ["--network", "{tmp}/garbage.txt"], r"network file .*garbage.txt: not JSON"),
    C("tb-model.network-missing", "tb-model", ["--network", "/nonexistent.json"], r"network file /nonexistent.json: cannot be read"),
    C("tb-model.network-empty-entry", "tb-model", ["--network", "a.json,,b.json"], r"--network: file 1 is empty"),
    C("tb-model.memory-unknown-key", "tb-model", ["--memory", "{tmp}/memory-unknown-key.json"],
      r"--memory .*memory-unknown-key.json: unknown key 'per_blok_s'"),
    C("tb-model.memory-wrong-type", "tb-model", ["--memory", "{tmp}/memory-wrong-type.json"],
      r"--memory .*: key 'copy_bandwidth_bytes_per_s': expected a number, got string"),
    C("tb-model.overheads-no-benchmarks", "tb-model", ["--overheads", "{tmp}/overheads-no-benchmarks.json"],
      r"--overheads .*: missing required key 'benchmarks'"),
    C("tb-model.overheads-wrong-type", "tb-model", ["--overheads", "{tmp}/overheads-bad-time.json"],
      r"--overheads .*: key 'benchmarks\[0\].real_time': expected a number, got string"),
    C("tb-model.pattern-negative-bytes", "tb-model", ["--pattern", "{tmp}/pattern-negative.jsonl"],
      r"recorded pattern .*pattern-negative.jsonl, call 0: pattern: pairs\[0\]: bytes and block counts must be >= 0"),
    C("tb-model.pattern-zero-ranks", "tb-model", ["--pattern", "{tmp}/pattern-zero-ranks.jsonl"], r"pattern: ranks is 0"),
    C("tb-model.pattern-huge-ranks", "tb-model", ["--pattern", "{tmp}/pattern-huge-ranks.jsonl"],
      r"pattern: ranks is 1000000, must lie in 1..4096"),
    C("tb-model.pattern-unknown-key", "tb-model", ["--pattern", "{tmp}/pattern-unknown-key.jsonl"], r"unknown key 'pears'"),
    C("tb-model.pattern-pair-outside", "tb-model", ["--pattern", "{tmp}/pattern-outside.jsonl"],
      r"pairs\[0\]: pair 0->5 outside the 2 ranks"),
    C("tb-model.pattern-short-row", "tb-model", ["--pattern", "{tmp}/pattern-short-row.jsonl"],
      r"pairs\[0\]: expected \[src, dst, bytes, send_blocks, recv_blocks\]"),
    C("tb-model.pattern-call-beyond", "tb-model", ["--pattern", "{tmp}/pattern-ok.jsonl", "--call", "5"],
      r"holds 1 call\(s\); call 5 was asked for"),
    C("tb-model.pattern-call-negative", "tb-model", ["--pattern", "{tmp}/pattern-ok.jsonl", "--call", "-1"],
      r"--call: Value -1 not in range"),
    C("tb-model.pattern-missing", "tb-model", ["--pattern", "/nonexistent.jsonl"], r"recorded pattern /nonexistent.jsonl cannot be read"),
    C("tb-model.csv-unwritable", "tb-model", ["--csv", NOWHERE + ".csv"], r"--csv \S*garbage.txt/x.csv: cannot be written"),
    C("tb-model.save-memory-unwritable", "tb-model", ["--save-memory", NOWHERE + ".json"],
      r"--save-memory \S*garbage.txt/x.json: cannot be written"),
    C("tb-model.shape-empty-axis", "tb-model", ["--shape", "8,,8"], r"tb-model: error: --shape: axis 1 is empty in '8,,8'"),
    C("tb-model.shape-zero-axis", "tb-model", ["--shape", "8,0,8"], r"--shape: axis 1 is 0"),
    C("tb-model.shape-overflow", "tb-model", ["--shape", "2000000000,2000000000,2000000000"],
      r"--shape 2000000000x2000000000x2000000000: the array would have more than 2\^63 bytes"),
    C("tb-model.grid-zero", "tb-model", ["--grid", "0"], r"pattern: grid dimensions must be >= 1"),
    C("tb-model.grid-huge", "tb-model", ["--grid", "100000,100000"], r"the grid has more than 4096 ranks"),
    C("tb-model.axes-equal", "tb-model", ["--from-axis", "0", "--to-axis", "0"], r"from and to axes must differ"),
    C("tb-model.type-unknown", "tb-model", ["--type", "i8"], r"--type: unknown element type 'i8'"),
    C("tb-model.algorithm-unknown", "tb-model", ["--algorithm", "nosuch"], r"--algorithm nosuch: not a registered algorithm"),
    C("tb-model.pack-below-negative", "tb-model", ["--pack-below", "-1"], r"--pack-below: value -1 is not in \[0"),
    C("tb-model.ranks-per-node-negative", "tb-model", ["--ranks-per-node", "-2"], r"--ranks-per-node: Value -2 not in range"),
    C("tb-model.buffers-unknown", "tb-model", ["--buffers", "gpu"], r"--buffers: gpu not in"),
    # the Python runners
    C("run.py.definition-missing", "run.py", ["/nonexistent/definition.json"],
      r"run.py: /nonexistent/definition.json: the definition cannot be read"),
    C("run.py.definition-not-object", "run.py", ["{tmp}/definition-list.json"], r"the definition must be a JSON object"),
    C("run.py.definition-not-json", "run.py", ["{tmp}/definition-not-json.json"], r"the definition is not JSON"),
    C("run.py.definition-no-tool", "run.py", ["{tmp}/definition-no-tool.json"], r"the definition needs 'tool'"),
    C("run.py.mode-unknown", "run.py", ["{tmp}/definition-ok.json", "--mode", "bogus"],
      r"argument --mode: invalid choice: 'bogus'"),
    C("run.py.mpi-unknown", "run.py", ["{tmp}/definition-ok.json", "--mpi", "lam"], r"argument --mpi: invalid choice: 'lam'"),
    C("run.py.args-not-json", "run.py", ["{tmp}/definition-ok.json", "--args", "{x"], r"argument --args: invalid json_object value"),
    C("run.py.timeout-negative", "run.py", ["{tmp}/definition-ok.json", "--timeout", "-5"], r"--timeout must be a positive number"),
    C("tune.py.one-algorithm-nan", "tune.py", ["--one-algorithm", "0.9,nan,1.25"],
      r"--one-algorithm: SHARE,WITHIN,WORST with SHARE in \(0, 1\]"),
    C("tune.py.timeout-zero", "tune.py", ["--timeout", "0"], r"--min-time and --timeout finite and above 0"),
    C("tune.py.algorithms-empty", "tune.py", ["--algorithms", ""], r"--algorithms: an empty name in ''"),
    C("tune.py.nodes-empty-entry", "tune.py", ["--nodes", "1,,2"], r"--nodes: '' is not a node count"),
    C("tune.py.out-directory", "tune.py", ["-o", "{tmp}"], r"-o .*: is a directory; name the file to write"),
    C("build.sh.extra-argument", "build.sh", ["--key", "--bogus"], r"unexpected argument '--bogus' after '--key'"),
    C("build.sh.unknown-argument", "build.sh", ["--bogus"], r"unknown argument '--bogus'"),
    C("build.sh.export-without-name", "build.sh", ["--export"], r"--export needs a NAME"),
    C("build.sh.export-option-as-name", "build.sh", ["--export", "--key"], r"--export NAME: letters, digits.*'--key'"),
    C("build.sh.jobs-not-a-number", "build.sh", ["--key"], r"TB_MPICH_JOBS='abc': use a number of make jobs",
      TB_MPICH_JOBS="abc"),
    C("launch.py.mpi-unknown", "launch.py", ["--mpi", "lam", "tb-model"], r"argument --mpi: invalid choice: 'lam'"),
    C("launch.py.mode-unknown", "launch.py", ["--mode", "bogus", "tb-model"], r"argument --mode: invalid choice: 'bogus'"),
    C("launch.py.ranks-zero", "launch.py", ["-n", "0", "tb-bench"], r"-n/--ranks must be at least 1, not 0"),
    C("launch.py.binary-missing", "launch.py", ["--bin", "/nonexistent", "tb-bench"], r"tb-bench: no executable /nonexistent/tb-bench"),
    C("platform_network.py.torus", "platform_network.py", [os.path.join(ROOT, "experiments/platforms/torus.xml")],
      r"platform_network.py: error: .*topology TORUS: the model has routes for FLAT and DRAGONFLY only"),
    C("platform_network.py.not-xml", "platform_network.py", ["{tmp}/garbage.txt"],
      r"platform_network.py: error: .*garbage.txt: not a readable platform file"),
    C("model_vs_smpi.py.store-without-smpi-rows", "model_vs_smpi.py",
      ["{tmp}/empty-store.jsonl", "--platform", "experiments/platforms/xc40-dragonfly.xml"],
      r"model_vs_smpi.py: error: .*empty-store.jsonl has no tb-redistribute rows simulated with compute off"),
    C("report.py.store-missing", "report.py", ["/nonexistent/store.jsonl", "--out", "{tmp}/report"],
      r"report.py: error: .*No such file or directory: '/nonexistent/store.jsonl'"),
    C("report.py.store-empty", "report.py", ["{tmp}/empty-store.jsonl", "--out", "{tmp}/report"], r"report.py: error: .*"),
]


def write_files(tmp):
    for name, content in FILES.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))


def command(case, options, tmp):
    """The command line of a case, or (None, reason) when its tool is not in this build."""
    args = [a.replace("{tmp}", tmp) for a in case.args]
    if case.tool in PYTHON_TOOLS:
        return [PYTHON, os.path.join(ROOT, PYTHON_TOOLS[case.tool])] + args, None
    if case.tool in SHELL_TOOLS:
        return ["bash", os.path.join(ROOT, SHELL_TOOLS[case.tool])] + args, None
    binary = os.path.join(options.bin, case.tool)
    if not os.access(binary, os.X_OK):
        return None, f"{case.tool} is not built in {options.bin}" + (f": {NOT_BUILT[case.tool]}" if case.tool in NOT_BUILT else "")
    if case.tool not in MPI_TOOLS:
        return [binary] + args, None
    return [options.mpiexec, options.numproc_flag, str(case.ranks)] + options.mpiexec_flag + [binary] + args, None


def run_case(cmd, env, timeout):
    """(exit code, output, seconds, timed out); the whole process group goes on a timeout."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, text=True, errors="replace")
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    return proc.returncode, out, time.monotonic() - start, timed_out


def judge(case, code, out, timed_out, timeout):
    """Why the outcome fails the case, or '' when it passes."""
    if timed_out:
        return f"no answer within {timeout:.0f} s (a hang)"
    if code < 0:
        return f"killed by signal {-code}"
    if code == 0:
        return "exit code 0: the bad input was accepted"
    if 128 < code < 160:
        return f"exit code {code}: the launcher reports signal {code - 128}"
    crash = CRASH.search(out)
    if crash:
        return f"crash or escaped exception in the output: {crash.group(0)!r}"
    if not re.search(case.expect, out):
        return f"output does not match /{case.expect}/"
    return ""


def last_line(out):
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def markdown(results):
    rows = ["| case | command | expected (regex) | exit | s | outcome |", "|---|---|---|---|---|---|"]
    esc = lambda t: t.replace("|", "\\|")
    for case, cmd_text, code, seconds, outcome in results:
        rows.append(f"| {case.name} | `{esc(cmd_text)}` | `{esc(case.expect)}` | {code} | {seconds} | {esc(outcome)} |")
    return "\n".join(rows) + "\n"


def unfiled(families):
    """0 when every case's name starts with a tool of one of `families`, else 1, naming the others."""
    pattern = re.compile("^(" + "|".join(f"(?:{f})" for f in families) + r")\.")
    left = [c.name for c in CASES if not pattern.match(c.name)]
    for name in left:
        print(f"bad_input.py: case {name} is in no family of tests/bad_input.cmake, so ctest never runs it")
    return 1 if left else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run every bad-input case against the built tools.")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "mpich", "bin"), help="the build's bin folder")
    parser.add_argument("--mpiexec", default="mpiexec", help="the build's MPI launcher")
    parser.add_argument("--numproc-flag", default="-n")
    parser.add_argument("--mpiexec-flag", action="append", default=[], metavar="FLAG",
                        help="an extra launcher flag before the program (repeatable; --mpiexec-flag=--oversubscribe)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--markdown", help="write the table of cases and outcomes to this file")
    parser.add_argument("-k", dest="filter", help="run only the cases whose name contains this (or matches it as a regex)")
    parser.add_argument("--families", nargs="+", metavar="TOOLS",
                        help="run nothing; fail if a case's tool is in none of these families (tools joined by |, as "
                             "tests/bad_input.cmake gives them to -k): a case outside every family is never run by ctest")
    options = parser.parse_args(argv)
    if not options.timeout > 0:
        parser.error("--timeout must be positive")
    if options.families:
        return unfiled(options.families)

    cases = [c for c in CASES if not options.filter or options.filter in c.name or re.search(options.filter, c.name)]
    if not cases:
        print(f"bad_input.py: no case matches -k {options.filter}", file=sys.stderr)
        return 2
    results, failed, skipped = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="tb-bad-input-") as tmp:
        write_files(tmp)
        for case in cases:
            cmd, reason = command(case, options, tmp)
            if cmd is None:
                skipped += 1
                print(f"{case.name:50} skipped: {reason}")
                results.append((case, " ".join([case.tool] + case.args), "-", "-", f"skipped: {reason}"))
                continue
            code, out, seconds, timed_out = run_case(cmd, {**os.environ, **case.env}, options.timeout)
            why = judge(case, code, out, timed_out, options.timeout)
            failed += bool(why)
            env_text = " ".join(f"{k}={v}" for k, v in case.env.items())
            print(f"{case.name:50} exit {code:>4} {seconds:6.2f} s  {'FAIL: ' + why if why else 'ok'}")
            if why:
                print("    $ " + " ".join(cmd) + (f"   [{env_text}]" if env_text else ""))
                print("    " + "\n    ".join(out.strip().splitlines()[-8:]))
            cmd_text = " ".join(([env_text] if env_text else []) + (
                [f"mpiexec -n {case.ranks}"] if case.tool in MPI_TOOLS else []) + [case.tool] + case.args)
            results.append((case, cmd_text, code, f"{seconds:.2f}", f"FAIL: {why}" if why else f"ok: {last_line(out)}"))
    ran = len(cases) - skipped
    print(f"bad_input.py: {ran - failed} of {ran} cases passed, {failed} failed, {skipped} skipped "
          f"({len(cases)} cases; bin {options.bin})")
    if options.markdown:
        with open(options.markdown, "w") as f:
            f.write(markdown(results))
            f.write(f"\n{ran - failed} of {ran} cases passed, {failed} failed, {skipped} skipped.\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
