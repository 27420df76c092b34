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
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-image-build[-SET].{md,json} go
#   SETS="corpus fedora-bare fedora"   the package sets, one after the other
#   FEDORA_PAYLOAD="4 8"   extra files per Fedora-like package and MiB each
#                       ("0 0": the packages as the tests build them)
#   FEDORA_COMPRESSOR   their payload compressor: w3.zstdio with payload
#                       (level 3 keeps building it fast; zstd decompresses
#                       at about the same speed), else Fedora's w19.zstdio
#   FEDORA_NAMES        the packages a Fedora-like set installs (default:
#                       the 14 named below)
#   RESOLVER=dnf        dnf (dnf 4 and the host's rpm 4.18) or dnf5: dnf5
#                       and rpm 4.20 from the prefix COWKIT_FEDORA_TOOLS
#                       names (else scripts/fedora-tools.sh all finds or
#                       builds it), first on PATH for the timed runs and
#                       the floor (the packages are still built by the
#                       host's rpmbuild); cowkit dnf over that dnf5 with
#                       cowkit's libdnf5 plugin, built here; results
#                       ...-SET-dnf5
#
# Set `corpus` (results YYYY-MM-DD-image-build):
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
# Sets `fedora` (results YYYY-MM-DD-image-build-fedora) and `fedora-bare`
# (-fedora-bare: the same without payload, Fedora's w19.zstdio): 14 of the v1
# packages of crates/cowkit-testutil/src/fedora.rs (the repository's multilib
# pairs and font package are built but not installed here) (the scriptlet shapes of Fedora's own packages: Lua %pretrans/%pre/%post,
# glibc-common's ldconfig %transfiletriggerin, systemd's file triggers,
# name triggers, an install-only kernel, ...), rebuilt by the example
# build-fedora-repo with FEDORA_PAYLOAD deterministic files added to each
# under /usr/share/bench-payload/NAME (in the benchmark only; the test
# fixture has none), installed in one transaction as the test does:
# `install setup filesystem ... kernel-core`, with `cowkit dnf --dbpath`
# set to the host rpm's %_dbpath as in the tests. The scriptlet logs of
# both roots must be byte-equal.
#
# Methods, each into a fresh root on the mount:
#   dnf           dnf -y --installroot R ... install NAMES (dnf's metadata
#                 cache warm; a file:// repository, so no package download)
#   dnf-resolve   the same with --assumeno: dnf's resolve alone (subtracted
#                 from `dnf` to give dnf's transaction part)
#   cowkit-cold   cowkit dnf --root R --cache C -- ... install NAMES, with C
#                 emptied first: resolve + transcode + install
#   cowkit-warm   the same with C filled: resolve + install from the cache;
#                 after it (each round): `rpm -i --justdb --noscripts
#                 --notriggers` of the same package files into an empty
#                 root, and `cowkit cp -a` of the finished root, the floor
#                 of the goal ratio (the warm transaction against its floor)
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
RESOLVER=${RESOLVER:-dnf}
RUN_ENV=()
case $RESOLVER in
dnf) ;;
dnf5)
  tools=${COWKIT_FEDORA_TOOLS:-$(bash "$REPO_ROOT/scripts/fedora-tools.sh" all | tail -1)}
  [ -x "$tools/bin/dnf5" ] && [ -x "$tools/bin/rpm" ] || die "RESOLVER=dnf5: no dnf5 and rpm in $tools/bin"
  plugin_dir="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/dnf5-plugin"
  make -s -C "$REPO_ROOT/crates/cowkit-dnf/dnf5-plugin" PREFIX="$tools" OUT="$plugin_dir" >&2
  # For the timed runs only: the packages are built by the host's rpmbuild,
  # as the tests build them (rpm 4.20's would add user()/group() requires
  # that only sysusers provide).
  RUN_ENV=(PATH="$tools/bin:$PATH" COWKIT_DNF="$tools/bin/dnf5" COWKIT_DNF5_PLUGIN="$plugin_dir/cowkit.so")
  ;;
*) die "RESOLVER=$RESOLVER: want dnf or dnf5" ;;
esac
find_cowkit "bench/image-build.sh" dnf install transcode cp
SETS=${SETS:-corpus fedora-bare fedora}
FEDORA_PAYLOAD=${FEDORA_PAYLOAD:-4 8}
FEDORA_COMPRESSOR=${FEDORA_COMPRESSOR:-}
for set in $SETS; do
  case $set in
  corpus)
    [ "$RESOLVER" = dnf ] || die "set corpus: RESOLVER=$RESOLVER (the corpus packages come from Debian via alien; dnf5 runs the Fedora-like sets)"
    for p in libreoffice-core libboost1.74-dev; do
      [ -f "$(corpus_rpm "$p" zstd)" ] || die "$(corpus_rpm "$p" zstd) is missing: run bench/corpus.sh first"
    done
    ;;
  fedora | fedora-bare) need gzip:gzip ;;
  *) die "unknown set '$set' in SETS (corpus, fedora-bare, fedora)" ;;
  esac
done
# The examples are built with the profile of the cowkit being timed.
EXAMPLES="$REPO_ROOT/target/release/examples"
PROFILE=(--release)
case $COWKIT in
"$REPO_ROOT"/target/debug/*) EXAMPLES="$REPO_ROOT/target/debug/examples" PROFILE=() ;;
esac

make_rig cowkit-image-build
work=$RIG
mnt="$work/mnt"
mkfs_img xfs "$work/xfs.img" "$IMG_SIZE"
loop_mount "$work/xfs.img" "$mnt"
mkdir -p "$RESULTS_DIR"

run_corpus() {
  log "building the test repository packages"
  (cd "$REPO_ROOT" && cargo build -q "${PROFILE[@]}" --locked -p cowkit-testutil --example build-repo)
  mapfile -t testpkgs < <("$EXAMPLES/build-repo" "$work/testrepo")
  local repo="$mnt/repo" p top
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

  "$PY" "$BENCH_DIR/image_build.py" \
    --cowkit "$COWKIT" --mount "$mnt" --repo "$repo" --rounds "$ROUNDS" \
    --results "$RESULTS_DIR" --img-size "$IMG_SIZE" \
    --names ck-suite libreoffice-core libboost1.74-dev
}

run_fedora_bare() { run_fedora 0 0; }

# run_fedora [FILES MIB] — the Fedora-like set, FEDORA_PAYLOAD by default.
run_fedora() {
  local files mib label=fedora about names
  # shellcheck disable=SC2206 # the names are words
  names=(${FEDORA_NAMES:-setup filesystem coreutils-single bash glibc glibc-common zlib systemd httpd mod_legacy mandoc shared-mime-info procps kernel-core})
  read -r files mib <<<"${*:-$FEDORA_PAYLOAD}"
  [ "$files" -ge 0 ] && [ "$mib" -ge 0 ] 2>/dev/null || die "FEDORA_PAYLOAD='$FEDORA_PAYLOAD': want two numbers"
  [ "$files" -eq 0 ] || [ "$mib" -eq 0 ] && files=0 mib=0 label=fedora-bare
  local comp=${FEDORA_COMPRESSOR:-$([ "$files" -eq 0 ] && echo w19.zstdio || echo w3.zstdio)}
  log "building the Fedora-like packages ($files x $mib MiB of payload each, $comp)"
  (cd "$REPO_ROOT" && cargo build -q "${PROFILE[@]}" --locked -p cowkit-testutil --example build-fedora-repo)
  "$EXAMPLES/build-fedora-repo" "$mnt/$label" "$files" "$mib" "$comp" >/dev/null
  rm -rf "$mnt/$label/payload"
  createrepo_c -q "$mnt/$label/repo"
  if [ "$files" -eq 0 ]; then
    about="The ${#names[@]} v1 packages of the Fedora-shaped test repository (\`crates/cowkit-testutil/src/fedora.rs\`) as the tests build them (payload compressor $comp)."
  else
    about="The ${#names[@]} v1 packages of the Fedora-shaped test repository (\`crates/cowkit-testutil/src/fedora.rs\`), rebuilt for the benchmark with $files generated files of $mib MiB each added to every package (under \`/usr/share/bench-payload/NAME\`; hex digits of a fixed xorshift stream, zstd halves them), payload compressed with $comp; the test fixture has no such files."
  fi
  local results_label=$label
  [ "$RESOLVER" = dnf ] || results_label=$label-$RESOLVER
  env "${RUN_ENV[@]}" "$PY" "$BENCH_DIR/image_build.py" \
    --cowkit "$COWKIT" --mount "$mnt" --repo "$mnt/$label/repo" --rounds "$ROUNDS" \
    --results "$RESULTS_DIR" --img-size "$IMG_SIZE" --label "$results_label" \
    --dbpath "$(env "${RUN_ENV[@]}" rpm -E %_dbpath)" --log /var/log/scriptlets.log --about "$about" \
    --dnf "$RESOLVER" --names "${names[@]}"
}

for set in $SETS; do
  "run_${set//-/_}"
done
