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
