#!/usr/bin/env bash
# Scriptlets that sync, in a root being built: one `cowkit
# install` transaction of N packages whose %post writes a file the way
# systemd-sysusers or ldconfig do (temporary file, fsync, rename, fsync of
# the directory; every SYNC_EVERY-th one also runs `sync`), side by side,
# alternating, in one run:
#
#   session      cowkit install (default): sync calls answered by one
#                nosync session, one final syncfs of the root
#   keep         cowkit install --keep-syncs: every call reaches the kernel
#   keep+syncfs  the same followed by `sync -f ROOT` (durable like session)
#   noscripts    cowkit install --noscripts (the floor: no scriptlet runs)
#
# and, for the per-scriptlet alternative, the same N scriptlet commands
# (`chroot ROOT /bin/sh -c BODY`) run one by one in the installed root:
#
#   loop-plain        as they are
#   loop-nosync       each under `cowkit nosync --no-preload --` (its final
#                     sync each time; the shim's host path would not load
#                     in the chroot)
#   loop-nosync-none  each under `cowkit nosync --no-preload --final-sync=none --`
#   startup           N x `cowkit nosync --final-sync=none -- true` minus N x `true`
#
# Run it on the rig's XFS:  bash scripts/rig.sh bash bench/scriptlet-syncs.sh
#
# Environment:
#   N=50             scriptlets (packages)
#   SIZE=65536       bytes each one writes
#   SYNC_EVERY=10    every SYNC_EVERY-th scriptlet also runs `sync` (0: never)
#   ROUNDS=5
#   BENCH_DIR_FS=$COWKIT_TEST_XFS   where the roots go
#   COWKIT=/path/to/cowkit   (default: build target/release/cowkit)
#   RESULTS_DIR=bench/results
set -euo pipefail
source "$(dirname "$0")/lib.sh"

N=${N:-50}
SIZE=${SIZE:-65536}
SYNC_EVERY=${SYNC_EVERY:-10}
ROUNDS=${ROUNDS:-5}
FS_DIR=${BENCH_DIR_FS:-${COWKIT_TEST_XFS:-}}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}

need_root
[ -n "$FS_DIR" ] || die "no filesystem: run under scripts/rig.sh or set BENCH_DIR_FS"
need rpmbuild:rpm cc:gcc python3:python3 busybox:busybox-static
find_cowkit "bench/scriptlet-syncs.sh needs cowkit install" install nosync
prepare_results_dir

W=$(mktemp -d "$FS_DIR/scriptlet-syncs.XXXXXX")
trap 'rm -rf --one-file-system "$W"' EXIT
mkdir -p "$W/rpms" "$W/top"

# The writer: what systemd-sysusers does to /etc/passwd, ldconfig to
# ld.so.cache. Static, as a preload shim could not reach it.
cat >"$W/writer.c" <<'C'
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  size_t n = strtoul(argv[2], 0, 10);
  char tmp[4096], dir[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  snprintf(dir, sizeof dir, "%s", argv[1]);
  char *buf = malloc(n);
  if (!buf) return 1;
  for (size_t i = 0; i < n; i++) buf[i] = (char)(i * 31 + 7);
  int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0 || write(fd, buf, n) != (ssize_t)n || fsync(fd) != 0 || close(fd) != 0) return 1;
  if (rename(tmp, argv[1]) != 0) return 1;
  int d = open(dirname(dir), O_RDONLY | O_DIRECTORY);
  if (d < 0 || fsync(d) != 0) return 1;
  return 0;
}
C
cc -O2 -static -o "$W/bench-writer" "$W/writer.c"
BUSYBOX=$(command -v busybox)

spec_head() { # NAME [PREAMBLE-LINE]
  printf 'Name: %s\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n' "$1"
  [ -z "${2:-}" ] || printf '%s\n' "$2"
  printf '%%global debug_package %%{nil}\n%%global __os_install_post %%{nil}\n'
  printf '%%global _build_id_links none\n%%global _binaries_in_noarch_packages_terminate_build 0\n'
  printf '%%description\nx\n'
}
build() { # NAME SPEC-TEXT
  printf '%s' "$2" >"$W/top/$1.spec"
  rpmbuild --define "_topdir $W/top" --define "_binary_payload w9.gzdio" --nodeps -bb \
    "$W/top/$1.spec" >/dev/null 2>&1 || die "rpmbuild $1"
  mv "$W"/top/RPMS/noarch/"$1"-1-1.noarch.rpm "$W/rpms/"
}
body() { # I — the %post body of package I
  printf '/usr/bin/bench-writer /var/lib/bench/f%s %s\n' "$1" "$SIZE"
  if [ "$SYNC_EVERY" -gt 0 ] && [ $(($1 % SYNC_EVERY)) -eq 0 ]; then printf 'sync\n'; fi
}

log "building 1 + $N packages"
build bench-base "$(spec_head bench-base)
%install
mkdir -p %{buildroot}/usr/bin %{buildroot}/bin %{buildroot}/var/lib/bench %{buildroot}/var/tmp
install -m 0755 $BUSYBOX %{buildroot}/usr/bin/busybox
install -m 0755 $W/bench-writer %{buildroot}/usr/bin/bench-writer
ln -s ../usr/bin/busybox %{buildroot}/bin/sh
ln -s busybox %{buildroot}/usr/bin/sync
%files
/usr/bin/busybox
/usr/bin/bench-writer
/usr/bin/sync
/bin/sh
%dir /var/lib/bench
%dir /var/tmp
"
for ((i = 1; i <= N; i++)); do
  build "bench-s$i" "$(spec_head "bench-s$i" "Requires(post): bench-base")
%install
mkdir -p %{buildroot}/usr/share/bench-s$i
echo $i > %{buildroot}/usr/share/bench-s$i/id
%files
/usr/share/bench-s$i
%post
$(body "$i")
"
done
PKGS=("$W"/rpms/*.rpm)

RECORD="$W/record.jsonl"
: >"$RECORD"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

now() { date +%s.%N; }
record() { # KIND SECONDS [EXTRA-JSON]
  printf '{"kind":"%s","seconds":%s%s}\n' "$1" "$2" "${3:+,$3}" >>"$RECORD"
}

txn() { # KIND ROUND
  local R="$W/root-$1-$2" args=() t0 t1
  mkdir -p "$R"
  case $1 in
  keep | keep+syncfs) args=(--keep-syncs) ;;
  noscripts) args=(--noscripts) ;;
  esac
  sync -f "$W"
  t0=$(now)
  "$COWKIT" install --json --root "$R" "${args[@]}" "${PKGS[@]}" >"$W/out.json" 2>"$W/err" ||
    { cat "$W/err" >&2; die "cowkit install ($1) failed"; }
  [ "$1" = keep+syncfs ] && sync -f "$R"
  t1=$(now)
  local extra
  extra=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
n = j.get("nosync") or {}
print(json.dumps({"scriptlets": j["scriptlets"], "scriptlet_seconds": j["seconds"]["scriptlets"],
  "setup": n.get("setup_seconds"), "final_sync": sum(s[2] for s in n.get("final_sync", [])),
  "answered": sum((n.get("answered") or {}).values())})[1:-1])' "$W/out.json")
  record "txn-$1" "$(python3 -c "print($t1 - $t0)")" "$extra"
  [ "$1" = session ] && cp -a "$R" "$W/installed" 2>/dev/null || true
  rm -rf --one-file-system "$R"
}

loop() { # KIND ROUND — the N scriptlet bodies one by one in the installed root
  local pre=() t0 t1 i
  case $1 in
  loop-nosync) pre=("$COWKIT" nosync --no-preload --) ;;
  loop-nosync-none) pre=("$COWKIT" nosync --no-preload --final-sync=none --) ;;
  esac
  sync -f "$W"
  t0=$(now)
  for ((i = 1; i <= N; i++)); do
    "${pre[@]}" chroot "$W/installed" /bin/sh -c "$(body "$i")" || die "$1: scriptlet $i failed"
  done
  t1=$(now)
  record "$1" "$(python3 -c "print($t1 - $t0)")"
}

startup() { # ROUND
  local t0 t1 t2 i
  t0=$(now)
  for ((i = 1; i <= N; i++)); do true; done
  t1=$(now)
  for ((i = 1; i <= N; i++)); do "$COWKIT" nosync --final-sync=none -- true; done
  t2=$(now)
  record startup "$(python3 -c "print(($t2 - $t1) - ($t1 - $t0))")"
}

KINDS=(session keep keep+syncfs noscripts)
LOOPS=(loop-plain loop-nosync loop-nosync-none)
log "$ROUNDS rounds, $N scriptlets, on $(findmnt -n -o FSTYPE --target "$W") ($FS_DIR)"
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#KINDS[@]}; i++)); do
    txn "${KINDS[$(((i + r) % ${#KINDS[@]}))]}" "$r"
  done
  for ((i = 0; i < ${#LOOPS[@]}; i++)); do
    loop "${LOOPS[$(((i + r) % ${#LOOPS[@]}))]}" "$r"
  done
  startup "$r"
  rm -rf --one-file-system "$W/installed"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

OUT="$RESULTS_DIR/$(date -u +%Y-%m-%d)-scriptlet-syncs"
cp "$RECORD" "$OUT.jsonl"
python3 - "$RECORD" "$N" "$SIZE" "$SYNC_EVERY" "$ROUNDS" "$load_start" "$load_end" \
  "$(findmnt -n -o FSTYPE,SOURCE --target "$W")" "$(nproc)" "$(uname -r)" >"$OUT.md" <<'PY'
import json, statistics as st, sys
rec, n, size, every, rounds, l0, l1, fs, cpus, kernel = sys.argv[1:]
rows = [json.loads(l) for l in open(rec)]
by = {}
for r in rows:
    by.setdefault(r["kind"], []).append(r)
med = lambda k, f="seconds": st.median(x[f] for x in by[k] if x.get(f) is not None)
n = int(n)
print(f"# Scriptlets that sync, in a root being built\n")
print(f"Machine: {cpus} CPUs, Linux {kernel}; roots on {fs} (the rig's loop XFS); "
      f"load average {l0} at the start, {l1} at the end (other jobs building on the same machine).")
print(f"{n} packages, each `%post` writes {size} bytes like systemd-sysusers/ldconfig "
      f"(temporary file, fsync, rename, fsync of the directory), every {every}th also runs `sync`; "
      f"{rounds} rounds, alternating order, medians.\n")
s = med("txn-session"); k = med("txn-keep"); kd = med("txn-keep+syncfs"); ns = med("txn-noscripts")
print("| cowkit install, whole transaction | median s | ratio to session | minus --noscripts | scriptlets (cowkit's timer) |")
print("|---|---:|---:|---:|---:|")
for name, kind in [("session (default)", "txn-session"), ("--keep-syncs", "txn-keep"),
                   ("--keep-syncs, then sync -f ROOT", "txn-keep+syncfs"), ("--noscripts", "txn-noscripts")]:
    v = med(kind)
    print(f"| {name} | {v:.3f} | {v / s:.2f}x | {v - ns:.3f} | {med(kind, 'scriptlet_seconds'):.3f} |")
print()
print(f"Session fixed cost: set-up {med('txn-session', 'setup') * 1000:.1f} ms, "
      f"final syncfs {med('txn-session', 'final_sync') * 1000:.1f} ms (medians); "
      f"calls answered per transaction: {int(med('txn-session', 'answered'))}.\n")
lp = med("loop-plain"); ln = med("loop-nosync"); lnn = med("loop-nosync-none"); su = med("startup")
print(f"| the {n} scriptlet commands one by one in the installed root | median s | per scriptlet ms |")
print("|---|---:|---:|")
for name, v in [("plain (syncs kept)", lp), ("each under `cowkit nosync --no-preload --`", ln),
                ("each under `cowkit nosync --no-preload --final-sync=none --`", lnn),
                ("`cowkit nosync --final-sync=none -- true` start-up alone", su)]:
    print(f"| {name} | {v:.3f} | {v / n * 1000:.1f} |")
PY
log "results: $OUT.md"
cat "$OUT.md"
