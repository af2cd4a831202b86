#!/usr/bin/env bash
# The layout rule: libraries sit below the tools that use them.
#   Library folders: collectives/, redistribute/, fft/, fpga_transport/ (but not fpga_transport/tools/).
#   Tool folders:    microbench/ (the measurement harness and its programs), any tools/ folder.
# A library file may not include a tool header ("microbench/..." or ".../tools/...") and may not
# define main(): programs live in the tool folders. Run from the repository root (ctest
# layout.libraries-below-tools does); prints every violation as file:line and exits 1.
#   scripts/check_layout.sh [ROOT]
set -uo pipefail
root=${1:-.}
cd "$root" || { echo "check_layout: cannot enter $root" >&2; exit 2; }
libraries=(collectives redistribute fft fpga_transport)
tool_folders_inside=(fpga_transport/tools)  # tool folders that sit inside a library folder
for d in "${libraries[@]}"; do
  [ -d "$d" ] || { echo "check_layout: no $d/ here: run it from the repository root" >&2; exit 2; }
done

# Every C/C++ source and header of the library folders, outside the tool folders among them.
prune=()
for t in "${tool_folders_inside[@]}"; do prune+=(-path "$t" -prune -o); done
mapfile -t files < <(find "${libraries[@]}" "${prune[@]}" -type f \
                       \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cxx' -o -name '*.h' -o -name '*.hpp' \) \
                       -print | LC_ALL=C sort)
violations=0
report() {  # file:line: what
  echo "check_layout: $1: $2" >&2
  violations=$((violations + 1))
}
for f in "${files[@]}"; do
  # #include of a tool header: "microbench/..." or a path with a tools/ component.
  while IFS=: read -r line text; do
    report "$f:$line" "a library includes a tool header: ${text#"${text%%[![:space:]]*}"}"
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](microbench/|([^">]*/)?tools/)' "$f")
  # A program's entry point: int main( (also "int main (" and across the usual spellings).
  while IFS=: read -r line text; do
    report "$f:$line" "a library defines main(): programs live in microbench/ or ${tool_folders_inside[*]}/"
  done < <(grep -nE '(^|[^[:alnum:]_])int[[:space:]]+main[[:space:]]*\(' "$f")
done
if [ "$violations" -gt 0 ]; then
  echo "check_layout: FAILED: $violations violation(s); libraries (${libraries[*]}, except fpga_transport/tools) must not" \
       "include microbench/ or tools/ headers nor define main" >&2
  exit 1
fi
echo "check_layout: ok (${#files[@]} library files; no tool headers, no main)"
