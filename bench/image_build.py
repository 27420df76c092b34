#!/usr/bin/env python3
"""Driver of bench/image-build.sh (standard library only): plain dnf against
cowkit dnf (cold and warm cache), rounds in rotating order, medians, the
time split, one Markdown and one JSON result."""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import loadavg, syncfs, timed, write_results

def dnf_args(a, cache):
    conf = os.path.join(cache, "dnf.conf")
    os.makedirs(cache, exist_ok=True)
    with open(conf, "w") as f:
        f.write("[main]\n")
    # dnf5 loads its plugins (cowkit dnf needs its own there, and refuses
    # --no-plugins); dnf 4's are off (its Python plugins are not the
    # resolver's business here).
    plugins = [] if a.dnf == "dnf5" else ["--noplugins"]
    return ["-y", "--quiet"] + plugins + [
        "--nogpgcheck", "--config=" + conf,
        "--releasever=40", "--setopt=reposdir=/dev/null", "--setopt=cachedir=" + cache,
        "--setopt=install_weak_deps=False", "--repofrompath=bench,file://" + a.repo,
        "--repo=bench",
    ]


def fresh_root(a, name):
    r = os.path.join(a.mount, "roots", name)
    if os.path.exists(r):
        shutil.rmtree(r)
    os.makedirs(r)
    return r


ENV = dict(os.environ, HOME="/root", LC_ALL="C.UTF-8")


def run_dnf(a, root, cache, resolve_only=False):
    cmd = [a.dnf, "--installroot=" + root] + dnf_args(a, cache)
    if resolve_only:
        cmd.append("--assumeno")
    cmd += ["install"] + a.names
    # --assumeno: dnf resolves, prints the transaction and exits 1.
    t, _ = timed(cmd, env=ENV, ok=(1,) if resolve_only else (0,))
    return {"total": t}


def run_cowkit(a, root, dnf_cache, ck_cache):
    cmd = [a.cowkit, "dnf", "--json", "--root", root, "--cache", ck_cache]
    if a.dbpath:
        cmd += ["--dbpath", a.dbpath]
    cmd += ["--"]
    cmd += dnf_args(a, dnf_cache) + ["install"] + a.names
    t, p = timed(cmd, env=ENV, stdout=subprocess.PIPE)
    j = json.loads(p.stdout)
    if not j.get("ok"):
        sys.exit("cowkit dnf failed: %s" % j)
    s = j["seconds"]
    return {
        "total": t,
        "resolve": j["resolve_seconds"],
        "transcode": j["transcode_seconds"],
        "check": s["check"],
        "check_wait": s.get("check_wait", 0.0),
        "place": s["place"],
        "scriptlets": s["scriptlets"],
        "register": s["register"],
        "final_sync": s.get("final_sync", 0.0),
        "cache_hits": j["cache_hits"],
        "cache_misses": j["cache_misses"],
        "cloned": j["bytes"]["cloned"],
        "packages": j["packages"],
    }


def rpm_qa(root, dbpath, qf=None):
    cmd = ["rpm", "--root", root, "--dbpath", dbpath, "-qa"] + (["--qf", qf] if qf else [])
    out = subprocess.run(cmd, capture_output=True, check=True)
    return sorted(out.stdout.decode().split())


def rpm_va(root, dbpath):
    out = subprocess.run(["rpm", "--root", root, "--dbpath", dbpath, "-Va", "--nodeps"], capture_output=True)
    return sorted(out.stdout.decode().splitlines())


def host_dbpath():
    out = subprocess.run(["rpm", "-E", "%_dbpath"], capture_output=True, check=True, env=ENV)
    return out.stdout.decode().strip()


def installed_rpms(a, root, dbpath):
    """The repository's package files of the packages installed in root."""
    want = set(rpm_qa(root, dbpath, "%{NEVRA}\\n"))
    files = {}
    # Queried against an empty root on the mount: rpm 4.20 opens (and
    # creates) the database of the root it runs for, which must not be
    # the host's.
    empty = fresh_root(a, "query")
    for f in sorted(os.listdir(a.repo)):
        if f.endswith(".rpm"):
            path = os.path.join(a.repo, f)
            out = subprocess.run(["rpm", "--root", empty, "-qp", "--qf", "%{NEVRA}", path],
                                 capture_output=True, check=True, env=ENV)
            files[out.stdout.decode()] = path
    missing = want - set(files)
    if missing:
        sys.exit("installed packages not found in the repository: %s" % sorted(missing))
    return [files[n] for n in sorted(want)]


def run_floor(a, root, rpms):
    """What cannot be avoided, measured beside a finished cowkit root: rpm's
    check + registration of the same packages (`rpm -i --justdb` into an
    empty root) and `cowkit cp -a` of the finished root on the same mount."""
    jroot = root + "-justdb"
    os.makedirs(jroot)
    syncfs(a.mount)
    cmd = ["rpm", "--root", jroot, "--dbpath", a.dbpath or host_dbpath(), "-i", "--justdb",
           "--noscripts", "--notriggers"]
    justdb, _ = timed(cmd + rpms, env=ENV)
    shutil.rmtree(jroot)
    # The same without reading the payloads for their digests: a warm
    # cowkit cache does not read them either.
    os.makedirs(jroot)
    syncfs(a.mount)
    nodigest, _ = timed(cmd + ["--nodigest", "--nosignature"] + rpms, env=ENV)
    shutil.rmtree(jroot)
    dst = root + "-cp"
    syncfs(a.mount)
    cp, _ = timed([a.cowkit, "cp", "-a", root, dst], env=ENV)
    shutil.rmtree(dst)
    return {"justdb": justdb, "justdb_nodigest": nodigest, "cp_a": cp}


def read_log(root, log):
    try:
        with open(os.path.join(root, log.lstrip("/")), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--results", required=True)
    ap.add_argument("--img-size", default="?")
    ap.add_argument("--names", nargs="+", required=True)
    ap.add_argument("--label", default="", help="results name: YYYY-MM-DD-image-build[-LABEL]")
    ap.add_argument("--dbpath", default=None, help="cowkit dnf --dbpath (default: cowkit's)")
    ap.add_argument("--log", default=None, help="scriptlet log in the root, compared byte for byte")
    ap.add_argument("--about", default="", help="a sentence on the package set for the report")
    ap.add_argument("--dnf", default="dnf", help="the resolver: dnf (dnf 4) or dnf5, both from PATH")
    a = ap.parse_args()

    dnf_cache = os.path.join(a.mount, "dnf-cache")
    ck_cache = os.path.join(a.mount, "cowkit-cache")
    for d in (dnf_cache, ck_cache):  # left by another package set
        if os.path.exists(d):
            shutil.rmtree(d)
    load0 = loadavg()

    # Warm-ups (untimed): dnf's metadata cache, and a check of both roots.
    warm_dnf = fresh_root(a, "warmup-dnf")
    run_dnf(a, warm_dnf, dnf_cache)
    warm_ck = fresh_root(a, "warmup-cowkit")
    run_cowkit(a, warm_ck, dnf_cache, ck_cache)
    dnf_db, ck_db = host_dbpath(), a.dbpath or "/var/lib/rpm"
    qa_dnf = rpm_qa(warm_dnf, dnf_db)
    qa_ck = rpm_qa(warm_ck, ck_db)
    if qa_dnf != qa_ck:
        sys.exit("dnf and cowkit installed different packages:\n%s\n%s" % (qa_dnf, qa_ck))
    va_dnf, va_ck = rpm_va(warm_dnf, dnf_db), rpm_va(warm_ck, ck_db)
    if va_dnf != va_ck:
        sys.exit("rpm -Va differs:\ndnf: %s\ncowkit: %s" % (va_dnf, va_ck))
    if a.log:
        log_dnf, log_ck = read_log(warm_dnf, a.log), read_log(warm_ck, a.log)
        if not log_dnf or log_dnf != log_ck:
            sys.exit("scriptlet logs %s differ or are empty:\ndnf:\n%s\ncowkit:\n%s"
                     % (a.log, log_dnf.decode(), log_ck.decode()))
    rpms = installed_rpms(a, warm_ck, ck_db)
    shutil.rmtree(warm_dnf)
    shutil.rmtree(warm_ck)

    methods = ["dnf", "dnf-resolve", "cowkit-cold", "cowkit-warm"]
    runs = {m: [] for m in methods}
    for r in range(a.rounds):
        order = methods[r % len(methods):] + methods[: r % len(methods)]
        for m in order:
            root = fresh_root(a, "%s-%d" % (m, r))
            if m == "cowkit-cold" and os.path.exists(ck_cache):
                shutil.rmtree(ck_cache)
            syncfs(a.mount)
            if m == "dnf":
                res = run_dnf(a, root, dnf_cache)
            elif m == "dnf-resolve":
                res = run_dnf(a, root, dnf_cache, resolve_only=True)
            else:
                res = run_cowkit(a, root, dnf_cache, ck_cache)
                want = 0 if m == "cowkit-warm" else res["packages"]
                if res["cache_misses"] != want:
                    sys.exit("%s: %d cache misses, expected %d" % (m, res["cache_misses"], want))
            t0 = time.monotonic()
            syncfs(a.mount)
            res["sync"] = time.monotonic() - t0
            res["durable"] = res["total"] + res["sync"]
            if m == "cowkit-warm":
                res.update(run_floor(a, root, rpms))
            runs[m].append(res)
            shutil.rmtree(root)
            print("round %d %-12s %.3f s" % (r + 1, m, res["total"]), file=sys.stderr)
    load1 = loadavg()

    med = lambda m, k: statistics.median(x[k] for x in runs[m])
    dnf_total, dnf_resolve = med("dnf", "total"), med("dnf-resolve", "total")
    dnf_txn = dnf_total - dnf_resolve
    dnf_durable = med("dnf", "durable")
    justdb, cp_a = med("cowkit-warm", "justdb"), med("cowkit-warm", "cp_a")
    nodigest = med("cowkit-warm", "justdb_nodigest")
    rows = []
    # The goal ratios are paired: each round's transaction against the
    # floor measured with it (the warm run's own justdb and cp -a; the cold
    # run takes the warm medians for those), then the median of the rounds,
    # so that a slow moment of the machine weighs on both sides of a ratio.
    def floor_a(m, x):
        if m == "cowkit-warm":
            return x["justdb_nodigest"] + x["scriptlets"] + x["cp_a"]
        return nodigest + x["scriptlets"] + cp_a

    def floor_b(m, x):
        c = x["cp_a"] if m == "cowkit-warm" else cp_a
        return x["check"] + x["check_wait"] + x["register"] + x["scriptlets"] + c

    def paired(m, floor):
        rs = sorted((x["total"] - x["resolve"]) / floor(m, x) for x in runs[m])
        return {"median": statistics.median(rs), "min": rs[0], "max": rs[-1]}

    for m in ("cowkit-cold", "cowkit-warm"):
        for x in runs[m]:
            x["transaction"] = x["total"] - x["resolve"]
        total, resolve = med(m, "total"), med(m, "resolve")
        split = {k: med(m, k) for k in ("transcode", "check", "check_wait", "place", "scriptlets", "register")}
        txn = med(m, "transaction")
        floor_rpm = statistics.median(floor_a(m, x) for x in runs[m])
        floor_own = statistics.median(floor_b(m, x) for x in runs[m])
        ratio_a, ratio_b = paired(m, floor_a), paired(m, floor_b)
        rows.append({
            "method": m,
            "total": total,
            "resolve": resolve,
            "transaction": txn,
            "split": split,
            "cloned_bytes": runs[m][0]["cloned"],
            "durable": med(m, "durable"),
            "floor_rpm_justdb": floor_rpm,
            "floor_own_check_register": floor_own,
            "goal_ratio_rpm_justdb": ratio_a["median"],
            "goal_ratio_own_check_register": ratio_b["median"],
            "goal_ratio_rpm_justdb_range": [ratio_a["min"], ratio_a["max"]],
            "goal_ratio_own_check_register_range": [ratio_b["min"], ratio_b["max"]],
        })
    out = {
        "date": datetime.date.today().isoformat(),
        "machine": {
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
            "kernel": os.uname().release,
            "cpus": os.cpu_count(),
            "loadavg_start": load0,
            "loadavg_end": load1,
            "filesystem": "loop XFS (reflink=1), %s sparse image" % a.img_size,
            "rpm": subprocess.run(["rpm", "--version"], capture_output=True).stdout.decode().strip(),
            # Against an empty root: dnf5 opens (and creates) the database
            # of its root even for --version.
            "dnf": subprocess.run([a.dnf, "--installroot=" + fresh_root(a, "version"), "--version"],
                                  capture_output=True).stdout.decode().split("\n")[0],
            "cowkit": a.cowkit,
            "cowkit_commit": subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"], capture_output=True).stdout.decode().strip(),
        },
        "names": a.names,
        "about": a.about,
        "packages": runs["cowkit-warm"][0]["packages"],
        "rounds": a.rounds,
        "dnf": {"total": dnf_total, "resolve": dnf_resolve, "transaction": dnf_txn, "durable": dnf_durable},
        "floor": {"rpm_justdb": justdb, "rpm_justdb_nodigest": nodigest, "cowkit_cp_a": cp_a},
        "cowkit": rows,
        "runs": runs,
    }
    mc = out["machine"]
    lines = [
        "# Image build benchmark%s, %s" % (" (%s)" % a.label if a.label else "", out["date"]),
        "",
        "`bench/image-build.sh`: one `install %s` transaction of %d packages from a local repository "
        "(file://, createrepo_c) into a fresh root on %s; %d rounds, rotating order, medians. %s"
        % (" ".join(a.names), out["packages"], mc["filesystem"], a.rounds, a.about),
        "",
        "Machine: %s, %d CPUs, kernel %s; %s, %s %s; load average %s at start, %s at end; "
        "cowkit %s (`%s`)."
        % (mc["cpu"], mc["cpus"], mc["kernel"], mc["rpm"], a.dnf, mc["dnf"], " ".join(load0), " ".join(load1),
           mc["cowkit_commit"], mc["cowkit"]),
        "",
        "| method | total (s) | resolve (s) | transaction (s) | transaction vs dnf | total vs dnf | total + syncfs (s) | durable vs dnf |",
        "|---|---|---|---|---|---|---|---|",
        "| plain %s (metadata cache warm) | %.3f | %.3f | %.3f | 1.0× | 1.0× | %.3f | 1.0× |" % (a.dnf, dnf_total, dnf_resolve, dnf_txn, dnf_durable),
    ]
    for r in rows:
        lines.append("| %s | %.3f | %.3f | %.3f | %.2f× | %.2f× | %.3f | %.2f× |" % (
            "cowkit dnf%s, " % (" over dnf5" if a.dnf == "dnf5" else "") + ("cold cache (transcodes)" if r["method"] == "cowkit-cold" else "warm cache"),
            r["total"], r["resolve"], r["transaction"], dnf_txn / r["transaction"], dnf_total / r["total"],
            r["durable"], dnf_durable / r["durable"]))
    lines += [
        "",
        "Time split of cowkit's transaction (medians, s; `--json`: `resolve_seconds`, `transcode_seconds`, `seconds.*`):",
        "",
        "| method | resolve | cache + transcode, beside the check | check + order (rpm) | check wait | place | scriptlets | register |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["split"]
        lines.append("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
            r["method"], r["resolve"], s["transcode"], s["check"], s["check_wait"], s["place"], s["scriptlets"], s["register"]))
    lines += [
        "",
        "Goal: cowkit's transaction part against the sum of what cannot be avoided "
        "(medians, s). `rpm -i --justdb --noscripts --notriggers --nodigest --nosignature` (rpm's own "
        "check + registration of the same %d package files into an empty root, without reading the "
        "payloads for their digests, which a warm cowkit cache does not read either) = %.3f "
        "(with the digests: %.3f); `cowkit cp -a` of the finished "
        "cowkit root to a fresh directory on the same mount = %.3f; all timed right after each warm "
        "run, the mount synced before each."
        % (len(rpms), nodigest, justdb, cp_a),
        "",
        "| method | transaction | floor A: justdb + scriptlets + cp -a | ratio A | floor B: cowkit's check + check wait + register + scriptlets + cp -a | ratio B | dnf transaction / cowkit transaction |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ra, rb = r["goal_ratio_rpm_justdb_range"], r["goal_ratio_own_check_register_range"]
        lines.append("| %s | %.3f | %.3f | %.2f× (%.2f–%.2f) | %.3f | %.2f× (%.2f–%.2f) | %.2f× |" % (
            r["method"], r["transaction"], r["floor_rpm_justdb"], r["goal_ratio_rpm_justdb"], ra[0], ra[1],
            r["floor_own_check_register"], r["goal_ratio_own_check_register"], rb[0], rb[1],
            dnf_txn / r["transaction"]))
    lines += [
        "",
        "Ratios in the first table are dnf's time divided by cowkit's (above 1: cowkit is faster); "
        "the goal ratios are cowkit's transaction divided by the floor (the goal is at most 1.2×), "
        "paired: each round's transaction over the floor measured in the same round, the median of the "
        "rounds and their range (the transaction and floor columns are medians of the rounds). "
        "dnf's resolve is "
        "`%s --assumeno` of the same command (it resolves and stops); its transaction part is its total "
        "minus that. cowkit's resolve is %s; its transaction part is everything after. In the cold "
        "run rpm's check runs while the misses are transcoded (in the warm run, while the cache is "
        "looked up): the transcode column is the wall time of that phase, which contains the check. For a new "
        "root rpm checks and registers in one call (the check column), and `register` is the move of that "
        "database into place. "
        "`total + syncfs`: the command, then syncfs of the mount (the data made durable); cowkit's cold "
        "run must write its cache before it can clone from it. Before the rounds (untimed) one root of "
        "each was checked: equal `rpm -qa` and equal `rpm -Va`%s."
        % (a.dnf, "dnf5 up to its resolved transaction (cowkit's libdnf5 plugin stops it there, before any "
           "download; cowkit fetches what its cache lacks itself)" if a.dnf == "dnf5" else
           "the `dnf --downloadonly` it runs (resolve, and copying the packages out of the file:// "
           "repository)",
           ", and byte-equal scriptlet logs (`%s`)" % a.log if a.log else ""),
    ]
    stem = os.path.join(a.results, "%s-image-build%s" % (out["date"], "-" + a.label if a.label else ""))
    write_results(stem, out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
