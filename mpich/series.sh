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
patches_dir=$(cd "${TB_MPICH_PATCHES:-$here/patches}" 2>/dev/null && pwd) ||
  { echo "mpich/series.sh: error: no patch directory ${TB_MPICH_PATCHES:-$here/patches}" >&2; exit 1; }
series_file="$patches_dir/series"

die() { echo "mpich/series.sh: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
git_tb() { git -C "$dir" -c user.name=tb-mpich -c user.email=tb-mpich@localhost -c core.autocrlf=false \
             -c gc.auto=0 "$@"; }
# The diffs written into patches depend on no one's git settings (diff.noprefix, diff.algorithm,
# core.abbrev, ...) or terminal width: no global or system configuration, a fixed stat width.
git_plain() { env -u COLUMNS GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null git -C "$dir" "$@"; }

# Files to remove when the script ends, however it ends.
cleanup=()
trap 'rm -rf "${cleanup[@]}"' EXIT

[ $# -ge 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; checkout|write) ;; *) echo "mpich/series.sh: unknown command '$1'" >&2; usage 2 ;; esac
[ $# -eq 2 ] || die "$1 needs one DIR (got $(($# - 1)) arguments)"
command=$1 dir=$2
[ -n "$dir" ] || die "DIR is empty"

# The series' patch names, in order ('#' comments and blank lines ignored), as mpich/build.sh reads them.
[ -f "$series_file" ] || die "no series file $series_file"
mapfile -t series < <(sed -e 's/#.*//' "$series_file" | awk 'NF { print $1 }')
for p in "${series[@]}"; do [ -f "$patches_dir/$p" ] || die "the series names $p, but $patches_dir/$p does not exist"; done

# The commit message of patch file $1: its subject without '[PATCH n/m] ', then the header up to
# the '---' line before the diffstat, then a Patch-name line with the name without its number.
message_of() {
  local file=$1 name
  name=$(basename "$file" .patch); name=${name#[0-9][0-9][0-9][0-9]-}
  awk -v name="$name" '
    NR == 1 { if ($0 !~ /^Subject: /) exit 3; sub(/^Subject: (\[PATCH[^]]*\] )?/, ""); print; next }
    /^---$/ { print "Patch-name: " name; found = 1; exit }
    { print }
    END { if (!found) exit 4 }' "$file"
}

checkout() {
  local tree p message
  [ ! -e "$dir" ] || die "$dir exists already; give a new directory"
  [ "${#series[@]}" -gt 0 ] || die "$series_file names no patch"
  tree=$("$here/build.sh" --tree) || die "mpich/build.sh --tree failed"
  cleanup+=("$dir")   # until it is complete
  git clone -q --no-checkout "$tree" "$dir"
  git_tb checkout -q -b series tb-series
  # Debian's tree without the series: the series undone, last patch first.
  for ((i = ${#series[@]} - 1; i >= 0; i--)); do
    p=${series[i]}
    patch -d "$dir" -p1 -R --batch --fuzz=0 --no-backup-if-mismatch -s -i "$patches_dir/$p" ||
      die "undoing $p on the prepared tree failed"
  done
  git_tb add -f -A . && git_tb commit -q -m "MPICH (Debian source package), before the series" && git_tb tag tb-base
  message=$(mktemp); cleanup+=("$message")
  for p in "${series[@]}"; do
    message_of "$patches_dir/$p" >"$message" ||
      die "$p: not a patch with a 'Subject:' first line and a '---' line before its diff"
    patch -d "$dir" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -s -i "$patches_dir/$p" ||
      die "applying $p failed"
    git_tb add -f -A . && git_tb commit -q --cleanup=verbatim -F "$message"
  done
  git_tb remote remove origin
  local kept=() f
  for f in "${cleanup[@]}"; do [ "$f" = "$dir" ] || kept+=("$f"); done
  cleanup=("${kept[@]}")   # the tree is complete: keep it
  echo "mpich/series.sh: $dir: tb-base and ${#series[@]} commit(s) on branch series" >&2
}

# A file name for a commit without a Patch-name line: its subject in lower case, words joined by '-'.
name_from_subject() { tr 'A-Z' 'a-z' <<<"$1" | sed -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-60; }

# Refuses a DIR whose HEAD is not a finished, linear series on top of tb-base.
check_series_head() {
  local gitdir
  git -C "$dir" rev-parse -q --verify tb-base >/dev/null 2>&1 || die "$dir has no tag tb-base: make it with 'checkout'"
  gitdir=$(git -C "$dir" rev-parse --absolute-git-dir)
  [ ! -d "$gitdir/rebase-merge" ] && [ ! -d "$gitdir/rebase-apply" ] ||
    die "$dir is in the middle of a rebase: finish it (git rebase --continue) or abort it first"
  git -C "$dir" symbolic-ref -q HEAD >/dev/null || die "$dir has a detached HEAD: check out the series' branch"
  git -C "$dir" merge-base --is-ancestor tb-base HEAD || die "tb-base is not an ancestor of HEAD in $dir"
  [ -z "$(git -C "$dir" status --porcelain --untracked-files=no | head -n 1)" ] ||
    die "$dir has uncommitted changes: commit them (or stash) first"
  [ -z "$(git -C "$dir" rev-list --merges tb-base..HEAD | head -n 1)" ] || die "tb-base..HEAD has merges: the series must be linear"
}

write() {
  local commits c n=0 total subject body name file other names=() files=()
  check_series_head
  mapfile -t commits < <(git -C "$dir" rev-list --reverse tb-base..HEAD)
  total=${#commits[@]}
  [ "$total" -gt 0 ] || die "no commits after tb-base in $dir"
  # Every commit checked before anything is written.
  for c in "${commits[@]}"; do
    n=$((n + 1))
    subject=$(git -C "$dir" log -1 --format=%B "$c" | sed -n 1p)
    [[ ! $subject =~ ^(fixup|squash|amend)! ]] || die "commit $c ($subject): squash it first (git rebase -i --autosquash tb-base)"
    ! git -C "$dir" diff --quiet "$c^" "$c" || die "commit $c ($subject) changes nothing"
    name=$(git -C "$dir" log -1 --format=%B "$c" | sed -n 's/^Patch-name: //p' | tail -n 1)
    [ -n "$name" ] || name=$(name_from_subject "$subject")
    [[ $name =~ ^[a-z0-9][a-z0-9._+-]*$ ]] || die "commit $c: Patch-name '$name' is not a file name of a-z 0-9 . _ + -"
    for other in "${names[@]}"; do [ "$other" != "$name" ] || die "two commits are named $name (Patch-name)"; done
    names+=("$name")
    files+=("$(printf '%04d-%s.patch' "$n" "$name")")
  done
  for ((n = 0; n < total; n++)); do
    c=${commits[n]} file=${files[n]}
    subject=$(git -C "$dir" log -1 --format=%B "$c" | sed -n 1p)
    body=$(git -C "$dir" log -1 --format=%B "$c" | sed -e '1d' -e '/^Patch-name: /d')
    cleanup+=("$patches_dir/$file.part")
    {
      echo "Subject: [PATCH $((n + 1))/$total] $subject"
      printf '%s\n\n' "$body"
      echo "---"
      git_plain diff --stat=80 "$c^" "$c"
      echo
      git_plain diff --no-color --no-ext-diff "$c^" "$c"
    } >"$patches_dir/$file.part"
  done
  # Only now, with every file made, replace the old series.
  for file in "${series[@]}"; do rm -f "$patches_dir/$file"; done
  for file in "${files[@]}"; do mv "$patches_dir/$file.part" "$patches_dir/$file"; done
  { sed -n '/^[^#[:space:]]/q; p' "$series_file"; printf '%s\n' "${files[@]}"; } >"$series_file.part"
  mv "$series_file.part" "$series_file"
  echo "mpich/series.sh: wrote $total patch(es) and $series_file from $dir" >&2
}

"$command"
