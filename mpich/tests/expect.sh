#!/usr/bin/env bash
# Runs a command, prints its output, and checks how it ended and what it printed.
#   expect.sh [--status ok|fail|any] [--match REGEX]... [--absent REGEX]... -- COMMAND [ARGS...]
# Passes when the exit status is as asked (default ok: 0), every --match REGEX matches some line
# of the output (stdout and stderr, grep -E) and no --absent REGEX matches any line.
set -u
status_want=ok; matches=(); absents=()
while [ $# -gt 0 ]; do
  case "$1" in
    --status) status_want=$2; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --absent) absents+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "expect.sh: no command" >&2; exit 2; }
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
bad=0
case "$status_want" in
  ok) [ $status -eq 0 ] || { echo "expect.sh: exit status $status, expected 0"; bad=1; } ;;
  fail) [ $status -ne 0 ] || { echo "expect.sh: exit status 0, expected a failure"; bad=1; } ;;
  any) ;;
  *) echo "expect.sh: --status ok|fail|any" >&2; exit 2 ;;
esac
for r in "${matches[@]}"; do
  printf '%s\n' "$output" | grep -Eq -- "$r" || { echo "expect.sh: no line matches '$r'"; bad=1; }
done
for r in "${absents[@]}"; do
  printf '%s\n' "$output" | grep -Eq -- "$r" && { echo "expect.sh: a line matches '$r', which must be absent"; bad=1; }
done
[ $bad -eq 0 ] && echo "expect.sh: ok"
exit $bad
