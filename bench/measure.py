#!/usr/bin/env python3
"""Timing and reporting helper for bench/rpm-install.sh (standard library only).

  measure.py run --record FILE.jsonl --sync MOUNT [--cwd DIR] [--stdout-null]
                 [--stderr FILE] [--field KEY=VALUE]... -- CMD [ARG...]
      Runs CMD, timed with the monotonic clock; then syncfs(MOUNT), timed
      too. Appends one JSON line: t_cmd (seconds, the command alone),
      t_durable (command plus syncfs of the mount), maxrss_kib (peak RSS of
      the largest process in the command's tree, from wait4), cpu_s (user
      plus system time of the command's process tree, from wait4), the --field
      values. Exits with the command's status if it failed, recording nothing.
      --stderr FILE: the command's stderr goes to FILE (truncated) instead of
      the terminal, so that no progress display is drawn while it is timed.

  measure.py report --record FILE.jsonl --machine FILE.json --md OUT.md --json OUT.json
      Medians, min/max and ratios per package, compression and method;
      prints the Markdown table and writes both files.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchlib import fmt_s, fmt_size, syncfs

def cmd_run(args):
    cmd = args.cmd
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        sys.exit("measure.py run: no command")
    stdout = subprocess.DEVNULL if args.stdout_null else None
    stderr = open(args.stderr, "wb") if args.stderr else None
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=args.cwd, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    t1 = time.monotonic()
    if stderr is not None:
        stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        print(
            "measure.py: command failed with status %d: %s" % (proc.returncode, " ".join(cmd)),
            file=sys.stderr,
        )
        sys.exit(proc.returncode if proc.returncode > 0 else 128 - proc.returncode)
    syncfs(args.sync)
    t2 = time.monotonic()
    rec = {
        "kind": "time",
        "t_cmd": t1 - t0,
        "t_durable": t2 - t0,
        "maxrss_kib": usage.ru_maxrss,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    for f in args.field:
        key, _, value = f.partition("=")
        rec[key] = int(value) if value.isdigit() else value
    with open(args.record, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(
        "  %-22s %8.3f s  (+syncfs %8.3f s)  peak RSS %7.1f MiB"
        % (rec.get("method", "?"), rec["t_cmd"], rec["t_durable"], rec["maxrss_kib"] / 1024),
        file=sys.stderr,
    )


def cmd_report(args):
    times, sizes = [], []
    with open(args.record) as fh:
        for line in fh:
            rec = json.loads(line)
            (times if rec["kind"] == "time" else sizes).append(rec)
    with open(args.machine) as fh:
        machine = json.load(fh)

    # Method order as first seen in the record, grouped.
    groups = {}
    order = []
    for r in times:
        key = (r["pkg"], r["comp"], r["group"])
        groups.setdefault(key, {}).setdefault(r["method"], []).append(r)
        if key not in order:
            order.append(key)

    summary = []
    for key in order:
        pkg, comp, group = key
        methods = groups[key]
        base_name = "rpm-i" if group == "install" else "rpm2cpio-null"
        stats = {}
        for m, recs in methods.items():
            tc = [r["t_cmd"] for r in recs]
            td = [r["t_durable"] for r in recs]
            rss = [r["maxrss_kib"] for r in recs]
            stats[m] = {
                "runs": len(recs),
                "median_s": statistics.median(tc),
                "min_s": min(tc),
                "max_s": max(tc),
                "durable_median_s": statistics.median(td),
                "durable_min_s": min(td),
                "durable_max_s": max(td),
                "peak_rss_kib_median": statistics.median(rss),
                "samples_s": tc,
                "durable_samples_s": td,
            }
        base = stats.get(base_name)
        for m, s in stats.items():
            s["baseline"] = base_name if base else None
            s["speedup"] = base["median_s"] / s["median_s"] if base and s["median_s"] > 0 else None
            s["durable_speedup"] = (
                base["durable_median_s"] / s["durable_median_s"]
                if base and s["durable_median_s"] > 0
                else None
            )
        summary.append({"pkg": pkg, "comp": comp, "group": group, "methods": stats})

    lines = []
    lines.append("# RPM install benchmark, %s" % machine.get("date", "?"))
    lines.append("")
    lines.append("Machine: %s" % machine.get("line", "?"))
    lines.append("")
    for k in ("filesystem", "rpm", "cowkit", "rounds", "cache", "methods", "commit", "loadavg"):
        if k in machine:
            lines.append("- %s: %s" % (k, machine[k]))
    lines.append("")
    lines.append(
        "Times in seconds: median (min–max) over the rounds, monotonic clock. "
        "`+syncfs` = the command followed by syncfs of the XFS mount (durable cost). "
        "Speedup = baseline median / method median (baseline: `rpm -i` for installs, "
        "`rpm2cpio > /dev/null` for decoding); > 1 is faster than the baseline."
    )
    for entry in summary:
        lines.append("")
        title = "installs" if entry["group"] == "install" else "decoding"
        lines.append("## %s, %s payload: %s" % (entry["pkg"], entry["comp"], title))
        lines.append("")
        lines.append(
            "| method | runs | median s | min–max s | speedup | +syncfs median s | +syncfs speedup | peak RSS MiB |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for m, s in entry["methods"].items():
            sp = "%.2f×" % s["speedup"] if s["speedup"] else "–"
            dsp = "%.2f×" % s["durable_speedup"] if s["durable_speedup"] else "–"
            lines.append(
                "| %s | %d | %s | %s–%s | %s | %s | %s | %.1f |"
                % (
                    m,
                    s["runs"],
                    fmt_s(s["median_s"]),
                    fmt_s(s["min_s"]),
                    fmt_s(s["max_s"]),
                    sp,
                    fmt_s(s["durable_median_s"]),
                    dsp,
                    s["peak_rss_kib_median"] / 1024,
                )
            )
    if sizes:
        lines.append("")
        lines.append("## Sizes")
        lines.append("")
        lines.append(
            "| package | payload | .rpm | .rpme | installed (%{SIZE}) | du -sb of root | entries | regular files |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for s in sizes:
            lines.append(
                "| %s | %s | %s | %s | %s | %s | %d | %d |"
                % (
                    s["pkg"],
                    s["comp"],
                    fmt_size(s["rpm_bytes"]),
                    fmt_size(s["rpme_bytes"]) if s.get("rpme_bytes") is not None else "–",
                    fmt_size(s["installed_bytes"]),
                    fmt_size(s["du_bytes"]),
                    s["entries"],
                    s["files"],
                )
            )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": machine, "results": summary, "sizes": sizes}, fh, indent=1)
            fh.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="sub", required=True)
    r = sub.add_parser("run")
    r.add_argument("--record", required=True)
    r.add_argument("--sync", required=True, help="mount point to syncfs after the command")
    r.add_argument("--cwd")
    r.add_argument("--stdout-null", action="store_true")
    r.add_argument("--stderr", help="file for the command's stderr")
    r.add_argument("--field", action="append", default=[])
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("report")
    p.add_argument("--record", required=True)
    p.add_argument("--machine", required=True)
    p.add_argument("--md")
    p.add_argument("--json")
    args = ap.parse_args()
    if args.sub == "run":
        cmd_run(args)
    else:
        cmd_report(args)


if __name__ == "__main__":
    main()
