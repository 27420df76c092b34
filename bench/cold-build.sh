#!/usr/bin/env bash
# Cold image build from an HTTP mirror (issue 29): plain `dnf --installroot`,
# `cowkit dnf` through dnf's download (`--downloader dnf`) and `cowkit dnf`
# streaming each package through the transcoder as it arrives (`--downloader
# cowkit`), against the floor any dnf-resolved build pays: `dnf --downloadonly`
# on the same mirror. Cold cowkit cache, fresh roots, rounds in rotating
# order, medians, the time split and ratios to the floor.
#
#   bench/cold-build.sh
#
# The mirror: the Fedora-shaped set of bench/image-build.sh (`fedora`, the 14
# v1 packages of crates/cowkit-testutil/src/fedora.rs with FEDORA_PAYLOAD
# files added, rebuilt by the example build-fedora-repo) served by Python's
# `http.server` on 127.0.0.1:8080 inside a network namespace made here
# (`ip netns add`), whose loopback is throttled with `tc tbf` to each RATE
# (and `netem delay` with DELAY). Server and clients both run in the
# namespace: every byte crosses the throttled loopback once, and no traffic
# leaves the loopback range.
#
# Environment:
#   ROUNDS=5            rounds per rate
#   RATES="1gbit 300mbit"
#   DELAY=              netem delay on the loopback (e.g. 2ms); none by default
#   FEDORA_PAYLOAD="1 64"   extra files per package and MiB each (about 32 MiB of .rpm each)
#   FEDORA_COMPRESSOR=w3.zstdio
#   COWKIT=target/release/cowkit   (built by cargo when not set)
#   BENCH_IMG_DIR=/var/tmp   IMG_SIZE=16G
#   RESULTS_DIR=bench/results   YYYY-MM-DD-cold-build[-smoke].{md,json}
#   SMOKE=1             label the result as a smoke run (a loaded machine)
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
RATES=${RATES:-1gbit 300mbit}
DELAY=${DELAY:-}
IMG_SIZE=${IMG_SIZE:-16G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
FEDORA_PAYLOAD=${FEDORA_PAYLOAD:-1 64}
FEDORA_COMPRESSOR=${FEDORA_COMPRESSOR:-w3.zstdio}
SMOKE=${SMOKE:-}
PY=/usr/bin/python3

need_root
need mkfs.xfs:xfsprogs dnf:dnf createrepo_c:createrepo-c rpmbuild:rpm busybox:busybox-static \
  ip:iproute2 tc:iproute2 gzip:gzip
find_cowkit "bench/cold-build.sh" dnf transcode
prepare_results_dir
EXAMPLES="$REPO_ROOT/target/release/examples"
PROFILE=(--release)
case $COWKIT in
"$REPO_ROOT"/target/debug/*) EXAMPLES="$REPO_ROOT/target/debug/examples" PROFILE=() ;;
esac

work=$(mktemp -d "$BENCH_IMG_DIR/cowkit-cold-build.XXXXXX")
mnt="$work/mnt"
netns="cowkit-cold-$$"
server=
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  ip netns del "$netns" 2>/dev/null || true
  umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
truncate -s "$IMG_SIZE" "$work/xfs.img"
mkfs.xfs -q -f -m reflink=1 "$work/xfs.img"
mkdir -p "$mnt"
mount -o loop "$work/xfs.img" "$mnt"

read -r files mib <<<"$FEDORA_PAYLOAD"
log "building the Fedora-like packages ($files x $mib MiB of payload each, $FEDORA_COMPRESSOR)"
(cd "$REPO_ROOT" && cargo build -q "${PROFILE[@]}" --locked -p cowkit-testutil --example build-fedora-repo)
"$EXAMPLES/build-fedora-repo" "$mnt/fedora" "$files" "$mib" "$FEDORA_COMPRESSOR" >/dev/null
rm -rf "$mnt/fedora/payload"
createrepo_c -q "$mnt/fedora/repo"

ip netns add "$netns"
ip -n "$netns" link set lo up
ip netns exec "$netns" "$PY" -m http.server --bind 127.0.0.1 --directory "$mnt/fedora/repo" 8080 \
  >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  ip netns exec "$netns" "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 8080), 1)' \
    2>/dev/null && break
  sleep 0.1
done

# shellcheck disable=SC2086 # RATES are words
"$PY" "$BENCH_DIR/cold_build.py" \
  --cowkit "$COWKIT" --mount "$mnt" --repo "$mnt/fedora/repo" --netns "$netns" \
  --rounds "$ROUNDS" --rates $RATES ${DELAY:+--delay "$DELAY"} --results "$RESULTS_DIR" \
  --dbpath "$(rpm -E %_dbpath)" ${SMOKE:+--smoke} \
  --names setup filesystem coreutils-single bash glibc glibc-common zlib systemd httpd \
  mod_legacy mandoc shared-mime-info procps kernel-core
