#!/usr/bin/env bash
# The content store and images, side by side with their peers.
#
#   bench/store-images.sh
#
# 1. Import: the 70k-entry tree of bench/tree-clone.sh (its cached XFS
#    image, copied) on loop XFS: `cowkit image create` (store empty: every
#    file a new object, cloned; then a second image of the same tree: every
#    object reused) against `mkfs.erofs` (erofs-utils from Debian,
#    uncompressed) of the same tree and `cp -a --reflink=always`.
# 2. Sharing: N consecutive releases of one package (numpy 1.26.0–1.26.4
#    manylinux wheels from PyPI, unpacked), N = 2 and 5: as N images, as
#    N plain trees and as N reflinked copies of those. After dropping
#    caches, every file of every release is read, release by release;
#    reported are the bytes read from the block device (in all, and while
#    release 2 was read, against release 2's new content), the page cache
#    held over the files read (fincore) against the distinct contents
#    (sizes of the different SHA-256 digests), and the disk bytes.
#
# Environment: ROUNDS=3, COWKIT (built when not set), TREE_CACHE
# (/var/cache/cowkit-bench/tree: run bench/tree-clone.sh once first),
# BENCH_IMG_DIR=/var/tmp, RESULTS_DIR=bench/results
# (YYYY-MM-DD-store-images.{md,json}). Runs in a private mount namespace.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
TREE_CACHE=${TREE_CACHE:-/var/cache/cowkit-bench/tree}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PY=/usr/bin/python3

if [ -z "${COWKIT_STORE_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs mkfs.erofs:erofs-utils fincore:util-linux unzip:unzip "$PY:python3"
  [ -f "$TREE_CACHE/xfs.img" ] || die "$TREE_CACHE/xfs.img is missing: run bench/tree-clone.sh once"
  find_cowkit "bench/store-images.sh" image store
  mkdir -p "$RESULTS_DIR"
  export COWKIT COWKIT_STORE_NS=1
  in_private_mounts "$@"
fi

make_rig cowkit-store-bench
work=$RIG

log "copying the cached tree image"
cp --sparse=always "$TREE_CACHE/xfs.img" "$work/xfs.img"
loop_mount "$work/xfs.img" "$work/mnt"
tree=$(find "$work/mnt" -mindepth 1 -maxdepth 1 -type d -name 'src*' | head -1)
[ -n "$tree" ] || tree=$(find "$work/mnt" -mindepth 1 -maxdepth 1 -type d | head -1)

log "downloading numpy wheels"
wheels="$BENCH_IMG_DIR/cowkit-bench-wheels"
mkdir -p "$wheels"
for v in 1.26.0 1.26.1 1.26.2 1.26.3 1.26.4; do
  ls "$wheels"/numpy-"$v"-*.whl >/dev/null 2>&1 ||
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_17_x86_64 "numpy==$v" -d "$wheels"
done

"$PY" "$BENCH_DIR/store_images.py" --cowkit "$COWKIT" --mount "$work/mnt" --tree "$tree" \
  --wheels "$wheels" --rounds "$ROUNDS" --results "$RESULTS_DIR"
