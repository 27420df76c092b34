#!/usr/bin/env bash
# cowkit s3 serve against VersityGW's posix gateway, side by side on one
# loop-mounted reflink XFS: the time a client waits for the complete of an
# 820-part (4 GiB) upload, a GET of the object, and the cost of a PutObject
# that replaces an object in a versioned bucket against a plain one.
#
#   bash bench/s3-complete-vs.sh
#
# Settings (environment):
#   ROUNDS=3  PARTS=820  PART_MIB=5  PUT_MIB=64  PUTS=9
#   IMG_SIZE=24G   BENCH_IMG_DIR=/var/tmp   LOOP_DIRECT_IO=1
#   VERSITYGW=versitygw (v1.8.0: `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0`,
#                        as scripts/s3-conformance.sh installs it)
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-s3-complete-vs.{md,json} go
#   COWKIT=/path/to/cowkit  (default: cargo build --release)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-820}
PART_MIB=${PART_MIB:-5}
PUT_MIB=${PUT_MIB:-64}
PUTS=${PUTS:-9}
IMG_SIZE=${IMG_SIZE:-24G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PY="$REPO_ROOT/.venv/bin/python"

if [ -z "${COWKIT_BENCH_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs unshare:util-linux findmnt:util-linux
  [ -x "$PY" ] || bash "$REPO_ROOT/scripts/setup.sh"
  VERSITYGW=${VERSITYGW:-$(command -v versitygw || echo /root/go/bin/versitygw)}
  [ -x "$VERSITYGW" ] || die "no versitygw: install v1.8.0 (scripts/s3-conformance.sh -g versitygw does) or set VERSITYGW"
  find_cowkit "Use a cowkit build that has the s3 subcommand." s3
  clean_stale_images "$BENCH_IMG_DIR/cowkit-s3vs"
  prepare_results_dir
  export RESULTS_DIR VERSITYGW COWKIT_BENCH_NS=1
  in_private_mounts "$@"
fi

make_rig cowkit-s3vs
mkfs_img xfs "$RIG/xfs.img" "$IMG_SIZE"
loop_mount "$RIG/xfs.img" "$RIG/xfs"
log "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
PYTHONPATH="$BENCH_DIR" "$PY" "$BENCH_DIR/s3_complete_vs.py" --cowkit "$COWKIT" --versitygw "$VERSITYGW" \
  --mount "$RIG/xfs" --results "$RESULTS_DIR" --rounds "$ROUNDS" --parts "$PARTS" \
  --part-mib "$PART_MIB" --put-mib "$PUT_MIB" --puts "$PUTS" &
RIG_CHILD=$!
wait "$RIG_CHILD"
