#!/usr/bin/env bash
# Build the RPM benchmark corpus from Debian packages.
#
#   bench/corpus.sh [PACKAGE...]
#
# For each Debian package (default: $PACKAGES, or libreoffice-core and
# libboost1.74-dev) it downloads the .deb with `apt-get download`, converts it
# with alien and builds two RPMs from the same converted tree with rpmbuild:
#
#   NAME.zstd.rpm   payload zstd level 19 (%_binary_payload w19.zstdio)
#   NAME.xz.rpm     payload xz level 6    (%_binary_payload w6.xzdio)
#
# into the cache directory $COWKIT_BENCH_CACHE (default
# /var/cache/cowkit-bench/corpus), never into the repository. An RPM that is
# already there is kept as it is, so running the script again only builds
# what is missing. Each RPM is checked (header SHA-256, payload digest,
# payload compressor, cpio entry count against the header's file list,
# regular-file count against the .deb) before it is moved into place.
# Finally one summary line per RPM is printed.
#
# Needs root (apt-get; alien must own the files it unpacks as root).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ $# -gt 0 ]; then
  packages=("$@")
else
  read -r -a packages <<<"${PACKAGES:-libreoffice-core libboost1.74-dev}"
fi
COMPRESSIONS=(zstd xz)
declare -A PAYLOAD=([zstd]=w19.zstdio [xz]=w6.xzdio)
declare -A COMPRESSOR=([zstd]=zstd [xz]=xz)

need_root
outside_repo "$CORPUS_DIR"
need alien:alien rpm:rpm rpmbuild:rpm rpmkeys:rpm rpm2cpio:rpm2cpio cpio:cpio \
  zstd:zstd xz:xz-utils dpkg-deb:dpkg apt-get:apt
mkdir -p "$CORPUS_DIR/debs"

work=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  [ -n "$work" ] && rm -rf --one-file-system "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Leftover work directories of killed runs (named .work.PID.*).
for d in "$CORPUS_DIR"/.work.*; do
  [ -d "$d" ] || continue
  pid=${d#"$CORPUS_DIR"/.work.}
  pid=${pid%%.*}
  kill -0 "$pid" 2>/dev/null || rm -rf --one-file-system "$d"
done

# fetch_deb PKG — print the path of the cached .deb of PKG, downloading it if needed.
fetch_deb() {
  local pkg=$1 deb tmp
  deb=$(find "$CORPUS_DIR/debs" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
  if [ -z "$deb" ]; then
    tmp=$(mktemp -d "$CORPUS_DIR/debs/.dl.XXXXXX")
    # apt warns that it downloads unsandboxed as root: harmless here.
    (cd "$tmp" && apt-get download "$pkg" 2>&1 | grep -v -e 'unsandboxed as root' -e '^Get:' -e '^Fetched' >&2) ||
      true
    deb=$(find "$tmp" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
    if [ -z "$deb" ]; then
      rm -rf "$tmp"
      die "apt-get download $pkg produced no .deb (try apt-get update)"
    fi
    mv "$deb" "$CORPUS_DIR/debs/"
    rm -rf "$tmp"
    deb="$CORPUS_DIR/debs/${deb##*/}"
  fi
  printf '%s\n' "$deb"
}

# check_rpm RPM COMP DEB — the checks every corpus RPM must pass.
check_rpm() {
  local rpmf=$1 comp=$2 deb=$3 out digest compressor listed cpio_n rpm_reg deb_reg
  out=$(rpmkeys -Kv --nosignature "$rpmf") || die "rpmkeys -K failed on $rpmf: $out"
  grep -q 'Header SHA256 digest: OK' <<<"$out" ||
    die "$rpmf: no header SHA-256 (RPMSIGTAG_SHA256) in the signature header: $out"
  grep -q 'Payload SHA256 digest: OK' <<<"$out" ||
    die "$rpmf: payload SHA-256 digest missing or wrong: $out"
  digest=$(rpm -qp --qf '%{PAYLOADDIGEST}' "$rpmf")
  if [ -z "$digest" ] || [ "$digest" = "(none)" ]; then die "$rpmf: no PAYLOADDIGEST"; fi
  compressor=$(rpm -qp --qf '%{PAYLOADCOMPRESSOR}' "$rpmf")
  [ "$compressor" = "${COMPRESSOR[$comp]}" ] ||
    die "$rpmf: payload compressor is $compressor, wanted ${COMPRESSOR[$comp]}"
  listed=$(rpm -qpl "$rpmf" | wc -l)
  cpio_n=$(rpm2cpio "$rpmf" | cpio -t --quiet | wc -l)
  [ "$listed" = "$cpio_n" ] || die "$rpmf: header lists $listed files, payload has $cpio_n cpio entries"
  rpm_reg=$(rpm -qp --qf '[%{FILEMODES:perms}\n]' "$rpmf" | grep -c '^-' || true)
  deb_reg=$(dpkg-deb -c "$deb" | grep -c '^-' || true)
  [ "$rpm_reg" = "$deb_reg" ] || die "$rpmf: $rpm_reg regular files, the .deb has $deb_reg"
}

# build_pkg PKG — build the missing RPMs of PKG.
build_pkg() {
  local pkg=$1 comp missing=() deb arch target tree spec name t0 out
  for comp in "${COMPRESSIONS[@]}"; do
    [ -e "$(corpus_rpm "$pkg" "$comp")" ] || missing+=("$comp")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "$pkg: cached"
    return 0
  fi
  deb=$(fetch_deb "$pkg")
  arch=$(dpkg-deb -f "$deb" Architecture)
  case "$arch" in
  all) target=noarch ;;
  amd64) target=x86_64 ;;
  arm64) target=aarch64 ;;
  *) target=$arch ;;
  esac
  log "$pkg: converting ${deb##*/} ($arch -> $target)"
  work=$(mktemp -d "$CORPUS_DIR/.work.$$.XXXXXX")
  # alien -g only unpacks the .deb and writes a spec file; we run rpmbuild
  # ourselves so that one converted tree gives both payload variants and so
  # that the build settings below are explicit. --keep-version keeps the
  # Debian release number instead of bumping it.
  (cd "$work" && alien -g -r -k --scripts "$deb" >/dev/null)
  tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  spec=$(find "$tree" -maxdepth 1 -name '*.spec' | head -n 1)
  [ -n "$spec" ] || die "$pkg: alien wrote no spec file"
  # The spec names its own output directory and file name; ours come from
  # the command line instead. The spec file lives inside the buildroot, so
  # move it out (it must not end up in the payload).
  sed -e '/^%define _rpmdir /d' -e '/^%define _rpmfilename /d' "$spec" >"$work/pkg.spec"
  rm -f "$spec"
  mkdir -p "$work/top" "$work/out"
  for comp in "${missing[@]}"; do
    t0=$SECONDS
    log "$pkg: rpmbuild with a $comp payload (${PAYLOAD[$comp]}; about a minute per 100 MB)"
    # --noclean keeps the buildroot for the next variant. The spec has no
    # %install section, so no brp-strip/brp-compress script touches the
    # files; the defines below make sure of that and keep rpmbuild from
    # adding debuginfo subpackages or /usr/lib/.build-id links the .deb
    # does not have.
    rpmbuild -bb --noclean --quiet \
      --buildroot "$tree" --target "$target" \
      --define "_topdir $work/top" \
      --define "_rpmdir $work/out" \
      --define "_rpmfilename %{NAME}.$comp.rpm" \
      --define "_binary_payload ${PAYLOAD[$comp]}" \
      --define '_binaries_in_noarch_packages_terminate_build 0' \
      --define '_unpackaged_files_terminate_build 0' \
      --define '__os_install_post %{nil}' \
      --define 'debug_package %{nil}' \
      --define '_build_id_links none' \
      "$work/pkg.spec" >"$work/rpmbuild.log" 2>&1 ||
      {
        tail -n 30 "$work/rpmbuild.log" >&2
        die "$pkg: rpmbuild ($comp) failed"
      }
    name=$(find "$work/out" -name "*.$comp.rpm" | head -n 1)
    [ -n "$name" ] || die "$pkg: rpmbuild ($comp) wrote no rpm"
    check_rpm "$name" "$comp" "$deb"
    out=$(corpus_rpm "$pkg" "$comp")
    mv "$name" "$out.tmp"
    mv "$out.tmp" "$out"
    log "$pkg: $comp built and checked in $((SECONDS - t0)) s"
  done
  dpkg-deb -f "$deb" Package Version Architecture Installed-Size >"$CORPUS_DIR/$pkg.deb-info"
  rm -rf --one-file-system "$work"
  work=
}

t_start=$SECONDS
for pkg in "${packages[@]}"; do
  build_pkg "$pkg"
done

printf '%-24s %-5s %12s %12s %8s %8s  %s\n' package comp compressed installed entries files version
for pkg in "${packages[@]}"; do
  for comp in "${COMPRESSIONS[@]}"; do
    f=$(corpus_rpm "$pkg" "$comp")
    size=$(stat -c %s "$f")
    inst=$(rpm -qp --qf '%{SIZE}' "$f")
    entries=$(rpm -qpl "$f" | wc -l)
    files=$(rpm -qp --qf '[%{FILEMODES:perms}\n]' "$f" | grep -c '^-' || true)
    ver=$(rpm -qp --qf '%{VERSION}-%{RELEASE}.%{ARCH}' "$f")
    printf '%-24s %-5s %12s %12s %8s %8s  %s\n' "$pkg" "$comp" "$(human "$size")" "$(human "$inst")" \
      "$entries" "$files" "$ver"
  done
done
log "corpus in $CORPUS_DIR ready ($((SECONDS - t_start)) s)"
