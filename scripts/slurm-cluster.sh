#!/usr/bin/env bash
# A one-host Slurm cluster on this machine, to run the batch scripts `experiments/run.py --mode
# cluster --slurm` writes with real sbatch: munged, slurmctld and slurmd (Debian's munge and
# slurm-wlm 22.05), each started here with its own config, munge key and socket, ports, state,
# logs and pid files under one directory; `stop` ends exactly the daemons that directory's pid
# files name (and the jobs still in that cluster), nothing else.
#   scripts/slurm-cluster.sh start  [DIR]   start (or reuse what runs from DIR) and wait until
#                                           the node is idle
#   scripts/slurm-cluster.sh status [DIR]   the daemons and sinfo; exit 0 only if all are up
#   scripts/slurm-cluster.sh stop   [DIR]   cancel its jobs, stop its daemons
# DIR: $TB_SLURM_DIR, default /tmp/tb-slurm. Then `export SLURM_CONF=DIR/slurm.conf` (or
# `. DIR/env`) and use sbatch, squeue, sinfo, scontrol as usual.
# Root only (slurmd starts jobs as their users). Ports: $TB_SLURM_PORT for slurmctld and the next
# one for slurmd, by default the first free pair from 6917 up (never the package's 6817/6818, so
# a packaged Slurm may run beside it). The node is this host with the CPUs `slurmd -C` finds;
# $TB_SLURM_CPUS declares another count (config_overrides, e.g. 2 tasks on a 1-core machine).
# $TB_SLURM_WAIT: seconds each daemon, and the node, get to come up (default 60).
set -uo pipefail

usage() { echo "usage: $0 start|stop|status [DIR]  (DIR: \$TB_SLURM_DIR, default /tmp/tb-slurm)" >&2; exit 2; }
bad_argument() { echo "slurm-cluster: $*" >&2; usage; }
bad_setting() { echo "slurm-cluster: $*" >&2; exit 2; }
[ $# -ge 1 ] || usage
# An option-like word is a mistake, never a DIR (write ./-name for such a directory).
for arg in "$@"; do
  case "$arg" in -*) bad_argument "unknown option '$arg'" ;; esac
done
[ $# -le 2 ] || bad_argument "unexpected argument '$3' (one DIR at most)"
action=$1
case "$action" in start|stop|status) ;; *) bad_argument "unknown action '$action'" ;; esac
dir=${2:-${TB_SLURM_DIR:-/tmp/tb-slurm}}
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
dir=$(realpath -m -s -- "$dir")  # lexically: no trailing /, ., .. or //
[ "$dir" != / ] || bad_argument "DIR must not be / (its run, log, munge and state folders would be the system's)"
# The settings are whole numbers; bash's (( )) would take a word such as 'abc' for 0.
wait_s=${TB_SLURM_WAIT:-60}
[[ $wait_s =~ ^[0-9]{1,5}$ ]] && ((10#$wait_s > 0)) ||
  bad_setting "TB_SLURM_WAIT='$wait_s': use seconds > 0 (a whole number, at most 99999)"
wait_s=$((10#$wait_s))
if [ -n "${TB_SLURM_PORT:-}" ]; then
  [[ $TB_SLURM_PORT =~ ^[0-9]{1,5}$ ]] && ((10#$TB_SLURM_PORT >= 1 && 10#$TB_SLURM_PORT <= 65534)) ||
    bad_setting "TB_SLURM_PORT='$TB_SLURM_PORT': use a port from 1 to 65534 (slurmd takes the next one)"
  TB_SLURM_PORT=$((10#$TB_SLURM_PORT))
fi
if [ -n "${TB_SLURM_CPUS:-}" ]; then
  [[ $TB_SLURM_CPUS =~ ^[0-9]{1,4}$ ]] && ((10#$TB_SLURM_CPUS > 0)) ||
    bad_setting "TB_SLURM_CPUS='$TB_SLURM_CPUS': use a CPU count > 0"
  TB_SLURM_CPUS=$((10#$TB_SLURM_CPUS))
fi
conf=$dir/slurm.conf
socket=$dir/munge/munge.socket
export SLURM_CONF=$conf

say() { echo "slurm-cluster: $*"; }
give_up() {
  [ "$action" != start ] || [ ! -d "$dir/run" ] || echo "slurm-cluster: '$0 stop $dir' stops whatever of it did start" >&2
  exit 1
}
die() { echo "slurm-cluster: $*" >&2; give_up; }
log_tail() {  # the last lines of a daemon's log, indented, for an error message
  if [ -s "$dir/log/$1.log" ]; then
    echo "  last lines of $dir/log/$1.log:" >&2
    tail -n 15 "$dir/log/$1.log" | sed 's/^/    /' >&2
  else
    echo "  ($dir/log/$1.log is empty or missing)" >&2
  fi
}

# The pid in DIR/run/NAME.pid if that process is alive and is NAME started with this directory's
# files (its command line names DIR), so that a recycled pid is never taken for our daemon.
daemon_pid() {
  local name=$1 pid cmd
  [ -r "$dir/run/$name.pid" ] || return 1
  pid=$(tr -dc 0-9 < "$dir/run/$name.pid")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline")
  case "$cmd" in *"$name"*"$dir/"*) echo "$pid" ;; *) return 1 ;; esac
}

need_tools() {
  local missing=() c
  for c in munged munge unmunge slurmctld slurmd sinfo sbatch squeue scontrol scancel; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  [ ${#missing[@]} -eq 0 ] || die "not installed: ${missing[*]} (Debian packages munge and slurm-wlm: scripts/setup.sh, or apt-get install slurm-wlm munge)"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_conf() {
  local port=${TB_SLURM_PORT:-} node=$1 nodeline
  if [ -z "$port" ]; then
    port=6917
    while port_busy "$port" || port_busy $((port + 1)); do
      port=$((port + 2))
      [ "$port" -lt 7017 ] || die "no free pair of ports in 6917-7016 for slurmctld and slurmd (set TB_SLURM_PORT)"
    done
  elif port_busy "$port" || port_busy $((port + 1)); then
    die "TB_SLURM_PORT=$port: port $port or $((port + 1)) is already in use"
  fi
  if [ -n "${TB_SLURM_CPUS:-}" ]; then
    nodeline="NodeName=$node NodeAddr=127.0.0.1 CPUs=$TB_SLURM_CPUS State=UNKNOWN"
  else
    # The hardware as slurmd sees it (CPUs, sockets, cores, threads), without RealMemory: memory
    # is not scheduled here, and a container's free memory would drain the node.
    nodeline=$(slurmd -C 2>/dev/null | head -n 1 | tr ' ' '\n' | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
    [ -n "$nodeline" ] || die "slurmd -C printed no hardware description"
    nodeline="NodeName=$node NodeAddr=127.0.0.1 ${nodeline}State=UNKNOWN"
  fi
  cat > "$conf" <<EOF
# Written by scripts/slurm-cluster.sh: a one-host cluster whose files all lie in $dir.
ClusterName=tb
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Finished jobs, one line each (no slurmdbd here, so sacct has nothing; scontrol show job keeps a
# finished job for MinJobAge seconds).
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobs.txt
MinJobAge=3600
KillWait=5
MailProg=/bin/true
$( [ -z "${TB_SLURM_CPUS:-}" ] || echo "SlurmdParameters=config_overrides" )
$nodeline
PartitionName=tb Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  echo "export SLURM_CONF=$conf" > "$dir/env"
}

# Waits until NAME's pid file names a live process of ours; otherwise an error with its log.
wait_daemon() {
  local name=$1 i
  for ((i = 0; i < wait_s * 5; i++)); do
    daemon_pid "$name" >/dev/null && return 0
    sleep 0.2
  done
  echo "slurm-cluster: $name did not come up within $wait_s s (no live process in $dir/run/$name.pid)" >&2
  log_tail "$name"
  give_up
}

start_munged() {
  daemon_pid munged >/dev/null && { say "munged already running (pid $(daemon_pid munged))"; return; }
  rm -f "$socket" "$socket.lock" "$dir/run/munged.pid"
  if [ ! -s "$dir/munge/munge.key" ]; then
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile="$dir/munge/munge.key" || die "mungekey could not create $dir/munge/munge.key"
    else
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none || die "could not create $dir/munge/munge.key"
    fi
  fi
  chmod 600 "$dir/munge/munge.key"
  munged --socket="$socket" --key-file="$dir/munge/munge.key" --seed-file="$dir/munge/munge.seed" \
         --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
    || { echo "slurm-cluster: munged failed to start" >&2; log_tail munged; give_up; }
  wait_daemon munged
  local i
  for ((i = 0; i < wait_s * 5; i++)); do
    munge -n -S "$socket" 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "slurm-cluster: munged runs but a credential does not round-trip through $socket" >&2
  log_tail munged
  give_up
}

start_slurm_daemon() {
  local name=$1; shift
  daemon_pid "$name" >/dev/null && { say "$name already running (pid $(daemon_pid "$name"))"; return; }
  rm -f "$dir/run/$name.pid"
  "$name" -f "$conf" "$@" || { echo "slurm-cluster: $name -f $conf failed to start" >&2; log_tail "$name"; give_up; }
  wait_daemon "$name"
}

node_state() { sinfo -h -N -n "$1" -o %T 2>/dev/null | head -n 1; }

start() {
  need_tools
  [ "$(id -u)" -eq 0 ] || die "start needs root (slurmd starts each job as its user)"
  local node; node=$(hostname -s)
  [ -n "$node" ] || die "hostname -s is empty"
  [ ${#socket} -le 100 ] || die "the munge socket path $socket is too long for a Unix socket; use a shorter DIR"
  mkdir -p "$dir"/{state,spool,log,run,munge} || die "cannot create $dir"
  chmod 755 "$dir/munge" "$dir/spool"; chmod 700 "$dir/state"
  local running=0 n
  for n in munged slurmctld slurmd; do daemon_pid "$n" >/dev/null && running=$((running + 1)); done
  if [ "$running" -eq 0 ] || [ ! -s "$conf" ]; then
    write_conf "$node"
  fi
  start_munged
  start_slurm_daemon slurmctld
  start_slurm_daemon slurmd -N "$node"
  local i state=""
  for ((i = 0; i < wait_s * 2; i++)); do
    state=$(node_state "$node")
    case "$state" in
      idle|mixed|allocated|completing) break ;;
    esac
    for n in slurmctld slurmd; do
      daemon_pid "$n" >/dev/null || { echo "slurm-cluster: $n exited while the node came up" >&2; log_tail "$n"; give_up; }
    done
    sleep 0.5
  done
  case "$state" in
    idle|mixed|allocated|completing) ;;
    *) echo "slurm-cluster: node $node is not up within $wait_s s (sinfo says: ${state:-nothing})" >&2
       scontrol show node "$node" 2>&1 | grep -E 'State=|Reason=' | sed 's/^/  /' >&2
       log_tail slurmctld; log_tail slurmd; give_up ;;
  esac
  say "up in $dir: node $node $state, slurmctld port $(sed -n 's/^SlurmctldPort=//p' "$conf"), pids munged $(daemon_pid munged) slurmctld $(daemon_pid slurmctld) slurmd $(daemon_pid slurmd)"
  say "use it with: export SLURM_CONF=$conf"
}

stop_daemon() {
  local name=$1 pid i
  if ! pid=$(daemon_pid "$name"); then
    rm -f "$dir/run/$name.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  if [ -d "/proc/$pid" ]; then
    say "$name (pid $pid) did not stop within 10 s of SIGTERM; SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    sleep 0.2
  fi
  rm -f "$dir/run/$name.pid"
  say "stopped $name (pid $pid)"
}

stop() {
  [ -d "$dir" ] || { say "nothing to stop ($dir does not exist)"; return 0; }
  # This cluster's jobs end first, so that no slurmstepd of theirs outlives slurmd.
  if daemon_pid slurmctld >/dev/null && command -v squeue >/dev/null 2>&1; then
    local jobs i
    jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      say "cancelling jobs $jobs"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null
      for ((i = 0; i < 50; i++)); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  stop_daemon slurmd
  stop_daemon slurmctld
  stop_daemon munged
  return 0
}

status() {
  local n pid up=0
  for n in munged slurmctld slurmd; do
    if pid=$(daemon_pid "$n"); then
      say "$n running (pid $pid)"; up=$((up + 1))
    else
      say "$n not running"
    fi
  done
  if [ "$up" -gt 0 ] && daemon_pid slurmctld >/dev/null; then
    sinfo 2>&1 | sed 's/^/  /'
    squeue 2>&1 | sed 's/^/  /'
  fi
  [ "$up" -eq 3 ]
}

case "$action" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
