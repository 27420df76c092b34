#!/usr/bin/env python3
"""Driver of bench/image-build.sh (standard library only): plain dnf against
cowkit dnf (cold and warm cache), rounds in rotating order, medians, the
time split, one Markdown and one JSON result."""

import argparse
import ctypes
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)


def syncfs(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        LIBC.syncfs(fd)
    finally:
        os.close(fd)


def dnf_args(a, cache):
    conf = os.path.join(cache, "dnf.conf")
    os.makedirs(cache, exist_ok=True)
    with open(conf, "w") as f:
        f.write("[main]\n")
    return [
        "-y", "--quiet", "--noplugins", "--nogpgcheck", "--config=" + conf,
        "--releasever=40", "--setopt=reposdir=/dev/null", "--setopt=cachedir=" + cache,
        "--setopt=install_weak_deps=False", "--repofrompath=bench,file://" + a.repo,
        "--repo", "bench",
    ]


def timed(cmd, env=None, ok=(0,), stdout=subprocess.DEVNULL):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE)
    t = time.monotonic() - t0
    if p.returncode not in ok:
        sys.exit("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()))
    return t, p


def fresh_root(a, name):
    r = os.path.join(a.mount, "roots", name)
    if os.path.exists(r):
        shutil.rmtree(r)
    os.makedirs(r)
    return r


ENV = dict(os.environ, HOME="/root", LC_ALL="C.UTF-8")


def run_dnf(a, root, cache, resolve_only=False):
    cmd = ["dnf", "--installroot=" + root] + dnf_args(a, cache)
    if resolve_only:
        cmd.append("--assumeno")
    cmd += ["install"] + a.names
    # --assumeno: dnf resolves, prints the transaction and exits 1.
    t, _ = timed(cmd, env=ENV, ok=(1,) if resolve_only else (0,))
    return {"total": t}


def run_cowkit(a, root, dnf_cache, ck_cache):
    cmd = [a.cowkit, "dnf", "--json", "--root", root, "--cache", ck_cache, "--"]
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
        "place": s["place"],
        "scriptlets": s["scriptlets"],
        "register": s["register"],
        "cache_hits": j["cache_hits"],
        "cache_misses": j["cache_misses"],
        "cloned": j["bytes"]["cloned"],
        "packages": j["packages"],
    }


def rpm_qa(root, dbpath):
    out = subprocess.run(["rpm", "--root", root, "--dbpath", dbpath, "-qa"], capture_output=True, check=True)
    return sorted(out.stdout.decode().split())


def rpm_va(root, dbpath):
    out = subprocess.run(["rpm", "--root", root, "--dbpath", dbpath, "-Va", "--nodeps"], capture_output=True)
    return sorted(out.stdout.decode().splitlines())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--results", required=True)
    ap.add_argument("--img-size", default="?")
    ap.add_argument("--names", nargs="+", required=True)
    a = ap.parse_args()

    dnf_cache = os.path.join(a.mount, "dnf-cache")
    ck_cache = os.path.join(a.mount, "cowkit-cache")
    load0 = open("/proc/loadavg").read().split()[:3]

    # Warm-ups (untimed): dnf's metadata cache, and a check of both roots.
    warm_dnf = fresh_root(a, "warmup-dnf")
    run_dnf(a, warm_dnf, dnf_cache)
    warm_ck = fresh_root(a, "warmup-cowkit")
    run_cowkit(a, warm_ck, dnf_cache, ck_cache)
    qa_dnf = rpm_qa(warm_dnf, "/root/.rpmdb")
    qa_ck = rpm_qa(warm_ck, "/var/lib/rpm")
    if qa_dnf != qa_ck:
        sys.exit("dnf and cowkit installed different packages:\n%s\n%s" % (qa_dnf, qa_ck))
    va_dnf, va_ck = rpm_va(warm_dnf, "/root/.rpmdb"), rpm_va(warm_ck, "/var/lib/rpm")
    if va_dnf != va_ck:
        sys.exit("rpm -Va differs:\ndnf: %s\ncowkit: %s" % (va_dnf, va_ck))

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
            runs[m].append(res)
            shutil.rmtree(root)
            print("round %d %-12s %.3f s" % (r + 1, m, res["total"]), file=sys.stderr)
    load1 = open("/proc/loadavg").read().split()[:3]

    med = lambda m, k: statistics.median(x[k] for x in runs[m])
    dnf_total, dnf_resolve = med("dnf", "total"), med("dnf-resolve", "total")
    dnf_txn = dnf_total - dnf_resolve
    dnf_durable = med("dnf", "durable")
    rows = []
    for m in ("cowkit-cold", "cowkit-warm"):
        total, resolve = med(m, "total"), med(m, "resolve")
        rows.append({
            "method": m,
            "total": total,
            "resolve": resolve,
            "transaction": total - resolve,
            "split": {k: med(m, k) for k in ("transcode", "check", "place", "scriptlets", "register")},
            "cloned_bytes": runs[m][0]["cloned"],
            "durable": med(m, "durable"),
        })
    out = {
        "date": datetime.date.today().isoformat(),
        "machine": {
            "kernel": os.uname().release,
            "cpus": os.cpu_count(),
            "loadavg_start": load0,
            "loadavg_end": load1,
            "filesystem": "loop XFS (reflink=1), %s sparse image" % a.img_size,
            "rpm": subprocess.run(["rpm", "--version"], capture_output=True).stdout.decode().strip(),
            "dnf": subprocess.run(["dnf", "--version"], capture_output=True).stdout.decode().split("\n")[0],
            "cowkit_commit": subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"], capture_output=True).stdout.decode().strip(),
        },
        "names": a.names,
        "packages": runs["cowkit-warm"][0]["packages"],
        "rounds": a.rounds,
        "dnf": {"total": dnf_total, "resolve": dnf_resolve, "transaction": dnf_txn, "durable": dnf_durable},
        "cowkit": rows,
        "runs": runs,
    }
    lines = [
        "# Image build benchmark, %s" % out["date"],
        "",
        "`bench/image-build.sh`: one `install %s` transaction of %d packages from a local repository "
        "(file://, createrepo_c) into a fresh root on %s; %d rounds, rotating order, medians. "
        "Machine: %d CPUs, kernel %s, %s, %s; load average %s at start, %s at end; cowkit %s."
        % (" ".join(a.names), out["packages"], out["machine"]["filesystem"], a.rounds, out["machine"]["cpus"],
           out["machine"]["kernel"], out["machine"]["rpm"], "dnf " + out["machine"]["dnf"],
           " ".join(load0), " ".join(load1), out["machine"]["cowkit_commit"]),
        "",
        "| method | total (s) | resolve (s) | transaction (s) | transaction vs dnf | total vs dnf | total + syncfs (s) | durable vs dnf |",
        "|---|---|---|---|---|---|---|---|",
        "| plain dnf (metadata cache warm) | %.3f | %.3f | %.3f | 1.0× | 1.0× | %.3f | 1.0× |" % (dnf_total, dnf_resolve, dnf_txn, dnf_durable),
    ]
    for r in rows:
        lines.append("| %s | %.3f | %.3f | %.3f | %.2f× | %.2f× | %.3f | %.2f× |" % (
            "cowkit dnf, " + ("cold cache (transcodes)" if r["method"] == "cowkit-cold" else "warm cache"),
            r["total"], r["resolve"], r["transaction"], dnf_txn / r["transaction"], dnf_total / r["total"],
            r["durable"], dnf_durable / r["durable"]))
    lines += [
        "",
        "Time split of cowkit's transaction (medians, s):",
        "",
        "| method | cache + transcode, beside the check | check + order (rpm) | place | scriptlets | register |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["split"]
        lines.append("| %s | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
            r["method"], s["transcode"], s["check"], s["place"], s["scriptlets"], s["register"]))
    lines += [
        "",
        "Ratios are dnf's time divided by cowkit's (above 1: cowkit is faster). dnf's resolve is "
        "`dnf --assumeno` of the same command (it resolves and stops); its transaction part is its total "
        "minus that. cowkit's resolve is the `dnf --downloadonly` it runs (resolve, and copying the "
        "packages out of the file:// repository); its transaction part is everything after. In the cold "
        "run rpm's check runs while the misses are transcoded (in the warm run, while the cache is "
        "looked up): the first column is the wall time of that phase, which contains the check. For a new "
        "root rpm checks and registers in one call (the check column), and `register` is the move of that "
        "database into place. "
        "`total + syncfs`: the command, then syncfs of the mount (the data made durable); cowkit's cold "
        "run must write its cache before it can clone from it. Before the rounds (untimed) one root of "
        "each was checked: equal `rpm -qa` and equal `rpm -Va`.",
    ]
    stem = os.path.join(a.results, "%s-image-build" % out["date"])
    with open(stem + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
