#!/usr/bin/env bash
# The quick start's first command: set up, build, and show what cowkit does.
#   scripts/demo.sh [DIR]
# As root, without DIR: on a scratch XFS (mkfs.xfs -m reflink=1, loop-mounted
# in a private mount namespace by scripts/rig.sh and removed afterwards),
# `cowkit demo` clones and copies a file, builds a small package repository
# (rpmbuild, createrepo_c) and installs it into empty roots by plain
# `dnf --installroot` and by `cowkit dnf`, side by side: the time of each,
# the blocks shared, and `rpm -qa`, `rpm -Va` and a tree comparison showing
# the roots equal; then the probe between XFS and ext4 shows the fallback.
# With DIR: the same on the filesystem of DIR. Not root: the file copy only
# (dnf installs as root), in DIR or the current directory.
# COWKIT=PATH uses that cowkit binary instead of building one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here=$(pwd)
cd "$repo"
bash scripts/setup.sh
if [ -z "${COWKIT:-}" ]; then
  cargo build --release --locked --quiet -p cowkit
  COWKIT="$repo/target/release/cowkit"
fi
bin=$(cd "$here" && realpath "$COWKIT")

if [ "$(id -u)" != 0 ]; then
  cd "$here"
  exec "$bin" demo --no-packages "${1:-.}"
fi
if [ $# -gt 0 ]; then
  cd "$here"
  exec "$bin" demo "$1"
fi
exec bash scripts/rig.sh bash -c '
  set -e
  echo "== cowkit demo on a scratch XFS (mkfs.xfs -m reflink=1)"
  "$0" demo "$COWKIT_TEST_XFS"
  echo
  echo "== XFS to ext4: no block can be shared, cowkit says why and copies"
  "$0" probe "$COWKIT_TEST_XFS" "$COWKIT_TEST_EXT4"
' "$bin"
