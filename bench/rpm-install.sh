#!/usr/bin/env bash
# Side-by-side RPM install benchmark on a scratch reflink XFS.
#
#   bench/rpm-install.sh
#
# Environment:
#   ROUNDS=5            rounds; every round runs every method once per package
#                       and compression, in rotating order (round-robin)
#   METHODS=all         all | peers | a comma list of method names (below)
#   PACKAGES="libreoffice-core libboost1.74-dev"   corpus packages
#   COMPRESSIONS="zstd xz"
#   COWKIT=target/release/cowkit   the cowkit binary; when COWKIT is not set
#                       and a cowkit method is asked for, the script first runs
#                       cargo build --release --locked -p cowkit (a no-op when
#                       the build is up to date)
#   DROP_CACHES=0       1: sync and drop the page cache before every timed
#                       command (cold cache); default warm cache
#   COWKIT_BENCH_CACHE  the corpus directory (bench/corpus.sh builds it)
#   BENCH_IMG_DIR=/var/tmp   where the sparse XFS image file goes
#   IMG_SIZE=8G
#   LOOP_DIRECT_IO=1    1: the loop device writes its backing file with
#                       O_DIRECT (losetup --direct-io=on), so that syncfs
#                       reaches the disk instead of the host page cache
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-rpm-install.{md,json} go
#
# Methods, each into a fresh empty root directory on the XFS mount:
#   rpm-i              rpm -i --root R --nodeps --noscripts --nosignature
#                      --ignorearch --ignoreos PKG.rpm   (after an untimed --initdb)
#   rpm2cpio-cpio      rpm2cpio PKG.rpm | cpio -idm, run in R
#   cowkit-rpm         cowkit install --nodeps --noscripts --root R PKG.rpm
#                      (the same checks skipped as for rpm-i)
#   cowkit-rpme-disk   cowkit install ... --root R PKG.rpme (.rpme made before the
#                      rounds, on the XFS mount, synced)
#   cowkit-rpme-fresh  cowkit transcode PKG.rpm -o FRESH.rpme (untimed, not
#                      synced), then timed: cowkit install ... --root R FRESH.rpme
#   rpm2cpio-null      rpm2cpio PKG.rpm > /dev/null (decompression alone)
#   transcode          cowkit transcode PKG.rpm -o OUT.rpme (OUT on the mount)
# peers = rpm-i, rpm2cpio-cpio, rpm2cpio-null.
#
# Every timed command is measured twice in one go: the command alone, and the
# command followed by syncfs of the XFS mount (durable cost). The mount is
# synced (untimed) before every timed command, except between the transcode
# and the install of cowkit-rpme-fresh, whose point is the dirty pages.
# A failing command stops the benchmark. In round 1 every install root is
# compared with a reference extraction (type, mode, size, symlink target of
# every entry).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
METHODS=${METHODS:-all}
DROP_CACHES=${DROP_CACHES:-0}
IMG_SIZE=${IMG_SIZE:-8G}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-1}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
read -r -a PKGS <<<"${PACKAGES:-libreoffice-core libboost1.74-dev}"
read -r -a COMPS <<<"${COMPRESSIONS:-zstd xz}"
PY=/usr/bin/python3
MEASURE="$BENCH_DIR/measure.py"
DBPATH=/var/lib/rpm

case "$ROUNDS" in
'' | *[!0-9]* | 0) die "ROUNDS must be a positive integer, not '$ROUNDS'" ;;
esac

ALL_METHODS=(rpm-i rpm2cpio-cpio cowkit-rpm cowkit-rpme-disk cowkit-rpme-fresh rpm2cpio-null transcode)
case "$METHODS" in
all) methods=("${ALL_METHODS[@]}") ;;
peers) methods=(rpm-i rpm2cpio-cpio rpm2cpio-null) ;;
*) IFS=', ' read -r -a methods <<<"$METHODS" ;;
esac
uses_cowkit=0
for m in "${methods[@]}"; do
  case " ${ALL_METHODS[*]} " in
  *" $m "*) ;;
  *) die "unknown method '$m' (known: ${ALL_METHODS[*]}, or all, peers)" ;;
  esac
  case "$m" in cowkit-* | transcode) uses_cowkit=1 ;; esac
done
install_methods=()
decode_methods=()
for m in "${methods[@]}"; do
  case "$m" in
  rpm2cpio-null | transcode) decode_methods+=("$m") ;;
  *) install_methods+=("$m") ;;
  esac
done

# ---------------------------------------------------------------- preparation
# (outside the mount namespace; runs once)
if [ -z "${COWKIT_BENCH_NS:-}" ]; then
  need_root
  need mkfs.xfs:xfsprogs rpm:rpm rpm2cpio:rpm2cpio cpio:cpio unshare:util-linux \
    findmnt:util-linux "$PY:python3"
  for pkg in "${PKGS[@]}"; do
    for comp in "${COMPS[@]}"; do
      [ -f "$(corpus_rpm "$pkg" "$comp")" ] ||
        die "missing $(corpus_rpm "$pkg" "$comp"): run bench/corpus.sh first"
    done
  done
  if [ "$uses_cowkit" = 1 ]; then
    find_cowkit "Use a cowkit build that has it, or METHODS=peers to time only rpm -i and rpm2cpio." install transcode
  fi
  # Leftover image directories of runs that were killed outright.
  clean_stale_images "$BENCH_IMG_DIR/cowkit-bench"
  prepare_results_dir
  export RESULTS_DIR COWKIT_BENCH_NS=1
  in_private_mounts "$@"
fi

# ------------------------------------------------------ inside the namespace
make_rig cowkit-bench
MNT="$RIG/xfs"
mkfs_img xfs "$RIG/xfs.img" "$IMG_SIZE"
loop_mount "$RIG/xfs.img" "$MNT"
# Debian's rpm warns on every install unless told that this is deliberate.
rpm_debian=()
if rpm --force-debian --version >/dev/null 2>&1; then rpm_debian=(--force-debian); fi
mkdir -p "$MNT/pkgs" "$MNT/roots" "$MNT/tmp"
RECORD="$RIG/record.jsonl"
: >"$RECORD"

# drop_caches_maybe — cold-cache mode: write back and drop the page cache.
drop_caches_maybe() {
  if [ "$DROP_CACHES" = 1 ]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
  fi
}

# manifest DIR — one sorted line per entry: type, mode, size (files), path,
# symlink target. The rpm database under $DBPATH is left out.
manifest() {
  (cd "$1" && find . -mindepth 1 -path ".$DBPATH" -prune -o \
    \( -type f -printf 'f %m %s %p\n' \) -o \
    \( -type l -printf 'l %m %p -> %l\n' \) -o \
    \( -type d -printf 'd %m %p\n' \) -o \
    -printf '%y %m %p\n') | LC_ALL=C sort
}

# verify METHOD ROOT PKG COMP — the root must match the reference extraction.
verify() {
  local m=$1 root=$2 ref="$RIG/$3.$4.manifest" got="$RIG/got.manifest" d
  manifest "$root" >"$got"
  if [ "$m" != rpm2cpio-cpio ]; then
    # rpm and cowkit (which registers in the root's database) create the
    # parents of the database directory; leave them out unless the
    # package has them too.
    d=$DBPATH
    while d=${d%/*} && [ -n "$d" ]; do
      awk -v p=".$d" '$1 == "d" && $3 == p { found = 1 } END { exit !found }' "$ref" && continue
      awk -v p=".$d" '!($1 == "d" && $3 == p)' "$got" >"$got.tmp"
      mv "$got.tmp" "$got"
    done
  fi
  if ! cmp -s "$ref" "$got"; then
    log "$m: the installed tree of $3 ($4) differs from rpm2cpio | cpio (< reference, > $m):"
    diff "$ref" "$got" | head -n 20 >&2 || true
    die "$m: verification failed"
  fi
  log "  $m: verified $(wc -l <"$got") entries"
}

# timed METHOD PKG COMP ROUND [--cwd DIR] [--stdout-null] -- CMD...
timed() {
  local m=$1 pkg=$2 comp=$3 round=$4 group=install
  shift 4
  case "$m" in rpm2cpio-null | transcode) group=decode ;; esac
  "$PY" "$MEASURE" run --record "$RECORD" --sync "$MNT" \
    --field "pkg=$pkg" --field "comp=$comp" --field "method=$m" \
    --field "group=$group" --field "round=$round" "$@"
}

# run_method METHOD PKG COMP ROUND
run_method() {
  local m=$1 pkg=$2 comp=$3 round=$4
  local rpmf="$MNT/pkgs/$pkg.$comp.rpm" rpme="$MNT/pkgs/$pkg.$comp.rpme"
  local root="$MNT/roots/$m" fresh="$MNT/tmp/fresh.rpme" out="$MNT/tmp/out.rpme"
  rm -rf --one-file-system "$root" "$fresh" "$out"
  mkdir -p "$root"
  case "$m" in
  rpm-i)
    rpm --root "$root" --define "_dbpath $DBPATH" --initdb
    sync -f "$MNT"
    drop_caches_maybe
    timed "$m" "$pkg" "$comp" "$round" -- rpm -i "${rpm_debian[@]}" --root "$root" --define "_dbpath $DBPATH" \
      --nodeps --noscripts --nosignature --ignorearch --ignoreos "$rpmf"
    ;;
  rpm2cpio-cpio)
    sync -f "$MNT"
    drop_caches_maybe
    # shellcheck disable=SC2016 # $1 is expanded by the inner bash
    timed "$m" "$pkg" "$comp" "$round" --cwd "$root" -- \
      bash -c 'set -o pipefail; rpm2cpio "$1" | cpio -idm --quiet' rpm2cpio-cpio "$rpmf"
    ;;
  cowkit-rpm)
    sync -f "$MNT"
    drop_caches_maybe
    timed "$m" "$pkg" "$comp" "$round" -- "$COWKIT" install --nodeps --noscripts --root "$root" "$rpmf"
    ;;
  cowkit-rpme-disk)
    sync -f "$MNT"
    drop_caches_maybe
    timed "$m" "$pkg" "$comp" "$round" -- "$COWKIT" install --nodeps --noscripts --root "$root" "$rpme"
    ;;
  cowkit-rpme-fresh)
    sync -f "$MNT"
    drop_caches_maybe
    "$COWKIT" transcode "$rpmf" -o "$fresh" >/dev/null
    timed "$m" "$pkg" "$comp" "$round" -- "$COWKIT" install --nodeps --noscripts --root "$root" "$fresh"
    ;;
  rpm2cpio-null)
    sync -f "$MNT"
    drop_caches_maybe
    timed "$m" "$pkg" "$comp" "$round" --stdout-null -- rpm2cpio "$rpmf"
    ;;
  transcode)
    sync -f "$MNT"
    drop_caches_maybe
    timed "$m" "$pkg" "$comp" "$round" -- "$COWKIT" transcode "$rpmf" -o "$out"
    ;;
  esac
  case "$m" in
  rpm2cpio-null | transcode) ;;
  *) [ "$round" != 1 ] || verify "$m" "$root" "$pkg" "$comp" ;;
  esac
  rm -rf --one-file-system "$root" "$fresh" "$out"
}

# prepare PKG COMP — copy the rpm onto the mount, extract the reference tree,
# transcode the on-disk .rpme; record sizes. Untimed.
prepare() {
  local pkg=$1 comp=$2 src rpmf rpme ref rpme_bytes=null
  src=$(corpus_rpm "$pkg" "$comp")
  rpmf="$MNT/pkgs/$pkg.$comp.rpm"
  rpme="$MNT/pkgs/$pkg.$comp.rpme"
  ref="$MNT/roots/reference"
  cp "$src" "$rpmf"
  rm -rf --one-file-system "$ref"
  mkdir -p "$ref"
  (cd "$ref" && rpm2cpio "$rpmf" | cpio -idm --quiet)
  manifest "$ref" >"$RIG/$pkg.$comp.manifest"
  if [ "$uses_cowkit" = 1 ]; then
    "$COWKIT" transcode "$rpmf" -o "$rpme" >/dev/null
    rpme_bytes=$(stat -c %s "$rpme")
  fi
  printf '{"kind":"size","pkg":"%s","comp":"%s","rpm_bytes":%s,"rpme_bytes":%s,"installed_bytes":%s,"du_bytes":%s,"entries":%s,"files":%s}\n' \
    "$pkg" "$comp" "$(stat -c %s "$rpmf")" "$rpme_bytes" "$(rpm -qp --qf '%{SIZE}' "$rpmf")" \
    "$(du -sb "$ref" | cut -f1)" "$(wc -l <"$RIG/$pkg.$comp.manifest")" \
    "$(grep -c '^f ' "$RIG/$pkg.$comp.manifest" || true)" >>"$RECORD"
  rm -rf --one-file-system "$ref"
  cat "$rpmf" >/dev/null # warm the page cache with the package
}

machine_json() {
  local cpu cores mem kernel rpmv cowkitv commit fsline load
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  cores=$(nproc)
  mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  kernel=$(uname -r)
  load="$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  rpmv=$(rpm --version)
  cowkitv=-
  [ "$uses_cowkit" = 1 ] && cowkitv="$("$COWKIT" --version 2>/dev/null || echo '?') ($COWKIT)"
  commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
  if ! git -C "$REPO_ROOT" diff --quiet HEAD -- 2>/dev/null; then commit="$commit (+ uncommitted changes)"; fi
  fsline="XFS (mkfs.xfs -m reflink=1, $(xfs_info "$MNT" 2>/dev/null | sed -n 's/.*bsize=\([0-9]*\).*blocks=.*/block size \1/p' | head -n 1)) on $LOOP_DEV ($LOOP_IO), backed by a sparse $IMG_SIZE file on $(findmnt -n -o FSTYPE --target "$BENCH_IMG_DIR") ($(findmnt -n -o SOURCE --target "$BENCH_IMG_DIR"))"
  CPU="$cpu" CORES="$cores" MEM="$mem" KERNEL="$kernel" RPMV="$rpmv" COWKITV="$cowkitv" \
    COMMIT="$commit" FSLINE="$fsline" LOAD="$load" "$PY" - <<'PYEOF'
import json, os, datetime
e = os.environ
cache = "cold (sync + drop_caches before every timed command)" if e["DROP_CACHES"] == "1" else "warm (package files read once before the rounds; no cache dropping)"
print(json.dumps({
    "date": datetime.date.today().isoformat(),
    "line": "%s, %s cores, %s RAM, Linux %s" % (e["CPU"], e["CORES"], e["MEM"], e["KERNEL"]),
    "cpu": e["CPU"], "cores": int(e["CORES"]), "ram": e["MEM"], "kernel": e["KERNEL"],
    "filesystem": e["FSLINE"], "rpm": e["RPMV"], "cowkit": e["COWKITV"],
    "commit": e["COMMIT"], "loadavg": e["LOAD"], "rounds": int(e["ROUNDS"]), "cache": cache,
    "methods": e["METHODS_LIST"],
}))
PYEOF
}

body() {
  local pkg comp round i n m
  LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
  log "XFS on $LOOP_DEV ($LOOP_IO) mounted at $MNT; rounds: $ROUNDS; methods: ${methods[*]}; cache: $([ "$DROP_CACHES" = 1 ] && echo cold || echo warm)"
  for pkg in "${PKGS[@]}"; do
    for comp in "${COMPS[@]}"; do
      log "preparing $pkg ($comp)"
      prepare "$pkg" "$comp"
    done
  done
  sync -f "$MNT"
  for ((round = 1; round <= ROUNDS; round++)); do
    for pkg in "${PKGS[@]}"; do
      for comp in "${COMPS[@]}"; do
        log "round $round/$ROUNDS: $pkg ($comp)"
        # Rotate the order of the methods from round to round, so that no
        # method always runs right after the same other one.
        n=${#install_methods[@]}
        for ((i = 0; i < n; i++)); do
          m=${install_methods[(i + round - 1) % n]}
          run_method "$m" "$pkg" "$comp" "$round"
        done
        n=${#decode_methods[@]}
        for ((i = 0; i < n; i++)); do
          m=${decode_methods[(i + round - 1) % n]}
          run_method "$m" "$pkg" "$comp" "$round"
        done
      done
    done
  done
  METHODS_LIST="${methods[*]}" ROUNDS="$ROUNDS" DROP_CACHES="$DROP_CACHES" machine_json >"$RIG/machine.json"
  local base
  base=$(results_base rpm-install)
  "$PY" "$MEASURE" report --record "$RECORD" --machine "$RIG/machine.json" \
    --md "$base.md" --json "$base.json"
  log "results: $base.md, $base.json"
}

rig_run body
