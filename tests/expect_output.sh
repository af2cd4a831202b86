#!/usr/bin/env bash
# Runs a command, prints its output, and checks both its exit status and its output.
#   expect_output.sh [--fail] REGEX COMMAND [ARGS...]
# Passes when the command exits 0 (non-zero with --fail) and its output matches REGEX
# (grep -E), so a test can assert what a tool printed without ignoring how it ended.
set -u
want_failure=0
if [ "$1" = --fail ]; then want_failure=1; shift; fi
regex=$1; shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $want_failure -eq 1 ]; then
  [ $status -ne 0 ] || { echo "expect_output: expected a non-zero exit status"; exit 1; }
else
  [ $status -eq 0 ] || { echo "expect_output: exit status $status"; exit 1; }
fi
printf '%s\n' "$output" | grep -Eq -- "$regex" || { echo "expect_output: no line matches '$regex'"; exit 1; }
echo "expect_output: ok"
