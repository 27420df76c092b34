#!/usr/bin/env bash
# Install real Debian packages with dpkg into a fresh root, and run a static
# fsync-heavy program, plain, under eatmydata and under `cowkit nosync`,
# alternating, on loop-mounted ext4 and XFS. See bench/README.md.
#
#   bash bench/nosync.sh
#
# Environment:
#   ROUNDS=5                 rounds (each runs every method once per workload)
#   FILESYSTEMS="ext4 xfs"   filesystems, one after the other
#   PACKAGES="a b ..."       Debian packages (default: the list below)
#   HEAVY_FILES=2000         files the fsync-heavy program writes and fsyncs
#   DEB_DIR=/var/cache/cowkit-bench/debs   where the .deb files are cached
#   BENCH_IMG_DIR=/var/tmp   where the sparse images go
#   LOOP_DIRECT_IO=1         loop devices with O_DIRECT (0: buffered)
#   RESULTS_DIR=bench/results
#   COWKIT=/path/to/cowkit   (default: build target/release/cowkit)
#   LOADS="quiet busy"       quiet: nothing else runs; busy: another job
#                            keeps writing to a second filesystem (a loop
#                            ext4 of its own) all through the rounds
#   BUSY_MB=8                what that job writes per second (MiB)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-5}
FILESYSTEMS=${FILESYSTEMS:-"ext4 xfs"}
HEAVY_FILES=${HEAVY_FILES:-2000}
DEB_DIR=${DEB_DIR:-/var/cache/cowkit-bench/debs}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
IMG_SIZE=${IMG_SIZE:-4G}
# Packages with many files and no preinst (dpkg --unpack runs preinst in a
# chroot of the bare root, which has no shell): 6,441 regular files here.
PACKAGES=${PACKAGES:-"fonts-dejavu-core gcc-12-locales git-man iso-codes libc6-dev libgl-dev
libglib2.0-dev-bin libpython3.11-stdlib libstdc++-12-dev libx11-dev linux-libc-dev manpages
manpages-dev perl-modules-5.36 python3-babel python3-pygments x11proto-dev"}
METHODS=(plain eatmydata nosync)
LOADS=${LOADS:-"quiet busy"}
BUSY_MB=${BUSY_MB:-8}

if [ -z "${COWKIT_NOSYNC_BENCH_NS:-}" ]; then
  need_root
  need dpkg:dpkg eatmydata:eatmydata mkfs.xfs:xfsprogs mkfs.ext4:e2fsprogs cc:gcc \
    python3:python3 unshare:util-linux apt-get:apt
  outside_repo "$DEB_DIR"
  find_cowkit "bench/nosync.sh needs cowkit nosync" nosync
  prepare_results_dir
  mkdir -p "$DEB_DIR"
  for p in $PACKAGES; do
    compgen -G "$DEB_DIR/${p}_*.deb" >/dev/null && continue
    log "apt-get download $p"
    (cd "$DEB_DIR" && apt-get download -q "$p" >/dev/null) || die "apt-get download $p failed"
  done
  clean_stale_images "$BENCH_IMG_DIR/cowkit-nosync"
  export COWKIT_NOSYNC_BENCH_NS=1 RESULTS_DIR
  in_private_mounts "$@"
fi

make_rig cowkit-nosync
MNT="$RIG/mnt"
BUSY_MNT="$RIG/busy"
BUSY_PID=
# The busy load's writer, if it runs.
rig_cleanup_extra() { [ -z "$BUSY_PID" ] || kill "$BUSY_PID" 2>/dev/null; }

debs=()
for p in $PACKAGES; do
  f=$(compgen -G "$DEB_DIR/${p}_*.deb" | sort | tail -n 1)
  dpkg-deb -I "$f" preinst >/dev/null 2>&1 && die "$p has a preinst; pick packages without one"
  debs+=("$f")
done
files=0
for f in "${debs[@]}"; do files=$((files + $(dpkg-deb -c "$f" | grep -c '^-'))); done
log "${#debs[@]} packages, $files regular files"

HEAVY="$RIG/nosync-fsync-heavy"
cc -O2 -static -o "$HEAVY" "$BENCH_DIR/nosync-fsync-heavy.c"

RECORD="$RIG/record.jsonl"
: >"$RECORD"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

prefix() {
  case $1 in
  plain) ;;
  eatmydata) echo eatmydata ;;
  nosync) echo "$COWKIT" nosync --json -- ;;
  esac
}

# note_final_sync FS WORKLOAD STDERR-FILE LOAD — keep cowkit's final syncfs times.
note_final_sync() {
  python3 - "$RECORD" "$1" "$2" "$MNT" "$3" "$4" <<'PY'
import json, sys
rec, fs, workload, mnt, err, load = sys.argv[1:]
last = None
for line in open(err, errors="replace"):
    line = line.strip()
    if line.startswith("{") and '"final_sync"' in line:
        last = json.loads(line)
if last is None:
    sys.exit("no cowkit --json summary in " + err)
bench = sum(s["seconds"] for s in last["final_sync"] if s["mount_point"] == mnt)
with open(rec, "a") as fh:
    fh.write(json.dumps({"kind": "final_sync", "fs": fs, "workload": workload, "load": load,
                         "all": last["final_sync_seconds"], "bench_mount": bench,
                         "filesystems": len(last["final_sync"]),
                         "not_written": len(last.get("not_written") or [])}) + "\n")
PY
}

fsdesc=()
for fs in $FILESYSTEMS; do
  mkfs_img "$fs" "$RIG/$fs.img" "$IMG_SIZE"
  loop_mount "$RIG/$fs.img" "$MNT"
  fsdesc+=("$fs on $LOOP_DEV ($LOOP_IO), $IMG_SIZE sparse image on $(findmnt -n -o FSTYPE --target "$BENCH_IMG_DIR")")
  for load in $LOADS; do
  if [ "$load" = busy ]; then
    # Another job: one process writing BUSY_MB MiB/s of new data to its
    # own filesystem, which the kernel writes back on its own.
    mkfs_img ext4 "$RIG/busy.img" 2G
    LOOP_DIRECT_IO=0 loop_mount "$RIG/busy.img" "$BUSY_MNT"
    python3 -c "
import os, time
chunk = os.urandom(1 << 20)
i = 0
while True:
    with open('$BUSY_MNT/f%d' % (i % 200), 'wb') as f:
        for _ in range($BUSY_MB):
            f.write(chunk)
    i += 1
    time.sleep(1)
" &
    BUSY_PID=$!
    sleep 2
  fi
  log "$fs ($load): $ROUNDS rounds"
  for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#METHODS[@]}; i++)); do
      m=${METHODS[$(((i + r) % ${#METHODS[@]}))]}
      # shellcheck disable=SC2207
      pre=($(prefix "$m"))
      # dpkg into a fresh root.
      R="$MNT/root-$m-$r"
      mkdir -p "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/info"
      : >"$R/var/lib/dpkg/status"
      sync -f "$MNT"
      python3 "$BENCH_DIR/measure.py" run --record "$RECORD" --sync "$MNT" --stdout-null \
        --stderr "$RIG/err" --field method="$m" --field fs="$fs" --field workload=dpkg --field load="$load" -- \
        "${pre[@]}" dpkg --root="$R" --force-depends --refuse-unsafe-io --unpack "${debs[@]}" ||
        { cat "$RIG/err" >&2; die "dpkg ($m) failed"; }
      [ "$m" = nosync ] && note_final_sync "$fs" dpkg "$RIG/err" "$load"
      n=$(find "$R" -type f | wc -l)
      [ "$n" -ge "$files" ] || die "$m: only $n files in the root, expected $files"
      rm -rf "$R"
      # The static fsync-heavy program.
      D="$MNT/heavy-$m-$r"
      mkdir -p "$D"
      sync -f "$MNT"
      python3 "$BENCH_DIR/measure.py" run --record "$RECORD" --sync "$MNT" --stdout-null \
        --stderr "$RIG/err" --field method="$m" --field fs="$fs" --field workload=fsync-heavy --field load="$load" -- \
        "${pre[@]}" "$HEAVY" "$D" "$HEAVY_FILES" ||
        { cat "$RIG/err" >&2; die "fsync-heavy ($m) failed"; }
      [ "$m" = nosync ] && note_final_sync "$fs" fsync-heavy "$RIG/err" "$load"
      rm -rf "$D"
      sync -f "$MNT"
    done
  done
  if [ "$load" = busy ]; then
    kill "$BUSY_PID"
    wait "$BUSY_PID" 2>/dev/null || true
    BUSY_PID=
    umount "$BUSY_MNT"
    rm -f "$RIG/busy.img"
  fi
  done
  umount "$MNT"
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO_ROOT" diff --quiet 2>/dev/null || commit="$commit (uncommitted changes)"
machine="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r); $(dpkg-query -W -f='dpkg ${Version}, eatmydata ' dpkg)$(dpkg-query -W -f='${Version}' eatmydata); cowkit $commit; load average at start $load_start, at end $load_end"
stamp=$(date +%F)
out="$RESULTS_DIR/$stamp-nosync"
[ -e "$out.md" ] && out="$out-$(date +%H%M)"
python3 "$BENCH_DIR/nosync_report.py" --record "$RECORD" --machine "$machine" \
  --setup "$(printf '%s; ' "${fsdesc[@]}")" --packages "${#debs[@]} packages ($PACKAGES), $files regular files" \
  --heavy "$HEAVY_FILES" --rounds "$ROUNDS" --md "$out.md" --json "$out.json"
log "results: $out.md"
