#!/usr/bin/python3
"""experiments/tune.py end to end on one build (ctest auto.tune.end-to-end): a tiny sweep (2 ranks,
one node and two emulated nodes, 1-256 B per peer), the table it wrote checked (format, version,
every node layout and class covered from 0 bytes to unbounded, only registered algorithms, never
auto, the agreement's cost measured at both node layouts, the slab's points in the 64-byte band at
sizes where vector64 has none), then tb-bench runs auto with TB_TUNING_TABLE on each node layout
and its reported path must name the table's choice, on the slab too; without a table it names the
built-in rule, and a bad table is an error naming the file. A second, blocking-only sweep whose
one-algorithm rule takes both node layouts must keep the per-size bands as "prepared" entries, and
auto's prepared calls must follow them. Prints "tune end-to-end: ok"."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import launch  # noqa: E402
import tune  # noqa: E402


def check(condition, what):
    if not condition:
        print(f"tune end-to-end: FAILED: {what}")
        sys.exit(1)


def check_table(table, registered):
    check(table.get("format") == "tb-alltoallw-tuning" and table.get("version") == 1, "format and version")
    for key in ("date_utc", "git_commit", "mpi_library", "host", "command"):
        check(table["metadata"].get(key), f"metadata.{key}")
    groups = {}
    for e in table["entries"]:
        check(e["algorithm"] in registered and e["algorithm"] != "auto", f"algorithm {e['algorithm']} registered")
        n = e["node_layout"]
        groups.setdefault((n["nodes"], e["layout_class"], e.get("calls", "blocking")), []).append(e["bytes_per_peer"])
    check({k[0] for k in groups} == {1, 2}, f"both node layouts in the table: {sorted(groups)}")
    check({k[2] for k in groups} == {"blocking", "persistent"}, f"blocking and persistent entries: {sorted(groups)}")
    for key, bands in groups.items():
        check(bands[0][0] == 0 and bands[-1][1] is None, f"{key}: bands from 0 to unbounded: {bands}")
        for a, b in zip(bands, bands[1:]):
            check(a[1] + 1 == b[0], f"{key}: bands adjacent: {bands}")


def auto_path(options, nodes, env, calls="blocking", layout="contiguous", size=64):
    """The path tb-bench reports for auto at `size` bytes per peer on `layout` (the prepared form's
    with calls="persistent")."""
    out = os.path.join(options.out, f"auto-{nodes}-{calls}-{layout}.json")
    spec = launch.tool_spec("tb-bench")
    program = launch.check_binary("tb-bench", options.mpi, os.path.join(options.build, "bin"))
    args = ["--algorithms", "auto", "--layouts", layout, "-m", str(size), "-i", "3", "--calls",
            "persistent" if calls == "persistent" else "blocking"] + launch.output_args(spec, out)
    cmd, job_env = launch.command(spec, program, args, "intra" if nodes == 1 else "cliques", options.mpi, 2,
                                  argparse.Namespace(cliques=nodes, hosts=nodes, hostfile=None), env)
    if os.path.exists(out):
        os.remove(out)  # an earlier run's file would look complete at once, and the job be stopped 5 s later
    status, _ = launch.run_command(cmd, job_env, watch=out, timeout=120, finalize_grace=5)
    check(launch.complete_json(out), f"tb-bench with {env} wrote no complete results (exit status {status})")
    with open(out) as f:
        return json.load(f)["benchmarks"][-1]["label"]


def choice_at(table, nodes, layout_class, size, calls="blocking"):
    """The table's algorithm for a call of `size` bytes per peer in `layout_class` on `nodes` nodes."""
    return next(e["algorithm"] for e in table["entries"] if e["node_layout"]["nodes"] == nodes
                and e.get("calls", "blocking") == calls and e["layout_class"] == layout_class
                and e["bytes_per_peer"][0] <= size and (e["bytes_per_peer"][1] is None or e["bytes_per_peer"][1] >= size))


def check_slab(options, table, table_path):
    """The slab's points joined the 64-byte band (its blocks are 16-32 B at 32-256 B per peer, and
    vector64 counts only from 128 B), and auto runs the band's choice on a slab call of 256 B."""
    sizes = {s for e in table["entries"] if e["layout_class"] == "block64" and e.get("calls", "blocking") == "blocking"
             for s in e["sizes"]}
    check({32, 64} <= sizes, f"the slab's points at 32 and 64 B in the 64-byte band: {sorted(sizes)}")
    chosen = choice_at(table, 1, "block64", 256)
    path = auto_path(options, 1, {"TB_TUNING_TABLE": table_path}, layout="slab", size=256)
    print(f"tune end-to-end: 1 node, 256 B slab: table {chosen}, tb-bench path {path!r}")
    # The redistribution's calls are labelled with the Alltoallw they ran.
    check(path.removeprefix("alltoallw:").startswith("auto -> " + chosen),
          "auto follows the 64-byte band's entry on the slab")


def check_prepared_bands(options):
    """A blocking-only sweep (no persistent entries) whose one-algorithm rule takes every node layout
    (WITHIN and WORST 1e9: any algorithm qualifies, however loaded the machine): the blocking entries are one
    band per class with the rule's reason; the per-size bands stay as "prepared" entries, adjacent
    from 0 to unbounded, each band's algorithm the fastest (smallest worst ratio) at every size it
    covers; auto's prepared calls name those bands while its blocking calls name the one algorithm."""
    table_path = os.path.join(options.out, "tuning-prepared.json")
    status = tune.main(["--build", options.build, "--mpi", options.mpi, "-n", "2", "--nodes", "1,2", "-m", "1:256",
                        "--layouts", "contiguous", "--algorithms", "native,pairwise,pack_alltoallv", "--min-time", "0.001",
                        "--one-algorithm", "0.01,1e9,1e9",
                        "--mpich-json", "none", "-o", table_path])
    check(status == 0, f"tune.py (blocking only, one algorithm) exited {status}")
    with open(table_path) as f:
        table = json.load(f)
    entries = table["entries"]
    check(not any(e.get("calls") == "persistent" for e in entries), "no persistent entries without --calls")
    for nodes in (1, 2):
        at = [e for e in entries if e["node_layout"]["nodes"] == nodes]
        blocking = [e for e in at if e.get("calls", "blocking") == "blocking"]
        prepared = [e for e in at if e.get("calls") == "prepared"]
        check(len(blocking) == 1 and blocking[0]["rule"].startswith("one algorithm for the node layout"),
              f"{nodes} node(s): the rule takes the node layout: {blocking}")
        check(prepared and prepared[0]["bytes_per_peer"][0] == 0 and prepared[-1]["bytes_per_peer"][1] is None,
              f"{nodes} node(s): per-size bands kept as prepared entries: {prepared}")
        for a, b in zip(prepared, prepared[1:]):
            check(a["bytes_per_peer"][1] + 1 == b["bytes_per_peer"][0], f"{nodes} node(s): prepared bands adjacent")
        for band in prepared:
            ratios = band["worst_over_fastest"]
            for i, size in enumerate(band["sizes"]):
                best = min(r[i] for r in ratios.values() if r[i] is not None)
                check(ratios[band["algorithm"]][i] == best,
                      f"{nodes} node(s): prepared band {band['bytes_per_peer']} runs the fastest at {size} B: {ratios}")
        for calls, prefix, kind in (("blocking", "auto -> ", "blocking"),
                                    ("persistent", "auto (per-size bands for prepared calls) -> ", "prepared")):
            chosen = choice_at(table, nodes, "contiguous", 64, kind)
            path = auto_path(options, nodes, {"TB_TUNING_TABLE": table_path}, calls)
            print(f"tune end-to-end: {nodes} node(s), 64 B contiguous, rule table, {calls}: table {chosen}, "
                  f"tb-bench path {path!r}")
            check(path.startswith(prefix + chosen), f"auto follows the table's {kind} entries on {nodes} node(s)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--mpi", default="mpich")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    options.mpi = "openmpi" if options.mpi == "openmpi" else "mpich"
    os.makedirs(options.out, exist_ok=True)
    table_path = os.path.join(options.out, "tuning.json")
    status = tune.main(["--build", options.build, "--mpi", options.mpi, "-n", "2", "--nodes", "1,2", "-m", "1:256",
                        "--layouts", "contiguous,vector64,slab", "--min-time", "0.001", "--calls", "blocking,persistent",
                        "-o", table_path])
    check(status == 0, f"tune.py exited {status}")
    with open(table_path) as f:
        table = json.load(f)
    check_table(table, tune.registered_algorithms(os.path.join(options.build, "bin"), options.mpi))
    check(os.path.isfile(table["metadata"]["mpich_selection"]["file"]), "the MPICH selection JSON written")
    agreements = table["metadata"].get("agreement_s", {})
    check(len(agreements) == 2 and all(s >= 0 for s in agreements.values()),
          f"auto's agreement priced at both node layouts: {agreements}")
    for nodes in (1, 2):
        for calls, prefix in (("blocking", "auto -> "), ("persistent", "auto (persistent measurements) -> ")):
            chosen = choice_at(table, nodes, "contiguous", 64, calls)
            path = auto_path(options, nodes, {"TB_TUNING_TABLE": table_path}, calls)
            print(f"tune end-to-end: {nodes} node(s), 64 B contiguous, {calls}: table {chosen}, tb-bench path {path!r}")
            check(path.startswith(prefix + chosen), f"auto follows the table's {calls} entries on {nodes} node(s)")
    check_slab(options, table, table_path)
    check_prepared_bands(options)
    path = auto_path(options, 1, {"TB_TUNING_TABLE": ""})
    check(path == "auto (built-in rule) -> native", f"no table: {path!r}")
    bad = os.path.join(options.out, "bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "tb-alltoallw-tuning", "version": 9}')
    program = launch.check_binary("tb-bench", options.mpi, os.path.join(options.build, "bin"))
    run = subprocess.run([program, "--algorithms", "auto", "-m", "64"], capture_output=True, text=True,
                         env={**os.environ, "TB_TUNING_TABLE": bad}, timeout=60)
    check(run.returncode == 2 and bad in run.stderr and "version 9" in run.stderr, f"bad table: {run.stderr!r}")
    print("tune end-to-end: ok")


if __name__ == "__main__":
    main()
