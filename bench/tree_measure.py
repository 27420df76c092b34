#!/usr/bin/env python3
"""Tree helpers and the report for bench/tree-clone.sh (standard library only).

  tree_measure.py decorate DIR
      Adds what a copy of /usr lacks, deterministically (the same input tree
      gives the same result): hardlink groups (a second name in the same
      directory, and groups of three spread over two directories), user.*
      xattrs on files and directories (some with a 256-byte value), and
      files and directories owned by other users.

  tree_measure.py topup DIR --min-entries N --min-bytes B
      Generates files under DIR/generated until DIR holds at least N entries
      and B bytes of regular files (a no-op when it already does).

  tree_measure.py stats DIR
      One JSON object: entries, directories, regular files (inodes and
      names), symlinks, other entries, bytes, hardlink groups, entries with
      xattrs, entries not owned by root.

  tree_measure.py manifest DIR --level basic|full
      One sorted line per entry, for comparing a copy with its source.
      basic: path, type, size of regular files, symlink target.
      full: also mode, uid, gid, mtime in nanoseconds (all types), xattrs
      (names and values) and hardlink groups (named by their first path).

  tree_measure.py strace FILE --files N
      Parses the table of `strace -c -f -o FILE`; prints a JSON object with
      the total number of syscalls, errors, syscalls per regular file and the
      calls per syscall.

  tree_measure.py report --record FILE.jsonl --machine FILE.json --md OUT.md --json OUT.json
      Medians, min/max, speedups, peak RSS, space used by a copy, syscalls
      per file; prints the Markdown and writes both files.
"""

import argparse
import hashlib
import json
import os
import stat
import statistics
import sys

from benchlib import fmt_mib, fmt_s

# ----------------------------------------------------------------- tree walk


def walk(top):
    """Yield (relative path bytes, lstat result) for top and everything below,
    directories before their children, names in byte order."""
    top = os.fsencode(top)
    st = os.lstat(top)
    yield b".", st
    stack = [b""]
    while stack:
        rel = stack.pop()
        full = os.path.join(top, rel) if rel else top
        with os.scandir(full) as it:
            names = sorted(e.name for e in it)
        subdirs = []
        for name in names:
            r = os.path.join(rel, name) if rel else name
            s = os.lstat(os.path.join(top, r))
            yield r, s
            if stat.S_ISDIR(s.st_mode):
                subdirs.append(r)
        stack.extend(reversed(subdirs))


def kind(mode):
    if stat.S_ISREG(mode):
        return "f"
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    if stat.S_ISFIFO(mode):
        return "p"
    if stat.S_ISSOCK(mode):
        return "s"
    if stat.S_ISCHR(mode):
        return "c"
    if stat.S_ISBLK(mode):
        return "b"
    return "?"


def esc(b):
    """A path or value as one line of ASCII: printable bytes as they are,
    everything else (and the backslash) as \\xNN."""
    out = []
    for c in b:
        if 0x21 <= c <= 0x7E and c != 0x5C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        try:
            v = os.getxattr(path, n, follow_symlinks=False)
        except OSError as e:
            v = ("<%s>" % e.strerror).encode()
        out.append((n, v))
    return out


# ------------------------------------------------------------------ decorate


def digest(b):
    return hashlib.sha256(b).hexdigest()


def cmd_decorate(args):
    top = os.fsencode(args.dir)
    files, dirs = [], []
    for rel, st in walk(top):
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            files.append(rel)
        elif stat.S_ISDIR(st.st_mode) and rel != b".":
            dirs.append(rel)
    if len(files) < 2000 or len(dirs) < 100:
        sys.exit("decorate: the tree is too small (%d files, %d directories)" % (len(files), len(dirs)))

    # Pick files spread over the whole tree: every k-th file in byte order.
    def pick(seq, count, offset):
        step = max(1, len(seq) // count)
        return [seq[i] for i in range(offset % step, len(seq), step)][:count]

    n_same = n_cross = 0
    # 1. 300 files get a second name next to them.
    for rel in pick(files, 300, 0):
        os.link(os.path.join(top, rel), os.path.join(top, rel + b".hardlink"))
        n_same += 1
    # 2. 100 files get two more names: one in their own directory, one in a
    #    shared directory elsewhere in the tree (groups that cross directories,
    #    which a parallel walker sees from different workers).
    xdir = os.path.join(top, b"hardlinks")
    os.makedirs(xdir, exist_ok=True)
    taken = set(pick(files, 300, 0))
    for i, rel in enumerate(r for r in pick(files, 100, 7) if r not in taken):
        src = os.path.join(top, rel)
        os.link(src, src + b".hardlink2")
        os.link(src, os.path.join(xdir, b"%04d-" % i + os.path.basename(rel)))
        n_cross += 1
    # 3. user.* xattrs on 500 files and 50 directories; every fifth file gets a
    #    second, 256-byte value.
    n_x = 0
    for i, rel in enumerate(pick(files, 500, 3)):
        p = os.path.join(top, rel)
        os.setxattr(p, "user.cowkit.bench", digest(rel)[:16].encode(), follow_symlinks=False)
        if i % 5 == 0:
            os.setxattr(p, "user.cowkit.blob", (digest(rel) * 4).encode(), follow_symlinks=False)
        n_x += 1
    for rel in pick(dirs, 50, 1):
        os.setxattr(os.path.join(top, rel), "user.cowkit.dir", rel[-32:], follow_symlinks=False)
        n_x += 1
    # 4. 200 files and 20 directories owned by other users.
    n_own = 0
    for i, rel in enumerate(pick(files, 200, 5)):
        uid = 1000 if i % 2 else 65534
        os.lchown(os.path.join(top, rel), uid, uid)
        n_own += 1
    for rel in pick(dirs, 20, 4):
        os.lchown(os.path.join(top, rel), 1000, 1000)
        n_own += 1
    print(
        json.dumps(
            {
                "hardlinks_same_dir": n_same,
                "hardlink_groups_cross_dir": n_cross,
                "xattr_entries": n_x,
                "chowned": n_own,
            }
        )
    )


# --------------------------------------------------------------------- topup


def cmd_topup(args):
    top = os.fsencode(args.dir)
    s = tree_stats(top)
    entries, nbytes = s["entries"], s["bytes"]
    gen = os.path.join(top, b"generated")
    made = 0
    i = 0
    # Sizes cycle through a small-file-heavy mix, as in a root filesystem.
    sizes = [300, 1200, 2500, 4096, 7000, 16384, 40000, 150000, 1 << 20]
    while entries < args.min_entries or nbytes < args.min_bytes:
        d = os.path.join(gen, b"d%03d" % (i // 500))
        if i % 500 == 0:
            os.makedirs(d, exist_ok=True)
            entries += 1
        size = sizes[i % len(sizes)] if entries < args.min_entries else 4 << 20
        block = hashlib.sha256(b"%d" % i).digest() * 128  # 4 KiB, varies per file
        with open(os.path.join(d, b"f%06d" % i), "wb") as fh:
            left = size
            while left > 0:
                fh.write(block[: min(left, len(block))])
                left -= len(block)
        entries += 1
        nbytes += size
        made += 1
        i += 1
    print(json.dumps({"generated_files": made}))


# --------------------------------------------------------------------- stats


def tree_stats(top):
    s = {
        "entries": 0,
        "directories": 0,
        "regular_files": 0,
        "regular_inodes": 0,
        "symlinks": 0,
        "other": 0,
        "bytes": 0,
        "hardlink_groups": 0,
        "hardlinked_names": 0,
        "xattr_entries": 0,
        "not_root_owned": 0,
    }
    seen = {}
    for rel, st in walk(top):
        s["entries"] += 1
        k = kind(st.st_mode)
        if k == "f":
            s["regular_files"] += 1
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen[key] = 0
                s["regular_inodes"] += 1
                s["bytes"] += st.st_size
            seen[key] += 1
        elif k == "d":
            s["directories"] += 1
        elif k == "l":
            s["symlinks"] += 1
        else:
            s["other"] += 1
        if st.st_uid != 0 or st.st_gid != 0:
            s["not_root_owned"] += 1
        if k != "l" and os.listxattr(os.path.join(top, rel), follow_symlinks=False):
            s["xattr_entries"] += 1
    for n in seen.values():
        if n > 1:
            s["hardlink_groups"] += 1
            s["hardlinked_names"] += n
    return s


def cmd_stats(args):
    print(json.dumps(tree_stats(os.fsencode(args.dir))))


# ------------------------------------------------------------------ manifest


def cmd_manifest(args):
    top = os.fsencode(args.dir)
    full = args.level == "full"
    rows = []
    groups = {}
    for rel, st in walk(top):
        k = kind(st.st_mode)
        cols = [esc(rel), k]
        if k == "f":
            cols.append("size=%d" % st.st_size)
        if k == "l":
            cols.append("-> " + esc(os.readlink(os.path.join(top, rel))))
        if full:
            cols.append("mode=%o" % stat.S_IMODE(st.st_mode))
            cols.append("owner=%d:%d" % (st.st_uid, st.st_gid))
            cols.append("mtime=%d" % st.st_mtime_ns)
            for n, v in xattrs(os.path.join(top, rel)):
                cols.append("xattr:%s=%s" % (n, esc(v)))
            if k == "f" and st.st_nlink > 1:
                groups.setdefault((st.st_dev, st.st_ino), []).append(len(rows))
        rows.append(cols)
    # A hardlink group is named by its first path (walk order is byte order,
    # the same in any copy), so two trees with the same grouping print the
    # same lines whatever their inode numbers.
    for idx in groups.values():
        if len(idx) > 1:
            first = rows[idx[0]][0]
            for i in idx:
                rows[i].append("link=" + first)
    out = sys.stdout
    for cols in sorted(rows, key=lambda c: c[0]):
        out.write(" ".join(cols) + "\n")


# -------------------------------------------------------------------- strace


def parse_strace(path):
    """The summary table of strace -c: % time, seconds, usecs/call, calls,
    [errors], syscall. Returns ({syscall: calls}, total calls, total errors)."""
    calls, total, errors = {}, None, 0
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if len(f) < 5 or not f[3].isdigit():
                continue
            try:
                float(f[0])
            except ValueError:
                continue
            if f[-1] == "total":
                total = int(f[3])
                errors = int(f[4]) if len(f) == 6 and f[4].isdigit() else 0
            else:
                calls[f[-1]] = int(f[3])
    if total is None:
        total = sum(calls.values())
    return calls, total, errors


def cmd_strace(args):
    calls, total, errors = parse_strace(args.file)
    top = sorted(calls.items(), key=lambda kv: -kv[1])
    print(
        json.dumps(
            {
                "total_syscalls": total,
                "errors": errors,
                "regular_files": args.files,
                "per_file": total / args.files if args.files else None,
                "calls": dict(top),
            }
        )
    )


# -------------------------------------------------------------------- report


def cmd_report(args):
    times, space, straces, trees, fsinfo, extras = [], {}, [], {}, {}, []
    marginals = []
    with open(args.record) as fh:
        for line in fh:
            rec = json.loads(line)
            k = rec.pop("kind")
            if k == "time":
                times.append(rec)
            elif k == "space":
                space[(rec["fs"], rec["method"])] = rec["bytes"]
            elif k == "strace":
                straces.append(rec)
            elif k == "strace-marginal":
                marginals.append(rec)
            elif k == "tree":
                trees[rec["fs"]] = rec
            elif k == "fs":
                fsinfo[rec["fs"]] = rec
            else:
                extras.append(dict(rec, kind=k))
    with open(args.machine) as fh:
        machine = json.load(fh)
    commands = machine.get("commands", {})

    order, groups = [], {}
    for r in times:
        key = (r["fs"], r["group"])
        groups.setdefault(key, {}).setdefault(r["method"], []).append(r)
        if key not in order:
            order.append(key)
    summary = []
    for key in order:
        fs, group = key
        base_name = "cp-a" if group == "copy" else "rm-rf"
        stats = {}
        for m, recs in groups[key].items():
            tc = [r["t_cmd"] for r in recs]
            td = [r["t_durable"] for r in recs]
            rss = [r["maxrss_kib"] for r in recs]
            cpu = [r["cpu_s"] for r in recs if "cpu_s" in r]
            stats[m] = {
                "command": commands.get(m),
                "cpu_median_s": statistics.median(cpu) if cpu else None,
                "runs": len(recs),
                "median_s": statistics.median(tc),
                "min_s": min(tc),
                "max_s": max(tc),
                "durable_median_s": statistics.median(td),
                "durable_min_s": min(td),
                "durable_max_s": max(td),
                "peak_rss_kib_max": max(rss),
                "samples_s": tc,
                "cpu_samples_s": cpu,
                "durable_samples_s": td,
                "space_used_bytes": space.get((fs, m)),
            }
        base = stats.get(base_name)
        for s in stats.values():
            s["baseline"] = base_name if base else None
            s["speedup"] = base["median_s"] / s["median_s"] if base and s["median_s"] > 0 else None
            s["durable_speedup"] = (
                base["durable_median_s"] / s["durable_median_s"]
                if base and s["durable_median_s"] > 0
                else None
            )
        summary.append({"fs": fs, "group": group, "methods": stats})

    L = []
    L.append("# Tree clone benchmark, %s" % machine.get("date", "?"))
    L.append("")
    L.append("Machine: %s" % machine.get("line", "?"))
    L.append("")
    for k in ("commit", "rounds", "methods", "loadavg", "cache"):
        if k in machine:
            L.append("- %s: %s" % (k, machine[k]))
    for k, v in machine.get("tools", {}).items():
        L.append("- %s: %s" % (k, v))
    for fs, info in fsinfo.items():
        L.append("- %s: %s" % (fs, info["line"]))
    L.append("")
    if trees:
        L.append("## Source tree")
        L.append("")
        if "built" in machine:
            L.append(machine["built"])
            L.append("")
        L.append(
            "| fs | entries | directories | regular files (names / inodes) | symlinks | bytes | hardlink groups (names) | with xattrs | not root:root |"
        )
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for fs, t in trees.items():
            L.append(
                "| %s | %d | %d | %d / %d | %d | %s MiB | %d (%d) | %d | %d |"
                % (
                    fs,
                    t["entries"],
                    t["directories"],
                    t["regular_files"],
                    t["regular_inodes"],
                    t["symlinks"],
                    fmt_mib(t["bytes"]),
                    t["hardlink_groups"],
                    t["hardlinked_names"],
                    t["xattr_entries"],
                    t["not_root_owned"],
                )
            )
        L.append("")
    L.append(
        "Times in seconds: median (min–max) over the rounds, monotonic clock, warm cache. "
        "`+syncfs`: the command followed by syncfs of the mount (durable cost). "
        "Speedup = baseline median / method median, baseline `cp -a --reflink=always` for copies "
        "and `rm -rf` for deletes; > 1 is faster. CPU: user plus system time of the command's "
        "processes (wait4), median; it does not count the filesystem's own kernel threads "
        "(log pushes), and it varies less with the load than the wall clock. Peak RSS: the largest over the rounds of the "
        "largest process. Space: filesystem blocks used by the copy (statvfs after syncfs, round 1)."
    )
    for entry in summary:
        L.append("")
        L.append("## %s: %s" % (entry["fs"], "copy" if entry["group"] == "copy" else "delete"))
        L.append("")
        L.append(
            "| method | command | runs | median s | min–max s | speedup | +syncfs median s | +syncfs speedup | CPU s | peak RSS MiB | space MiB |"
        )
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m, s in entry["methods"].items():
            sp = "%.2f×" % s["speedup"] if s["speedup"] else "–"
            dsp = "%.2f×" % s["durable_speedup"] if s["durable_speedup"] else "–"
            sb = s["space_used_bytes"]
            cpu = s["cpu_median_s"]
            L.append(
                "| %s | `%s` | %d | %s | %s–%s | %s | %s | %s | %s | %.1f | %s |"
                % (
                    m,
                    s["command"] or "?",
                    s["runs"],
                    fmt_s(s["median_s"]),
                    fmt_s(s["min_s"]),
                    fmt_s(s["max_s"]),
                    sp,
                    fmt_s(s["durable_median_s"]),
                    dsp,
                    fmt_s(cpu) if cpu is not None else "–",
                    s["peak_rss_kib_max"] / 1024,
                    fmt_mib(sb) if sb is not None else "–",
                )
            )
    if straces:
        L.append("")
        L.append("## Syscalls (`strace -c -f`, one untimed run each)")
        L.append("")
        L.append("| fs | method | syscalls | errors | regular files | per regular file | most frequent (per regular file) |")
        L.append("|---|---|---:|---:|---:|---:|---|")
        for s in straces:
            n = s["regular_files"] or 1
            top = ", ".join("%s %.2f" % (k, v / n) for k, v in list(s["calls"].items())[:6])
            L.append(
                "| %s | %s | %d | %d | %d | %.2f | %s |"
                % (s["fs"], s["method"], s["total_syscalls"], s["errors"], s["regular_files"], s["per_file"], top)
            )
    if marginals:
        L.append("")
        L.append(
            "Syscalls of one more regular file: `strace -c -f` of a flat directory of %d 4 KiB files minus that of an empty directory, per file:"
            % marginals[0]["files"]
        )
        L.append("")
        L.append("| fs | method | syscalls per regular file | calls |")
        L.append("|---|---|---:|---|")
        for s in marginals:
            calls = ", ".join("%s %.2f" % kv for kv in s["calls"].items())
            L.append("| %s | %s | %.2f | %s |" % (s["fs"], s["method"], s["per_file"], calls))
    for e in extras:
        if e["kind"] == "cowkit-summary":
            L.append("")
            L.append("`%s` summary on %s (untimed run):" % (e.get("command", "cowkit cp --json"), e["fs"]))
            L.append("")
            L.append("```json")
            L.append(json.dumps(e.get("summary"), sort_keys=True))
            L.append("```")
    text = "\n".join(L) + "\n"
    print(text)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "machine": machine,
                    "filesystems": fsinfo,
                    "trees": trees,
                    "results": summary,
                    "strace": straces,
                    "strace_marginal": marginals,
                    "extras": extras,
                },
                fh,
                indent=1,
            )
            fh.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="sub", required=True)
    p = sub.add_parser("decorate")
    p.add_argument("dir")
    p = sub.add_parser("topup")
    p.add_argument("dir")
    p.add_argument("--min-entries", type=int, required=True)
    p.add_argument("--min-bytes", type=int, required=True)
    p = sub.add_parser("stats")
    p.add_argument("dir")
    p = sub.add_parser("manifest")
    p.add_argument("dir")
    p.add_argument("--level", choices=("basic", "full"), default="basic")
    p = sub.add_parser("strace")
    p.add_argument("file")
    p.add_argument("--files", type=int, required=True)
    p = sub.add_parser("report")
    p.add_argument("--record", required=True)
    p.add_argument("--machine", required=True)
    p.add_argument("--md")
    p.add_argument("--json")
    args = ap.parse_args()
    {
        "decorate": cmd_decorate,
        "topup": cmd_topup,
        "stats": cmd_stats,
        "manifest": cmd_manifest,
        "strace": cmd_strace,
        "report": cmd_report,
    }[args.sub](args)


if __name__ == "__main__":
    main()
