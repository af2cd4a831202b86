#!/usr/bin/env bash
# The test job: installs what is missing, builds BOTH MPI variants, runs ctest on each (MPI tests
# at 1-4 ranks) and prints each summary. Exits non-zero if anything fails.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
scripts/build.sh mpich openmpi || exit 1
status=0
for v in mpich openmpi; do
  echo "== ctest build/$v"
  ctest --test-dir "build/$v" --output-on-failure 2>&1 | tee "build/$v/ctest.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
echo
echo "== summary"
passed=0; failed=0
for v in mpich openmpi; do
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "build/$v/ctest.log" | tail -n 1)
  printf '%-8s %s\n' "$v" "${line:-no ctest summary (build or ctest failed)}"
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[1])); passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
  else
    status=1
  fi
done
echo "ctest: $passed passed, $failed failed"
exit $status
