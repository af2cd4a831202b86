#!/usr/bin/env bash
# MPICH 4.0.2 from Debian's source package with the testbed's patch series (mpich/patches/series,
# quilt style, applied with patch -p1), built and installed OUTSIDE the clone and cached by a key
# over everything that decides the result: the source package version, the series and every
# patch in it, the configure flags, the compiler and this script. A second run with nothing
# changed returns the cached prefix in seconds.
#
#   mpich/build.sh                 build (or reuse) the install; prints its prefix on stdout
#   mpich/build.sh --tree          print the unpacked, patched source tree (prepares it if needed)
#   mpich/build.sh --incremental   after editing that tree: make -j install into <key>/dev
#                                  (the prototyping loop; the first run configures and builds
#                                  the dev build directory in full, later runs are incremental)
#   mpich/build.sh --export NAME   write the tree's edits (relative to the series) as
#                                  mpich/patches/NAME.patch and append it to the series
#   mpich/build.sh --key           print the cache key and what it hashes
#   mpich/build.sh --prefix        print the cached prefix without building (exit 1 if absent)
#
# Environment: TB_MPICH_CACHE (cache root, default /var/cache/tb-mpich), TB_MPICH_JOBS (make -j,
# default nproc). Progress and errors go to stderr, logs to <cache>/<key>/logs/; stdout carries
# only the path asked for. <cache>/current points at the key built or reused last.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"
patches_dir="$here/patches"
series_file="$patches_dir/series"
cache=${TB_MPICH_CACHE:-/var/cache/tb-mpich}
jobs=${TB_MPICH_JOBS:-$(nproc 2>/dev/null || echo 2)}
upstream_version=4.0.2            # the series is written against this MPICH release
apt_src_file=/etc/apt/sources.list.d/tb-mpich-deb-src.sources

# Debian's configuration for amd64 (debian/rules: ch4:ucx, hydra, system hwloc), made lean: no
# Fortran, C++ bindings or ROMIO, and the dataloop datatype engine. Note that --without-yaksa
# alone does not select dataloop on ch4 (configure then builds the embedded yaksa, which takes
# over an hour here); --with-datatype-engine=dataloop does. Debian's own libmpich uses yaksa.
configure_flags=(
  --with-device=ch4:ucx --with-ucx=/usr
  --with-datatype-engine=dataloop --without-yaksa
  --with-hwloc=/usr --with-pm=hydra
  --disable-fortran --disable-cxx --disable-romio
  --disable-maintainer-mode
)

log() { echo "mpich/build.sh: $*" >&2; }
die() { echo "mpich/build.sh: error: $*" >&2; exit 1; }
# A failure outside the project (no Debian source package, no network, no root for the cache):
# exit status 3, so that scripts/test.sh can skip the variant with this reason instead of failing.
die_env() { echo "mpich/build.sh: error (outside the project): $*" >&2; exit 3; }
# die_log STEP LOG [die|die_env]: the step failed; show the end of its log and where the whole log is.
die_log() {
  echo "mpich/build.sh: error: $1 failed; last lines of $2:" >&2
  tail -n 25 "$2" | sed 's/^/    /' >&2
  "${3:-die}" "$1 failed (full log: $2)"
}
usage() { sed -n '2,/^set -euo/p' "$self" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

mode=build; export_name=
case "${1:-}" in
  "") ;;
  --tree) mode=tree ;;
  --incremental) mode=incremental ;;
  --export)
    mode=export; export_name=${2:-}
    [ -n "$export_name" ] || die "--export needs a NAME"
    [[ $export_name =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] ||
      die "--export NAME: letters, digits, . _ + - only, not starting with one of . _ + - (got '$export_name')" ;;
  --key) mode=key ;;
  --prefix) mode=prefix ;;
  -h|--help) usage 0 ;;
  *) echo "mpich/build.sh: unknown argument '$1'" >&2; usage 2 ;;
esac
# Every mode takes one argument at most but --export, which takes its NAME: a further word is a
# mistake (a misplaced option, a second mode), never ignored.
taken=$([ "$mode" = export ] && echo 2 || echo 1)
if [ $# -gt "$taken" ]; then
  echo "mpich/build.sh: unexpected argument '${*:taken+1:1}' after '${*:1:taken}'" >&2
  usage 2
fi
[[ $jobs =~ ^[1-9][0-9]{0,3}$ ]] || die "TB_MPICH_JOBS='$jobs': use a number of make jobs from 1 to 9999"

# ---- the patch series ------------------------------------------------------------------------
# Quilt style: one patch name per line, '#' comments and blank lines ignored; only -p1 patches.
series_patches() {
  [ -f "$series_file" ] || die "no series file $series_file"
  local line name rest
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    read -r name rest <<<"$line" || true
    [ -n "${name:-}" ] || continue
    [ -z "${rest:-}" ] || [ "$rest" = "-p1" ] || die "series: '$name $rest': only -p1 patches are supported"
    [ -f "$patches_dir/$name" ] || die "series names '$name', but $patches_dir/$name does not exist"
    echo "$name"
  done <"$series_file"
}

# ---- Debian source package -------------------------------------------------------------------
have_deb_src() { [ -n "$(apt-cache showsrc mpich 2>/dev/null | awk '/^Package: mpich$/ {print}')" ]; }

ensure_deb_src() {
  have_deb_src && return 0
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die_env "cannot tell the Debian release from /etc/os-release"
  uri=${TB_MPICH_DEB_SRC_URI:-http://deb.debian.org/debian}
  if [ ! -f "$apt_src_file" ]; then
    [ "$(id -u)" -eq 0 ] || die_env "no deb-src entry for Debian's mpich source package, and adding one ($apt_src_file) needs root: run as root, or add 'deb-src $uri $codename main' yourself and apt-get update"
    log "enabling Debian source packages for $codename in $apt_src_file"
    cat >"$apt_src_file" <<EOF
# Added by the alltoallw testbed's mpich/build.sh: Debian source packages (apt-get source mpich).
Types: deb-src
URIs: $uri
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  [ "$(id -u)" -eq 0 ] || die_env "the deb-src entry exists but apt has no source index: run 'apt-get update' as root"
  log "apt-get update (for the source index)"
  local out
  out=$(apt-get update -q 2>&1) || { echo "$out" | tail -n 15 >&2; die_env "apt-get update failed; deb-src for $codename is unavailable"; }
  have_deb_src || { echo "$out" | tail -n 15 >&2; die_env "deb-src for $codename is unavailable: apt-cache showsrc mpich finds nothing after apt-get update (see $apt_src_file)"; }
}

# The Debian source version to build: TB_MPICH_DEB_VERSION, or the newest apt offers.
source_version() {
  local v
  if [ -n "${TB_MPICH_DEB_VERSION:-}" ]; then
    v=$TB_MPICH_DEB_VERSION
  else
    v=$(apt-cache showsrc mpich | awk '/^Version:/ {print $2}' | sort -V | tail -n 1)
  fi
  [ -n "$v" ] || die_env "apt-cache showsrc mpich gives no version"
  local up=${v#*:}; up=${up%-*}
  [ "$up" = "$upstream_version" ] || die_env "the patch series is written for MPICH $upstream_version, but the source package is mpich $v; set TB_MPICH_DEB_VERSION to a $upstream_version-* version apt still offers, or port the series"
  echo "$v"
}

# Downloads the source package once per version into <cache>/downloads/<version>/.
download_source() {
  local v=$1 dir="$cache/downloads/$1" dsc
  dsc=$(ls "$dir"/mpich_*.dsc 2>/dev/null | head -n 1 || true)
  if [ -z "$dsc" ]; then
    log "downloading Debian's mpich $v source package"
    mkdir -p "$dir.part"
    (cd "$dir.part" && apt-get source --download-only -q "mpich=$v") >"$cache/download-$v.log" 2>&1 ||
      die_log "apt-get source mpich=$v" "$cache/download-$v.log" die_env
    rm -rf "$dir"; mv "$dir.part" "$dir"
    dsc=$(ls "$dir"/mpich_*.dsc | head -n 1)
  fi
  echo "$dsc"
}

# ---- the cache key -----------------------------------------------------------------------------
key_text() {
  local v=$1 p
  echo "source: mpich $v (Debian)"
  echo "configure: ${configure_flags[*]}"
  echo "compiler: $(gcc --version | head -n 1)"
  echo "build.sh: $(sha256sum <"$self" | cut -d' ' -f1)"
  echo "series: $(sha256sum <"$series_file" | cut -d' ' -f1)"
  for p in $(series_patches); do
    echo "patch: $p $(patch_body <"$patches_dir/$p" | sha256sum | cut -d' ' -f1)"
  done
}
# What patch(1) applies: the lines from the first diff header on. The description above them (what,
# why, measured effect) is not in the key, so editing it does not rebuild MPICH.
patch_body() { awk 'body || /^(diff |--- [^ ]|Index: )/ { body = 1; print }'; }

# ---- preparing the tree ------------------------------------------------------------------------
# <key>/src is a git repository: tag tb-series = Debian's tree with the series applied (what an
# exported patch is diffed against), tag tb-autogen = after ./autogen.sh (what gets built).
git_tb() { git -C "$1" -c user.name=tb-mpich -c user.email=tb-mpich@localhost -c core.autocrlf=false -c gc.auto=0 "${@:2}"; }
# Whether <key>/src is a complete prepared tree (its tb-autogen tag exists).
have_tree() { [ -d "$1/.git" ] && git -C "$1" rev-parse -q --verify refs/tags/tb-autogen >/dev/null; }

# The inputs of autogen.sh that a patch may touch; their content decides whether autogen runs again.
autogen_inputs_hash() {
  local tree=$1
  (
    set +e +o pipefail
    cd "$tree" || exit 1
    git diff --name-only tb-series tb-autogen >.git/tb-generated    # autogen's outputs are not inputs
    {
      git ls-files -mo --exclude-standard |
        grep -E '(^|/)(Makefile\.(mk|am)|configure\.ac|[^/]*\.m4|coll_algorithms\.txt|cvars\.txt|errnames\.txt)$|^maint/|^src/binding/'
      git ls-files -mo --exclude-standard -- '*.c' '*.h' | xargs -r grep -l 'BEGIN_MPI_T_CVAR_INFO_BLOCK'
    } | sort -u | grep -vxFf .git/tb-generated | while read -r f; do [ -f "$f" ] && { echo "$f"; cat "$f"; }; done
    exit 0
  ) | sha256sum | cut -d' ' -f1
}

run_autogen() {
  local tree=$1 logf=$2
  # Like debian/rules (override_dh_autoreconf: ./autogen.sh), but only the top level (and its
  # src/mpl) is regenerated, which is where the series changes inputs: the bundled packages keep
  # the configure scripts the release ships (hydra, json-c, the test suite) or are not configured
  # at all here (yaksa, libfabric, UCX, izem, hwloc, ROMIO, hydra2). This halves autogen's time.
  (cd "$tree" && ./autogen.sh -without-yaksa -without-ofi -without-ucx -without-izem -without-romio \
     -without-hydra2 -without-json -without-hwloc -without-hydra -without-test) >"$logf" 2>&1 ||
    die_log "./autogen.sh in $tree" "$logf"
}

prepare_tree() {
  local dsc=$1 dir=$2 tree=$2/src logs=$2/logs p n=0
  ! have_tree "$tree" || return 0
  rm -rf "$tree" "$dir/src.part"
  mkdir -p "$logs"
  log "unpacking $(basename "$dsc") (with Debian's own patches)"
  dpkg-source --no-check --no-copy -x "$dsc" "$dir/src.part" >"$logs/unpack.log" 2>&1 || die_log "dpkg-source -x" "$logs/unpack.log"
  : >"$logs/patch.log"
  for p in $(series_patches); do
    n=$((n + 1))
    echo "== $p" >>"$logs/patch.log"
    if ! patch -d "$dir/src.part" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -i "$patches_dir/$p" >>"$logs/patch.log" 2>&1; then
      tail -n 15 "$logs/patch.log" | sed 's/^/    /' >&2
      die "patch $p (number $n in mpich/patches/series) does not apply to mpich $(basename "$dsc" .dsc) with the patches before it (log: $logs/patch.log)"
    fi
  done
  log "applied $n patch(es) from mpich/patches/series"
  git -C "$dir/src.part" init -q
  # -f: MPICH's .gitignore lists its generated files (configure, Makefile.in, mpir_coll.c, ...),
  # which must be in the commits all the same (a clean checkout of tb-autogen is buildable).
  git_tb "$dir/src.part" add -f -A . && git_tb "$dir/src.part" commit -q -m "Debian source + mpich/patches/series" && git_tb "$dir/src.part" tag tb-series
  if [ "$n" -gt 0 ]; then
    log "./autogen.sh (the series changes generated inputs)"
    local t0=$SECONDS
    run_autogen "$dir/src.part" "$logs/autogen.log"
    log "autogen took $((SECONDS - t0)) s"
  fi
  git_tb "$dir/src.part" add -f -A . && git_tb "$dir/src.part" commit -q --allow-empty -m "autogen" && git_tb "$dir/src.part" tag tb-autogen
  autogen_inputs_hash "$dir/src.part" >"$dir/autogen-inputs.sha256"
  mv "$dir/src.part" "$tree"
}

# configure + make + make install of TREE in BUILD_DIR into PREFIX, logs in LOGS.
build_install() {
  local tree=$1 bdir=$2 prefix=$3 logs=$4 t0
  mkdir -p "$bdir" "$logs"
  if [ ! -f "$bdir/config.status" ]; then
    log "configure (log: $logs/configure.log)"
    t0=$SECONDS
    (cd "$bdir" && "$tree/configure" --prefix="$prefix" "${configure_flags[@]}") >"$logs/configure.log" 2>&1 ||
      die_log "configure" "$logs/configure.log"
    echo "configure $((SECONDS - t0))" >>"$logs/times.txt"
  fi
  log "make -j$jobs (log: $logs/make.log)"
  t0=$SECONDS
  make -C "$bdir" -j"$jobs" >"$logs/make.log" 2>&1 || die_log "make" "$logs/make.log"
  echo "make $((SECONDS - t0))" >>"$logs/times.txt"
  t0=$SECONDS
  make -C "$bdir" install >"$logs/install.log" 2>&1 || die_log "make install" "$logs/install.log"
  echo "install $((SECONDS - t0))" >>"$logs/times.txt"
  "$prefix/bin/mpichversion" >/dev/null 2>&1 || die "the installed $prefix/bin/mpichversion does not run"
}

# ---- main --------------------------------------------------------------------------------------
# Fast paths first: --key/--prefix and a cache hit need no lock, no download and no apt-get update.
if [ -d "$cache" ] || mkdir -p "$cache" 2>/dev/null; then :; else
  die_env "cannot create the cache root $cache: run as root, or set TB_MPICH_CACHE to a writable directory"
fi
[ -w "$cache" ] || die_env "the cache root $cache is not writable: run as root, or set TB_MPICH_CACHE"

series_patches >/dev/null     # a broken series is an error here, not a short list later
ensure_deb_src
version=$(source_version)
key=$(key_text "$version" | sha256sum | cut -c1-16)
dir="$cache/$key"
prefix="$dir/install"

case "$mode" in
  key) echo "$key"; key_text "$version" | sed 's/^/  /' >&2; exit 0 ;;
  prefix) [ -f "$dir/complete" ] || die "no complete install for key $key in $cache (run mpich/build.sh)"; echo "$prefix"; exit 0 ;;
esac

if [ "$mode" = build ] && [ -f "$dir/complete" ]; then
  ln -sfn "$key" "$cache/current"
  log "cached: key $key ($(head -n 1 "$dir/complete"))"
  echo "$prefix"
  exit 0
fi

# Everything below may take minutes and writes the cache: one run at a time per cache root.
exec 9>"$cache/.lock"
if ! flock -n 9; then
  log "waiting for another mpich/build.sh on $cache to finish"
  flock 9
fi

dsc=$(download_source "$version")

case "$mode" in
  build)
    [ ! -f "$dir/complete" ] || { ln -sfn "$key" "$cache/current"; echo "$prefix"; exit 0; }
    t_start=$SECONDS
    log "cache miss for key $key: building MPICH $version with $(series_patches | wc -l) patch(es) into $prefix"
    mkdir -p "$dir"
    key_text "$version" >"$dir/key.txt"
    rm -rf "$dir/logs/times.txt" "$dir/build" "$prefix"
    prepare_tree "$dsc" "$dir"
    echo "prepare $((SECONDS - t_start))" >>"$dir/logs/times.txt"
    # The tree may carry someone's unexported edits (--tree): build the committed state instead.
    build_src="$dir/src"
    if [ -n "$(git -C "$dir/src" status --porcelain --untracked-files=normal | head -n 1)" ]; then
      # A copy with only the edited files put back: a fresh checkout would give every file a new
      # time stamp, and the bundled packages' automake rules (json-c's) would then want to
      # regenerate their build system with the automake version the release was made with.
      log "the source tree has edits (see --export); building a copy of it without them"
      rm -rf "$dir/clean-src"; cp -a "$dir/src" "$dir/clean-src"
      git -C "$dir/clean-src" diff --name-only -z tb-autogen | xargs -0 -r git -C "$dir/clean-src" checkout -q tb-autogen --
      git -C "$dir/clean-src" clean -q -fdx
      [ -z "$(git -C "$dir/clean-src" status --porcelain | head -n 1)" ] || die "could not make a clean copy of $dir/src in $dir/clean-src"
      build_src="$dir/clean-src"
    fi
    build_install "$build_src" "$dir/build" "$prefix" "$dir/logs"
    if [ "$build_src" != "$dir/src" ]; then rm -rf "$dir/clean-src"; fi
    rm -rf "$dir/build"     # the install is what is kept; --incremental has its own build directory
    total=$((SECONDS - t_start))
    echo "built in ${total} s on $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(tr '\n' ' ' <"$dir/logs/times.txt"))" >"$dir/complete"
    key_text "$version" >>"$dir/complete"
    ln -sfn "$key" "$cache/current"
    log "built key $key in ${total} s: $prefix"
    echo "$prefix"
    ;;
  tree)
    prepare_tree "$dsc" "$dir"
    echo "$dir/src"
    ;;
  incremental)
    prepare_tree "$dsc" "$dir"
    tree="$dir/src"
    now=$(autogen_inputs_hash "$tree")
    if [ "$now" != "$(cat "$dir/autogen-inputs.sha256" 2>/dev/null)" ]; then
      log "autogen inputs changed in the tree: ./autogen.sh (log: $dir/logs/dev-autogen.log)"
      run_autogen "$tree" "$dir/logs/dev-autogen.log"
      echo "$now" >"$dir/autogen-inputs.sha256"
      rm -f "$dir/dev-build/config.status"      # configure again over the existing objects
      log "configuring the dev build directory again (most objects are rebuilt: minutes)"
    elif [ ! -f "$dir/dev-build/config.status" ]; then
      log "first --incremental for key $key: configuring and building the dev build directory in full (minutes)"
    fi
    t0=$SECONDS
    build_install "$tree" "$dir/dev-build" "$dir/dev" "$dir/logs/dev"
    log "dev prefix updated in $((SECONDS - t0)) s: $dir/dev"
    echo "$dir/dev"
    ;;
  export)
    name=${export_name%.patch}.patch
    [ ! -e "$patches_dir/$name" ] || die "$patches_dir/$name exists already; choose another NAME"
    ! series_patches | grep -qxF "$name" || die "$name is in the series already"
    tree="$dir/src"
    have_tree "$tree" || die "no source tree for key $key: run mpich/build.sh --tree, edit, then --export"
    # Files autogen produces are never exported: the build regenerates them from the inputs.
    generated=$(mktemp); changed=$(mktemp); index=$(mktemp -u)
    trap 'rm -f "$generated" "$changed" "$index"' EXIT
    git -C "$tree" diff --name-only tb-series tb-autogen >"$generated"
    cp "$tree/.git/index" "$index" 2>/dev/null || true
    GIT_INDEX_FILE=$index git -C "$tree" add -A .
    GIT_INDEX_FILE=$index git -C "$tree" diff --cached --name-only tb-autogen |
      grep -vE '(^|/)autom4te\.cache/|\.(orig|rej|swp)$|~$' | grep -vxFf "$generated" >"$changed" || true
    skipped=$(GIT_INDEX_FILE=$index git -C "$tree" diff --cached --name-only tb-autogen | grep -xFf "$generated" || true)
    [ -z "$skipped" ] || log "not exported: $(echo "$skipped" | wc -l) file(s) autogen generated from the inputs (e.g. $(echo "$skipped" | grep -v autom4te | head -n 3 | tr '\n' ' '))"
    [ -s "$changed" ] || die "no edits in $tree relative to the series: nothing to export"
    {
      echo "Subject: [PATCH] ${name%.patch}"
      echo
      echo "What: <one paragraph: what this patch changes in MPICH>"
      echo "Why: <why the testbed needs it>"
      echo "Measured effect: not measured"
      echo
      echo "---"
      GIT_INDEX_FILE=$index git -C "$tree" diff --cached --stat tb-autogen -- $(cat "$changed")
      echo
      GIT_INDEX_FILE=$index git -C "$tree" diff --cached --no-color --no-ext-diff tb-autogen -- $(cat "$changed")
    } >"$patches_dir/$name"
    echo "$name" >>"$series_file"
    log "wrote mpich/patches/$name ($(wc -l <"$changed") file(s)) and appended it to mpich/patches/series;"
    log "fill in its header (what, why, measured effect); the next mpich/build.sh builds the new series (new key)"
    echo "$patches_dir/$name"
    ;;
esac
