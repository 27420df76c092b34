#!/usr/bin/env python3
"""Report of bench/nosync.sh: medians, min/max and speedups per filesystem,
workload and method, and cowkit's final syncfs time. Standard library only."""
import argparse
import json
import statistics

METHODS = ["plain", "eatmydata", "nosync"]
LABEL = {"plain": "plain", "eatmydata": "`eatmydata`", "nosync": "`cowkit nosync`"}


def main():
    ap = argparse.ArgumentParser()
    for a in ["record", "machine", "setup", "packages", "heavy", "rounds", "md", "json"]:
        ap.add_argument("--" + a, required=True)
    a = ap.parse_args()
    recs = [json.loads(l) for l in open(a.record) if l.strip()]
    times = [r for r in recs if r["kind"] == "time"]
    finals = [r for r in recs if r["kind"] == "final_sync"]
    out = {"machine": a.machine, "setup": a.setup, "packages": a.packages,
           "rounds": int(a.rounds), "results": []}
    md = ["# cowkit nosync: dpkg and an fsync-heavy static program", "",
          "Machine: " + a.machine + ".", "",
          "Filesystems: " + a.setup.rstrip("; ") + ".", "",
          "dpkg workload: `dpkg --root=R --force-depends --refuse-unsafe-io --unpack` of "
          + a.packages + ", into a fresh root each run.", "",
          "fsync-heavy workload: a static C program writing %s files of 4 KiB, `fsync` after each."
          % a.heavy, "",
          "%s rounds, methods alternating (order rotated each round). `cmd` is the command "
          "alone (for `cowkit nosync` it includes its own final syncfs of the filesystems the "
          "command changed); `+syncfs` adds a syncfs of the bench mount afterwards, the durable cost. "
          "Speedup = plain median / method median." % a.rounds, ""]
    loads = [l for l in ["quiet", "busy"] if any(r.get("load", "quiet") == l for r in times)]
    for fs, load, wl in [(fs, load, wl)
                         for fs in sorted({r["fs"] for r in times},
                                          key=lambda f: ["ext4", "xfs"].index(f) if f in ["ext4", "xfs"] else 9)
                         for load in loads for wl in ["dpkg", "fsync-heavy"]]:
        if True:
            rows = {m: [r for r in times if r["fs"] == fs and r["workload"] == wl and r["method"] == m
                        and r.get("load", "quiet") == load] for m in METHODS}
            if not any(rows.values()):
                continue
            md += ["## %s, %s, %s" % (wl, fs, load if load == "quiet" else
                                         "busy (another job writing to a second filesystem)"), "",
                   "| method | cmd median | min | max | speedup | +syncfs median | speedup |",
                   "|---|---:|---:|---:|---:|---:|---:|"]
            base = rows["plain"]
            bc = statistics.median(r["t_cmd"] for r in base) if base else None
            bd = statistics.median(r["t_durable"] for r in base) if base else None
            for m in METHODS:
                rs = rows[m]
                if not rs:
                    continue
                c = [r["t_cmd"] for r in rs]
                d = [r["t_durable"] for r in rs]
                mc, mdur = statistics.median(c), statistics.median(d)
                res = {"fs": fs, "load": load, "workload": wl, "method": m, "n": len(rs), "cmd_median": mc,
                       "cmd_min": min(c), "cmd_max": max(c), "durable_median": mdur,
                       "speedup_cmd": bc / mc if bc else None,
                       "speedup_durable": bd / mdur if bd else None}
                out["results"].append(res)
                md.append("| %s | %.3f s | %.3f | %.3f | %.2f× | %.3f s | %.2f× |" % (
                    LABEL[m], mc, min(c), max(c), res["speedup_cmd"], mdur, res["speedup_durable"]))
            fin = [r for r in finals if r["fs"] == fs and r["workload"] == wl and r.get("load", "quiet") == load]
            if fin:
                fb = statistics.median(r["bench_mount"] for r in fin)
                fa = statistics.median(r["all"] for r in fin)
                nfs = max(r["filesystems"] for r in fin)
                out["results"].append({"fs": fs, "load": load, "workload": wl, "final_sync_bench_mount_median": fb,
                                       "final_sync_all_median": fa, "final_sync_filesystems": nfs})
                nw = max(r.get("not_written", 0) for r in fin)
                md += ["", "`cowkit nosync` final syncfs: %.3f s median on the bench mount, "
                       "%.3f s in all, %d filesystem(s) synced, up to %d left out as not written by the "
                       "command (included in its `cmd` time)." % (fb, fa, nfs, nw)]
            md.append("")
    open(a.md, "w").write("\n".join(md))
    json.dump(out, open(a.json, "w"), indent=1)
    print("\n".join(md))


if __name__ == "__main__":
    main()
