#!/usr/bin/env python3
"""Compare two scripts/s3-conformance.sh runs: the reference's and cowkit's.

    scripts/s3-conformance-compare.py REFERENCE.tsv COWKIT.tsv [-o OUT.md]

REFERENCE.tsv from `scripts/s3-conformance.sh -g versitygw`, COWKIT.tsv from
the default run, on the same test list. Writes (to OUT.md or stdout): the
counts per set for both, the tests the reference fails (with its error line
and the suite group that runs the test), and the tests the reference passes
but cowkit fails (with cowkit's error line and, from COWKIT.md next to the
tsv, cowkit's "left out by design" grouping where it has one).

The sets are the ones in s3-conformance.sh's summary; their definitions are
read from that script, so the two cannot drift apart.
"""
import argparse, collections, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import s3_conformance_suite as suite  # noqa: E402
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def script_src():
    return open(os.path.join(HERE, "s3-conformance.sh")).read()


def suite_version():
    # The suite version the runs used, as the script pins it.
    m = re.search(r"^VGW_VERSION=(\S+)$", script_src(), re.M)
    if not m:
        sys.exit("s3-conformance-compare: VGW_VERSION not found in s3-conformance.sh")
    return m.group(1)


def sets_from_script():
    # The summary's IMPLEMENTED list and MULTIPART pattern, as the script has them.
    src = script_src()
    impl = re.search(r'^IMPLEMENTED = """(.*?)"""', src, re.S | re.M)
    mp = re.search(r'^MULTIPART = re\.compile\(r"([^"]*)"\)', src, re.M)
    if not impl or not mp:
        sys.exit("s3-conformance-compare: IMPLEMENTED or MULTIPART not found in s3-conformance.sh")
    return set(impl.group(1).split()), re.compile(mp.group(1))


def read_tsv(path):
    rows = collections.OrderedDict()
    with open(path, errors="replace") as f:
        next(f)
        for line in f:
            t, st, op, reason = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            rows[t] = (st, op, clean(t, reason))
    return rows


def clean(t, reason):
    # The suite's colour codes and its "FAIL <test>:" prefix say nothing.
    r = ANSI.sub("", reason).strip()
    r = re.sub(r"^FAIL\s+" + re.escape(t) + r":\s*", "", r)
    return r.replace("|", "\\|")


def md_head(path):
    # The run's title and provenance line (date, commit) from OUT.md.
    try:
        lines = [l.strip() for l in open(path, errors="replace") if l.strip()]
    except OSError:
        return None, None
    return (lines[0].lstrip("# ") if lines else None), (lines[1] if len(lines) > 1 else None)


def out_of_scope(path):
    # cowkit's .md: "- <feature> (<n>): `t1`, `t2`" before "## Per operation".
    groups = {}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return groups
    text = text.split("## Per operation")[0]
    for m in re.finditer(r"^- (.+?) \(\d+\): (.*)$", text, re.M):
        for t in re.findall(r"`(\w+)`", m.group(2)):
            groups[t] = m.group(1)
    return groups


def suite_groups():
    # Which group function of the suite runs each test: the tests the cowkit
    # list adds beyond full-flow come from groups that need another gateway
    # configuration (versioning, data-integrity ETags, posix specifics).
    try:
        modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                                  env=dict(os.environ, PATH=os.environ.get("PATH", "") +
                                           ":/usr/local/go/bin")).stdout.strip()
    except OSError:
        return {}
    path = os.path.join(modcache, f"github.com/versity/versitygw@{suite_version()}/tests/integration/group-tests.go")
    try:
        src = open(path).read()
    except OSError:
        return {}
    funcs = suite.group_bodies(src)
    full = set(suite.full_flow(funcs))
    groups = collections.defaultdict(list)
    for f, body in funcs.items():
        for t in re.findall(r'ts\.Run\((\w+)\)', body):
            groups[t].append(f)
    return {t: ("full-flow (" + ", ".join(fs) + ")" if t in full else ", ".join(fs))
            for t, fs in groups.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference")
    ap.add_argument("cowkit")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    implemented, multipart = sets_from_script()
    ref, cow = read_tsv(a.reference), read_tsv(a.cowkit)
    if list(ref) != list(cow):
        only = set(ref) ^ set(cow)
        sys.exit(f"s3-conformance-compare: the two runs have different test lists ({len(only)} differ)")
    scope = out_of_scope(re.sub(r"\.tsv$", ".md", a.cowkit))
    groups = suite_groups()
    tests = list(ref)
    is_impl = lambda t: ref[t][1] in implemented
    is_mp = lambda t: multipart.search(t) is not None

    out = []
    w = out.append
    w("# S3 conformance: the reference (VersityGW) against cowkit, per test\n")
    w(f"Generated by `scripts/s3-conformance-compare.py {os.path.relpath(a.reference)} "
      f"{os.path.relpath(a.cowkit)}`: the same {len(tests)} tests of the versitygw {suite_version()} suite, "
      "each run alone against a fresh server by `scripts/s3-conformance.sh`.\n")
    for label, path in (("Reference", a.reference), ("cowkit", a.cowkit)):
        title, prov = md_head(re.sub(r"\.tsv$", ".md", path))
        if title:
            w(f"- {label}: {title}. {prov}")
    w("")

    def pct(p, n):
        return f"{p}/{n} ({100.0 * p / n:.1f} %)" if n else "0/0"
    def tally(rows, sel):
        n = [t for t in tests if sel(t)]
        return pct(sum(rows[t][0] == "PASS" for t in n), len(n))
    w("| set | reference (VersityGW) | cowkit |\n|---|---:|---:|")
    for name, sel in (("all tests run", lambda t: True),
                      ("tests of the operations cowkit implements", is_impl),
                      ("multipart tests (`Multipart`, `UploadPart`, `ListParts` in the name)", is_mp),
                      ("multipart tests of the operations cowkit implements",
                       lambda t: is_mp(t) and is_impl(t)),
                      # The list's part that `versitygw test full-flow` runs on a
                      # gateway without versioning; the rest needs other gateway options.
                      ("tests `full-flow` runs (without its versioning branches)",
                       lambda t: groups.get(t, "").startswith("full-flow"))):
        w(f"| {name} | {tally(ref, sel)} | {tally(cow, sel)} |")
    w("")
    both = collections.Counter((ref[t][0], cow[t][0]) for t in tests)
    w(f"Per test: both pass {both[('PASS', 'PASS')]}, reference only {both[('PASS', 'FAIL')]}, "
      f"cowkit only {both[('FAIL', 'PASS')]}, both fail {both[('FAIL', 'FAIL')]}.\n")

    def line(t, rows, extra=""):
        tags = [ref[t][1]] + (["multipart"] if is_mp(t) else [])
        return f"- `{t}` ({', '.join(tags)}{extra}): {rows[t][2] or 'no error line'}"

    fails = [t for t in tests if ref[t][0] != "PASS"]
    w(f"## Tests the reference fails ({len(fails)})\n")
    w("With the reference's error line; in parentheses the operation, the suite group "
      "(group-tests.go) that runs the test, and cowkit's result.\n")
    for t in fails:
        w(line(t, ref, f"; {groups.get(t, 'group unknown')}; cowkit {cow[t][0]}"))
    w("")

    rp_cf = [t for t in tests if ref[t][0] == "PASS" and cow[t][0] != "PASS"]
    w(f"## Tests the reference passes and cowkit fails ({len(rp_cf)})\n")
    w("With cowkit's error line; in parentheses the operation and, where cowkit's run "
      "puts the test among those that need a feature cowkit leaves out by design, that "
      "feature.\n")
    sections = [
        ("Multipart tests", lambda t: is_mp(t)),
        ("Other tests of the operations cowkit implements", lambda t: is_impl(t) and not is_mp(t)),
    ]
    for title, sel in sections:
        ts = [t for t in rp_cf if sel(t)]
        w(f"### {title} ({len(ts)})\n")
        for t in ts:
            w(line(t, cow, f"; out of scope: {scope[t]}" if t in scope else ""))
        w("")
    rest = [t for t in rp_cf if not is_impl(t) and not is_mp(t)]
    ni = sum("NotImplemented" in cow[t][2] for t in rest)
    w(f"### Tests of operations cowkit does not implement ({len(rest)})\n")
    w(f"Names only, per operation; {ni} of the {len(rest)} error lines say `NotImplemented` "
      "(each error line is in the cowkit .tsv).\n")
    by_op = collections.OrderedDict()
    for t in rest:
        by_op.setdefault(ref[t][1], []).append(t)
    for op, ts in by_op.items():
        w(f"- {op} ({len(ts)}): " + ", ".join(f"`{t}`" for t in ts))
    w("")

    text = "\n".join(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
