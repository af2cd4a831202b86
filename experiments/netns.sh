#!/usr/bin/env bash
# An emulated cluster on this machine: K "hosts" = Linux network namespaces tbh1..tbhK, each with
# a veth pair into the bridge tbbr0 (10.77.0.0/24, private), every link shaped with the tbf qdisc
# in both directions to RATE (e.g. 2gbit), and names tbhost1..tbhostK in /etc/hosts so that
# MPICH's hydra can launch into them through experiments/netns_exec.sh. Root only.
#
#   experiments/netns.sh up K RATE     create (removes an old setup first)
#   experiments/netns.sh down          remove everything this script created
#   experiments/netns.sh status        what exists now
# The runner (experiments/run.py --mode netns) calls up before and down after, also on failure.
set -euo pipefail
BRIDGE=tbbr0
MARK="# tb-netns"
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "netns.sh: emulated hosts need root (network namespaces, veth, tc); run as root" >&2
    exit 1
  fi
  command -v ip >/dev/null && command -v tc >/dev/null || { echo "netns.sh: ip and tc (iproute2) are missing" >&2; exit 1; }
}
down() {
  for ns in $(ip netns list 2>/dev/null | awk '/^tbh[0-9]+/ {print $1}'); do ip netns delete "$ns" 2>/dev/null || true; done
  for v in $(ip -o link show 2>/dev/null | awk -F': ' '/tbv[0-9]+@|tbv[0-9]+:/ {sub(/@.*/, "", $2); print $2}'); do
    ip link delete "$v" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  if grep -q "$MARK" /etc/hosts 2>/dev/null; then
    grep -v "$MARK" /etc/hosts > /etc/hosts.tb-netns.tmp && cat /etc/hosts.tb-netns.tmp > /etc/hosts && rm -f /etc/hosts.tb-netns.tmp
  fi
}
up() {
  local k=$1 rate=$2
  [[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le 200 ] || { echo "netns.sh: K must be 1..200" >&2; exit 2; }
  down
  trap 'echo "netns.sh: setup failed; removing what was made" >&2; down' ERR
  ip link add "$BRIDGE" type bridge
  ip addr add 10.77.0.254/24 dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$k"); do
    ip netns add "tbh$i"
    ip link add "tbv$i" type veth peer name "tbv${i}p"
    ip link set "tbv${i}p" netns "tbh$i"
    ip link set "tbv$i" master "$BRIDGE" up
    ip netns exec "tbh$i" ip addr add "10.77.0.$i/24" dev "tbv${i}p"
    ip netns exec "tbh$i" ip link set "tbv${i}p" up
    ip netns exec "tbh$i" ip link set lo up
    # shape both directions: into the host (bridge side egress) and out of it (namespace side egress)
    tc qdisc add dev "tbv$i" root tbf rate "$rate" burst 256kb latency 100ms
    ip netns exec "tbh$i" tc qdisc add dev "tbv${i}p" root tbf rate "$rate" burst 256kb latency 100ms
    echo "10.77.0.$i tbhost$i $MARK" >> /etc/hosts
  done
  trap - ERR
  echo "netns.sh: $k emulated hosts tbhost1..tbhost$k on $BRIDGE, links shaped to $rate"
}
case "${1:-}" in
  up) need_root; up "${2:?K}" "${3:?RATE, e.g. 2gbit}" ;;
  down) need_root; down; echo "netns.sh: removed" ;;
  status) ip netns list | grep '^tbh' || echo "no tb namespaces"; grep "$MARK" /etc/hosts || true ;;
  *) echo "usage: $0 up K RATE | down | status" >&2; exit 2 ;;
esac
