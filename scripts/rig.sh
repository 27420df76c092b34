#!/usr/bin/env bash
# The real-filesystem test rig.
#
#   scripts/rig.sh CMD [ARGS...]
#
# As root: creates sparse image files, loop-mounts a scratch XFS
# (mkfs.xfs -m reflink=1), a second XFS (for cross-device pairs of one type),
# a Btrfs and an ext4 image plus a tmpfs, exports their mount points as
# COWKIT_TEST_XFS, COWKIT_TEST_XFS2, COWKIT_TEST_BTRFS, COWKIT_TEST_EXT4,
# COWKIT_TEST_TMPFS (and COWKIT_RIG=1), runs CMD, and always unmounts and
# removes everything afterwards: on success, failure, Ctrl-C or SIGTERM.
#
# The mounts live in a private mount namespace (unshare), so even a SIGKILL
# leaves no mount behind (the loop devices are auto-cleared with the mounts);
# leftover image directories of dead runs are removed by the next run.
#
# Not root: without CI, CMD runs without the rig (the tests that need it say
# SKIPPED); with CI set, that is an error.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

if [ "$(id -u)" != 0 ]; then
  if [ -n "${CI:-}" ]; then
    echo "rig: the test rig needs root (loop mounts); CI must run as root" >&2
    exit 1
  fi
  echo "rig: not root: running without loop-mounted filesystems; tests that need them are SKIPPED" >&2
  exec "$@"
fi

if [ -z "${COWKIT_RIG_NS:-}" ]; then
  # Remove image directories left by runs that were killed outright.
  for d in /tmp/cowkit-rig.*; do
    [ -d "$d" ] || continue
    pid=$(cat "$d/pid" 2>/dev/null || echo)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      rm -rf --one-file-system "$d"
    fi
  done
  export COWKIT_RIG_NS=1
  exec unshare --mount --propagation private -- "$0" "$@"
fi

RIG=$(mktemp -d /tmp/cowkit-rig.XXXXXX)
echo $$ >"$RIG/pid"
mounts=()

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
  done
  rm -rf --one-file-system "$RIG"
  exit "$rc"
}
trap cleanup EXIT
child=
stop() { # signal exit-code: pass the signal on to CMD, then clean up
  [ -n "$child" ] && kill "-$1" "$child" 2>/dev/null && wait "$child" 2>/dev/null
  exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP

size=${COWKIT_RIG_SIZE:-4G}

mount_image() { # name mkfs-command...
  local name=$1
  shift
  local img="$RIG/$name.img" mnt="$RIG/$name"
  truncate -s "$size" "$img"
  "$@" "$img" >/dev/null
  mkdir -p "$mnt"
  mount -o loop "$img" "$mnt"
  mounts+=("$mnt")
}

mount_image xfs mkfs.xfs -q -f -m reflink=1
mount_image xfs2 mkfs.xfs -q -f -m reflink=1
mount_image btrfs mkfs.btrfs -q -f
mount_image ext4 mkfs.ext4 -q -F
mkdir -p "$RIG/tmpfs"
mount -t tmpfs -o size=2g tmpfs "$RIG/tmpfs"
mounts+=("$RIG/tmpfs")

export COWKIT_RIG=1
export COWKIT_TEST_XFS="$RIG/xfs" COWKIT_TEST_XFS2="$RIG/xfs2" COWKIT_TEST_BTRFS="$RIG/btrfs"
export COWKIT_TEST_EXT4="$RIG/ext4" COWKIT_TEST_TMPFS="$RIG/tmpfs"
echo "rig: xfs=$COWKIT_TEST_XFS xfs2=$COWKIT_TEST_XFS2 btrfs=$COWKIT_TEST_BTRFS ext4=$COWKIT_TEST_EXT4 tmpfs=$COWKIT_TEST_TMPFS" >&2

# Run CMD as a child and wait for it: bash runs signal traps only between
# commands, and `wait` is interruptible where a foreground command is not.
"$@" &
child=$!
wait "$child"
