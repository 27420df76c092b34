#!/usr/bin/env bash
# mkosi 14 (Debian bookworm) building a Fedora-style root from a local
# repository: plainly, and with cowkit's `dnf` first on PATH (cold and warm
# transcode cache), side by side, same configuration.
#
#   bash scripts/rig.sh bash bench/mkosi-dnf.sh     (the rig's XFS)
#   WORK=/mnt/xfs/dir bash bench/mkosi-dnf.sh       (any reflink directory)
#
# Environment:
#   ROUNDS=5                 rounds; each runs every method once, rotating
#   COWKIT=target/release/cowkit   (built by cargo when not set)
#   REPO=DIR PACKAGES="a b"  another repository (with repodata/) and what
#                            to install; default: the test repository
#                            (crates/cowkit-testutil/src/repo.rs) and ck-suite
#   RESULTS_DIR=bench/results   where YYYY-MM-DD-mkosi-dnf.md goes
#
# Every build is a fresh `mkosi ... --force build` of a directory image
# (mkosi's own steps included: namespace, API filesystems, manifest). The
# roots of round 1 are compared: same `rpm -qa`.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
PY=/usr/bin/python3
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
need_root
need mkosi:mkosi dnf:dnf createrepo_c:createrepo-c rpmbuild:rpm busybox:busybox-static
find_cowkit "bench/mkosi-dnf.sh" dnf

WORK=${WORK:-${COWKIT_TEST_XFS:-}}
[ -n "$WORK" ] || die "set WORK to a directory on a reflink filesystem (or run under scripts/rig.sh)"
work=$(mktemp -d "$WORK/mkosi-dnf.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT

if [ -z "${REPO:-}" ]; then
  (cd "$REPO_ROOT" && cargo build -q --release --locked -p cowkit-testutil --example build-repo)
  mapfile -t pkgs < <("$REPO_ROOT/target/release/examples/build-repo" "$work/testrepo")
  REPO="$work/repo"
  mkdir -p "$REPO"
  cp "${pkgs[@]}" "$REPO/"
  createrepo_c -q "$REPO"
  PACKAGES=${PACKAGES:-ck-suite}
fi
[ -n "${PACKAGES:-}" ] || die "set PACKAGES with REPO"

mkdir -p "$work/repos.d" "$work/shim"
printf '[local]\nname=local\nbaseurl=file://%s\ngpgcheck=0\nenabled=1\n' "$REPO" >"$work/repos.d/local.repo"
"$COWKIT" dnf --shim-dir "$work/shim" >/dev/null
pkgargs=()
for p in $PACKAGES; do pkgargs+=(-p "$p"); done

# build NAME PATH-PREFIX: one mkosi build into $work/out-NAME, timed.
build() {
  local name=$1 prefix=$2 out="$work/out-$1"
  mkdir -p "$work/project-$name"
  sync -f "$work"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$work/project-$name" && PATH="$prefix$PATH" COWKIT_CACHE="$work/cache" \
    mkosi --distribution fedora --release 40 --format directory --output "$out" \
      --base-packages no --with-docs --clean-package-metadata no \
      --repository-directory "$work/repos.d" --repositories local --force \
      "${pkgargs[@]}" build >"$work/log-$name" 2>&1) || {
    tail -30 "$work/log-$name" >&2
    die "mkosi ($name) failed"
  }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v n="$name" 'BEGIN { printf "%s %.3f\n", n, b - a }' >>"$work/times"
}

methods=(plain cowkit-cold cowkit-warm)
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#methods[@]}; i++)); do
    m=${methods[$(((i + r) % ${#methods[@]}))]}
    case $m in
      plain) build plain "" ;;
      cowkit-cold) rm -rf "$work/cache"; build cowkit-cold "$work/shim:" ;;
      cowkit-warm)
        [ -d "$work/cache/rpme" ] || build warmup "$work/shim:"
        build cowkit-warm "$work/shim:"
        ;;
    esac
  done
  if [ "$r" = 0 ]; then
    q() { rpm --root "$1" --dbpath /var/lib/rpm -qa --qf '%{NEVRA} %{SIGMD5}\n' | sort; }
    [ "$(q "$work/out-plain")" = "$(q "$work/out-cowkit-warm")" ] || die "rpm -qa differs"
    [ "$(q "$work/out-plain")" = "$(q "$work/out-cowkit-cold")" ] || die "rpm -qa differs"
  fi
done

mkdir -p "$RESULTS_DIR"
out="$RESULTS_DIR/$(date +%Y-%m-%d)-mkosi-dnf.md"
"$PY" - "$work/times" "$ROUNDS" "$PACKAGES" >"$out" <<'EOF'
import statistics, sys, platform, os
times = {}
for line in open(sys.argv[1]):
    name, t = line.split()
    if name != "warmup":
        times.setdefault(name, []).append(float(t))
plain = statistics.median(times["plain"])
print("# mkosi 14 through cowkit's `dnf` (bench/mkosi-dnf.sh)\n")
print(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}; "
      f"a reflink XFS; {sys.argv[2]} rounds, medians; packages: {sys.argv[3]}.\n")
print("| method | median s | min s | vs plain |\n|---|---:|---:|---:|")
for name in ["plain", "cowkit-cold", "cowkit-warm"]:
    v = times[name]
    m = statistics.median(v)
    print(f"| {name} | {m:.2f} | {min(v):.2f} | {m / plain:.2f}× |")
EOF
cat "$out"
