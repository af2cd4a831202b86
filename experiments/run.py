#!/usr/bin/python3
"""The experiment runner: expands an experiment definition into its points, runs each one with the
chosen mode, and appends the results to a JSON-lines store. Points already in the store are
skipped, so an interrupted run continues where it stopped.

    experiments/run.py experiments/definitions/sizes.json --mode intra
    experiments/run.py experiments/definitions/fig6_slab_strong.json --mpi openmpi --store results/store.jsonl
    experiments/run.py DEF --mode cluster --hostfile hosts        # a real cluster: mpiexec -f hosts
    experiments/run.py DEF --mode cluster --slurm out.sbatch      # writes a Slurm batch script
    experiments/run.py DEF --list                                 # the points, nothing run

A definition is a JSON file:
    {"name": "...", "description": "...", "tool": "tb-bench" | "tb-fft" | "tb-redistribute",
     "ranks": [1, 2],                       # one point per rank count ...
     "matrix": {"--layouts": ["contiguous", "slab"], ...},   # ... times every combination here
     "points": [{"ranks": 2, "--shape": "128,64,128"}],       # or explicit points (weak scaling)
     "args": {"-m": "1:1M"}}                # the same for every point
Keys of "matrix", "points" and "args" that start with "-" are the tool's options.

Modes (what "mpiexec" means):
    intra    all ranks on this host, shared memory.
    cliques  MPICH: MPIR_CVAR_NUM_CLIQUES=<cliques> (default: one clique per rank) with
             UCX_TLS=self,tcp, so traffic between cliques takes the network path.
             Open MPI: --mca pml ob1 --mca btl self,tcp (every pair over TCP); node_leader sees
             the same cliques through TB_NUM_NODES.
    netns    an emulated cluster: K network namespaces on a bridge with tbf-limited links
             (experiments/netns.sh), MPICH hydra launching into them; root only.
    cluster  a real hostfile (--hostfile) or a Slurm batch script (--slurm).
"""
import argparse
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("intra", "cliques", "netns", "cluster")


def load_definition(path):
    with open(path) as f:
        d = json.load(f)
    for key in ("name", "tool"):
        if key not in d:
            raise ValueError(f"{path}: the definition needs '{key}'")
    if d["tool"] not in ("tb-bench", "tb-fft", "tb-redistribute"):
        raise ValueError(f"{path}: tool must be tb-bench, tb-fft or tb-redistribute, not {d['tool']!r}")
    if "points" not in d and "ranks" not in d:
        raise ValueError(f"{path}: give 'ranks' (with an optional 'matrix') or explicit 'points'")
    return d


def expand(definition):
    """The points of a definition: dicts of 'ranks' and tool options, in a stable order."""
    base = dict(definition.get("args", {}))
    points = []
    if "points" in definition:
        for p in definition["points"]:
            if "ranks" not in p:
                raise ValueError(f"{definition['name']}: every explicit point needs 'ranks'")
            points.append({**base, **p})
    else:
        matrix = definition.get("matrix", {})
        keys = sorted(matrix)
        for ranks in definition["ranks"]:
            for values in itertools.product(*(matrix[k] for k in keys)):
                points.append({**base, "ranks": ranks, **dict(zip(keys, values))})
    for p in points:
        if not isinstance(p["ranks"], int) or p["ranks"] < 1:
            raise ValueError(f"{definition['name']}: ranks must be positive integers, got {p['ranks']!r}")
    return points


def point_key(definition, point, mode, mpi):
    text = json.dumps({"experiment": definition["name"], "tool": definition["tool"], "mode": mode, "mpi": mpi,
                       "point": point}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def done_keys(store):
    keys = set()
    if os.path.exists(store):
        with open(store) as f:
            for line in f:
                line = line.strip()
                if line:
                    keys.add(json.loads(line).get("key"))
    return keys


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


def launcher(mode, mpi, ranks, options):
    """The command prefix and environment that start `ranks` processes in `mode`."""
    env = {}
    if mode == "cliques":
        cliques = options.cliques or ranks
        if mpi == "mpich":
            env.update({"MPIR_CVAR_NUM_CLIQUES": str(cliques), "UCX_TLS": "self,tcp"})
        env["TB_UCX_TLS"] = "self,tcp"  # ucx_zcopy's own UCX context takes the network path too
        env["TB_NUM_NODES"] = str(cliques)
    if mpi == "mpich":
        if mode == "netns":
            hosts = ",".join(f"tbhost{i + 1}" for i in range(options.hosts))
            env["UCX_TLS"] = "self,tcp"  # the namespaces share /dev/shm: keep UCX off shared memory
            env["TB_UCX_TLS"] = "self,tcp"
            return (["mpiexec.mpich", "-hosts", hosts, "-launcher", "ssh", "-launcher-exec",
                     os.path.join(ROOT, "experiments", "netns_exec.sh"), "-iface", "tbbr0", "-n", str(ranks)], env)
        cmd = ["mpiexec.mpich", "-n", str(ranks)]
        if mode == "cluster" and options.hostfile:
            cmd = ["mpiexec.mpich", "-f", options.hostfile, "-n", str(ranks)]
        return cmd, env
    if mpi == "openmpi":
        if mode == "netns":
            raise ValueError("netns mode launches with MPICH's hydra; use --mpi mpich")
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
        cmd = ["mpiexec.openmpi", "--oversubscribe", "-n", str(ranks)]
        if mode == "cliques":
            cmd += ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"]
        if mode == "cluster" and options.hostfile:
            cmd += ["--hostfile", options.hostfile]
        return cmd, env
    raise ValueError(f"unknown MPI {mpi!r} (mpich or openmpi)")


def run_point(definition, point, mode, mpi, options):
    """Runs one point; returns the result rows (dicts) it produced."""
    tool = definition["tool"]
    binary = os.path.join(options.bin or os.path.join(ROOT, "build", mpi, "bin"), tool)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        args = tool_args(point)
        if tool == "tb-bench":
            args += [f"--benchmark_out={out}", "--benchmark_out_format=json"]
        else:
            args += ["--json", out]
        prefix, env = launcher(mode, mpi, point["ranks"], options)
        cmd = prefix + [binary] + args
        full_env = {**os.environ, **env}
        started = time.time()
        finalize_hang = False
        with open(os.path.join(tmp, "stdout"), "w") as so, open(os.path.join(tmp, "stderr"), "w") as se:
            proc = subprocess.Popen(cmd, env=full_env, stdout=so, stderr=se, text=True, start_new_session=True)
            written_at = None
            while proc.poll() is None:
                time.sleep(0.2)
                if time.time() - started > options.timeout:
                    stop(proc)
                    raise subprocess.TimeoutExpired(cmd, options.timeout)
                # MPICH 4.0.2 with UCX over tcp can hang in MPI_Finalize after a run that used
                # node_leader's inter-node path (README, "Known problems"). The tools write their
                # results before MPI_Finalize: once the output is complete, the run gets a grace
                # period to exit, then it is stopped and its rows are marked finalize_hang.
                if written_at is None and complete_json(out):
                    written_at = time.time()
                if written_at is not None and time.time() - written_at > options.finalize_grace:
                    stop(proc)
                    finalize_hang = True
                    break
        with open(os.path.join(tmp, "stdout")) as so, open(os.path.join(tmp, "stderr")) as se:
            stdout, stderr = so.read(), se.read()
        if (proc.returncode != 0 and not finalize_hang) or not complete_json(out):
            raise RuntimeError(f"{' '.join(shlex.quote(c) for c in cmd)} failed ({proc.returncode}):\n"
                               f"{stdout[-2000:]}\n{stderr[-2000:]}")
        if finalize_hang:
            print(f" (results complete, the job hung in MPI_Finalize and was stopped after {options.finalize_grace:.0f} s)",
                  end="", flush=True)
        with open(out) as f:
            doc = json.load(f)
    rows = []
    extra = {"finalize_hang": True} if finalize_hang else {}
    if tool == "tb-bench":
        meta = doc.get("context", {})
        for b in doc["benchmarks"]:
            parts = b["name"].split("/")  # <kind>/<layout>/<algorithm>/<bytes>/manual_time
            unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
            rows.append({"kind": parts[0], "layout": parts[1], "algorithm": parts[2],
                         "bytes_per_peer": int(b.get("bytes_per_peer", parts[3])),
                         "time_s": b["real_time"] * unit, "median_s": b.get("median_s"),
                         "bytes_per_second": b.get("bytes_per_second"), "path": b.get("label", ""),
                         "metadata": meta, **extra})
    else:
        meta = doc.get("metadata", {})
        for r in doc["results"]:
            rows.append({**{k: v for k, v in r.items() if k != "samples_s"}, "metadata": meta, **extra})
    return rows, time.time() - started, cmd, env


def stop(proc):
    """Ends the launcher and everything it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def complete_json(path):
    try:
        with open(path) as f:
            json.load(f)
        return True
    except (OSError, ValueError):
        return False


def write_slurm(definition_path, definition, options):
    points = expand(definition)
    most = max(p["ranks"] for p in points)
    script = f"""#!/bin/bash
#SBATCH --job-name=tb-{definition['name']}
#SBATCH --ntasks={most}
#SBATCH --time={options.slurm_time}
# Written by experiments/run.py: runs every point of {definition_path} inside this allocation.
set -euo pipefail
cd {shlex.quote(ROOT)}
scontrol show hostnames "$SLURM_JOB_NODELIST" > hosts.$SLURM_JOB_ID
/usr/bin/python3 experiments/run.py {shlex.quote(os.path.abspath(definition_path))} --mode cluster \\
  --hostfile hosts.$SLURM_JOB_ID --mpi {options.mpi} --store {shlex.quote(os.path.abspath(options.store))}
"""
    with open(options.slurm, "w") as f:
        f.write(script)
    print(f"run.py: wrote {options.slurm} ({len(points)} points, up to {most} ranks); submit it with sbatch")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run an experiment definition; results go to a JSON-lines store.")
    parser.add_argument("definition")
    parser.add_argument("--mode", default="intra", choices=MODES)
    parser.add_argument("--mpi", default="mpich", choices=("mpich", "openmpi"))
    parser.add_argument("--store", default=os.path.join(ROOT, "results", "store.jsonl"))
    parser.add_argument("--bin", help="folder of the tools (default build/<mpi>/bin)")
    parser.add_argument("--cliques", type=int, help="cliques mode: number of cliques (default: one per rank)")
    parser.add_argument("--hosts", type=int, default=2, help="netns mode: emulated hosts (experiments/netns.sh up K)")
    parser.add_argument("--rate", default="2gbit", help="netns mode: tbf rate of every link (tc syntax, e.g. 2gbit)")
    parser.add_argument("--hostfile", help="cluster mode: the hosts to run on")
    parser.add_argument("--slurm", help="cluster mode: write this Slurm batch script instead of running")
    parser.add_argument("--slurm-time", default="01:00:00")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per point")
    parser.add_argument("--finalize-grace", type=float, default=20,
                        help="seconds a job may take to exit once its results are written")
    parser.add_argument("--list", action="store_true", help="print the points and whether they are done")
    options = parser.parse_args(argv)

    definition = load_definition(options.definition)
    if options.mode == "cluster" and options.slurm:
        write_slurm(options.definition, definition, options)
        return 0
    if options.mode == "cluster" and not options.hostfile:
        parser.error("cluster mode needs --hostfile (or --slurm to write a batch script)")
    points = expand(definition)
    done = done_keys(options.store)
    planned = [(p, point_key(definition, p, options.mode, options.mpi)) for p in points]
    skipped = sum(1 for _, k in planned if k in done)
    print(f"run.py: {definition['name']}: {len(points)} points, {skipped} already in {options.store}, "
          f"mode {options.mode}, {options.mpi}")
    if options.list:
        for p, k in planned:
            print(f"  [{'done' if k in done else 'to run'}] {k} {json.dumps(p, sort_keys=True)}")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(options.store)), exist_ok=True)
    netns = os.path.join(ROOT, "experiments", "netns.sh")
    if options.mode == "netns" and any(k not in done for _, k in planned):
        if os.geteuid() != 0:
            print("run.py: netns mode creates network namespaces and needs root; run it as root", file=sys.stderr)
            return 2
        subprocess.run([netns, "up", str(options.hosts), options.rate], check=True)
    try:
        return run_points(definition, planned, done, options)
    finally:
        if options.mode == "netns" and any(k not in done for _, k in planned):
            subprocess.run([netns, "down"], check=False)


def run_points(definition, planned, done, options):
    failures = 0
    for i, (p, k) in enumerate(planned, 1):
        if k in done:
            continue
        label = " ".join(f"{key}={value}" for key, value in p.items())
        print(f"  [{i}/{len(planned)}] {label} ...", end="", flush=True)
        try:
            rows, seconds, cmd, env = run_point(definition, p, options.mode, options.mpi, options)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            failures += 1
            print(f" FAILED\n{e}", file=sys.stderr)
            continue
        with open(options.store, "a") as f:
            for r in rows:
                f.write(json.dumps({"key": k, "experiment": definition["name"], "tool": definition["tool"],
                                    "mode": options.mode, "mpi": options.mpi, "ranks": p["ranks"],
                                    "point": p, "command": " ".join(cmd), "environment": env,
                                    **({"netns_rate": options.rate, "netns_hosts": options.hosts}
                                       if options.mode == "netns" else {}), **r}) + "\n")
        print(f" {len(rows)} rows, {seconds:.1f} s")
    print(f"run.py: done, {failures} failed point(s); store {options.store}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
