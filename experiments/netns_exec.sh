#!/usr/bin/env bash
# The "ssh" MPICH's hydra uses in netns mode (experiments/run.py --mode netns):
#   netns_exec.sh [ssh options such as -x] HOST COMMAND...
# skips the options hydra puts before the host name, maps tbhostN to namespace tbhN, and runs
# the command there through a shell, as ssh would.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
case $host in
  tbhost[0-9]*) ns=tbh${host#tbhost} ;;
  *) echo "netns_exec.sh: unknown emulated host '$host' (expected tbhostN)" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
