"""The test list of VersityGW's suite as scripts/s3-conformance.sh runs it,
read from the suite's tests/integration/group-tests.go; shared by that
script and scripts/s3-conformance-compare.py.

    python3 scripts/s3_conformance_suite.py GROUP_TESTS_GO   # prints the list
"""
import re
import sys


def group_bodies(src):
    """Each `func TestX(ts *TestState)` group's body, by name."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r'^func (\w+)\(ts \*TestState\) \{\n(.*?)^\}', src, re.S | re.M)}


def full_flow(funcs):
    """The tests TestFullFlow runs, in order, without the branches taken
    only with --versioning-enabled or --azure-test-mode: those it starts
    with `ts.Run` and those with `ts.Sync` (run alone, after the parallel
    ones, in the suite's own parallel mode; here every test runs alone)."""
    seen, out, walked = set(), [], set()

    def walk(name):
        if name in walked:
            return
        walked.add(name)
        skip = 0
        for line in funcs.get(name, "").splitlines():
            s = line.strip()
            if skip:
                skip += s.count("{") - s.count("}")
                continue
            if re.match(r'if ts\.conf\.(versioningEnabled|azureTests)\b', s):
                skip = 1
                continue
            m = re.match(r'ts\.(?:Run|Sync)\((\w+)\)', s)
            if m and m.group(1) not in seen:
                seen.add(m.group(1))
                out.append(m.group(1))
            m = re.match(r'(Test\w+)\(ts\)', s)
            if m:
                walk(m.group(1))

    walk("TestFullFlow")
    return out


def test_list(src):
    """full-flow's tests plus the suite's other multipart tests (the issue
    counts all 128), only names `versitygw test NAME` knows."""
    out = full_flow(group_bodies(src))
    seen = set(out)
    runnable = re.findall(r'^\s*"(\w+)":', src[src.index("func GetIntTests()"):], re.M)
    for t in runnable:
        if re.search(r"Multipart|UploadPart|ListParts", t) and t not in seen:
            seen.add(t)
            out.append(t)
    known = set(runnable)
    return [t for t in out if t in known]


if __name__ == "__main__":
    print("\n".join(test_list(open(sys.argv[1]).read())))
