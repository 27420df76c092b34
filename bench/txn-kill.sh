#!/usr/bin/env bash
# An upgrade killed at random points, then the same command again: cowkit
# install and `rpm -U` side by side (the test repository's version 2: six
# packages with scriptlets in every phase, config files, files the upgrade
# drops, a new dependency). For each tool, RUNS runs: a copy of the root with
# version 1, the upgrade killed with SIGKILL after a random delay within the
# time an unkilled upgrade takes (odd runs: the whole process group,
# `kill -KILL -- -PGID`; even runs: the process alone), then the same command
# again. Each run is counted as ending with `rpm -qa` exact (the new versions
# only), `rpm -Va` as after an unkilled upgrade, no file owned by nothing
# beyond those an unkilled upgrade leaves, and no temporaries (cowkit's `.ck*`
# names and scratch directories, rpm's `rpm-tmp.*`, the journal).
#
# The runs are the `kill_bench` test of crates/cowkit/tests/txn_kill.rs;
# this script runs it and writes bench/results/DATE-txn-kill.md (and .json).
#
#   bash scripts/rig.sh bash bench/txn-kill.sh
#
# Environment:
#   RUNS=60                 runs per tool
#   SEED=24301              the random delays' seed
#   BENCH_DIR_FS=$COWKIT_TEST_XFS   where the roots go
#   RESULTS_DIR=bench/results
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-60}
SEED=${SEED:-24301}
FS_DIR=${BENCH_DIR_FS:-${COWKIT_TEST_XFS:-}}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}

need_root
[ -n "$FS_DIR" ] || die "no filesystem: run under scripts/rig.sh or set BENCH_DIR_FS"
need strace:strace rpmbuild:rpm createrepo_c:createrepo-c busybox:busybox-static
prepare_results_dir

base="$RESULTS_DIR/$(date +%Y-%m-%d)-txn-kill"
json="$base.json"
log "$RUNS runs per tool on $FS_DIR"
(cd "$REPO_ROOT" && TXN_KILL_RUNS=$RUNS TXN_KILL_SEED=$SEED TXN_KILL_OUT=$json TXN_KILL_DIR=$FS_DIR \
  cargo test -p cowkit --test txn_kill -- --ignored --exact kill_bench --nocapture)

python3 - "$json" "$base.md" "$FS_DIR" "$RUNS" "$SEED" <<'PY'
import json, os, platform, re, subprocess, sys
src, dst, fs_dir, runs, seed = sys.argv[1:]
data = json.load(open(src))
fstype = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", fs_dir],
                        capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
rpmv = subprocess.run(["rpm", "--version"], capture_output=True, text=True).stdout.strip()
out = []
out.append(f"# Upgrades killed at random points, then run again: cowkit install and rpm -U\n")
out.append(f"- machine: {cpu}, {os.cpu_count()} CPUs; kernel {platform.release()}; "
           f"load average at the end {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
out.append(f"- cowkit {rev}; {rpmv}; roots on {fstype}; {runs} runs per tool, seed {seed}")
out.append("- each run: a copy of the root with version 1 of the test repository, the upgrade to version 2 "
           "(6 packages) killed with SIGKILL after a random delay within an unkilled upgrade's time "
           "(odd runs the process group, even runs the process alone), then the same command again\n")
out.append("| tool | unkilled upgrade | runs | killed | old and new registered after the kill | temporaries after the kill | `rpm -qa` exact | `rpm -Va` clean | nothing owned by nothing | no temporaries | all four |")
out.append("|---|---|---|---|---|---|---|---|---|---|---|")
for t in data:
    r = t["runs"]
    n = lambda k: sum(1 for x in r if x[k])
    allok = sum(1 for x in r if x["qa_exact"] and x["verify_clean"] and x["no_unowned"] and x["no_temporaries"])
    name = "cowkit install" if t["tool"] == "cowkit" else "rpm -U"
    out.append(f"| {name} | {t['upgrade_ms']} ms | {len(r)} | {n('killed')} | {n('duplicates_after_kill')} | "
               f"{n('temporaries_after_kill')} | "
               f"{n('qa_exact')} | {n('verify_clean')} | {n('no_unowned')} | {n('no_temporaries')} | {allok} |")
out.append("")
for t in data:
    shape = lambda p: re.sub(r"/rpm-tmp\.[^/]+$", "/rpm-tmp.*",
                             re.sub(r"/\.ck[0-9a-f]+\.[0-9a-f]+$", "/.ck<pid>.<n>", "/" + p))[1:]
    left = sorted({shape(p) for x in t["runs"] for p in x["temporaries_after_kill"]})
    name = "cowkit install" if t["tool"] == "cowkit" else "rpm -U"
    out.append(f"- {name}: temporaries the kills left: {', '.join(left) or 'none'}")
out.append("")
for t in data:
    bad = [x for x in t["runs"] if not (x["qa_exact"] and x["verify_clean"] and x["no_unowned"] and x["no_temporaries"])]
    name = "cowkit install" if t["tool"] == "cowkit" else "rpm -U"
    out.append(f"## {name}: runs that did not end exact ({len(bad)})\n")
    for x in bad[:10]:
        what = "group" if x["group"] else "process"
        out.append(f"- killed ({what}) at {x['ms']} ms: rpm -qa {' '.join(x['qa'])}; "
                   f"rpm -Va {x['verify'][:4]}; unowned {x['unowned_extra'][:4]}; "
                   f"temporaries {x['temporaries'][:4]}{' and the journal' if x['journal_left'] else ''}; "
                   f"second run: {' / '.join(x['second_run_stderr'][:3])}")
    out.append("")
open(dst, "w").write("\n".join(out))
print("\n".join(out))
PY
log "results: $base.md"
