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
  exec unshare --mount --propagation private -- "$0" "$@"
fi

RIG=$(mktemp -d "$BENCH_IMG_DIR/cowkit-s3bench.XXXXXX")
echo $$ >"$RIG/pid"
mounts=()
child=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$RIG"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

specs=()
for fs in $FILESYSTEMS; do
  truncate -s "$IMG_SIZE" "$RIG/$fs.img"
  case "$fs" in
  xfs) mkfs.xfs -q -f -m reflink=1 "$RIG/$fs.img" ;;
  ext4) mkfs.ext4 -q -F "$RIG/$fs.img" ;;
  *) die "unknown filesystem $fs" ;;
  esac
  mkdir -p "$RIG/$fs"
  mount -o loop "$RIG/$fs.img" "$RIG/$fs"
  mounts+=("$RIG/$fs")
  dev=$(findmnt -n -o SOURCE "$RIG/$fs")
  io=buffered
  if [ "$LOOP_DIRECT_IO" = 1 ] && losetup --direct-io=on "$dev"; then io=direct-io; fi
  specs+=("$fs:$RIG/$fs:$dev:$io")
done

log "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$BENCH_DIR/s3_measure.py" --cowkit "$COWKIT" --results "$RESULTS_DIR" \
  --img-backing "$(findmnt -n -o FSTYPE,SOURCE --target "$BENCH_IMG_DIR" | tr -s ' ')" "${specs[@]}" &
child=$!
wait "$child"
