#!/usr/bin/env python3
"""Driver of bench/store-images.sh (standard library only)."""

import argparse
import datetime
import glob
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import zipfile

from benchlib import drop_caches, loadavg, mib, timed, write_results


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def sectors_read(path):
    dev = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "--target", path], capture_output=True,
                         text=True, check=True).stdout.strip()
    with open("/sys/block/%s/stat" % os.path.basename(dev)) as f:
        return int(f.read().split()[2]) * 512


def files_under(d):
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


def read_all(d):
    n = 0
    for p in files_under(d):
        with open(p, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
    return n


def resident(d):
    total = 0
    paths = list(files_under(d))
    for i in range(0, len(paths), 200):
        out = subprocess.run(["fincore", "-b", "-n", "-o", "RES"] + paths[i:i + 200],
                             capture_output=True, text=True).stdout
        total += sum(int(x) for x in out.split())
    return total


def du(d):
    return int(subprocess.run(["du", "-sb", "--apparent-size", d], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def used(mount):
    st = os.statvfs(mount)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def part_import(a):
    m = a.mount
    rows = {k: [] for k in ("cowkit image create (new store)", "cowkit image create (same tree again)",
                            "cowkit image create (same tree again, --rehash)",
                            "mkfs.erofs", "cp -a --reflink=always")}
    for r in range(a.rounds):
        store, erofs, copy = (os.path.join(m, "bench-" + x) for x in ("store", "img.erofs", "copy"))
        for p in (store, copy):
            shutil.rmtree(p, ignore_errors=True)
        if os.path.exists(erofs):
            os.remove(erofs)
        sh("sync")
        t, p = timed([a.cowkit, "image", "create", "one", "--json", "--from", a.tree, "--store", store],
                     stdout=subprocess.PIPE)
        out = p.stdout
        rows["cowkit image create (new store)"].append(t)
        summary = json.loads(out)
        sh("sync")
        t, _ = timed([a.cowkit, "image", "create", "two", "--from", a.tree, "--store", store])
        rows["cowkit image create (same tree again)"].append(t)
        sh("sync")
        t, _ = timed([a.cowkit, "image", "create", "three", "--rehash", "--from", a.tree, "--store", store])
        rows["cowkit image create (same tree again, --rehash)"].append(t)
        sh("sync")
        before = used(m)
        t, _ = timed(["mkfs.erofs", "--quiet", erofs, a.tree])
        rows["mkfs.erofs"].append(t)
        sh("sync")
        erofs_disk = used(m) - before
        before = used(m)
        t, _ = timed(["cp", "-a", "--reflink=always", a.tree, copy])
        rows["cp -a --reflink=always"].append(t)
        sh("sync")
        print("round %d: %s" % (r + 1, {k: round(v[-1], 3) for k, v in rows.items()}), file=sys.stderr)
    entries = summary["entries"]
    return {"entries": entries, "summary": summary, "erofs_bytes": os.path.getsize(erofs),
            "medians": {k: statistics.median(v) for k, v in rows.items()}, "runs": rows}


def digests(d):
    """{sha256: size} of the regular files below d."""
    out = {}
    for p in files_under(d):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h.update(b)
        out[h.hexdigest()] = os.path.getsize(p)
    return out


def part_sharing(a):
    m = a.mount
    base = os.path.join(m, "bench-releases")
    shutil.rmtree(base, ignore_errors=True)
    wheels = sorted(glob.glob(os.path.join(a.wheels, "numpy-1.26.*.whl")))
    trees, reflinked = [], []
    for w in wheels:
        v = os.path.basename(w).split("-")[1]
        d = os.path.join(base, "plain", v)
        zipfile.ZipFile(w).extractall(d)
        trees.append(d)
        r = os.path.join(base, "reflinked", v)
        os.makedirs(os.path.dirname(r), exist_ok=True)
        sh("cp", "-a", "--reflink=always", d, r)
        reflinked.append(r)
    sums = [digests(t) for t in trees]
    store = os.path.join(base, "store")
    for i, t in enumerate(trees):
        timed([a.cowkit, "image", "create", "r%d" % i, "--from", t, "--store", store])
    out = []
    for n in (2, 5):
        mnts = []
        for i in range(n):
            mp = os.path.join(base, "mnt", "r%d" % i)
            os.makedirs(mp, exist_ok=True)
            timed([a.cowkit, "image", "mount", "r%d" % i, mp, "--store", store])
            mnts.append(mp)
        distinct = {}
        for s_ in sums[:n]:
            distinct.update(s_)
        new_in_second = sum(sz for h, sz in sums[1].items() if h not in sums[0])
        res = {}
        for kind, dirs, cached_over in (("images", mnts, [os.path.join(store, "objects")]),
                                        ("plain trees", trees[:n], trees[:n]),
                                        ("reflinked copies", reflinked[:n], reflinked[:n])):
            drop_caches()
            per_release = []
            size = 0
            for d in dirs:
                s0 = sectors_read(m)
                size += read_all(d)
                per_release.append(sectors_read(m) - s0)
            res[kind] = {"bytes_of_trees": size, "read_from_disk": sum(per_release),
                         "read_by_release": per_release,
                         "page_cache": sum(resident(d) for d in cached_over)}
        for mp in mnts:
            sh("umount", mp)
        objects = os.path.join(store, "objects")
        out.append({"n": n, "releases": [os.path.basename(t) for t in trees[:n]], **res,
                    "distinct_bytes": sum(distinct.values()), "second_release_new_bytes": new_in_second,
                    "disk_objects_all_5": du(objects) if n == 5 else None,
                    "disk_trees": sum(du(t) for t in trees[:n])})
        print("N=%d: %s" % (n, res), file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    for k in ("cowkit", "mount", "tree", "wheels", "results"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    load0 = loadavg()
    imp = part_import(a)
    share = part_sharing(a)
    load1 = loadavg()
    date = datetime.date.today().isoformat()
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Content store and images, %s" % date, "",
        "`bench/store-images.sh` on loop XFS (reflink=1); %d CPUs, kernel %s; load average %s at start, %s "
        "at end; cowkit %s; %d rounds, medians." % (os.cpu_count(), os.uname().release, " ".join(load0),
                                                    " ".join(load1), commit, a.rounds),
        "", "## Import of the bench/tree-clone.sh tree (%d entries)" % imp["entries"], "",
        "| method | seconds |", "|---|---|",
    ]
    for k, v in imp["medians"].items():
        lines.append("| %s | %.3f |" % (k, v))
    s = imp["summary"]
    lines += ["", "New store: %d files, %d new objects, %d reused, bytes by method %s. The EROFS image of "
              "mkfs.erofs holds the data (%s); cowkit's image holds metadata only (its objects are "
              "clones)." % (s["files"], s["objects_new"], s["objects_reused"], s["bytes_by_method"],
                            mib(imp["erofs_bytes"])), "",
              "## N releases of numpy (1.26.0 … 1.26.4), every file read after dropping caches", "",
              "| N | as | bytes of the trees | distinct contents | page cache | page cache / distinct | "
              "read from disk | of which release 2 | release 2's new content |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in share:
        for kind in ("images", "plain trees", "reflinked copies"):
            x = r[kind]
            lines.append("| %d | %s | %s | %s | %s | %.3f | %s | %s | %s |" % (
                r["n"], kind, mib(x["bytes_of_trees"]), mib(r["distinct_bytes"]), mib(x["page_cache"]),
                x["page_cache"] / r["distinct_bytes"], mib(x["read_from_disk"]), mib(x["read_by_release"][1]),
                mib(r["second_release_new_bytes"])))
    five = share[-1]
    lines += ["", "Disk: the objects of all 5 releases take %s; the 5 plain trees %s (reflinked copies share "
              "the plain trees' blocks)." % (mib(five["disk_objects_all_5"]), mib(five["disk_trees"])),
              "", "Page cache: fincore over the files read (the store's objects for images, the trees or copies "
              "otherwise). Distinct contents: the sizes of the different SHA-256 digests among the releases' "
              "files. Release 2 read from disk: the sectors read while its files were read, right after "
              "release 1's; its new content: files whose digest release 1 does not have."]
    stem = os.path.join(a.results, "%s-store-images" % date)
    write_results(stem, {"import": imp, "sharing": share, "loadavg": [load0, load1], "commit": commit},
                  "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
