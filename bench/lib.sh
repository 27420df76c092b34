# shellcheck shell=bash
# Shared helpers for the bench/ scripts. Source it; it defines functions and
# a few variables and changes no state of its own.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$BENCH_DIR/.." && pwd)
# The script that sourced this file (before it changes directory).
BENCH_SELF=$(realpath -m -- "$0")
# The corpus cache: outside the repository on purpose (hundreds of MB).
CORPUS_DIR=${COWKIT_BENCH_CACHE:-/var/cache/cowkit-bench/corpus}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

need_root() {
  [ "$(id -u)" = 0 ] || die "run as root (apt-get, loop mounts, drop_caches)"
}

# need CMD:PACKAGE... — apt-get install the packages whose command is missing.
need() {
  local spec cmd pkg missing=()
  for spec in "$@"; do
    cmd=${spec%%:*}
    pkg=${spec#*:}
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  fi
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || die "still missing after apt-get install: ${spec%%:*}"
  done
}

# abs_path PATH — absolute path of PATH (which need not exist yet).
abs_path() { realpath -m -- "$1"; }

# outside_repo DIR — fail when DIR lies inside the repository.
outside_repo() {
  local d
  d=$(abs_path "$1")
  case "$d/" in
  "$REPO_ROOT"/*) die "$1 is inside the repository ($REPO_ROOT); the bench cache must live outside it" ;;
  esac
}

# Corpus file name of one package and compression: NAME.COMP.rpm
corpus_rpm() { printf '%s/%s.%s.rpm\n' "$CORPUS_DIR" "$1" "$2"; }

# human BYTES — e.g. 123.4 MiB
human() {
  awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u, " "); i = 1
    while (b >= 1024 && i < 5) { b /= 1024; i++ }
    printf (i == 1 ? "%d %s" : "%.1f %s"), b, u[i] }'
}

# find_cowkit HINT SUBCOMMAND... — set and export COWKIT: the binary named by
# $COWKIT, or the repository's release build (rebuilt by cargo when stale, so
# a stale binary is never timed); die unless every SUBCOMMAND answers --help.
find_cowkit() {
  local hint=$1 sub
  shift
  if [ -z "${COWKIT:-}" ]; then
    COWKIT="$REPO_ROOT/target/release/cowkit"
    if command -v cargo >/dev/null 2>&1; then
      log "building cowkit: cargo build --release --locked -p cowkit"
      (cd "$REPO_ROOT" && cargo build --release --locked -p cowkit) ||
        die "cargo build of cowkit failed"
    elif [ ! -x "$COWKIT" ]; then
      die "no $COWKIT and no cargo to build it; set COWKIT=/path/to/cowkit"
    fi
  fi
  COWKIT=$(abs_path "$COWKIT")
  [ -x "$COWKIT" ] || die "COWKIT=$COWKIT is not an executable"
  for sub in "$@"; do
    "$COWKIT" "$sub" --help >/dev/null 2>&1 ||
      die "$COWKIT has no working '$sub' subcommand ('$COWKIT $sub --help' fails)." "$hint"
  done
  export COWKIT
}

# clean_stale_images GLOB_PREFIX — remove image directories (PREFIX.*) left by
# runs that were killed outright (their recorded pid is gone).
clean_stale_images() {
  local d pid
  for d in "$1".*; do
    [ -d "$d" ] || continue
    pid=$(cat "$d/pid" 2>/dev/null || echo)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      rm -rf --one-file-system "$d"
    fi
  done
}

# prepare_results_dir — make RESULTS_DIR absolute, existing and writable.
prepare_results_dir() {
  RESULTS_DIR=$(abs_path "$RESULTS_DIR")
  mkdir -p "$RESULTS_DIR" || die "cannot create RESULTS_DIR=$RESULTS_DIR"
  [ -w "$RESULTS_DIR" ] || die "RESULTS_DIR=$RESULTS_DIR is not writable"
}

# ---------------------------------------------------------------- loop mounts
# A script that loop-mounts images runs twice: first outside a mount namespace
# (checks, downloads, building cowkit), then, through in_private_mounts, again
# inside a private one, where even a SIGKILL leaves no mount behind (the loop
# devices are auto-cleared when their mounts go with the namespace).

# in_private_mounts ARGS... — run this script again, with ARGS, in a private
# mount namespace (does not return). The caller exports the variable that
# tells the second run it is inside.
in_private_mounts() {
  exec unshare --mount --propagation private -- "$BASH" "$BENCH_SELF" "$@"
}

# make_rig NAME — RIG: a fresh directory BENCH_IMG_DIR/NAME.XXXXXX for the
# run's images and mounts, holding the script's pid (so that
# clean_stale_images BENCH_IMG_DIR/NAME removes it after a kill), and the
# traps that clean it up on exit and on INT, TERM and HUP (exit codes 130,
# 143, 129): first the running benchmark (RIG_CHILD, the pid of a background
# job: its process group when it leads one (`set -m`), else the process),
# then the script's rig_cleanup_extra when it defines one, then every mount
# below RIG, deepest first, then RIG.
make_rig() {
  RIG=$(mktemp -d "${BENCH_IMG_DIR:-/var/tmp}/$1.XXXXXX")
  echo $$ >"$RIG/pid"
  RIG_CHILD=
  trap rig_cleanup EXIT
  trap 'rig_stop INT 130' INT
  trap 'rig_stop TERM 143' TERM
  trap 'rig_stop HUP 129' HUP
}

# rig_signal SIGNAL — send SIGNAL to the running benchmark and wait for it.
rig_signal() {
  [ -n "${RIG_CHILD:-}" ] && kill -0 "$RIG_CHILD" 2>/dev/null || return 0
  kill "-$1" -- "-$RIG_CHILD" 2>/dev/null || kill "-$1" "$RIG_CHILD" 2>/dev/null || true
  wait "$RIG_CHILD" 2>/dev/null || true
}

rig_cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  rig_signal TERM
  if declare -F rig_cleanup_extra >/dev/null; then rig_cleanup_extra || true; fi
  umount_below "$RIG"
  rm -rf --one-file-system "$RIG"
  exit "$rc"
}

rig_stop() { # SIGNAL EXIT-CODE
  rig_signal "$1"
  exit "$2"
}

# umount_below DIR — unmount every mount below DIR, deepest first (found in
# the mount table: a background job may have made them).
umount_below() {
  local m
  findmnt -rn -o TARGET | awk -v p="$1/" 'index($0, p) == 1' | sort -r |
    while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}

# mkfs_img FS IMG SIZE — a fresh filesystem of type FS (xfs, with reflinks;
# btrfs; ext4) in IMG, a sparse file of SIZE.
mkfs_img() {
  truncate -s "$3" "$2"
  case "$1" in
  xfs) mkfs.xfs -q -f -m reflink=1 "$2" ;;
  btrfs) mkfs.btrfs -q -f "$2" >/dev/null ;;
  ext4) mkfs.ext4 -q -F "$2" ;;
  *) die "mkfs_img: unknown filesystem '$1' (xfs, btrfs, ext4)" ;;
  esac
}

# loop_mount IMG DIR — mount the image IMG on DIR (made when missing) through
# a loop device. LOOP_DEV names the device; LOOP_IO says how it writes its
# backing file: direct-io when LOOP_DIRECT_IO=1 and `losetup --direct-io=on`
# works (so that a sync reaches the disk, not the host's page cache; a
# failure is a warning), else buffered.
loop_mount() {
  mkdir -p "$2"
  mount -o loop "$1" "$2"
  LOOP_DEV=$(findmnt -n -o SOURCE "$2")
  LOOP_IO=buffered
  if [ "${LOOP_DIRECT_IO:-0}" = 1 ]; then
    if losetup --direct-io=on "$LOOP_DEV"; then
      LOOP_IO=direct-io
    else
      log "warning: losetup --direct-io=on $LOOP_DEV failed; the loop device stays buffered"
    fi
  fi
}

# img_backing — what holds BENCH_IMG_DIR: "FSTYPE SOURCE" (for the reports).
img_backing() { findmnt -n -o FSTYPE,SOURCE --target "${BENCH_IMG_DIR:-/var/tmp}" | tr -s ' '; }

# rig_run FN — run the function FN (the benchmark) in the background in its
# own process group, as RIG_CHILD, so that a signal to this script can stop
# whatever command it is running right now; wait for it (its status).
rig_run() {
  set -m
  "$1" &
  RIG_CHILD=$!
  set +m
  wait "$RIG_CHILD"
}

# results_base NAME — RESULTS_DIR/YYYY-MM-DD-NAME, with the time of day added
# when a report of that name exists already (the caller adds .md and .json).
results_base() {
  local base
  base="$RESULTS_DIR/$(date +%F)-$1"
  [ ! -e "$base.md" ] || base="$base-$(date +%H%M%S)"
  printf '%s\n' "$base"
}
