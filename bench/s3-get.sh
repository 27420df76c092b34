#!/usr/bin/env bash
# GetObject from the page cache: `cowkit s3 serve` against VersityGW (posix
# backend) on one loop-mounted XFS, side by side, with boto3 and curl.
#
#   cd / && bash /path/to/bench/s3-get.sh
#
# Settings (environment):
#   SIZES="1 64 1024"       object sizes in MiB
#   ROUNDS=7                rounds (gateway order alternates)
#   METHODS="boto3-read boto3-download curl"
#   IMG_SIZE=8G             the image (sparse), under BENCH_IMG_DIR=/var/tmp
#   LOOP_DIRECT_IO=1        losetup --direct-io=on
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-s3-get.{md,json} go (an
#                           existing file gets a time added to the new name)
#   RESULTS_NAME=NAME       NAME.{md,json} instead
#   COWKIT=/path/to/cowkit  (default: cargo build --release); COWKIT_COMMIT
#                           names its commit in the results
#   VERSITYGW=/path/to/versitygw  (default: PATH or ~/go/bin; installed with
#                           `go install` at VGW_VERSION=v1.8.0 when missing)
#   COWKIT_SERVE_ARGS="--no-sendfile"   more arguments for `cowkit s3 serve`
#   PREAD_TOO=1             also a second cowkit gateway with --no-sendfile (own
#                           root), in the same rounds: the two bodies compared
#   PAUSE=/path/to/script   run with STOP before the timed rounds and CONT
#                           after them (also on error or Ctrl-C), to stop
#                           other heavy processes meanwhile. Such a script
#                           must not stop this one: run from a directory it
#                           leaves alone (the script itself works from /).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${SIZES:-"1 64 1024"}
ROUNDS=${ROUNDS:-7}
METHODS=${METHODS:-"boto3-read boto3-download curl"}
IMG_SIZE=${IMG_SIZE:-8G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
VGW_VERSION=${VGW_VERSION:-v1.8.0}
PAUSE=${PAUSE:-}
RESULTS_NAME=${RESULTS_NAME:-}

if [ -z "${COWKIT_BENCH_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs unshare:util-linux findmnt:util-linux curl:curl
  if [ -x "$REPO_ROOT/.venv/bin/python" ]; then PY="$REPO_ROOT/.venv/bin/python"; else PY=python3; fi
  "$PY" -c 'import boto3' 2>/dev/null || { bash "$REPO_ROOT/scripts/setup.sh" && PY="$REPO_ROOT/.venv/bin/python"; }
  given=${COWKIT:-}
  find_cowkit "Use a cowkit build that has the s3 subcommand." s3
  if [ -z "${VERSITYGW:-}" ]; then
    export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
    VERSITYGW=$(command -v versitygw || true)
    if [ -z "$VERSITYGW" ] || ! go version -m "$VERSITYGW" | grep -q "github.com/versity/versitygw[[:space:]]*$VGW_VERSION"; then
      log "installing versitygw $VGW_VERSION (go install)"
      GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION"
      VERSITYGW="$(go env GOPATH)/bin/versitygw"
    fi
  fi
  [ -z "$PAUSE" ] || [ -x "$PAUSE" ] || die "PAUSE=$PAUSE is not executable"
  if [ -n "$given" ]; then
    COMMIT=${COWKIT_COMMIT:-"binary $COWKIT"}
  else
    COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [ -z "$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] || COMMIT="$COMMIT+changes"
  fi
  VGW_LABEL=$(go version -m "$VERSITYGW" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/versity/versitygw" {print $3}')
  clean_stale_images "$BENCH_IMG_DIR/cowkit-s3get"
  prepare_results_dir
  export RESULTS_DIR RESULTS_NAME SIZES ROUNDS METHODS PY VERSITYGW PAUSE COMMIT VGW_LABEL COWKIT_BENCH_NS=1
  cd /
  in_private_mounts "$@"
fi

make_rig cowkit-s3get
# The driver resumes what it paused; this is for a driver killed outright.
rig_cleanup_extra() { [ -z "$PAUSE" ] || "$PAUSE" CONT >/dev/null 2>&1 || true; }
mkfs_img xfs "$RIG/xfs.img" "$IMG_SIZE"
loop_mount "$RIG/xfs.img" "$RIG/mnt"
setup="XFS (reflink=1) on a $LOOP_IO loop device, its image a sparse file on $(img_backing)"

log "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$BENCH_DIR/s3_get.py" --cowkit "$COWKIT" --versitygw "$VERSITYGW" --mount "$RIG/mnt" \
  --results "$RESULTS_DIR" --setup "$setup" ${PAUSE:+--pause "$PAUSE"} \
  ${COWKIT_SERVE_ARGS:+"--cowkit-args=$COWKIT_SERVE_ARGS"} ${PREAD_TOO:+--pread-too} &
RIG_CHILD=$!
wait "$RIG_CHILD"
