#!/usr/bin/env python3
"""Compare two result files of one benchmark (rpm-install or tree-clone JSON).

    bench/compare.py BEFORE.json AFTER.json [LABEL_BEFORE LABEL_AFTER]

Prints a Markdown table: for every group (package/payload or filesystem,
then install/decode/copy/delete) and method, the median of each run, the
ratio after/before (< 1 is faster), and each run's speedup against its own
in-run baseline (rpm -i, rpm2cpio, cp -a, rm -rf). The in-run speedups are
the fairer comparison when the two runs saw a different machine load: each
was measured side by side with the same peer.
"""
import json
import sys


def rows(doc):
    out = {}
    for r in doc["results"]:
        where = r.get("fs") or f"{r['pkg']} ({r['comp']})"
        for method, m in r["methods"].items():
            out[(where, r["group"], method)] = m
    return out


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    before, after = (json.load(open(p)) for p in sys.argv[1:3])
    lb, la = sys.argv[3:5] if len(sys.argv) == 5 else ("before", "after")
    b, a = rows(before), rows(after)
    print(f"| where | group | method | {lb} median s | {la} median s | {la}/{lb} "
          f"| {lb} speedup vs peer | {la} speedup vs peer |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for key in a:
        if key not in b:
            continue
        mb, ma = b[key], a[key]
        ratio = ma["median_s"] / mb["median_s"]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {mb['median_s']:.3f} | {ma['median_s']:.3f} "
              f"| {ratio:.2f} | {mb.get('speedup', 1.0):.2f}× | {ma.get('speedup', 1.0):.2f}× |")
    for name, doc in ((lb, before), (la, after)):
        m = doc["machine"]
        print(f"\n{name}: {m.get('cowkit', '')}; loadavg {m.get('loadavg', '?')}")


if __name__ == "__main__":
    main()
