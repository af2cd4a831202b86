#!/usr/bin/python3
"""The one launcher of the testbed's tools: how each tool is asked for its results, which tools are
MPI programs, the mpiexec command of every MPI build and mode, and a run that survives a hang in
MPI_Finalize after complete results. experiments/run.py imports it for every point; the campaign
scripts (model_validation.sh, fft_head_to_head.sh) call it for every launch:

    experiments/launch.py [--mpi mpich|openmpi|mpich-patched] [--mode intra|cliques|netns|cluster|smpi] [-n RANKS]
                          [--bin DIR] [--env NAME=VALUE ...] [--out FILE] TOOL [TOOL ARGS ...]

    experiments/launch.py -n 2 --out beff.json tb-beff --fit-out host.json
    experiments/launch.py --mpi openmpi -n 2 /usr/bin/python3 experiments/mpi4py_fft_bench.py --json f.json
    experiments/launch.py tb-model --shape 8,8,8 --grid 2        # not an MPI program: no mpiexec
    experiments/launch.py --print -n 4 --mode cliques tb-bench   # the command and environment only
    experiments/launch.py --mode smpi --platform experiments/platforms/xc40-dragonfly.xml -n 64 tb-redistribute

TOOL is a program in build/<mpi>/bin (or --bin) or a path to one; programs not in TOOLS below are
taken as MPI programs unless --no-mpi. --out FILE asks the tool for its results file the tool's own way (TOOLS below:
--json FILE, or Google Benchmark's --benchmark_out=FILE --benchmark_out_format=json) and, for MPI
tools, stops a job that has written complete results but does not exit within --finalize-grace
seconds (MPICH 4.0.2 over UCX tcp, README "Known problems"); that counts as success. The tool's
output goes to this process's stdout and stderr; the exit status is the tool's (124: timeout;
130/143: Ctrl-C/SIGTERM, which stop the job's whole process group: SIGTERM, SIGKILL after STOP_GRACE s).
netns mode expects the emulated hosts to exist (experiments/netns.sh up K RATE; run.py does that).
smpi mode simulates the ranks with SimGrid SMPI: the smpi build's tool (build/smpi/bin) under its
bin/tb-smpirun on --platform (a SimGrid platform file), with a hostfile written for the rank count
(smpi_hostfile: the platform's hosts in order, one rank per core); --compute off skips compute
(smpi/simulate-computation:no).
"""
import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("intra", "cliques", "netns", "cluster", "smpi")
MPIS = ("mpich", "openmpi", "mpich-patched")
SMPI = "smpi"  # the build smpi mode runs (build/smpi), recorded as the rows' "mpi"
COMPUTE = ("on", "off")  # smpi mode: compute bursts timed and simulated, or skipped
# mpich-patched: MPICH 4.0.2 built from source with mpich/patches; its mpiexec is the one of the
# install scripts/build.sh built build/mpich-patched against (recorded in build/mpich-patched/tb-mpich-prefix).
MPICH_FAMILY = ("mpich", "mpich-patched")

# What a runner needs to know per tool: the option that asks it for its results file ("output")
# and whether it is an MPI program started by mpiexec ("mpi"). A definition may name a tool not
# listed here by declaring these itself ("output": "--json", "mpi": false). The file's format
# follows from the option: --benchmark_out is Google Benchmark's JSON ({"context", "benchmarks"}),
# --csv a CSV table, anything else the testbed's {"metadata": ..., "results": [rows]}.
TOOLS = {
    "tb-bench": {"output": "--benchmark_out", "mpi": True},
    "tb-bench-pack": {"output": "--benchmark_out", "mpi": True},
    "tb-redistribute": {"output": "--json", "mpi": True},
    "tb-fft": {"output": "--json", "mpi": True},
    "tb-fftw-mpi": {"output": "--json", "mpi": True},
    "tb-beff": {"output": "--json", "mpi": True},
    "tb-ptrans": {"output": "--json", "mpi": True},
    "tb-model": {"output": "--csv", "mpi": False},
}
FORMATS = ("json", "benchmark", "csv")


def tool_spec(tool, declared=None):
    """{"output", "mpi", "format"} of `tool`: the table's entry, overridden by what `declared` (a
    definition) says. A tool neither listed nor declared is an error that says what to declare."""
    declared = declared or {}
    known = TOOLS.get(tool, {})
    if not known and "output" not in declared:
        raise ValueError(f"unknown tool {tool!r}: the known tools are {', '.join(sorted(TOOLS))}; for another "
                         "tool declare how it writes its results, e.g. \"output\": \"--json\" (and \"mpi\": false "
                         "for a program that runs without mpiexec)")
    spec = {"output": declared.get("output", known.get("output")), "mpi": declared.get("mpi", known.get("mpi", True))}
    if not isinstance(spec["output"], str) or not spec["output"].startswith("-"):
        raise ValueError(f"tool {tool!r}: 'output' must be the option that names its results file, "
                         f"such as \"--json\", not {spec['output']!r}")
    if not isinstance(spec["mpi"], bool):
        raise ValueError(f"tool {tool!r}: 'mpi' must be true or false, not {spec['mpi']!r}")
    spec["format"] = declared.get("format", output_format(spec["output"]))
    if spec["format"] not in FORMATS:
        raise ValueError(f"tool {tool!r}: 'format' must be one of {', '.join(FORMATS)}, not {spec['format']!r}")
    return spec


def output_format(option):
    if option.startswith("--benchmark_out"):
        return "benchmark"
    return "csv" if option == "--csv" else "json"


def output_args(spec, path):
    """The tool options that make it write its results to `path`."""
    if spec["format"] == "benchmark":
        return [f"--benchmark_out={path}", "--benchmark_out_format=json"]
    return [spec["output"], path]


def bin_dir(mpi, bin=None):
    return bin or os.path.join(ROOT, "build", mpi, "bin")


def tool_binary(tool, mpi, bin=None):
    """The program to start: a path as given, a tool name in the build's bin folder."""
    return tool if os.sep in tool else os.path.join(bin_dir(mpi, bin), tool)


def check_binary(tool, mpi, bin=None):
    """The tool's binary, or a ValueError that says where it was looked for and how to build it."""
    path = tool_binary(tool, mpi, bin)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        where = f"--bin {bin}" if bin else f"build/{mpi}/bin"
        raise ValueError(f"{tool}: no executable {path} ({where}); build it with scripts/build.sh {mpi}, "
                         f"or point --bin at the folder that holds it")
    return path


def mpich_mpiexec(mpi):
    """Debian's MPICH launcher, or the patched install's own hydra."""
    if mpi == "mpich":
        return "mpiexec.mpich"
    record = os.path.join(ROOT, "build", mpi, "tb-mpich-prefix")
    try:
        with open(record) as f:
            return os.path.join(f.read().strip(), "bin", "mpiexec")
    except OSError:
        raise ValueError(f"{mpi}: no {record}; build it with scripts/build.sh {mpi}") from None


def expand_radical(radical):
    """The numbers of a SimGrid cluster's radical, in order: "0-3,8" -> [0, 1, 2, 3, 8]."""
    numbers = []
    for part in radical.split(","):
        first, sep, last = part.strip().partition("-")
        if not first.isdigit() or (sep and not last.isdigit()):
            raise ValueError(f"radical {radical!r}: not a list of numbers and ranges")
        numbers += list(range(int(first), int(last) + 1)) if sep else [int(first)]
    return numbers


def platform_hosts(platform):
    """(host name, cores) of every host of a SimGrid platform file, in document order: each
    <cluster>'s prefix+number+suffix over its radical, each <host>'s id. ValueError for a file
    that is missing, not XML or without hosts."""
    try:
        root = ElementTree.parse(platform).getroot()
    except OSError as e:
        raise ValueError(f"platform {platform}: cannot be read ({e.strerror})") from None
    except ElementTree.ParseError as e:
        raise ValueError(f"platform {platform}: not an XML platform file ({e})") from None
    hosts = []
    for element in root.iter():
        cores = int(element.get("core", "1"))
        if element.tag == "cluster":
            prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
            try:
                numbers = expand_radical(element.get("radical", ""))
            except ValueError as e:
                raise ValueError(f"platform {platform}: cluster {element.get('id')!r}: {e}") from None
            hosts += [(f"{prefix}{n}{suffix}", cores) for n in numbers]
        elif element.tag == "host":
            hosts.append((element.get("id"), cores))
    if not hosts:
        raise ValueError(f"platform {platform}: no <cluster> or <host> in it")
    return hosts


def smpi_hostfile(platform, ranks, per_node=None):
    """The text of an SMPI hostfile for `ranks` ranks: the platform's hosts in order, each named
    once per core it has (at most `per_node` times), so consecutive ranks share a node.
    ValueError if they do not fit."""
    lines = []
    for host, cores in platform_hosts(platform):
        lines += [host] * min(cores, per_node or cores)
        if len(lines) >= ranks:
            return "\n".join(lines[:ranks]) + "\n"
    per = f" at {per_node} per node" if per_node else ""
    raise ValueError(f"platform {platform}: {ranks} ranks do not fit on its {len(lines)} cores{per}")


def smpi_launcher(ranks, options):
    """tb-smpirun of the smpi build (options.bin, else build/smpi/bin) on options.platform with a
    hostfile for `ranks` ranks (at most options.ranks_per_node per host), written into
    options.smpi_dir; options.compute "off" skips compute bursts."""
    platform = getattr(options, "platform", None)
    if not platform:
        raise ValueError("smpi mode needs --platform (a SimGrid platform file, e.g. experiments/platforms/*.xml)")
    smpirun = os.path.join(bin_dir(SMPI, getattr(options, "bin", None)), "tb-smpirun")
    if not os.access(smpirun, os.X_OK):
        raise ValueError(f"smpi mode: no {smpirun}; build the smpi variant with scripts/build.sh smpi")
    hostfile = os.path.join(options.smpi_dir, f"hosts-{ranks}")
    with open(hostfile, "w") as f:
        f.write(smpi_hostfile(platform, ranks, getattr(options, "ranks_per_node", None)))
    compute = getattr(options, "compute", "on")
    cmd = [smpirun, f"--cfg=smpi/simulate-computation:{'yes' if compute == 'on' else 'no'}", "-np", str(ranks)]
    return cmd, {"TB_SMPI_PLATFORM": os.path.abspath(platform), "TB_SMPI_HOSTFILE": hostfile}


def launcher(mode, mpi, ranks, options):
    """The command prefix and environment that start `ranks` processes of an MPI program in `mode`.
    `options` carries cliques (None: one per rank), hosts (netns), hostfile (cluster), and for smpi
    platform, compute and smpi_dir (where the hostfile goes)."""
    if mode == SMPI or mpi == SMPI:
        if mode != SMPI or mpi != SMPI:
            raise ValueError("the smpi build runs in smpi mode only, and smpi mode runs the smpi build")
        return smpi_launcher(ranks, options)
    env = {}
    if mode == "cliques":
        cliques = options.cliques or ranks
        if mpi in MPICH_FAMILY:
            env.update({"MPIR_CVAR_NUM_CLIQUES": str(cliques), "UCX_TLS": "self,tcp"})
        env["TB_UCX_TLS"] = "self,tcp"  # ucx_zcopy's own UCX context takes the network path too
        env["TB_NUM_NODES"] = str(cliques)
    if mpi in MPICH_FAMILY:
        mpiexec = mpich_mpiexec(mpi)
        if mode == "netns":
            hosts = ",".join(f"tbhost{i + 1}" for i in range(options.hosts))
            env["UCX_TLS"] = "self,tcp"  # the namespaces share /dev/shm: keep UCX off shared memory
            env["TB_UCX_TLS"] = "self,tcp"
            return ([mpiexec, "-hosts", hosts, "-launcher", "ssh", "-launcher-exec",
                     os.path.join(ROOT, "experiments", "netns_exec.sh"), "-iface", "tbbr0", "-n", str(ranks)], env)
        cmd = [mpiexec, "-n", str(ranks)]
        if mode == "cluster" and options.hostfile:
            cmd = [mpiexec, "-f", options.hostfile, "-n", str(ranks)]
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
    raise ValueError(f"unknown MPI {mpi!r} ({', '.join(MPIS)})")


def command(spec, program, args, mode, mpi, ranks, options, env=None):
    """The full command line and the environment (beyond the caller's) that run `program` with
    `args` on `ranks` ranks. `env` (the point's own variables) overrides the mode's."""
    if not spec["mpi"]:
        if ranks != 1:
            raise ValueError(f"{os.path.basename(program)} is not an MPI program: it runs as one process, not {ranks}")
        return [program] + list(args), dict(env or {})
    prefix, mode_env = launcher(mode, mpi, ranks, options)
    return prefix + [program] + list(args), {**mode_env, **(env or {})}


def complete_json(path):
    try:
        with open(path) as f:
            json.load(f)
        return True
    except (OSError, ValueError):
        return False


STOP_GRACE = 3.0  # seconds a stopped job gets between SIGTERM and SIGKILL


def stop(proc, grace=None):
    """Ends the launcher and everything it started (its own process group): SIGTERM to the group
    (mpiexec passes it on to its ranks), SIGKILL to whatever of the group is left after `grace`
    seconds (default STOP_GRACE) or once the launcher has exited."""
    grace = STOP_GRACE if grace is None else grace
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if sig == signal.SIGTERM:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
    proc.wait()


def run_command(cmd, env, watch=None, timeout=None, finalize_grace=20.0, stdout=None, stderr=None):
    """Runs `cmd` with the caller's environment plus `env`, in its own session (and so its own
    process group) so that a stop ends every process it started. Returns (exit status,
    finalize_hang); raises TimeoutExpired.

    A KeyboardInterrupt (Ctrl-C, or SIGTERM where the caller turns it into one, as run.py does)
    or any other exception while the job runs stops the whole group (SIGTERM, SIGKILL after
    STOP_GRACE seconds) before it propagates: no job outlives its runner.

    MPICH 4.0.2 with UCX over tcp can hang in MPI_Finalize after a run that used node_leader's
    inter-node path (README, "Known problems"). The tools write their results before
    MPI_Finalize: once `watch` (a JSON results file) is complete, the job gets `finalize_grace`
    seconds to exit, then it is stopped and finalize_hang is True."""
    started = time.time()
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=stdout, stderr=stderr, start_new_session=True)
    written_at = None
    try:
        while proc.poll() is None:
            time.sleep(0.2)
            if timeout is not None and time.time() - started > timeout:
                stop(proc)
                raise subprocess.TimeoutExpired(cmd, timeout)
            if watch is not None and written_at is None and complete_json(watch):
                written_at = time.time()
            if written_at is not None and time.time() - written_at > finalize_grace:
                stop(proc)
                return proc.returncode, True
    except BaseException:  # Ctrl-C or a signal: the job is in its own process group, end it too
        stop(proc)
        raise
    return proc.returncode, False


@contextlib.contextmanager
def sigterm_interrupts():
    """While in this block, SIGTERM raises KeyboardInterrupt like Ctrl-C does (once: a second
    SIGTERM while that unwinds is ignored), so `with` blocks, `finally` clauses and
    run_command's stop of its job run on a kill too. Yields a list that names the signals
    received. Outside the main thread (where Python cannot handle signals) it does nothing."""
    received = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        received.append(signum)
        if len(received) == 1:
            raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Start one tool of the testbed the way experiments/run.py does (mpiexec per MPI build and mode).",
        usage="%(prog)s [options] TOOL [TOOL ARGS ...]")
    parser.add_argument("--mpi", choices=MPIS + (SMPI,), help="default: mpich, or smpi in smpi mode")
    parser.add_argument("--mode", default="intra", choices=MODES)
    parser.add_argument("-n", "--ranks", type=int, default=1)
    parser.add_argument("--bin", help="folder of the tools (default build/<mpi>/bin)")
    parser.add_argument("--cliques", type=int, help="cliques mode: number of cliques (default: one per rank)")
    parser.add_argument("--hosts", type=int, default=2, help="netns mode: the emulated hosts (tbhost1..K)")
    parser.add_argument("--hostfile", help="cluster mode: the hosts to run on")
    parser.add_argument("--platform", help="smpi mode: the SimGrid platform file")
    parser.add_argument("--compute", choices=COMPUTE, default="on", help="smpi mode: simulate compute bursts or skip them")
    parser.add_argument("--ranks-per-node", type=int, help="smpi mode: at most this many ranks per host (default: its cores)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the job (repeatable; wins over the mode's)")
    parser.add_argument("--out", help="ask the tool for its results in this file (its own option, see TOOLS)")
    parser.add_argument("--output", help="for a tool not in TOOLS: the option that names its results file")
    parser.add_argument("--no-mpi", action="store_true", help="for a program not in TOOLS: run it without mpiexec")
    parser.add_argument("--timeout", type=float, help="seconds before the job is stopped (exit status 124)")
    parser.add_argument("--finalize-grace", type=float, default=20,
                        help="seconds an MPI job may take to exit once --out is complete")
    parser.add_argument("--print", action="store_true", help="print the command and environment; run nothing")
    parser.add_argument("tool")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.ranks < 1:
        parser.error(f"-n/--ranks must be at least 1, not {options.ranks}")
    if options.timeout is not None and not options.timeout > 0:
        parser.error(f"--timeout must be a positive number of seconds, not {options.timeout}")
    options.mpi = options.mpi or (SMPI if options.mode == SMPI else "mpich")
    with tempfile.TemporaryDirectory(prefix="tb-launch.") as smpi_dir:  # smpi mode's hostfile
        options.smpi_dir = smpi_dir
        return launch_tool(parser, options)


def launch_tool(parser, options):
    env = {}
    for item in options.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"--env takes NAME=VALUE, not {item!r}")
        env[name] = value
    declared = {}
    if options.output:
        declared["output"] = options.output
    if options.no_mpi:
        declared["mpi"] = False
    try:
        if options.tool in TOOLS or options.output:
            spec = tool_spec(options.tool, declared)
        else:  # another program (a path, or a test in the bin folder): an MPI program unless --no-mpi
            spec = {"output": None, "format": None, "mpi": not options.no_mpi}
        program = options.tool if os.sep in options.tool else check_binary(options.tool, options.mpi, options.bin)
        args = list(options.args)
        if options.out:
            if not spec["output"]:
                raise ValueError(f"{options.tool}: --out needs the option that names its results file (--output)")
            args += output_args(spec, options.out)
        cmd, job_env = command(spec, program, args, options.mode, options.mpi, options.ranks, options, env)
    except ValueError as e:
        print(f"launch.py: {e}", file=sys.stderr)
        return 2
    if options.print:
        print(" ".join(f"{k}={shlex.quote(v)}" for k, v in job_env.items()) + (" " if job_env else "")
              + " ".join(shlex.quote(c) for c in cmd))
        return 0
    if spec["mpi"] and shutil.which(cmd[0]) is None:
        print(f"launch.py: {cmd[0]} is not installed (scripts/setup.sh)", file=sys.stderr)
        return 2
    watch = options.out if options.out and spec["mpi"] and spec["format"] in ("json", "benchmark") else None
    if watch and os.path.exists(watch):
        os.remove(watch)  # an old file would look like this run's complete results
    sys.stdout.flush()
    received = []
    try:
        with sigterm_interrupts() as received:
            status, hang = run_command(cmd, job_env, watch, options.timeout, options.finalize_grace)
    except subprocess.TimeoutExpired:
        print(f"launch.py: {' '.join(cmd)}: stopped after {options.timeout:.0f} s", file=sys.stderr)
        return 124
    except KeyboardInterrupt:
        print(f"launch.py: interrupted, {os.path.basename(program)} stopped", file=sys.stderr)
        return 128 + (received[0] if received else signal.SIGINT)
    if hang:
        print(f"launch.py: {os.path.basename(program)}: results complete, the job hung in MPI_Finalize and was "
              f"stopped after {options.finalize_grace:.0f} s", file=sys.stderr)
        return 0
    return status if status >= 0 else 128 - status  # killed by a signal: the shell's convention


if __name__ == "__main__":
    sys.exit(main())
