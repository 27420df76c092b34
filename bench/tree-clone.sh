#!/usr/bin/env bash
# Whole-tree clone benchmark: cp --reflink, xcp, cpz and cowkit cp on a loop
# XFS and a loop Btrfs, plus rm -rf and rmz against cowkit rm -r.
#
#   bench/tree-clone.sh
#
# Environment:
#   ROUNDS=5            rounds; each round runs every method once per
#                       filesystem, in an order that rotates from round to round
#   METHODS=all         all | peers | a comma list of method names (below)
#   FILESYSTEMS="xfs btrfs"
#   COWKIT=target/release/cowkit   when COWKIT is not set and a cowkit method
#                       is asked for, the script first runs
#                       cargo build --release --locked -p cowkit
#   XCP_VERSION=0.24.9  the xcp that `cargo install --locked` puts under
#   XCP_ROOT=/var/cache/cowkit-bench/xcp   when $XCP_ROOT/bin/xcp is missing
#                       or another version; XCP=/path/to/xcp uses that instead
#   FUC_VERSION=3.2.1   the cpz and rmz (the fuc project) that `cargo install
#   FUC_ROOT=/var/cache/cowkit-bench/fuc   --locked` puts under FUC_ROOT when
#                       missing or another version; CPZ=, RMZ=/path use those
#   TREE_CACHE=/var/cache/cowkit-bench/tree   the cached source images
#   TREE_REBUILD=0      1: build the source tree again even if it is cached
#   TREE_SOURCES="/usr/share /usr/include /usr/lib/python3 /usr/lib/x86_64-linux-gnu"
#   TREE_MIN_ENTRIES=60000 TREE_MIN_BYTES=1073741824   generated files top the
#                       tree up to these when the sources are smaller
#   TREE_IMG_SIZE=8G    size of the sparse filesystem images
#   BENCH_IMG_DIR=/var/tmp   where the per-run image copies go
#   LOOP_DIRECT_IO=1    losetup --direct-io=on for the benchmark mounts
#   STRACE=1            0: skip the strace -c -f runs
#   FLAT_FILES=2000     files in the flat directory that measures the
#                       syscalls of one more regular file
#   STRACE_FS=xfs       the filesystems they run on (default: the first of
#                       FILESYSTEMS; the counts hardly depend on it)
#   VERIFY=1            0: skip comparing the round-1 copies with the source
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-tree-clone.{md,json} go
#
# Methods. Copies go to a fresh DST on the same filesystem as SRC; deletes
# remove a fresh `cp -a --reflink=always` copy of SRC (made untimed):
#   cp-a        cp -a --reflink=always SRC DST          (baseline for copies)
#   cp-r        cp -r --reflink=always SRC DST
#   xcp         xcp -r -w 2 --no-progress SRC DST
#   cpz         cpz SRC DST
#   cowkit-j1   cowkit cp -a -j 1 SRC DST   (and cowkit-j2, cowkit-j4)
#   cowkit-r2   cowkit cp -r -j 2 SRC DST   (keeps what cpz keeps: no owners,
#               times, xattrs or hardlinks; the walk without cp -a's metadata)
#   rm-rf       rm -rf DST                              (baseline for deletes)
#   rmz         rmz DST
#   cowkit-rm   cowkit rm -r DST
#   base-j2     COWKIT_BASE cp -a -j 2 SRC DST   (base-rm: COWKIT_BASE rm -r DST):
#               another cowkit build, the one before a change, so that before
#               and after are timed in one run (not in `all`; needs COWKIT_BASE)
# peers = cp-a, cp-r, xcp, cpz, rm-rf, rmz.
#
# The source tree is built once and cached as two filesystem images (see
# bench/README.md); every run works on fresh copies of those images, so
# successive runs time the same tree on the same on-disk layout.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
METHODS=${METHODS:-all}
read -r -a FSES <<<"${FILESYSTEMS:-xfs btrfs}"
XCP_VERSION=${XCP_VERSION:-0.24.9}
XCP_ROOT=${XCP_ROOT:-/var/cache/cowkit-bench/xcp}
FUC_VERSION=${FUC_VERSION:-3.2.1}
FUC_ROOT=${FUC_ROOT:-/var/cache/cowkit-bench/fuc}
TREE_CACHE=${TREE_CACHE:-/var/cache/cowkit-bench/tree}
TREE_REBUILD=${TREE_REBUILD:-0}
read -r -a TREE_SRCS <<<"${TREE_SOURCES:-/usr/share /usr/include /usr/lib/python3 /usr/lib/x86_64-linux-gnu}"
TREE_MIN_ENTRIES=${TREE_MIN_ENTRIES:-60000}
TREE_MIN_BYTES=${TREE_MIN_BYTES:-1073741824}
TREE_IMG_SIZE=${TREE_IMG_SIZE:-8G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
STRACE=${STRACE:-1}
read -r -a STRACE_FSES <<<"${STRACE_FS:-${FSES[0]}}"
VERIFY=${VERIFY:-1}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PY=/usr/bin/python3
MEASURE="$BENCH_DIR/measure.py"
TREE_PY="$BENCH_DIR/tree_measure.py"
# Bump when the way the tree is built changes: a cached tree of another
# recipe is rebuilt.
RECIPE="tree-clone/1 size=$TREE_IMG_SIZE min=$TREE_MIN_ENTRIES,$TREE_MIN_BYTES sources=${TREE_SRCS[*]}"

case "$ROUNDS" in
'' | *[!0-9]* | 0) die "ROUNDS must be a positive integer, not '$ROUNDS'" ;;
esac
for fs in "${FSES[@]}"; do
  case "$fs" in xfs | btrfs) ;; *) die "unknown filesystem '$fs' in FILESYSTEMS (known: xfs btrfs)" ;; esac
done

COPY_METHODS=(cp-a cp-r xcp cpz cowkit-j1 cowkit-j2 cowkit-j4 cowkit-r2)
RM_METHODS=(rm-rf rmz cowkit-rm)
ALL_METHODS=("${COPY_METHODS[@]}" "${RM_METHODS[@]}" base-j2 base-rm)
case "$METHODS" in
all) methods=("${COPY_METHODS[@]}" "${RM_METHODS[@]}") ;;
peers) methods=(cp-a cp-r xcp cpz rm-rf rmz) ;;
*) IFS=', ' read -r -a methods <<<"$METHODS" ;;
esac
uses_cowkit=0
uses_base=0
uses_xcp=0
uses_cpz=0
uses_rmz=0
copy_methods=()
rm_methods=()
for m in "${methods[@]}"; do
  case " ${ALL_METHODS[*]} " in
  *" $m "*) ;;
  *) die "unknown method '$m' (known: ${ALL_METHODS[*]}, or all, peers)" ;;
  esac
  case "$m" in cowkit-*) uses_cowkit=1 ;; base-*) uses_base=1 ;; xcp) uses_xcp=1 ;; cpz) uses_cpz=1 ;; rmz) uses_rmz=1 ;; esac
  case "$m" in rm-rf | rmz | cowkit-rm | base-rm) rm_methods+=("$m") ;; *) copy_methods+=("$m") ;; esac
done

# ---------------------------------------------------------------- preparation
# (outside the mount namespace; runs once)
if [ -z "${COWKIT_TREE_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs strace:strace unshare:util-linux \
    findmnt:util-linux flock:util-linux losetup:mount "$PY:python3"
  outside_repo "$TREE_CACHE"
  outside_repo "$XCP_ROOT"
  outside_repo "$FUC_ROOT"
  case "$BENCH_IMG_DIR$TREE_CACHE" in
  *[[:space:]]*) die "BENCH_IMG_DIR and TREE_CACHE must not contain white space" ;;
  esac
  mkdir -p "$TREE_CACHE"
  TREE_CACHE=$(abs_path "$TREE_CACHE")
  # One run at a time: a second one would time the first one's load, and
  # both would write the cache.
  exec 9>"$TREE_CACHE/.lock"
  flock -n 9 || die "another tree-clone.sh run holds $TREE_CACHE/.lock"

  if [ "$uses_xcp" = 1 ]; then
    if [ -n "${XCP:-}" ]; then
      XCP=$(abs_path "$XCP")
    else
      XCP="$XCP_ROOT/bin/xcp"
      if [ "$("$XCP" --version 2>/dev/null || true)" != "xcp $XCP_VERSION" ]; then
        command -v cargo >/dev/null 2>&1 || die "no cargo to install xcp with; set XCP=/path/to/xcp"
        log "installing xcp $XCP_VERSION: cargo install xcp --locked --root $XCP_ROOT"
        (cd / && cargo install xcp --version "=$XCP_VERSION" --locked --force --root "$XCP_ROOT") ||
          die "cargo install xcp $XCP_VERSION failed"
      fi
    fi
    "$XCP" --version >/dev/null 2>&1 || die "XCP=$XCP does not run"
    export XCP
  fi

  # cpz and rmz: FUC_VERSION of the fuc project's tools, installed together.
  if [ "$uses_cpz" = 1 ] && [ -z "${CPZ:-}" ]; then CPZ="$FUC_ROOT/bin/cpz"; fi
  if [ "$uses_rmz" = 1 ] && [ -z "${RMZ:-}" ]; then RMZ="$FUC_ROOT/bin/rmz"; fi
  fuc_missing=()
  [ "$uses_cpz" = 1 ] && [ "${CPZ:-}" = "$FUC_ROOT/bin/cpz" ] &&
    [ "$("$CPZ" --version 2>/dev/null || true)" != "cpz $FUC_VERSION" ] && fuc_missing+=(cpz)
  [ "$uses_rmz" = 1 ] && [ "${RMZ:-}" = "$FUC_ROOT/bin/rmz" ] &&
    [ "$("$RMZ" --version 2>/dev/null || true)" != "rmz $FUC_VERSION" ] && fuc_missing+=(rmz)
  if [ "${#fuc_missing[@]}" -gt 0 ]; then
    command -v cargo >/dev/null 2>&1 || die "no cargo to install ${fuc_missing[*]} with; set CPZ=/path/to/cpz, RMZ=/path/to/rmz"
    log "installing ${fuc_missing[*]} $FUC_VERSION: cargo install ${fuc_missing[*]} --locked --root $FUC_ROOT"
    (cd / && cargo install "${fuc_missing[@]}" --version "=$FUC_VERSION" --locked --force --root "$FUC_ROOT") ||
      die "cargo install ${fuc_missing[*]} $FUC_VERSION failed"
  fi
  if [ "$uses_cpz" = 1 ]; then
    CPZ=$(abs_path "$CPZ")
    "$CPZ" --version >/dev/null 2>&1 || die "CPZ=$CPZ does not run"
    export CPZ
  fi
  if [ "$uses_rmz" = 1 ]; then
    RMZ=$(abs_path "$RMZ")
    "$RMZ" --version >/dev/null 2>&1 || die "RMZ=$RMZ does not run"
    export RMZ
  fi

  if [ "$uses_cowkit" = 1 ]; then
    find_cowkit "Use a cowkit build that has it, or METHODS=peers to time only cp, xcp, cpz, rm and rmz." cp rm
  fi
  if [ "$uses_base" = 1 ]; then
    [ -n "${COWKIT_BASE:-}" ] || die "base-j2 and base-rm time COWKIT_BASE, another cowkit build: set it"
    COWKIT_BASE=$(abs_path "$COWKIT_BASE")
    "$COWKIT_BASE" --version >/dev/null 2>&1 || die "COWKIT_BASE=$COWKIT_BASE does not run"
    export COWKIT_BASE
  fi
  # Leftover image directories of runs that were killed outright.
  clean_stale_images "$BENCH_IMG_DIR/cowkit-tree"
  prepare_results_dir
  export RESULTS_DIR TREE_CACHE COWKIT_TREE_NS=1
  in_private_mounts "$@"
fi

# ------------------------------------------------------ inside the namespace
make_rig cowkit-tree

RECORD="$RIG/record.jsonl"
: >"$RECORD"

# fs_used MNT — bytes in use on the filesystem (statvfs).
fs_used() { stat -f -c '%b %f %S' "$1" | awk '{ printf "%d\n", ($1 - $2) * $3 }'; }

# ------------------------------------------------------------ the source tree
cache_ok() {
  local fs
  [ "$TREE_REBUILD" != 1 ] || return 1
  [ -f "$TREE_CACHE/tree.json" ] || return 1
  for fs in xfs btrfs; do [ -f "$TREE_CACHE/$fs.img" ] || return 1; done
  RECIPE="$RECIPE" "$PY" -c 'import json, os, sys
sys.exit(json.load(open(sys.argv[1])).get("recipe") != os.environ["RECIPE"])' "$TREE_CACHE/tree.json"
}

# build_cache — the source tree on a new XFS, then `cp -a` of it onto a new
# Btrfs; both images and tree.json (recipe, sources, counts) go to TREE_CACHE.
build_cache() {
  local bx="$RIG/build-xfs" bb="$RIG/build-btrfs" src dest t0 decorate topup
  t0=$SECONDS
  log "building the source tree (cached afterwards in $TREE_CACHE)"
  mkfs_img xfs "$RIG/xfs.img.build" "$TREE_IMG_SIZE"
  mkfs_img btrfs "$RIG/btrfs.img.build" "$TREE_IMG_SIZE"
  mkdir -p "$bx" "$bb"
  mount -o loop "$RIG/xfs.img.build" "$bx"
  mount -o loop "$RIG/btrfs.img.build" "$bb"
  mkdir "$bx/tree"
  local used=()
  for src in "${TREE_SRCS[@]}"; do
    if [ ! -d "$src" ]; then
      log "  $src: not here, skipped"
      continue
    fi
    case "$src" in
    /usr/*) dest="$bx/tree/${src#/usr/}" ;;
    *) dest="$bx/tree/${src##*/}" ;;
    esac
    [ ! -e "$dest" ] || die "two TREE_SOURCES map to $dest"
    log "  cp -a $src ($(du -sh "$src" | cut -f1))"
    mkdir -p "${dest%/*}"
    cp -a "$src" "$dest"
    used+=("$src")
  done
  [ ${#used[@]} -gt 0 ] || die "none of TREE_SOURCES exists: ${TREE_SRCS[*]}"
  decorate=$("$PY" "$TREE_PY" decorate "$bx/tree")
  topup=$("$PY" "$TREE_PY" topup "$bx/tree" --min-entries "$TREE_MIN_ENTRIES" --min-bytes "$TREE_MIN_BYTES")
  log "  added: $decorate $topup"
  log "  cp -a onto Btrfs"
  cp -a "$bx/tree" "$bb/tree"
  "$PY" "$TREE_PY" manifest --level full "$bx/tree" >"$RIG/build.xfs.manifest"
  "$PY" "$TREE_PY" manifest --level full "$bb/tree" >"$RIG/build.btrfs.manifest"
  cmp -s "$RIG/build.xfs.manifest" "$RIG/build.btrfs.manifest" || {
    diff "$RIG/build.xfs.manifest" "$RIG/build.btrfs.manifest" | head -n 20 >&2 || true
    die "the Btrfs copy of the source tree differs from the XFS one"
  }
  "$PY" "$TREE_PY" stats "$bx/tree" >"$RIG/build.xfs.stats"
  "$PY" "$TREE_PY" stats "$bb/tree" >"$RIG/build.btrfs.stats"
  umount "$bx"
  umount "$bb"
  rm -f "$TREE_CACHE/tree.json"
  mv -f "$RIG/xfs.img.build" "$TREE_CACHE/xfs.img"
  mv -f "$RIG/btrfs.img.build" "$TREE_CACHE/btrfs.img"
  RECIPE="$RECIPE" SOURCES="${used[*]}" DECORATE="$decorate" TOPUP="$topup" "$PY" - \
    "$RIG/build.xfs.stats" "$RIG/build.btrfs.stats" >"$TREE_CACHE/tree.json.new" <<'PYEOF'
import datetime, json, os, sys
e = os.environ
print(json.dumps({
    "recipe": e["RECIPE"],
    "built": datetime.datetime.now().isoformat(timespec="seconds"),
    "host": os.uname().nodename,
    "sources": e["SOURCES"].split(),
    "added": dict(json.loads(e["DECORATE"]), **json.loads(e["TOPUP"])),
    "stats": {"xfs": json.load(open(sys.argv[1])), "btrfs": json.load(open(sys.argv[2]))},
}, indent=1))
PYEOF
  mv -f "$TREE_CACHE/tree.json.new" "$TREE_CACHE/tree.json"
  log "source tree built and cached in $((SECONDS - t0)) s"
}

# tree_field FS KEY — one number from the cached tree statistics.
tree_field() {
  "$PY" -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"][sys.argv[2]][sys.argv[3]])' "$TREE_CACHE/tree.json" "$1" "$2"
}

# --------------------------------------------------------------- the methods
declare -A COMMANDS=(
  [cp-a]="cp -a --reflink=always SRC DST"
  [cp-r]="cp -r --reflink=always SRC DST"
  [xcp]="xcp -r -w 2 --no-progress SRC DST"
  [cpz]="cpz SRC DST"
  [cowkit-j1]="cowkit cp -a -j 1 SRC DST"
  [cowkit-j2]="cowkit cp -a -j 2 SRC DST"
  [cowkit-j4]="cowkit cp -a -j 4 SRC DST"
  [cowkit-r2]="cowkit cp -r -j 2 SRC DST"
  [rm-rf]="rm -rf DST"
  [rmz]="rmz DST"
  [cowkit-rm]="cowkit rm -r DST"
  [base-j2]="COWKIT_BASE cp -a -j 2 SRC DST"
  [base-rm]="COWKIT_BASE rm -r DST"
)

# method_argv METHOD SRC DST — sets argv to the command line of METHOD.
method_argv() {
  case "$1" in
  cp-a) argv=(cp -a --reflink=always "$2" "$3") ;;
  cp-r) argv=(cp -r --reflink=always "$2" "$3") ;;
  xcp) argv=("$XCP" -r -w 2 --no-progress "$2" "$3") ;;
  cpz) argv=("$CPZ" "$2" "$3") ;;
  cowkit-j[0-9]*) argv=("$COWKIT" cp -a -j "${1#cowkit-j}" "$2" "$3") ;;
  cowkit-r2) argv=("$COWKIT" cp -r -j 2 "$2" "$3") ;;
  rm-rf) argv=(rm -rf "$3") ;;
  rmz) argv=("$RMZ" "$3") ;;
  cowkit-rm) argv=("$COWKIT" rm -r "$3") ;;
  base-j2) argv=("$COWKIT_BASE" cp -a -j 2 "$2" "$3") ;;
  base-rm) argv=("$COWKIT_BASE" rm -r "$3") ;;
  esac
}

# verify_level METHOD — what a copy by METHOD must share with the source:
# everything cp -a keeps, or only names, types, sizes and symlink targets
# (cp -r, xcp, cpz and cowkit cp -r keep neither hardlinks nor owners).
verify_level() {
  case "$1" in cp-r | xcp | cpz | cowkit-r2) echo basic ;; *) echo full ;; esac
}

# timed FS GROUP METHOD ROUND -- CMD... — one measured run (measure.py).
timed() {
  local fs=$1 group=$2 m=$3 round=$4
  shift 5
  if ! "$PY" "$MEASURE" run --record "$RECORD" --sync "$MNT" --stdout-null --stderr "$RIG/cmd.err" \
    --field "fs=$fs" --field "group=$group" --field "method=$m" --field "round=$round" -- "$@"; then
    log "$m failed on $fs; the end of its stderr:"
    tail -n 20 "$RIG/cmd.err" >&2 || true
    die "$m: $* failed"
  fi
  # What a tool prints (cowkit's summary line, cp's warnings) is shown once.
  if [ "$round" = 1 ] && [ -s "$RIG/cmd.err" ]; then
    log "  $m on $fs wrote to stderr (first lines):"
    head -n 5 "$RIG/cmd.err" | sed 's/^/    /' >&2
  fi
}

# copy_run FS METHOD ROUND — one timed copy into a fresh DST, checked in round 1.
copy_run() {
  local fs=$1 m=$2 round=$3 dst="$MNT/dst" before level argv=()
  rm -rf --one-file-system "$dst"
  sync -f "$MNT"
  before=$(fs_used "$MNT")
  method_argv "$m" "$SRC" "$dst"
  timed "$fs" copy "$m" "$round" -- "${argv[@]}"
  if [ -L "$dst" ] || [ ! -d "$dst" ]; then die "$m exited 0 but made no directory $dst"; fi
  if [ "$round" = 1 ]; then
    printf '{"kind":"space","fs":"%s","method":"%s","bytes":%s}\n' \
      "$fs" "$m" "$(($(fs_used "$MNT") - before))" >>"$RECORD"
    if [ "$VERIFY" = 1 ]; then
      level=$(verify_level "$m")
      "$PY" "$TREE_PY" manifest --level "$level" "$dst" >"$RIG/got.manifest"
      if ! cmp -s "$RIG/src.$level.manifest" "$RIG/got.manifest"; then
        log "$m: the copy on $fs differs from the source ($level check; < source, > copy):"
        diff "$RIG/src.$level.manifest" "$RIG/got.manifest" | head -n 20 >&2 || true
        die "$m: verification failed"
      fi
      log "  $m: copy verified ($level: $(wc -l <"$RIG/got.manifest") entries)"
    fi
  fi
  rm -rf --one-file-system "$dst"
  sync -f "$MNT"
}

# rm_run FS METHOD ROUND — time deleting a fresh reflinked copy of SRC.
rm_run() {
  local fs=$1 m=$2 round=$3 victim="$MNT/victim" argv=()
  rm -rf --one-file-system "$victim"
  cp -a --reflink=always "$SRC" "$victim"
  sync -f "$MNT"
  method_argv "$m" "$SRC" "$victim"
  timed "$fs" rm "$m" "$round" -- "${argv[@]}"
  if [ -e "$victim" ] || [ -L "$victim" ]; then die "$m left $victim behind"; fi
  sync -f "$MNT"
}

# strace_runs FS — syscall counts of one untimed run per tool.
strace_runs() {
  local fs=$1 m files dst="$MNT/dst" argv=() out json=() t0=$SECONDS
  files=$(tree_field "$fs" regular_files)
  for m in cp-a xcp cpz cowkit-j2 rm-rf rmz cowkit-rm; do
    case " ${methods[*]} " in *" $m "*) ;; *) continue ;; esac
    rm -rf --one-file-system "$dst"
    case "$m" in rm-* | rmz | cowkit-rm) cp -a --reflink=always "$SRC" "$dst" ;; esac
    sync -f "$MNT"
    method_argv "$m" "$SRC" "$dst"
    out="$RIG/strace.$fs.$m"
    json=()
    # The cowkit copy also prints its --json summary (when it has --json).
    if [ "$m" = cowkit-j2 ] && "$COWKIT" cp --help 2>&1 | grep -q -- '--json'; then json=(--json); fi
    log "  strace -c -f ${COMMANDS[$m]}${json:+ --json} ($((SECONDS - t0)) s so far)"
    strace -c -f -o "$out" -- "${argv[@]}" "${json[@]}" >"$RIG/strace.stdout" 2>"$RIG/cmd.err" || {
      tail -n 20 "$RIG/cmd.err" >&2 || true
      die "strace of $m failed"
    }
    "$PY" "$TREE_PY" strace "$out" --files "$files" |
      FS="$fs" M="$m" "$PY" -c 'import json, os, sys
r = json.load(sys.stdin)
r.update(kind="strace", fs=os.environ["FS"], method=os.environ["M"])
print(json.dumps(r))' >>"$RECORD"
    if [ ${#json[@]} -gt 0 ]; then
      FS="$fs" CMD="${COMMANDS[$m]} --json" "$PY" -c 'import json, os, sys
try:
    s = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
print(json.dumps({"kind": "cowkit-summary", "fs": os.environ["FS"], "command": os.environ["CMD"], "summary": s}))' \
        "$RIG/strace.stdout" >>"$RECORD"
    fi
    rm -rf --one-file-system "$dst"
    sync -f "$MNT"
  done
  strace_marginal "$fs"
}

# strace_marginal FS — the syscalls one more regular file costs each copy
# tool: strace -c -f of a flat directory of FLAT_FILES 4 KiB files, minus
# that of an empty directory, divided by FLAT_FILES. The whole-tree counts
# above also carry the directories and symlinks.
FLAT_FILES=${FLAT_FILES:-2000}
strace_marginal() {
  local fs=$1 m n dir dst="$MNT/dst" argv=() out
  local -A total=()
  mkdir -p "$MNT/flat-0" "$MNT/flat-$FLAT_FILES"
  for ((n = 0; n < FLAT_FILES; n++)); do
    head -c 4096 /dev/urandom >"$MNT/flat-$FLAT_FILES/f$n"
  done
  sync -f "$MNT"
  for m in cp-a xcp cpz cowkit-j2; do
    case " ${methods[*]} " in *" $m "*) ;; *) continue ;; esac
    for n in 0 "$FLAT_FILES"; do
      dir="$MNT/flat-$n"
      rm -rf --one-file-system "$dst"
      method_argv "$m" "$dir" "$dst"
      out="$RIG/strace-flat.$fs.$m.$n"
      strace -c -f -o "$out" -- "${argv[@]}" >/dev/null 2>"$RIG/cmd.err" || {
        tail -n 20 "$RIG/cmd.err" >&2 || true
        die "strace of $m on a flat directory failed"
      }
      "$PY" "$TREE_PY" strace "$out" --files "$n" >"$out.json"
    done
    FS="$fs" M="$m" N="$FLAT_FILES" "$PY" -c 'import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = int(os.environ["N"])
calls = {k: (b["calls"].get(k, 0) - a["calls"].get(k, 0)) / n for k in b["calls"]}
calls = dict(sorted(((k, v) for k, v in calls.items() if v > 0.005), key=lambda kv: -kv[1]))
print(json.dumps({"kind": "strace-marginal", "fs": os.environ["FS"], "method": os.environ["M"], "files": n,
                  "per_file": (b["total_syscalls"] - a["total_syscalls"]) / n, "calls": calls}))' \
      "$RIG/strace-flat.$fs.$m.0.json" "$RIG/strace-flat.$fs.$m.$FLAT_FILES.json" >>"$RECORD"
  done
  rm -rf --one-file-system "$dst" "$MNT/flat-0" "$MNT/flat-$FLAT_FILES"
  sync -f "$MNT"
}

# run_fs FS — mount a copy of the cached image and run every method ROUNDS times.
run_fs() {
  local fs=$1 img="$RIG/$1.img" round i n m t0
  t0=$SECONDS
  MNT="$RIG/$fs"
  SRC="$MNT/tree"
  log "$fs: copying the cached image"
  cp --sparse=always "$TREE_CACHE/$fs.img" "$img"
  loop_mount "$img" "$MNT"
  local how
  case "$fs" in
  xfs) how="XFS (mkfs.xfs -m reflink=1, $(xfs_info "$MNT" | sed -n 's/.*bsize=\([0-9]*\).*blocks=.*/block size \1/p' | head -n 1))" ;;
  btrfs) how="Btrfs (mkfs.btrfs defaults)" ;;
  esac
  FS="$fs" LINE="$how, mount options $(findmnt -n -o OPTIONS "$MNT"), on $LOOP_DEV ($LOOP_IO), backed by a sparse $TREE_IMG_SIZE file on $(findmnt -n -o FSTYPE --target "$BENCH_IMG_DIR") ($(findmnt -n -o SOURCE --target "$BENCH_IMG_DIR"))" \
    "$PY" -c 'import json, os; print(json.dumps({"kind": "fs", "fs": os.environ["FS"], "line": os.environ["LINE"]}))' >>"$RECORD"
  "$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))["stats"][sys.argv[2]]
s.update(kind="tree", fs=sys.argv[2])
print(json.dumps(s))' "$TREE_CACHE/tree.json" "$fs" >>"$RECORD"
  # The source manifests; walking the tree also brings its inodes into the cache.
  log "$fs: reading the source tree"
  "$PY" "$TREE_PY" manifest --level full "$SRC" >"$RIG/src.full.manifest"
  "$PY" "$TREE_PY" manifest --level basic "$SRC" >"$RIG/src.basic.manifest"
  sync -f "$MNT"
  if [ "$STRACE" = 1 ] && [[ " ${STRACE_FSES[*]} " == *" $fs "* ]]; then
    log "$fs: syscall counts"
    strace_runs "$fs"
  fi
  for ((round = 1; round <= ROUNDS; round++)); do
    log "$fs: round $round/$ROUNDS ($((SECONDS - t0)) s so far)"
    # Rotate the order from round to round, so that no method always runs
    # right after the same other one.
    n=${#copy_methods[@]}
    for ((i = 0; i < n; i++)); do
      m=${copy_methods[(i + round - 1) % n]}
      copy_run "$fs" "$m" "$round"
    done
    n=${#rm_methods[@]}
    for ((i = 0; i < n; i++)); do
      m=${rm_methods[(i + round - 1) % n]}
      rm_run "$fs" "$m" "$round"
    done
  done
  umount "$MNT"
  rm -f "$img"
  log "$fs: done in $((SECONDS - t0)) s"
}

machine_json() {
  local cpu cores mem kernel commit load cowkitv basev xcpv cpzv rmzv
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  cores=$(nproc)
  mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  kernel=$(uname -r)
  load="$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
  if ! git -C "$REPO_ROOT" diff --quiet HEAD -- 2>/dev/null; then commit="$commit (+ uncommitted changes)"; fi
  cowkitv=-
  [ "$uses_cowkit" = 1 ] && cowkitv="$("$COWKIT" --version 2>/dev/null || echo '?') ($COWKIT)"
  basev=-
  [ "$uses_base" = 1 ] && basev="$("$COWKIT_BASE" --version 2>/dev/null || echo '?') ($COWKIT_BASE)"
  xcpv=-
  [ "$uses_xcp" = 1 ] && xcpv="$("$XCP" --version 2>/dev/null || echo '?') ($XCP)"
  cpzv=-
  [ "$uses_cpz" = 1 ] && cpzv="$("$CPZ" --version 2>/dev/null || echo '?') ($CPZ)"
  rmzv=-
  [ "$uses_rmz" = 1 ] && rmzv="$("$RMZ" --version 2>/dev/null || echo '?') ($RMZ)"
  CPU="$cpu" CORES="$cores" MEM="$mem" KERNEL="$kernel" COMMIT="$commit" LOAD="$load" \
    COWKITV="$cowkitv" BASEV="$basev" XCPV="$xcpv" CPZV="$cpzv" RMZV="$rmzv" CPV="$(cp --version | head -n 1)" \
    RMV="$(rm --version | head -n 1)" STRACEV="$(strace -V | head -n 1)" \
    XFSV="$(mkfs.xfs -V)" BTRFSV="$(btrfs --version)" METHODS_LIST="${methods[*]}" \
    ROUNDS="$ROUNDS" FSES="${FSES[*]}" "$PY" - "$TREE_CACHE/tree.json" <<'PYEOF'
import datetime, json, os, sys
e = os.environ
tree = json.load(open(sys.argv[1]))
commands = {
    "cp-a": "cp -a --reflink=always SRC DST", "cp-r": "cp -r --reflink=always SRC DST",
    "xcp": "xcp -r -w 2 --no-progress SRC DST", "cpz": "cpz SRC DST", "rmz": "rmz DST",
    "cowkit-j1": "cowkit cp -a -j 1 SRC DST",
    "cowkit-j2": "cowkit cp -a -j 2 SRC DST", "cowkit-j4": "cowkit cp -a -j 4 SRC DST",
    "cowkit-r2": "cowkit cp -r -j 2 SRC DST",
    "rm-rf": "rm -rf DST", "cowkit-rm": "cowkit rm -r DST",
    "base-j2": "COWKIT_BASE cp -a -j 2 SRC DST", "base-rm": "COWKIT_BASE rm -r DST",
}
methods = e["METHODS_LIST"].split()
print(json.dumps({
    "date": datetime.date.today().isoformat(),
    "line": "%s, %s cores, %s RAM, Linux %s" % (e["CPU"], e["CORES"], e["MEM"], e["KERNEL"]),
    "cpu": e["CPU"], "cores": int(e["CORES"]), "ram": e["MEM"], "kernel": e["KERNEL"],
    "commit": e["COMMIT"], "loadavg": e["LOAD"], "rounds": int(e["ROUNDS"]),
    "methods": " ".join(methods), "filesystems": e["FSES"],
    "cache": "warm: the source tree is walked (lstat, listxattr) before the rounds; no cache dropping",
    "tools": {"cp": e["CPV"], "rm": e["RMV"], "xcp": e["XCPV"],
              "cpz": e["CPZV"], "rmz": e["RMZV"], "cowkit": e["COWKITV"], "cowkit_base": e["BASEV"],
              "strace": e["STRACEV"], "mkfs.xfs": e["XFSV"], "btrfs-progs": e["BTRFSV"]},
    "commands": {m: commands[m] for m in methods},
    "built": "Tree built %s on %s: `cp -a` of %s, plus %s; cached as filesystem images and "
             "copied afresh for every run." % (tree["built"], tree.get("host", "?"),
             ", ".join(tree["sources"]), ", ".join("%s %s" % (v, k.replace("_", " ")) for k, v in tree["added"].items())),
    "tree": tree,
}))
PYEOF
}

body() {
  local fs base
  if cache_ok; then
    log "source tree: cached in $TREE_CACHE (built $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["built"])' "$TREE_CACHE/tree.json"))"
  else
    build_cache
  fi
  LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
  log "rounds: $ROUNDS; filesystems: ${FSES[*]}; methods: ${methods[*]}; load average: $LOAD_START"
  for fs in "${FSES[@]}"; do
    run_fs "$fs"
  done
  machine_json >"$RIG/machine.json"
  base=$(results_base tree-clone)
  "$PY" "$TREE_PY" report --record "$RECORD" --machine "$RIG/machine.json" \
    --md "$base.md" --json "$base.json"
  log "results: $base.md, $base.json"
}

rig_run body
