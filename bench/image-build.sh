#!/usr/bin/env bash
# Image build from a local repository: plain `dnf --installroot ... install`
# against `cowkit dnf` with a cold and a warm transcode cache, side by side
# on one scratch reflink XFS.
#
#   bench/image-build.sh
#
# Environment:
#   ROUNDS=5            rounds; every round runs every method once, in
#                       rotating order
#   COWKIT=target/release/cowkit   (built by cargo when not set)
#   COWKIT_BENCH_CACHE  the corpus directory (bench/corpus.sh builds it)
#   BENCH_IMG_DIR=/var/tmp   where the sparse XFS image file goes
#   IMG_SIZE=16G
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-image-build.{md,json} go
#
# The repository (on the XFS mount, createrepo_c) holds the corpus packages
# libreoffice-core and libboost1.74-dev (zstd), the 16 packages of the test
# repository (crates/cowkit-testutil/src/repo.rs: busybox as /bin/sh, a %pre
# that adds a user, %post/%posttrans, config files, a Requires chain) and
# `ck-bench-provides`, made here: it provides every capability the corpus
# packages require from outside the set (they come from Debian via alien)
# and a `dpkg-maintscript-helper` that does nothing, which the
# libreoffice-core scriptlets call. One transaction installs all of them:
# `install ck-suite libreoffice-core libboost1.74-dev`.
#
# Methods, each into a fresh root on the mount:
#   dnf           dnf -y --installroot R ... install NAMES (dnf's metadata
#                 cache warm; a file:// repository, so no package download)
#   dnf-resolve   the same with --assumeno: dnf's resolve alone (subtracted
#                 from `dnf` to give dnf's transaction part)
#   cowkit-cold   cowkit dnf --root R --cache C -- ... install NAMES, with C
#                 emptied first: resolve + transcode + install
#   cowkit-warm   the same with C filled: resolve + install from the cache
# The mount is synced (untimed) before every timed command; the times are
# of the command alone (rpm 4.18 and cowkit both leave file data to
# writeback). In round 1 the roots are checked: same `rpm -qa`, and
# `rpm -Va` of the cowkit roots shows only what dnf's shows.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
IMG_SIZE=${IMG_SIZE:-16G}
BENCH_IMG_DIR=${BENCH_IMG_DIR:-/var/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PY=/usr/bin/python3

need_root
need mkfs.xfs:xfsprogs dnf:dnf createrepo_c:createrepo-c rpmbuild:rpm busybox:busybox-static
for p in libreoffice-core libboost1.74-dev; do
  [ -f "$(corpus_rpm "$p" zstd)" ] || die "$(corpus_rpm "$p" zstd) is missing: run bench/corpus.sh first"
done
find_cowkit "bench/image-build.sh" dnf install transcode

work=$(mktemp -d "$BENCH_IMG_DIR/cowkit-image-build.XXXXXX")
mnt="$work/mnt"
cleanup() {
  umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
truncate -s "$IMG_SIZE" "$work/xfs.img"
mkfs.xfs -q -f -m reflink=1 "$work/xfs.img"
mkdir -p "$mnt"
mount -o loop "$work/xfs.img" "$mnt"

log "building the test repository packages"
(cd "$REPO_ROOT" && cargo build -q --release --locked -p cowkit-testutil --example build-repo)
mapfile -t testpkgs < <("$REPO_ROOT/target/release/examples/build-repo" "$work/testrepo")
repo="$mnt/repo"
mkdir -p "$repo"
cp "${testpkgs[@]}" "$repo/"
for p in libreoffice-core libboost1.74-dev; do
  cp "$(corpus_rpm "$p" zstd)" "$repo/$p.rpm"
done

log "building ck-bench-provides"
top="$work/rpmbuild"
mkdir -p "$top/SPECS"
{
  printf 'Name: ck-bench-provides\nVersion: 1\nRelease: 1\nSummary: benchmark stand-in\nLicense: MIT\nBuildArch: noarch\n'
  for p in libreoffice-core libboost1.74-dev; do
    rpm -qp --requires "$repo/$p.rpm"
  done | awk '!/^rpmlib\(/ && !seen[$0]++ { print "Provides: " $0 }'
  printf '%%description\nProvides what the corpus packages need from outside the benchmark set.\n'
  printf '%%install\nmkdir -p %%{buildroot}/usr/bin\nprintf "#!/bin/sh\\nexit 0\\n" > %%{buildroot}/usr/bin/dpkg-maintscript-helper\n'
  printf 'chmod 755 %%{buildroot}/usr/bin/dpkg-maintscript-helper\n'
  printf '%%files\n/usr/bin/dpkg-maintscript-helper\n'
} >"$top/SPECS/provides.spec"
rpmbuild -bb --quiet --define "_topdir $top" "$top/SPECS/provides.spec" >/dev/null
cp "$top"/RPMS/noarch/ck-bench-provides-*.rpm "$repo/"
createrepo_c -q "$repo"

mkdir -p "$RESULTS_DIR"
"$PY" "$BENCH_DIR/image_build.py" \
  --cowkit "$COWKIT" --mount "$mnt" --repo "$repo" --rounds "$ROUNDS" \
  --results "$RESULTS_DIR" --img-size "$IMG_SIZE" \
  --names ck-suite libreoffice-core libboost1.74-dev
