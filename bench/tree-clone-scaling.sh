#!/usr/bin/env bash
# Where a second copying thread's time goes on XFS: is the extra kernel time
# of `cowkit cp -a -j 2` over `-j 1` the machine's, or the filesystem's?
#
#   bench/tree-clone-scaling.sh
#
# Each round times, on fresh copies of the tree-clone benchmark's cached XFS
# image (bench/tree-clone.sh builds it; run that first):
#   cp-a        cp -a --reflink=always SRC DST            (the peer, one thread)
#   j1          cowkit cp -a -j 1 SRC DST                 (one thread)
#   j2          cowkit cp -a -j 2 SRC DST                 (two threads)
#   two-fs      two `cowkit cp -a -j 1` at once, each on its own XFS
#               (two filesystems: nothing shared but the machine)
#   one-fs      two `cowkit cp -a -j 1` at once on one XFS, of the same SRC
#               to two destinations (the filesystem shared too)
# and reports, per method, the median wall time and the median user and
# system time of each copy.
#
# Environment:
#   ROUNDS=5   COWKIT=target/release/cowkit (built when not set)
#   TREE_CACHE=/var/cache/cowkit-bench/tree   BENCH_IMG_DIR=/var/tmp
#   RESULTS_DIR=bench/results   (YYYY-MM-DD-tree-clone-scaling.md)
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
TREE_CACHE=${TREE_CACHE:-/var/cache/cowkit-bench/tree}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
case "$ROUNDS" in
'' | *[!0-9]* | 0) die "ROUNDS must be a positive integer, not '$ROUNDS'" ;;
esac

if [ -z "${COWKIT_SCALING_NS:-}" ]; then
  need_root
  need unshare:util-linux losetup:mount findmnt:util-linux /usr/bin/time:time python3:python3
  [ -f "$TREE_CACHE/xfs.img" ] ||
    die "no cached tree image $TREE_CACHE/xfs.img" "hint: run bench/tree-clone.sh once; it builds the tree and caches it"
  find_cowkit "hint: set COWKIT=/path/to/cowkit" cp
  clean_stale_images "$BENCH_IMG_DIR/cowkit-scaling"
  prepare_results_dir
  export RESULTS_DIR TREE_CACHE COWKIT_SCALING_NS=1
  in_private_mounts "$@"
fi

make_rig cowkit-scaling
RECORD="$RIG/record.tsv"
: >"$RECORD"

# Two copies of the image, each on its own loop device (direct I/O, as
# bench/tree-clone.sh mounts them); the second mounted with `nouuid`, since
# both have the same filesystem UUID.
for i in 1 2; do
  cp --sparse=always "$TREE_CACHE/xfs.img" "$RIG/x$i.img"
  dev=$(losetup -f --show --direct-io=on "$RIG/x$i.img")
  mkdir -p "$RIG/m$i"
  mount -o nouuid "$dev" "$RIG/m$i"
  # Warm the source's metadata, as bench/tree-clone.sh does.
  find "$RIG/m$i/tree" >/dev/null
done
M1=$RIG/m1 M2=$RIG/m2

# timed ROUND METHOD CMD... — one copy, recorded as "round method wall user sys".
timed() {
  local round=$1 method=$2
  shift 2
  /usr/bin/time -f "$round	$method	%e	%U	%S" -a -o "$RECORD" "$@" >/dev/null
}

fresh() {
  rm -rf --one-file-system "$M1/dst" "$M1/dst2" "$M2/dst"
  sync
}

body() {
  local r
  for r in $(seq 1 "$ROUNDS"); do
    fresh && timed "$r" cp-a cp -a --reflink=always "$M1/tree" "$M1/dst"
    fresh && timed "$r" j1 "$COWKIT" cp -a -j 1 "$M1/tree" "$M1/dst"
    fresh && timed "$r" j2 "$COWKIT" cp -a -j 2 "$M1/tree" "$M1/dst"
    fresh
    timed "$r" two-fs "$COWKIT" cp -a -j 1 "$M1/tree" "$M1/dst" &
    timed "$r" two-fs "$COWKIT" cp -a -j 1 "$M2/tree" "$M2/dst" &
    wait
    fresh
    timed "$r" one-fs "$COWKIT" cp -a -j 1 "$M1/tree" "$M1/dst" &
    timed "$r" one-fs "$COWKIT" cp -a -j 1 "$M1/tree" "$M1/dst2" &
    wait
  done
  fresh
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
rig_run body
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

BASE=$(results_base tree-clone-scaling)
python3 - "$RECORD" "$BASE.md" <<EOF
import statistics, sys
from collections import defaultdict
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
runs = defaultdict(list)       # method -> [(round, wall, user, sys)]
for r, m, wall, user, sys_ in rows:
    runs[m].append((int(r), float(wall), float(user), float(sys_)))
def med(xs): return statistics.median(xs)
# A method's wall time in a round: the longer of its copies.
wall = {m: med([max(w for r2, w, _, _ in v if r2 == r) for r in {x[0] for x in v}])
        for m, v in runs.items()}
j1_sys = med([s for _, _, _, s in runs["j1"]])
out = ["# Tree clone scaling on XFS, $(date +%F)", "",
       "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, Linux $(uname -r)", "",
       "- commit: $(git -C "$REPO_ROOT" rev-parse --short HEAD)$(git -C "$REPO_ROOT" diff --quiet HEAD -- crates || echo ' (+ uncommitted changes)')",
       "- cowkit: $COWKIT",
       "- rounds: $ROUNDS",
       "- loadavg: $LOAD_START at the start, $LOAD_END at the end",
       "- tree: the cached image of bench/tree-clone.sh ($TREE_CACHE/xfs.img), two fresh copies on loop devices (direct I/O)",
       "",
       "Median over the rounds. Wall: the longer copy of the round for the methods that run two. "
       "User and sys: per copy (wait4 of the command). sys vs j1: the median system time of one copy "
       "against one copy alone with one thread.", "",
       "| method | what | copies per round | wall s | user s per copy | sys s per copy | sys vs j1 |",
       "|---|---|---:|---:|---:|---:|---:|"]
what = {"cp-a": "cp -a --reflink=always", "j1": "cowkit cp -a -j 1", "j2": "cowkit cp -a -j 2",
        "two-fs": "two cowkit cp -a -j 1 at once, one per filesystem",
        "one-fs": "two cowkit cp -a -j 1 at once on one filesystem"}
for m in ["cp-a", "j1", "j2", "two-fs", "one-fs"]:
    v = runs[m]
    per = len(v) // len({x[0] for x in v})
    s = med([x[3] for x in v])
    out.append(f"| {m} | {what[m]} | {per} | {wall[m]:.3f} | {med([x[2] for x in v]):.3f} | {s:.3f} | {s / j1_sys:.2f}x |")
out += ["", f"cp -a / j2 wall: {wall['cp-a'] / wall['j2']:.2f}x; cp -a / j1 wall: {wall['cp-a'] / wall['j1']:.2f}x", "",
        "## Raw (round, method, wall s, user s, sys s)", "", "\`\`\`"] + ["\t".join(r) for r in rows] + ["\`\`\`", ""]
open(sys.argv[2], "w").write("\n".join(out))
EOF
log "results: $BASE.md"
cat "$BASE.md"
