#!/usr/bin/env bash
# The patch series as git commits, for revising a patch in the middle of the series the way MPICH
# review asks for (squash a fix into the patch that introduced the code, reword a subject, split or
# reorder patches), and back.
#
#   mpich/series.sh checkout DIR   make DIR a git repository of MPICH's source: a first commit of
#                                  Debian's tree without the series (tag tb-base), then one commit
#                                  per patch of mpich/patches/series, in order, whose message is
#                                  the patch's subject and header; branch 'series'
#   mpich/series.sh write DIR      write the commits tb-base..HEAD of DIR back as the series:
#                                  mpich/patches/NNNN-<name>.patch numbered in commit order, the
#                                  series file, subjects renumbered [PATCH n/total]; patch files
#                                  of the old series that are not written again are removed
#
# In between, use git: 'git rebase -i tb-base' (edit, fixup, reword), 'git commit --fixup'. Each
# commit's last line 'Patch-name: <name>' keeps its file name; a new commit without it gets a
# name made from its subject. Generated files (configure, Makefile.in, mpir_coll.c, ...) are not
# part of the commits: mpich/build.sh regenerates them. 'checkout' followed by 'write' with no
# commit in between gives the series back byte for byte (the ctest mpich.series.round-trip).
# The source tree comes from 'mpich/build.sh --tree' (which downloads Debian's source once).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patches_dir=${TB_MPICH_PATCHES:-$here/patches}
series_file="$patches_dir/series"

die() { echo "mpich/series.sh: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
git_tb() { git -C "$dir" -c user.name=tb-mpich -c user.email=tb-mpich@localhost -c core.autocrlf=false \
             -c gc.auto=0 "$@"; }

[ $# -ge 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; checkout|write) ;; *) echo "mpich/series.sh: unknown command '$1'" >&2; usage 2 ;; esac
[ $# -eq 2 ] || die "$1 needs one DIR (got $(($# - 1)) arguments)"
command=$1 dir=$2

# The series' patch names, in order ('#' comments and blank lines ignored), as mpich/build.sh reads them.
series_patches() {
  [ -f "$series_file" ] || die "no series file $series_file"
  sed -e 's/#.*//' "$series_file" | awk 'NF { print $1 }'
}

# The commit message of patch file $1: its subject without '[PATCH n/m] ', then the header up to
# the '---' line before the diffstat, then a Patch-name line with the name without its number.
message_of() {
  local file=$1 name
  name=$(basename "$file" .patch); name=${name#[0-9][0-9][0-9][0-9]-}
  awk -v name="$name" '
    NR == 1 { if ($0 !~ /^Subject: /) exit 3; sub(/^Subject: (\[PATCH[^]]*\] )?/, ""); print; next }
    /^---$/ { print "Patch-name: " name; found = 1; exit }
    { print }
    END { if (!found) exit 4 }' "$file" || die "$file: not a patch with a 'Subject:' first line and a '---' line before its diff"
}

checkout() {
  local tree p message
  [ ! -e "$dir" ] || die "$dir exists already; give a new directory"
  tree=$("$here/build.sh" --tree) || die "mpich/build.sh --tree failed"
  git clone -q --no-checkout "$tree" "$dir"
  git_tb checkout -q -b series tb-series
  # Debian's tree without the series: the series undone, last patch first.
  for p in $(series_patches | tac); do
    patch -d "$dir" -p1 -R --batch --fuzz=0 --no-backup-if-mismatch -s -i "$patches_dir/$p" ||
      die "undoing $p on the prepared tree failed"
  done
  git_tb add -f -A . && git_tb commit -q -m "MPICH (Debian source package), before the series" && git_tb tag tb-base
  message=$(mktemp); trap 'rm -f "$message"' RETURN
  for p in $(series_patches); do
    message_of "$patches_dir/$p" >"$message"
    patch -d "$dir" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -s -i "$patches_dir/$p" ||
      die "applying $p failed"
    git_tb add -f -A . && git_tb commit -q --cleanup=verbatim -F "$message"
  done
  git_tb remote remove origin
  echo "mpich/series.sh: $dir: tb-base and $(series_patches | wc -l) commit(s) on branch series" >&2
}

# A file name for a commit without a Patch-name line: its subject in lower case, words joined by '-'.
name_from_subject() { tr 'A-Z' 'a-z' <<<"$1" | sed -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-60; }

write() {
  local commits c n=0 total subject body name file written
  git -C "$dir" rev-parse -q --verify tb-base >/dev/null || die "$dir has no tag tb-base: make it with 'checkout'"
  [ -z "$(git -C "$dir" status --porcelain --untracked-files=no | head -n 1)" ] ||
    die "$dir has uncommitted changes: commit them (or stash) first"
  [ -z "$(git -C "$dir" rev-list --merges tb-base..HEAD | head -n 1)" ] || die "tb-base..HEAD has merges: the series must be linear"
  mapfile -t commits < <(git -C "$dir" rev-list --reverse tb-base..HEAD)
  total=${#commits[@]}
  [ "$total" -gt 0 ] || die "no commits after tb-base in $dir"
  written=$(mktemp); trap 'rm -f "$written"' RETURN
  for c in "${commits[@]}"; do
    n=$((n + 1))
    subject=$(git -C "$dir" log -1 --format=%s "$c")
    body=$(git -C "$dir" log -1 --format=%B "$c" | sed '1d' | sed '/^Patch-name: /d')
    name=$(git -C "$dir" log -1 --format=%B "$c" | sed -n 's/^Patch-name: //p' | tail -n 1)
    [ -n "$name" ] || name=$(name_from_subject "$subject")
    [[ $name =~ ^[a-z0-9][a-z0-9._+-]*$ ]] || die "commit $c: Patch-name '$name' is not a file name of a-z 0-9 . _ + -"
    file=$(printf '%04d-%s.patch' "$n" "$name")
    ! grep -qxF "$file" "$written" || die "two commits are named $file"
    echo "$file" >>"$written"
    if git -C "$dir" diff --quiet "$c^" "$c"; then die "commit $c ($subject) changes nothing"; fi
    {
      echo "Subject: [PATCH $n/$total] $subject"
      printf '%s\n\n' "$body"
      echo "---"
      git -C "$dir" diff --stat "$c^" "$c"
      echo
      git -C "$dir" diff --no-color --no-ext-diff "$c^" "$c"
    } >"$patches_dir/$file.part"
  done
  # Only now, with every file made, replace the old series.
  for file in $(series_patches); do grep -qxF "$file" "$written" || rm -f "$patches_dir/$file"; done
  while read -r file; do mv "$patches_dir/$file.part" "$patches_dir/$file"; done <"$written"
  { sed -n '/^#/p' "$series_file" | head -n 1; cat "$written"; } >"$series_file.part"
  mv "$series_file.part" "$series_file"
  echo "mpich/series.sh: wrote $total patch(es) and $series_file from $dir" >&2
}

"$command"
