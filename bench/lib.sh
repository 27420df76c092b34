# shellcheck shell=bash
# Shared helpers for the bench/ scripts. Source it; it defines functions and
# a few variables and changes no state of its own.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$BENCH_DIR/.." && pwd)
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
