#!/usr/bin/env bash
# mpich/series.sh on a copy of the patch series: 'checkout' then 'write' gives every file back
# byte for byte; a commit that rewords a subject and fixes up an earlier patch comes out as that
# patch changed and the others renumbered only where they changed; and 'write' refuses a tree
# with uncommitted edits, an empty commit, a fixup! commit and a detached HEAD, naming each.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
git_w() { git -C "$work/repo" -c user.name=test -c user.email=test@localhost "$@"; }

cp -r "$root/mpich/patches" "$work/patches"
export TB_MPICH_PATCHES=$work/patches
"$root/mpich/series.sh" checkout "$work/repo"
commits=$(git_w rev-list --count tb-base..HEAD)
[ "$commits" -eq "$(grep -c '^[0-9]' "$root/mpich/patches/series")" ] || fail "checkout made $commits commits for the series"

# 1. The round trip.
"$root/mpich/series.sh" write "$work/repo"
diff -r "$root/mpich/patches" "$work/patches" || fail "checkout + write changed the series (diff above)"
echo "round trip: the series came back byte for byte"

# 2. A reworded subject and a one-line fix folded into a patch: the first patch with a file that no
# other patch touches (so that no other patch's context or blob ids change).
k=0; target=; file=
for p in $(grep '^[0-9]' "$root/mpich/patches/series"); do
  k=$((k + 1))
  for f in $(sed -n 's|^+++ b/||p' "$root/mpich/patches/$p"); do
    if [ "$(grep -lxF "+++ b/$f" "$root"/mpich/patches/*.patch | wc -l)" -eq 1 ]; then target=$p file=$f; break 2; fi
  done
done
[ -n "$target" ] || fail "no patch has a file of its own"
commit=$(git_w rev-list --reverse tb-base..HEAD | sed -n "${k}p")
git_w checkout -q "$commit"
echo "/* added by series_round_trip.sh */" >>"$work/repo/$file"
git_w commit -q -a --amend --cleanup=verbatim -F <(git_w log -1 --format=%B | sed '1s/^.*$/coll: a reworded subject/')
git_w rebase -q --onto HEAD "$commit" series
"$root/mpich/series.sh" write "$work/repo"
first=$target
grep -q "^Subject: \\[PATCH $k/[0-9]*\\] coll: a reworded subject\$" "$work/patches/$first" || fail "the subject was not rewritten"
grep -q '^+/\* added by series_round_trip.sh \*/$' "$work/patches/$first" || fail "the fix is not in $first"
changed=$( (diff -rq "$root/mpich/patches" "$work/patches" || true) | wc -l)
[ "$changed" -eq 1 ] || fail "expected only $first to change, $changed files differ"
echo "rework: $first changed, and nothing else"

# 3. Refusals, each naming its reason and leaving the series as it was (no file changed, no
# half-written *.part file).
before=$(cd "$work/patches" && sha256sum -- *)
refused() {  # refused REASON-PATTERN WHAT
  local out
  out=$("$root/mpich/series.sh" write "$work/repo" 2>&1) && fail "write accepted $2"
  grep -q "$1" <<<"$out" || fail "write refused $2 with an unexpected message: $out"
  [ "$(cd "$work/patches" && sha256sum -- *)" = "$before" ] || fail "write refused $2 but changed the series"
}
echo x >>"$work/repo/$file"
refused "uncommitted changes" "uncommitted edits"
git_w checkout -q -- "$file"
git_w commit -q --allow-empty -m "coll: nothing"
refused "changes nothing" "an empty commit"
git_w reset -q --hard HEAD~1
echo "/* a fixup */" >>"$work/repo/$file"
git_w commit -q -a -m "fixup! coll: a reworded subject"
refused "squash it first" "a fixup! commit"
git_w reset -q --hard HEAD~1
git_w checkout -q --detach
refused "detached HEAD" "a detached HEAD"
git_w checkout -q series
"$root/mpich/series.sh" write "$work/repo"   # still writes after all that
echo "refusals: uncommitted edits, an empty commit, a fixup! commit, a detached HEAD; named, the series untouched"
