#!/usr/bin/env bash
# CompleteMultipartUpload time versus object size, part size and whether the
# parts were synced, on loop-mounted XFS (reflink) and ext4, with the bytes
# the loop device wrote during the complete; PutObject/GetObject throughput
# against dd on the same image.
#
#   bash bench/s3-complete.sh
#
# Settings (environment):
#   SIZES="256 1024 4096"   object sizes in MiB
#   PARTS="64 5"            part sizes in MiB
#   ROUNDS="3 2 1"          rounds per object size (same order as SIZES)
#   FILESYSTEMS="xfs ext4"
#   IMG_SIZE=12G            each image (sparse), under BENCH_IMG_DIR=/var/tmp
#   LOOP_DIRECT_IO=1        losetup --direct-io=on, so that sync reaches the disk
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-s3.{md,json} go
#   COWKIT=/path/to/cowkit  (default: cargo build --release)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${SIZES:-"256 1024 4096"}
PARTS=${PARTS:-"64 5"}
ROUNDS=${ROUNDS:-"3 2 1"}
FILESYSTEMS=${FILESYSTEMS:-"xfs ext4"}
IMG_SIZE=${IMG_SIZE:-12G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PY="$REPO_ROOT/.venv/bin/python"

if [ -z "${COWKIT_BENCH_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs mkfs.ext4:e2fsprogs unshare:util-linux findmnt:util-linux
  [ -x "$PY" ] || bash "$REPO_ROOT/scripts/setup.sh"
  find_cowkit "Use a cowkit build that has the s3 subcommand." s3
  clean_stale_images "$BENCH_IMG_DIR/cowkit-s3bench"
  prepare_results_dir
  export RESULTS_DIR SIZES PARTS ROUNDS COWKIT_BENCH_NS=1
  in_private_mounts "$@"
fi

make_rig cowkit-s3bench

specs=()
for fs in $FILESYSTEMS; do
  case "$fs" in
  xfs | ext4) ;;
  *) die "unknown filesystem $fs" ;;
  esac
  mkfs_img "$fs" "$RIG/$fs.img" "$IMG_SIZE"
  loop_mount "$RIG/$fs.img" "$RIG/$fs"
  specs+=("$fs:$RIG/$fs:$LOOP_DEV:$LOOP_IO")
done

log "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$BENCH_DIR/s3_measure.py" --cowkit "$COWKIT" --results "$RESULTS_DIR" \
  --img-backing "$(img_backing)" "${specs[@]}" &
RIG_CHILD=$!
wait "$RIG_CHILD"
