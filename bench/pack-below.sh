#!/usr/bin/env bash
# How small must a file be to be written rather than cloned at install, and
# should a partial last block be cloned and truncated or written?
#
#   bash scripts/rig.sh bash bench/pack-below.sh      (needs the rig's XFS and Btrfs)
#
# For each corpus package (zstd), transcodes with several --pack-below values,
# then alternates, ROUNDS times, `cowkit install -j1` of each into a fresh root
# on the same filesystem, the .rpme synced first. Prints medians (seconds).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
: "${COWKIT_TEST_XFS:?run under scripts/rig.sh}" "${COWKIT_TEST_BTRFS:?run under scripts/rig.sh}"
COWKIT=${COWKIT:-$REPO_ROOT/target/release/cowkit}
ROUNDS=${ROUNDS:-5}
THRESHOLDS=(1 4096 16384 65536 1048576)
PKGS=(libboost1.74-dev libreoffice-core)

run() { # run ROOT ARGS... -> seconds on stdout
  local root=$1 s e
  shift
  rm -rf "$root" && mkdir "$root" && sync -f "$root"
  s=$EPOCHREALTIME
  "$COWKIT" install -q -j1 --root "$root" "$@"
  e=$EPOCHREALTIME
  echo "$e - $s" | bc
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.4f", m }'; }

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for fs in xfs btrfs; do
  mnt=$COWKIT_TEST_XFS
  [ $fs = btrfs ] && mnt=$COWKIT_TEST_BTRFS
  for p in "${PKGS[@]}"; do
    rpm=$(corpus_rpm "$p" zstd)
    [ -f "$rpm" ] || die "no $rpm: run bench/corpus.sh"
    for t in "${THRESHOLDS[@]}"; do
      "$COWKIT" transcode --pack-below "$t" "$rpm" -o "$mnt/$p.$t.rpme" 2>/dev/null
    done
    sync -f "$mnt"
    for ((r = 0; r < ROUNDS; r++)); do
      for t in "${THRESHOLDS[@]}"; do
        echo "$fs $p pack-below=$t tail=write $(run "$mnt/root" "$mnt/$p.$t.rpme")" >>"$results"
      done
      echo "$fs $p pack-below=16384 tail=clone $(run "$mnt/root" --clone-tail "$mnt/$p.16384.rpme")" >>"$results"
    done
    for t in "${THRESHOLDS[@]}"; do
      echo "$fs $p pack-below=$t size $(stat -c %s "$mnt/$p.$t.rpme") bytes" >>"$results"
    done
    rm -rf "$mnt/root" "$mnt"/*.rpme
  done
done
echo "| fs | package | setting | median s | rounds |"
echo "|---|---|---|---|---|"
grep -v ' size ' "$results" | awk '{ print $1, $2, $3, $4 }' | sort -u | while read -r fs p t tail; do
  m=$(grep -F "$fs $p $t $tail " "$results" | awk '{ print $5 }' | median)
  echo "| $fs | $p | $t, $tail tail | $m | $ROUNDS |"
done
echo
grep ' size ' "$results" | awk '{ printf "- %s %s %s: .rpme %s bytes\n", $1, $2, $3, $5 }'
