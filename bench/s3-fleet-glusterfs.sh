#!/usr/bin/env bash
# Issue 27: a fleet of `cowkit s3 serve` gateways on GlusterFS, one gateway per FUSE mount of
# one volume (the "hosts"), on this one machine: a distributed volume of loop-mounted reflink
# XFS bricks. First the primitives the fleet needs, seen across two mounts (bench/fs_prims.py:
# copy_file_range and whether the brick shares extents, FICLONE, OFD and classic byte-range
# locks, rename seen from the other mount, O_TMPFILE, unlink of an open file); then the fleet
# (bench/s3_fleet_glusterfs.py: a 64 x 5 MiB multipart upload through all gateways and its
# complete with the access log's bytes_cloned / bytes_copied, two completes of one upload at
# once, GET right after an overwrite, GET during overwrites, and `versions`: racing overwrites
# through gateway 1 of self-identifying versions while the other gateways GET and HEAD the key,
# counting 5xx answers and checking that every GET body is one whole version).
#
#   bash bench/s3-fleet-glusterfs.sh > /tmp/fleet.txt
#   ONLY=versions BRICKS=1 MOUNTS=2 VERSIONS=120 COWKIT=/path/to/cowkit bash bench/s3-fleet-glusterfs.sh
#
# It refuses without Debian's glusterfs-server and glusterfs-client (apt-get install them
# first), without /dev/fuse, or when a glusterd already runs (it starts and stops its own).
# Settings (environment):
#   BRICKS=2                bricks (one XFS image each; 1: a volume that does not distribute)
#   MOUNTS=3                FUSE mounts, one gateway each
#   COHERENT=1              volume options performance.{quick-read,stat-prefetch,open-behind}
#                           off and mount options {entry,attribute,negative}-timeout=0 (0: the
#                           defaults, which serve stale objects for about a second)
#   PARTS=64 PART_MIB=5 ROUNDS=3 DURING=30
#   VERSIONS=60             seconds of the racing overwrites of the `versions` test
#   WRITERS=1               its client threads overwriting the key through gateway 1
#   ONLY=multipart,race,overwrite,during,versions   the tests to run (PRIMS=0: skip fs_prims.py)
#   IMG_SIZE=4G             each brick image (sparse), under BENCH_IMG_DIR=/var/tmp
#   COWKIT=/path/to/cowkit  (default: cargo build --release)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BRICKS=${BRICKS:-2}
MOUNTS=${MOUNTS:-3}
COHERENT=${COHERENT:-1}
PARTS=${PARTS:-64}
PART_MIB=${PART_MIB:-5}
ROUNDS=${ROUNDS:-3}
DURING=${DURING:-30}
VERSIONS=${VERSIONS:-60}
WRITERS=${WRITERS:-1}
ONLY=${ONLY:-multipart,race,overwrite,during,versions}
PRIMS=${PRIMS:-1}
IMG_SIZE=${IMG_SIZE:-4G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
PY="$REPO_ROOT/.venv/bin/python"
VOL=cowkitfleet

need_root
for cmd in glusterd gluster mount.glusterfs; do
  command -v "$cmd" >/dev/null 2>&1 ||
    die "no $cmd: this benchmark needs GlusterFS (hint: apt-get install glusterfs-server glusterfs-client)"
done
for cmd in mkfs.xfs xfs_io losetup findmnt; do
  command -v "$cmd" >/dev/null 2>&1 || die "no $cmd (hint: apt-get install xfsprogs util-linux)"
done
[ -c /dev/fuse ] || die "no /dev/fuse: the kernel has no FUSE, GlusterFS cannot be mounted"
pgrep -x glusterd >/dev/null &&
  die "a glusterd already runs; this script starts and stops its own (hint: stop it first)"
[ -x "$PY" ] || bash "$REPO_ROOT/scripts/setup.sh"
find_cowkit "Use a cowkit build that has the s3 subcommand." s3
HOST=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
[ -n "$HOST" ] || die "no global IPv4 address: gluster refuses bricks on 127.0.0.1"

RIG=$(mktemp -d "$BENCH_IMG_DIR/cowkit-fleet.XXXXXX")
LOOPS=()
# Everything goes, also after a failure or a signal: the gateways (their pids in logs/), the
# FUSE mounts, the volume, the brick processes and glusterd, the bricks' mounts and loop devices.
cleanup() {
  set +e
  local m p
  for p in "$RIG"/logs/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
  sleep 1
  for m in "$RIG"/m*; do
    mountpoint -q "$m" || continue
    umount "$m" 2>/dev/null || { sleep 2; umount "$m" 2>/dev/null; } || umount -l "$m"
  done
  if [ -f "$RIG/glusterd.pid" ]; then
    gluster --mode=script volume stop "$VOL" force >/dev/null 2>&1
    gluster --mode=script volume delete "$VOL" >/dev/null 2>&1
    rm -rf /var/lib/glusterd/vols/"$VOL"
    # the brick processes (glusterfsd) of this volume, if the stop left any, then glusterd
    cat /var/run/gluster/vols/"$VOL"/*.pid 2>/dev/null | xargs -r kill 2>/dev/null
    kill "$(cat "$RIG/glusterd.pid")" 2>/dev/null
    sleep 2
  fi
  for m in "$RIG"/b*; do
    mountpoint -q "$m" || continue
    umount "$m" 2>/dev/null || { sleep 2; umount "$m" 2>/dev/null; } || umount -l "$m"
  done
  for l in "${LOOPS[@]}"; do losetup -d "$l"; done
  rm -rf --one-file-system "$RIG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "machine: $(nproc) cores, kernel $(uname -r), $(glusterfs --version | head -1), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
bricks=()
for i in $(seq "$BRICKS"); do
  truncate -s "$IMG_SIZE" "$RIG/b$i.img"
  mkfs.xfs -q -m reflink=1 "$RIG/b$i.img"
  mkdir "$RIG/b$i"
  LOOPS+=("$(losetup -f --show "$RIG/b$i.img")")
  mount "${LOOPS[-1]}" "$RIG/b$i"
  mkdir "$RIG/b$i/brick"
  bricks+=("$HOST:$RIG/b$i/brick")
done
glusterd -p "$RIG/glusterd.pid" --log-file="$RIG/glusterd.log"
for _ in $(seq 30); do gluster --mode=script volume list >/dev/null 2>&1 && break; sleep 1; done
gluster --mode=script volume create "$VOL" "${bricks[@]}" force >/dev/null
mopts=()
if [ "$COHERENT" = 1 ]; then
  for o in quick-read stat-prefetch open-behind; do
    gluster --mode=script volume set "$VOL" "performance.$o" off >/dev/null
  done
  mopts=(-o entry-timeout=0,attribute-timeout=0,negative-timeout=0)
fi
gluster --mode=script volume start "$VOL" >/dev/null
gluster volume info "$VOL" >&2
mounts=()
for i in $(seq "$MOUNTS"); do
  mkdir "$RIG/m$i"
  mount -t glusterfs "${mopts[@]}" "$HOST:/$VOL" "$RIG/m$i"
  mounts+=("$RIG/m$i")
done
"$COWKIT" probe "${mounts[0]}" "${mounts[1]:-${mounts[0]}}"
brick_dirs=()
for i in $(seq "$BRICKS"); do brick_dirs+=("$RIG/b$i/brick"); done
if [ "$PRIMS" = 1 ]; then
  python3 "$BENCH_DIR/fs_prims.py" "${mounts[0]}" "${mounts[1]:-${mounts[0]}}" "${brick_dirs[@]}"
fi
mkdir "$RIG/logs" "$RIG/bad"
status=0
FLEET_BAD_DIR="$RIG/bad" "$PY" "$BENCH_DIR/s3_fleet_glusterfs.py" --cowkit "$COWKIT" \
  --logs "$RIG/logs" --parts "$PARTS" --part-mib "$PART_MIB" --rounds "$ROUNDS" \
  --during-seconds "$DURING" --versions-seconds "$VERSIONS" --versions-writers "$WRITERS" --only "$ONLY" "${mounts[@]}" ||
  status=$?
n_bad=$(find "$RIG/bad" -type f | wc -l)
if [ "$n_bad" != 0 ]; then
  log "$n_bad GET bodies were not one whole version; the first lines of three:"
  find "$RIG/bad" -type f | head -3 | while read -r f; do
    log "  $(stat -c %s "$f") bytes: $(head -c 120 "$f" | head -1 | tr -c '[:print:]' '?')"
  done
fi
log "loadavg at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -h ERROR "$RIG"/logs/gw*.log | sed -E 's/`[^`]*`/PATH/' | sort | uniq -c >&2 || true
log "opened again by name after ESTALE (gateways that log it): $(cat "$RIG"/logs/gw*.log | grep -c 'opening it again by name')"
exit "$status"
