#!/usr/bin/env python3
"""Driver of bench/cold-build.sh (standard library only): cold image builds
from an HTTP mirror throttled in a network namespace. Per rate, rounds in
rotating order of: plain dnf, dnf --downloadonly (the floor), cowkit dnf
through dnf's download (--downloader dnf) and cowkit dnf streaming
(--downloader cowkit), each into a fresh root with an empty cowkit cache
and a fresh copy of dnf's warm metadata cache; medians, the time split,
ratios to the floor; one Markdown and one JSON result."""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_build import ENV, fresh_root, syncfs  # noqa: E402

PORT = 8080
METHODS = ["dnf", "floor", "cowkit-dnf", "cowkit-stream"]


def ns(a, cmd):
    """`cmd` inside the bench's network namespace."""
    return ["ip", "netns", "exec", a.netns] + cmd


def sh(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def throttle(a, rate):
    """tbf on the namespace's loopback (server and clients both live there:
    every byte the server sends crosses it once)."""
    subprocess.run(ns(a, ["tc", "qdisc", "del", "dev", "lo", "root"]),
                   stderr=subprocess.DEVNULL, check=False)
    qdisc = ["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:",
             "tbf", "rate", rate, "burst", "1mb", "latency", "50ms"]
    sh(ns(a, qdisc))
    if a.delay:
        sh(ns(a, ["tc", "qdisc", "add", "dev", "lo", "parent", "1:1", "handle", "10:",
                  "netem", "delay", a.delay]))


def dnf_args(a, cache):
    conf = os.path.join(cache, "dnf.conf")
    os.makedirs(cache, exist_ok=True)
    with open(conf, "w") as f:
        f.write("[main]\n")
    return [
        "-y", "--quiet", "--noplugins", "--nogpgcheck", "--config=" + conf,
        "--releasever=40", "--setopt=reposdir=/dev/null", "--setopt=cachedir=" + cache,
        "--setopt=install_weak_deps=False",
        "--repofrompath=bench,http://127.0.0.1:%d/" % PORT, "--repo", "bench",
    ]


def fresh_cache(a, name):
    """A copy of the warm metadata cache (no packages in it)."""
    d = os.path.join(a.mount, "caches", name)
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(a.warm_cache, d, symlinks=True)
    return d


def timed(cmd, stdout=subprocess.DEVNULL):
    syncfs(ARGS.mount)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=ENV, stdout=stdout, stderr=subprocess.PIPE)
    t = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()))
    return t, p


def run(a, method, n):
    root = fresh_root(a, "%s-%d" % (method, n))
    cache = fresh_cache(a, "%s-%d" % (method, n))
    base = dnf_args(a, cache) + ["install"] + a.names
    if method in ("dnf", "floor"):
        cmd = ["dnf", "--installroot=" + root] + base
        if method == "floor":
            dl = os.path.join(a.mount, "downloads-%d" % n)
            shutil.rmtree(dl, ignore_errors=True)
            cmd += ["--downloadonly", "--downloaddir=" + dl]
        t, _ = timed(ns(a, cmd))
        return {"total": t}
    ck = os.path.join(a.mount, "cowkit-cache")
    shutil.rmtree(ck, ignore_errors=True)
    who = "dnf" if method == "cowkit-dnf" else "cowkit"
    cmd = [a.cowkit, "dnf", "--json", "--downloader", who, "--root", root, "--cache", ck]
    if a.dbpath:
        cmd += ["--dbpath", a.dbpath]
    t, p = timed(ns(a, cmd + ["--"] + base), stdout=subprocess.PIPE)
    j = json.loads(p.stdout)
    if not j.get("ok") or j.get("downloaded_by") != who:
        sys.exit("cowkit dnf (%s) did not do what was asked: %s" % (method, j))
    return {"total": t, "resolve": j["resolve_seconds"], "fetch_transcode": j["transcode_seconds"],
            "install": t - j["resolve_seconds"] - j["transcode_seconds"],
            "bytes": j.get("downloaded_bytes", 0)}


def med(rows, key):
    v = [r[key] for r in rows if key in r]
    return statistics.median(v) if v else None


def measure(a, rate):
    throttle(a, rate)
    res = {m: [] for m in METHODS}
    for n in range(a.rounds):
        k = n % len(METHODS)
        for m in METHODS[k:] + METHODS[:k]:
            res[m].append(run(a, m, n))
            print("%s %s round %d: %.2f s" % (rate, m, n + 1, res[m][-1]["total"]), file=sys.stderr)
    out = {m: {key: med(rows, key) for key in rows[0]} for m, rows in res.items()}
    floor = out["floor"]["total"]
    for m in METHODS:
        out[m]["x_floor"] = out[m]["total"] / floor
    return {"rate": rate, "median": out, "rounds": res}


def report(a, results, load0, load1):
    day = datetime.date.today().isoformat()
    name = "%s-cold-build%s" % (day, "-smoke" if a.smoke else "")
    lines = ["# Cold image build from a throttled HTTP mirror (%s)" % day, ""]
    if a.smoke:
        lines += ["**SMOKE RUN on a loaded, shared machine: not a measurement.**", ""]
    lines += [
        "Machine: %s; %d CPUs; load before/after %s / %s." % (
            os.uname().release, os.cpu_count(), " ".join(load0), " ".join(load1)),
        "Packages: `%s` from `%s` (%d files, %.1f MiB of .rpm), served by Python's "
        "`http.server` on 127.0.0.1 inside a network namespace whose loopback is "
        "throttled with `tc tbf`%s; every method runs in that namespace, into a fresh "
        "root on reflink XFS, with a copy of dnf's warm metadata cache and an empty "
        "cowkit cache; %d round(s) in rotating order; medians in seconds." % (
            " ".join(a.names), a.repo, a.rpm_count, a.rpm_bytes / 2**20,
            " and `netem delay %s`" % a.delay if a.delay else "", a.rounds),
        "",
        "| rate | plain dnf | floor: dnf --downloadonly | cowkit dnf via dnf's download "
        "(resolve+download / transcode / install) | cowkit dnf streaming "
        "(resolve / fetch+transcode / install) | via dnf ÷ floor | streaming ÷ floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        m = r["median"]
        cd, cs = m["cowkit-dnf"], m["cowkit-stream"]
        lines.append("| %s | %.2f | %.2f | %.2f (%.2f / %.2f / %.2f) | %.2f (%.2f / %.2f / %.2f) | %.2f | %.2f |" % (
            r["rate"], m["dnf"]["total"], m["floor"]["total"],
            cd["total"], cd["resolve"], cd["fetch_transcode"], cd["install"],
            cs["total"], cs["resolve"], cs["fetch_transcode"], cs["install"],
            cd["x_floor"], cs["x_floor"]))
    os.makedirs(a.results, exist_ok=True)
    with open(os.path.join(a.results, name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(a.results, name + ".json"), "w") as f:
        json.dump({"date": day, "smoke": a.smoke, "names": a.names, "results": results}, f, indent=1)
    print("\n".join(lines))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--netns", required=True)
    ap.add_argument("--rates", nargs="+", default=["1gbit", "300mbit"])
    ap.add_argument("--delay", default="", help="netem delay, e.g. 5ms (none by default)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--results", required=True)
    ap.add_argument("--names", nargs="+", required=True)
    ap.add_argument("--dbpath", default=None)
    ap.add_argument("--smoke", action="store_true")
    a = ARGS = ap.parse_args()
    rpms = [os.path.join(d, f) for d, _, fs in os.walk(a.repo) for f in fs if f.endswith(".rpm")]
    a.rpm_count, a.rpm_bytes = len(rpms), sum(os.path.getsize(p) for p in rpms)
    load0 = open("/proc/loadavg").read().split()[:3]
    # dnf's metadata, once (untimed), unthrottled.
    a.warm_cache = os.path.join(a.mount, "warm-cache")
    shutil.rmtree(a.warm_cache, ignore_errors=True)
    subprocess.run(ns(a, ["tc", "qdisc", "del", "dev", "lo", "root"]),
                   stderr=subprocess.DEVNULL, check=False)
    sh(ns(a, ["dnf"] + dnf_args(a, a.warm_cache) + ["makecache"]))
    results = [measure(a, rate) for rate in a.rates]
    report(a, results, load0, open("/proc/loadavg").read().split()[:3])


ARGS = None

if __name__ == "__main__":
    main()
