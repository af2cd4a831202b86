#!/usr/bin/python3
"""The experiment runner: expands an experiment definition into its points, runs each one with the
chosen mode, and appends the results to a JSON-lines store. Points already in the store are
skipped, so an interrupted run continues where it stopped.

    experiments/run.py experiments/definitions/sizes.json --mode intra
    experiments/run.py experiments/definitions/fig6_slab_strong.json --mpi openmpi --store results/store.jsonl
    experiments/run.py DEF --mode cluster --hostfile hosts        # a real cluster: mpiexec -f hosts
    experiments/run.py DEF --mode cluster --slurm out.sbatch      # writes a Slurm batch script
    experiments/run.py DEF --mode smpi --platform experiments/platforms/xc40-dragonfly.xml   # simulated ranks
    experiments/run.py DEF --list                                 # the points, nothing run

A definition is a JSON file:
    {"name": "...", "description": "...", "tool": "tb-bench",   # any tool in build/<mpi>/bin
     "ranks": [1, 2],                       # one point per rank count ...
     "matrix": {"--layouts": ["contiguous", "slab"], ...},   # ... times every combination here
     "points": [{"ranks": 2, "--shape": "128,64,128"}],       # or explicit points (weak scaling)
     "args": {"-m": "1:1M"}}                # the same for every point
Keys of "matrix", "points" and "args" that start with "-" are the tool's options; keys
"env:NAME" set the environment variable NAME for that point (over the mode's own); a point's
"mpi" (a list of MPI builds) runs it only with those --mpi builds (e.g. a CVAR only the
patched MPICH knows).
The tools experiments/launch.py lists in TOOLS need nothing more (tb-bench, tb-bench-pack,
tb-redistribute, tb-fft, tb-fftw-mpi, tb-beff, tb-ptrans, tb-model). Any other tool declares how
it writes its results and whether it is an MPI program:
     "output": "--json",                    # the option naming its results file
     "mpi": false                           # runs without mpiexec; "ranks" may then be left out
Results: Google Benchmark's JSON (--benchmark_out), a CSV table (--csv) or
{"metadata": {...}, "results": [rows]} (microbench/results.hpp); every row goes
to the store with the point, command, environment and metadata.
--args '{"-m": "1:64"}' overrides or adds options in every point (a different point key);
--ranks 4,16 runs every point at each of those rank counts instead of the definition's.

The store (JSON lines, one result row a line) and what counts as done:
  Every row carries its point's "key", "rows_in_point" (how many rows that point produced) and
  "point_run" (an id of the one append that wrote them). A point is done when the store holds
  all rows_in_point rows of one point_run of its key; a point with only some of its rows (the
  runner was killed while appending) is not done and runs again (its stray rows stay in the
  store; analysis/report.py's load() leaves them out). Rows of older stores, without
  rows_in_point, count as before: one row of a key makes its point done. A point that produced
  no rows writes nothing and so is never done.
  A point's rows are appended with one write() of their whole text, then flush and fsync, with
  SIGINT/SIGTERM held back meanwhile; a kill -9 or a crash can still cut that write, leaving one
  cut line at the end. A line that is not a JSON object (such a cut line, or a hand edit) is
  reported on stderr as FILE:LINE and skipped, by every run and --list, and the next append
  starts on a new line after it (the cut line stays; delete it by hand if you like).

Interrupts: Ctrl-C (SIGINT) and SIGTERM stop the point's job (its own process group: SIGTERM,
SIGKILL after a few seconds), remove the point's temporary directory, store nothing of that
point and exit with 128+signal and a message naming the point; a rerun continues from there.

Modes (what "mpiexec" means):
    intra    all ranks on this host, shared memory.
    cliques  MPICH: MPIR_CVAR_NUM_CLIQUES=<cliques> (default: one clique per rank) with
             UCX_TLS=self,tcp, so traffic between cliques takes the network path.
             Open MPI: --mca pml ob1 --mca btl self,tcp (every pair over TCP); node_leader sees
             the same cliques through TB_NUM_NODES.
    netns    an emulated cluster: K network namespaces on a bridge with tbf-limited links
             (experiments/netns.sh), MPICH hydra launching into them; root only.
    cluster  a real hostfile (--hostfile) or a Slurm batch script (--slurm).
    smpi     simulated ranks (SimGrid SMPI, docs/simulation.md): the smpi build's tool
             (build/smpi/bin) under its tb-smpirun on --platform, with a hostfile of the point's
             rank count (the platform's hosts in order, one rank per core). --compute off skips
             compute bursts (smpi/simulate-computation:no); --smpi-arrays shared (the default)
             gives the tools that can (SMPI_SHARED_ARRAYS) their arrays from SMPI's shared
             malloc, and their verification is then off; --ranks-per-node K puts at most K
             ranks on a host. Rows carry mpi "smpi", "platform",
             "smpi_compute", "smpi_arrays" and "verification"; the point key includes them, so
             each platform's points are their own.
The launch itself (mpiexec per MPI build and mode, the finalize-hang watch) is
experiments/launch.py, which the campaign scripts also use.
"""
import argparse
import csv
import hashlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch  # noqa: E402
from launch import MODES, ROOT, launcher  # noqa: E402,F401  (launcher: the one mpiexec logic)

sys.path.insert(0, os.path.join(ROOT, "analysis"))
from store import read_objects  # noqa: E402  (the one reader of a store's lines)

ENV_PREFIX = "env:"
# smpi mode: the tools that can take their arrays from SMPI's shared malloc, and the option.
SMPI_SHARED_ARRAYS = {"tb-redistribute": "--smpi-shared-arrays"}


def load_definition(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise ValueError(f"{path}: the definition cannot be read ({e.strerror})") from None
    except ValueError as e:
        raise ValueError(f"{path}: the definition is not JSON ({e})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: the definition must be a JSON object, not {type(d).__name__}")
    for key in ("name", "tool"):
        if key not in d:
            raise ValueError(f"{path}: the definition needs '{key}'")
    try:
        spec = launch.tool_spec(d["tool"], d)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if "points" not in d and "ranks" not in d and spec["mpi"]:
        raise ValueError(f"{path}: give 'ranks' (with an optional 'matrix') or explicit 'points'")
    return d


def tool_spec(definition):
    """How the definition's tool writes its results and whether it is an MPI program."""
    return launch.tool_spec(definition["tool"], definition)


def expand(definition, overrides=None, rank_counts=None):
    """The points of a definition: dicts of 'ranks', tool options and env:NAME variables, in a
    stable order. `overrides` (run.py --args) replace or add keys in every point; `rank_counts`
    (run.py --ranks, a list) runs every point at each of these rank counts instead of its own."""
    base = dict(definition.get("args", {}))
    overrides = overrides or {}
    # A tool that is not an MPI program runs as one process: its points have ranks 1 unless told.
    default_ranks = None if tool_spec(definition)["mpi"] else 1
    points = []
    if "points" in definition:
        for p in definition["points"]:
            point = {**base, **p, **overrides}
            if "ranks" not in point:
                if default_ranks is None:
                    raise ValueError(f"{definition['name']}: every explicit point needs 'ranks'")
                point["ranks"] = default_ranks
            points.append(point)
    else:
        matrix = definition.get("matrix", {})
        keys = sorted(matrix)
        for ranks in definition.get("ranks", [default_ranks]):
            for values in itertools.product(*(matrix[k] for k in keys)):
                points.append({**base, "ranks": ranks, **dict(zip(keys, values)), **overrides})
    if rank_counts is not None:
        if default_ranks == 1:
            raise ValueError(f"{definition['name']}: {definition['tool']} is not an MPI program; --ranks does not apply")
        own = sorted({p["ranks"] for p in points})
        if len(own) > 1:  # weak scaling: each point's sizes belong to its rank count
            raise ValueError(f"{definition['name']}: its points are at several rank counts ({own}); --ranks "
                             "applies to definitions whose points share one")
        points = [{**p, "ranks": n} for n in rank_counts for p in points]
    for p in points:
        if not isinstance(p["ranks"], int) or isinstance(p["ranks"], bool) or p["ranks"] < 1:
            raise ValueError(f"{definition['name']}: ranks must be positive integers, got {p['ranks']!r}")
        if default_ranks == 1 and p["ranks"] != 1:
            raise ValueError(f"{definition['name']}: {definition['tool']} is not an MPI program; its points run "
                             f"as one process, not {p['ranks']} ranks")
    unique = []
    for p in points:  # an override can make points equal: run each once
        if p not in unique:
            unique.append(p)
    return unique


def for_mpi(points, mpi):
    """The points that run with this MPI build: those without an "mpi" list, or naming it."""
    chosen = []
    known = launch.MPIS + (launch.SMPI,)
    for p in points:
        builds = p.get("mpi", [mpi])
        if not isinstance(builds, list) or not all(b in known for b in builds):
            raise ValueError(f"a point's \"mpi\" must be a list of MPI builds ({', '.join(known)}), "
                             f"not {builds!r}")
        if mpi in builds:
            chosen.append(p)
    return chosen


def point_key(definition, point, mode, mpi, simulation=None):
    """The point's identity in the store; `simulation` (smpi mode's smpi_fields) joins it, so that
    a point simulated on another platform or with other settings is another point."""
    fields = {"experiment": definition["name"], "tool": definition["tool"], "mode": mode, "mpi": mpi, "point": point}
    if simulation:
        fields["simulation"] = simulation
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def read_store(store, quiet=False):
    """The rows of a store, in order (analysis/store.py's reader: a line that is not a JSON
    object is reported as FILE:LINE on stderr, unless quiet, and skipped); none if it does not exist."""
    return read_objects(store, quiet) if os.path.exists(store) else []


def store_state(store, quiet=False):
    """(done, partial): the keys of the points the store holds completely, and of those it holds
    only some rows of (and no complete copy). See "The store" above."""
    done, counts = set(), {}
    for row in read_store(store, quiet):
        key, want = row.get("key"), row.get("rows_in_point")
        if not isinstance(key, str):  # not a row run.py wrote
            continue
        if not isinstance(want, int):  # a row of an older store: one row means done
            done.add(key)
            continue
        run_id = (key, str(row.get("point_run")))
        counts[run_id] = counts.get(run_id, 0) + 1
        if counts[run_id] == want:
            done.add(key)
    partial = {key for key, _ in counts} - done
    return done, partial


def done_keys(store, quiet=False):
    """The keys of the points the store holds completely."""
    return store_state(store, quiet)[0]


def append_rows(store, rows):
    """Appends `rows` (dicts) to the store: one write() of their whole text, then fsync, with
    SIGINT and SIGTERM held back until it is on disk. A store whose last line was cut short
    gets a newline first, so the cut line stays one bad line and these rows stay whole."""
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    held = {signal.SIGINT, signal.SIGTERM}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        fd = os.open(store, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                text = b"\n" + text
            view = memoryview(text)
            while view:  # one write() for a regular file; the loop only guards a short write
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # a held signal is raised here


def tool_args(point):
    args = []
    for k, v in point.items():
        if not k.startswith("-"):
            continue
        if v is True:
            args.append(k)
        elif "=" in k or k.startswith("--benchmark"):
            args.append(f"{k}={v}")
        else:
            args += [k, str(v)]
    return args


def point_env(point):
    """The point's own environment variables (keys env:NAME)."""
    return {k[len(ENV_PREFIX):]: str(v) for k, v in point.items() if k.startswith(ENV_PREFIX)}


def smpi_fields(definition, options):
    """What smpi mode adds to every row (and to the point key): the platform (as given, relative
    to the repository where it lies inside), compute, arrays and whether the tool verified."""
    if options.mode != launch.SMPI:
        return {}
    shared = options.smpi_arrays == "shared" and definition["tool"] in SMPI_SHARED_ARRAYS
    platform = os.path.abspath(options.platform)
    if platform.startswith(ROOT + os.sep):
        platform = os.path.relpath(platform, ROOT)
    fields = {"platform": platform, "smpi_compute": options.compute,
              "smpi_arrays": "shared" if shared else "private", "verification": "off" if shared else "on"}
    if options.ranks_per_node:  # only when set, so that the keys of filled nodes stay as they are
        fields["smpi_ranks_per_node"] = options.ranks_per_node
    return fields


def run_point(definition, point, mode, mpi, options):
    """Runs one point; returns the result rows (dicts) it produced, the seconds, the command and
    the environment it was given."""
    spec = tool_spec(definition)
    binary = launch.tool_binary(definition["tool"], mpi, options.bin)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.csv" if spec["format"] == "csv" else "out.json")
        args = tool_args(point) + launch.output_args(spec, out)
        if smpi_fields(definition, options).get("smpi_arrays") == "shared":
            args.append(SMPI_SHARED_ARRAYS[definition["tool"]])
        options.smpi_dir = tmp  # smpi mode writes the point's hostfile here
        cmd, env = launch.command(spec, binary, args, mode, mpi, point["ranks"], options, point_env(point))
        # Only MPI jobs can hang in MPI_Finalize; a CSV is written row by row, so it is not watched.
        watch = out if spec["mpi"] and spec["format"] != "csv" else None
        started = time.time()
        with open(os.path.join(tmp, "stdout"), "w") as so, open(os.path.join(tmp, "stderr"), "w") as se:
            returncode, finalize_hang = launch.run_command(cmd, env, watch, options.timeout, options.finalize_grace,
                                                           stdout=so, stderr=se)
        with open(os.path.join(tmp, "stdout")) as so, open(os.path.join(tmp, "stderr")) as se:
            stdout, stderr = so.read(), se.read()
        if (returncode != 0 and not finalize_hang) or not output_complete(out, spec["format"]):
            raise RuntimeError(f"{' '.join(shlex.quote(c) for c in cmd)} failed ({returncode}):\n"
                               f"{stdout[-2000:]}\n{stderr[-2000:]}")
        if finalize_hang:
            print(f" (results complete, the job hung in MPI_Finalize and was stopped after {options.finalize_grace:.0f} s)",
                  end="", flush=True)
        try:
            rows = read_rows(out, spec["format"])
        except (KeyError, TypeError, ValueError) as e:
            raise RuntimeError(f"{definition['tool']}: its results file is not the {spec['format']} it should be "
                               f"({type(e).__name__}: {e})") from None
    if finalize_hang:
        rows = [{**r, "finalize_hang": True} for r in rows]
    return rows, time.time() - started, cmd, env


def output_complete(path, fmt):
    if fmt == "csv":
        return os.path.isfile(path) and os.path.getsize(path) > 0
    return launch.complete_json(path)


def read_rows(path, fmt):
    """The result rows of a tool's output file, each with the run's metadata."""
    if fmt == "csv":
        with open(path, newline="") as f:
            return [{**{k: number(v) for k, v in r.items()}, "metadata": {}} for r in csv.DictReader(f)]
    with open(path) as f:
        doc = json.load(f)
    if fmt == "benchmark" or "benchmarks" in doc:
        return benchmark_rows(doc)
    return json_rows(doc)


def number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except (TypeError, ValueError):
            pass
    return text


def json_rows(doc):
    """The testbed's one results format, {"metadata": ..., "results": [rows]} (microbench/results.hpp)."""
    if not isinstance(doc, dict) or "results" not in doc:
        raise RuntimeError("the tool's JSON has no 'results'")
    results = doc["results"]
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise RuntimeError("the tool's 'results' is not a list of row objects")
    meta = doc.get("metadata", {})
    return [{**{k: v for k, v in r.items() if k != "samples_s"}, "metadata": meta} for r in results]


def benchmark_rows(doc):
    """Google Benchmark's {"context", "benchmarks"}: tb-bench's names <kind>/<layout>/<algorithm>/
    <bytes>/manual_time become those columns; any other benchmark keeps its name and counters."""
    meta = doc.get("context", {})
    rows = []
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        parts = b["name"].split("/")
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        if len(parts) >= 4 and parts[3].isdigit():
            rows.append({"kind": parts[0], "layout": parts[1], "algorithm": parts[2],
                         "bytes_per_peer": int(b.get("bytes_per_peer", parts[3])),
                         "time_s": b["real_time"] * unit, "median_s": b.get("median_s"),
                         "bytes_per_second": b.get("bytes_per_second"), "path": b.get("label", ""),
                         "metadata": meta})
        else:
            skip = {"name", "run_name", "run_type", "family_index", "per_family_instance_index", "repetitions",
                    "repetition_index", "threads", "real_time", "cpu_time", "time_unit", "label"}
            rows.append({"name": b["name"], "time_s": b["real_time"] * unit, "cpu_time_s": b["cpu_time"] * unit,
                         "path": b.get("label", ""), **{k: v for k, v in b.items() if k not in skip},
                         "metadata": meta})
    return rows


def write_slurm(definition_path, definition, options):
    points = for_mpi(expand(definition, options.args, options.ranks), options.mpi)
    if not points:
        raise ValueError(f"{definition['name']}: no point runs with --mpi {options.mpi}")
    most = max(p["ranks"] for p in points)
    extra = f" --args {shlex.quote(json.dumps(options.args))}" if options.args else ""
    if options.ranks:
        extra += f" --ranks {','.join(str(n) for n in options.ranks)}"
    extra += f" --bin {shlex.quote(os.path.abspath(options.bin))}" if options.bin else ""
    script = f"""#!/bin/bash
#SBATCH --job-name=tb-{definition['name']}
#SBATCH --ntasks={most}
#SBATCH --time={options.slurm_time}
# Written by experiments/run.py: runs every point of {definition_path} inside this allocation.
set -euo pipefail
cd {shlex.quote(ROOT)}
hosts=$(mktemp "${{TMPDIR:-/tmp}}/tb-hosts.$SLURM_JOB_ID.XXXXXX")
trap 'rm -f "$hosts"' EXIT
scontrol show hostnames "$SLURM_JOB_NODELIST" > "$hosts"
/usr/bin/python3 experiments/run.py {shlex.quote(os.path.abspath(definition_path))} --mode cluster \\
  --hostfile "$hosts" --mpi {options.mpi} --store {shlex.quote(os.path.abspath(options.store))}{extra}
"""
    with open(options.slurm, "w") as f:
        f.write(script)
    print(f"run.py: wrote {options.slurm} ({len(points)} points, up to {most} ranks); submit it with sbatch")


def json_object(text):
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def rank_list(text):
    """'4,8,16' -> [4, 8, 16]: positive rank counts, each once."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of rank counts: {text!r}") from None
    if any(v < 1 for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"rank counts must be positive and distinct: {text!r}")
    return values


def parse_options(argv):
    """The command line's options, checked (argparse exits with status 2 on an error)."""
    parser = argparse.ArgumentParser(description="Run an experiment definition; results go to a JSON-lines store.")
    parser.add_argument("definition")
    parser.add_argument("--mode", default="intra", choices=MODES)
    parser.add_argument("--mpi", choices=launch.MPIS, help="the MPI build (default mpich; smpi mode runs build/smpi)")
    parser.add_argument("--store", default=os.path.join(ROOT, "results", "store.jsonl"))
    parser.add_argument("--bin", help="folder of the tools (default build/<mpi>/bin)")
    parser.add_argument("--args", type=json_object, default={}, metavar="JSON",
                        help='options set in every point, over the definition\'s, e.g. \'{"-m": "1:64"}\'')
    parser.add_argument("--ranks", type=rank_list, metavar="N[,N...]",
                        help="run every point at each of these rank counts instead of the definition's "
                             "(e.g. a 2-rank definition on a bigger host); only for definitions whose points "
                             "share one rank count")
    parser.add_argument("--cliques", type=int, help="cliques mode: number of cliques (default: one per rank)")
    parser.add_argument("--hosts", type=int, default=2, help="netns mode: emulated hosts (experiments/netns.sh up K)")
    parser.add_argument("--rate", default="2gbit", help="netns mode: tbf rate of every link (tc syntax, e.g. 2gbit)")
    parser.add_argument("--hostfile", help="cluster mode: the hosts to run on")
    parser.add_argument("--slurm", help="cluster mode: write this Slurm batch script instead of running")
    parser.add_argument("--slurm-time", default="01:00:00")
    parser.add_argument("--platform", help="smpi mode: the SimGrid platform file (experiments/platforms/*.xml)")
    parser.add_argument("--compute", choices=launch.COMPUTE, default="on",
                        help="smpi mode: simulate compute bursts (timed here, scaled by the host speed) or skip them")
    parser.add_argument("--ranks-per-node", type=int,
                        help="smpi mode: at most this many ranks per simulated host (default: as many as its cores), "
                             "e.g. 1 for the paper's 'distributed' runs")
    parser.add_argument("--smpi-arrays", choices=("shared", "private"), default="shared",
                        help="smpi mode: shared: tools that can take their arrays from SMPI's shared malloc "
                             "(little memory, verification off); private: ordinary arrays, verified")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per point")
    parser.add_argument("--finalize-grace", type=float, default=20,
                        help="seconds a job may take to exit once its results are written")
    parser.add_argument("--list", action="store_true", help="print the points and whether they are done")
    options = parser.parse_args(argv)
    if not options.timeout > 0:
        parser.error(f"--timeout must be a positive number of seconds, not {options.timeout}")
    if options.hosts < 1 or (options.cliques is not None and options.cliques < 1):
        parser.error("--hosts and --cliques must be at least 1")
    error = check_smpi_options(options)
    if error:
        parser.error(error)
    if options.mode == "cluster" and not options.hostfile and not options.slurm:
        parser.error("cluster mode needs --hostfile (or --slurm to write a batch script)")
    return options


def check_can_run(definition, options):
    """The error text where the points to run cannot start (a tool not built, netns mode without
    root), else None."""
    try:
        launch.check_binary(definition["tool"], options.mpi, options.bin)
        if options.mode == launch.SMPI:
            launch.check_binary("tb-smpirun", options.mpi, options.bin)
    except ValueError as e:
        return f"{definition['name']}: {e}"
    if options.mode == "netns" and os.geteuid() != 0:
        return "netns mode creates network namespaces and needs root; run it as root"
    return None


def main(argv=None):
    options = parse_options(argv)
    try:
        definition = load_definition(options.definition)
        points = for_mpi(expand(definition, options.args, options.ranks), options.mpi)
    except ValueError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2
    if options.mode == "cluster" and options.slurm:
        try:
            write_slurm(options.definition, definition, options)
        except ValueError as e:
            print(f"run.py: {e}", file=sys.stderr)
            return 2
        return 0
    if options.mode == launch.SMPI:
        try:  # a platform that cannot hold the largest point fails now, not after hours of others
            if points:
                launch.smpi_hostfile(options.platform, max(p["ranks"] for p in points), options.ranks_per_node)
        except ValueError as e:
            print(f"run.py: {e}", file=sys.stderr)
            return 2
    simulation = smpi_fields(definition, options)
    done, partial = store_state(options.store)
    planned = [(p, point_key(definition, p, options.mode, options.mpi, simulation)) for p in points]
    skipped = sum(1 for _, k in planned if k in done)
    cut = sum(1 for _, k in planned if k in partial)
    print(f"run.py: {definition['name']}: {len(points)} points, {skipped} already in {options.store}"
          f"{f', {cut} only partly there (run again)' if cut else ''}, mode {options.mode}, {options.mpi}"
          + "".join(f", {k} {v}" for k, v in simulation.items()))
    if options.list:
        for p, k in planned:
            state = "done" if k in done else "partial, to run" if k in partial else "to run"
            print(f"  [{state}] {k} {json.dumps(p, sort_keys=True)}")
        return 0
    to_run = any(k not in done for _, k in planned)
    error = check_can_run(definition, options) if to_run else None
    if error:
        print(f"run.py: {error}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(options.store)), exist_ok=True)
    netns = os.path.join(ROOT, "experiments", "netns.sh")
    # SIGTERM unwinds like Ctrl-C: run_command stops the job's process group, the point's
    # temporary directory goes, netns comes down (the finally below).
    received = []
    try:
        with launch.sigterm_interrupts() as received:
            try:
                if options.mode == "netns" and to_run:
                    subprocess.run([netns, "up", str(options.hosts), options.rate], check=True)
                return run_points(definition, planned, done, options, received)
            finally:
                if options.mode == "netns" and to_run:
                    subprocess.run([netns, "down"], check=False)
    except KeyboardInterrupt:  # outside a point (run_points reports its own)
        signum = received[0] if received else signal.SIGINT
        print(f"run.py: interrupted ({signal.Signals(signum).name}); store {options.store}", file=sys.stderr)
        return 128 + signum


def check_smpi_options(options):
    """Resolves --mpi for the mode (smpi mode runs the smpi build); the error text for options
    that do not fit the mode, else None."""
    if options.mode != launch.SMPI:
        options.mpi = options.mpi or "mpich"
        if options.platform or options.ranks_per_node:
            return "--platform and --ranks-per-node are for smpi mode (--mode smpi)"
        return None
    if options.mpi:
        return f"smpi mode runs the smpi build (build/smpi); --mpi {options.mpi} is for the other modes"
    options.mpi = launch.SMPI
    if not options.platform:
        return "smpi mode needs --platform, a SimGrid platform file (experiments/platforms/*.xml)"
    if options.ranks_per_node is not None and options.ranks_per_node < 1:
        return f"--ranks-per-node must be at least 1, not {options.ranks_per_node}"
    if not os.path.isfile(options.platform):
        return f"--platform {options.platform}: no such platform file (experiments/platforms/ has the testbed's)"
    return None


def run_points(definition, planned, done, options, received=()):
    failures = 0
    current = None
    try:
        for i, (p, k) in enumerate(planned, 1):
            if k in done:
                continue
            label = " ".join(f"{key}={value}" for key, value in p.items())
            current = (i, label, k)
            print(f"  [{i}/{len(planned)}] {label} ...", end="", flush=True)
            try:
                rows, seconds, cmd, env = run_point(definition, p, options.mode, options.mpi, options)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError, OSError) as e:
                failures += 1
                print(f" FAILED\n{e}", file=sys.stderr)
                continue
            run_id = uuid.uuid4().hex[:16]
            if rows:
                    append_rows(options.store, [
                    {"key": k, "experiment": definition["name"], "tool": definition["tool"],
                     "mode": options.mode, "mpi": options.mpi, "ranks": p["ranks"],
                     "point": p, "command": " ".join(cmd), "environment": env,
                     **({"netns_rate": options.rate, "netns_hosts": options.hosts}
                        if options.mode == "netns" else {}), **smpi_fields(definition, options), **r,
                     "key": k, "rows_in_point": len(rows), "point_run": run_id} for r in rows])
            print(f" {len(rows)} rows, {seconds:.1f} s")
            current = None
    except KeyboardInterrupt:
        signum = received[0] if received else signal.SIGINT
        name = signal.Signals(signum).name
        print(" INTERRUPTED", flush=True)
        if current is None:
            print(f"run.py: interrupted ({name}) between points; store {options.store}", file=sys.stderr)
        else:
            i, label, k = current
            stored = k in done_keys(options.store, quiet=True)
            print(f"run.py: interrupted ({name}) during point [{i}/{len(planned)}] {label} (key {k}); "
                  + ("its rows were stored" if stored else "its job was stopped and nothing of it stored")
                  + f"; run again to continue ({options.store})", file=sys.stderr)
        return 128 + signum
    print(f"run.py: done, {failures} failed point(s); store {options.store}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
