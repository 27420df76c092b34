#!/usr/bin/env bash
# Set up, build, and show cowkit's fast path.
#   scripts/demo.sh [DIR]
# As root (no DIR): on a scratch XFS image (mkfs.xfs -m reflink=1), side by
# side with ext4, both loop-mounted and removed afterwards. Otherwise, or
# with DIR: on the filesystem of DIR (default: the current directory).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here=$(pwd)
cd "$repo"
bash scripts/setup.sh
cargo build --release --locked --quiet -p cowkit
bin="$repo/target/release/cowkit"

if [ $# -eq 0 ] && [ "$(id -u)" = 0 ]; then
  exec bash scripts/rig.sh bash -c '
    set -e
    echo "== cowkit on a scratch XFS (reflink=1)"
    "$0" demo "$COWKIT_TEST_XFS"
    echo
    echo "== the same on ext4: the fallback chain at work"
    "$0" demo "$COWKIT_TEST_EXT4"
    echo
    echo "== probing across filesystems (XFS -> ext4)"
    "$0" probe "$COWKIT_TEST_XFS" "$COWKIT_TEST_EXT4"
    echo
    echo "== an RPM (built here by rpmbuild) transcoded once, then installed by cloning on XFS"
    pkg=$(bash crates/cowkit-archive/tests/fixtures/rpm/build.sh "$COWKIT_TEST_XFS/pkgs" w19.zstdio)
    "$0" transcode "$pkg" -o "$COWKIT_TEST_XFS/fixture.rpme"
    mkdir "$COWKIT_TEST_XFS/root" "$COWKIT_TEST_EXT4/root"
    "$0" install --verify --root "$COWKIT_TEST_XFS/root" "$COWKIT_TEST_XFS/fixture.rpme"
    echo "-- the same package straight from the .rpm (streamed, no temporary cpio), on ext4"
    "$0" install --verify --root "$COWKIT_TEST_EXT4/root" "$pkg"
  ' "$bin"
fi
cd "$here"
exec "$bin" demo "${1:-.}"
