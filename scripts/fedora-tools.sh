#!/bin/bash
# Finds or builds Fedora's current package tools (rpm 4.20 with Sequoia; dnf5) for cowkit's tests.
#
#   bash scripts/fedora-tools.sh [rpm|all]      (default: rpm)
#
# rpm: rpm-sequoia and rpm 4.20 only (what the rpm 4.20 test tier needs);
# all: everything the sources' build.sh builds (also librepo, libsolv, toml11, dnf5).
#
# The sources are the folder with build.sh, src/ and patches/: $COWKIT_FEDORA_TOOLS_SRC, else
# ../shared/fedora-tools beside the checkout, else /work/shared/fedora-tools.
# The prefix is $COWKIT_FEDORA_TOOLS_PREFIX (default /usr/local/fedora-tools; a prefix under /opt
# makes CMake put dnf5's configuration in /etc/opt, outside the prefix, and the build refuses it).
# The prefix's paths are compiled into the tools: build it where it is used.
#
# A stamp in the prefix records the hash of build.sh, the patches and the tarballs: when it matches,
# the script does nothing and prints the prefix. Without sources, a prefix with a stamp of the mode
# is used as it is. Without either, the script fails and names what is missing.
# The last line of output is the prefix; tests read COWKIT_FEDORA_TOOLS=<that prefix>.
set -euo pipefail
MODE=${1:-rpm}
case $MODE in rpm|all) ;; *) echo "usage: $0 [rpm|all]" >&2; exit 2;; esac
HERE=$(cd "$(dirname "$0")/.." && pwd)
P=${COWKIT_FEDORA_TOOLS_PREFIX:-/usr/local/fedora-tools}
case $P in
  /opt/*) echo "fedora-tools: prefix $P is under /opt: dnf5's CMake then installs into /etc/opt," \
     "which build.sh refuses; choose another COWKIT_FEDORA_TOOLS_PREFIX" >&2; exit 2;;
  /*) ;;
  *) echo "fedora-tools: COWKIT_FEDORA_TOOLS_PREFIX must be an absolute path, not $P" >&2; exit 2;;
esac

SRC=
tried=()
for c in ${COWKIT_FEDORA_TOOLS_SRC:+"$COWKIT_FEDORA_TOOLS_SRC"} "$HERE/../shared/fedora-tools" /work/shared/fedora-tools; do
  tried+=("$c")
  if [ -f "$c/build.sh" ] && [ -d "$c/src" ] && [ -d "$c/patches" ]; then SRC=$(cd "$c" && pwd); break; fi
done

stamp_ok() {  # stamp_ok HASH: the prefix holds a build of MODE (or of all) from these sources
  local m
  for m in "$MODE" all; do
    if [ -f "$P/.cowkit-fedora-tools.$m" ] && { [ -z "$1" ] || [ "$(cat "$P/.cowkit-fedora-tools.$m")" = "$1" ]; }; then
      return 0
    fi
  done
  return 1
}

check_prefix() {  # the tools the tier uses are there and run
  "$P/bin/rpm" --version | grep -q '^RPM version 4\.20\.' ||
    { echo "fedora-tools: $P/bin/rpm is not rpm 4.20" >&2; return 1; }
  [ -e "$P/lib/librpmio.so.10" ] || { echo "fedora-tools: $P/lib/librpmio.so.10 missing" >&2; return 1; }
  [ -f "$P/lib/python3/site-packages/rpm/__init__.py" ] ||
    { echo "fedora-tools: rpm's python module missing in $P/lib/python3/site-packages" >&2; return 1; }
  if [ "$MODE" = all ]; then
    # (dnf5 writes its log under its installroot: a scratch one, removed)
    local r; r=$(mktemp -d)
    "$P/bin/dnf5" --installroot="$r" --version >/dev/null 2>&1 ||
      { rm -rf "$r"; echo "fedora-tools: $P/bin/dnf5 does not run" >&2; return 1; }
    rm -rf "$r"
  fi
}

if [ -z "$SRC" ]; then
  if stamp_ok ""; then
    echo "fedora-tools: no sources (tried: ${tried[*]}); using the built prefix $P as it is" >&2
    check_prefix
    echo "$P"; exit 0
  fi
  echo "fedora-tools: neither sources nor a built prefix: no build.sh with src/ and patches/ in" \
    "${tried[*]} (set COWKIT_FEDORA_TOOLS_SRC), and no $P/.cowkit-fedora-tools.$MODE" \
    "(set COWKIT_FEDORA_TOOLS_PREFIX to a prefix this script built)" >&2
  exit 1
fi

HASH=$(cd "$SRC" && find build.sh patches src -type f -print0 | LC_ALL=C sort -z |
  xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if stamp_ok "$HASH"; then
  check_prefix
  echo "$P"; exit 0
fi

# One build per prefix at a time (tiers of several workers call this script at once): wait for the
# lock, then look again, as the build that held it may have made what is asked for.
LOCK=${P%/}.lock
exec 9>"$LOCK"
if ! flock -n 9; then
  echo "fedora-tools: another build into $P is running (lock $LOCK); waiting for it" >&2
  flock 9
  if stamp_ok "$HASH"; then
    check_prefix
    echo "$P"; exit 0
  fi
fi

# Build. The work folder is per prefix: rpm-sequoia's build depends on PREFIX.
WORK=${COWKIT_FEDORA_TOOLS_WORK:-/var/tmp/cowkit-fedora-tools-$(echo -n "$P" | sha256sum | cut -c1-12)}
# Stamps of other sources go; one of these sources stays (an rpm built from them is still that rpm).
for s in "$P"/.cowkit-fedora-tools.*; do
  if [ -f "$s" ] && [ "$(cat "$s")" != "$HASH" ]; then rm -f "$s"; fi
done
if [ "$MODE" = rpm ]; then
  steps=(apt_deps clone_src build_rpm_sequoia install_rpm_sequoia build_rpm test_rpm)
else
  steps=(apt_deps clone_src build_rpm_sequoia install_rpm_sequoia build_librepo build_rpm build_libsolv
    build_toml11 build_dnf5 test_rpm test_dnf5)
fi
start=$(date +%s)
echo "fedora-tools: building ($MODE) from $SRC into $P (work: $WORK); steps: ${steps[*]}" >&2
PREFIX=$P WORK=$WORK bash "$SRC/build.sh" "${steps[@]}" >&2
check_prefix
echo "$HASH" > "$P/.cowkit-fedora-tools.$MODE"
echo "fedora-tools: built ($MODE) in $(( $(date +%s) - start ))s" >&2
echo "$P"
