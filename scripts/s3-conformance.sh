#!/usr/bin/env bash
# VersityGW's S3 conformance suite against a freshly started `cowkit s3 serve`
# (or, with -g versitygw, against VersityGW itself: the reference).
#
#   scripts/s3-conformance.sh [-g cowkit|versitygw] [-o OUT] [-j JOBS] [TEST...]
#
# Installs `versitygw` v1.8.0 on demand (`go install`, Go from /usr/local/go/bin
# or PATH), builds cowkit (or takes COWKIT_BIN), starts `cowkit s3 serve` on the
# rig's scratch XFS (re-running itself under scripts/rig.sh when
# COWKIT_TEST_XFS is not set), and runs `versitygw test ... <TestName>` once
# per test: each test alone, so one test's leftovers cannot fail the next.
# Without TEST arguments: every test that `versitygw test full-flow` runs.
# -g versitygw serves each test with `versitygw posix` instead, started as
# VersityGW's own CI (runtests.sh) starts it for its plain full-flow run
# (internal IAM in the served directory; no versioning, no
# --data-integrity-etag), so the same harness and test list measure the
# reference on itself.
#
# Writes OUT.md (summary: totals overall, on the operations cowkit
# implements, on the multipart tests; failures grouped by operation with the
# suite's error line) and OUT.tsv (test, PASS/FAIL, operation, first error
# line). Default OUT: bench/results/DATE-s3-conformance. Per-test logs (the
# suite's output and the server's access log) go to $S3_CONFORMANCE_LOGS or a
# new /tmp/s3-conformance-logs.* directory. Takes ~10 minutes with -j 2; not
# part of CI.
set -euo pipefail

VGW_VERSION=v1.8.0
AK=cowkit-conformance-ak
SK=cowkit-conformance-secret-key
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT="$REPO/bench/results/$(date -u +%F)-s3-conformance"
JOBS=1
GATEWAY=cowkit
while getopts "g:o:j:h" opt; do
  case $opt in
    g) GATEWAY=$OPTARG ;;
    o) OUT=$(realpath -m "$OPTARG") ;;
    j) JOBS=$OPTARG ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
case $GATEWAY in
  cowkit | versitygw) ;;
  *) echo "s3-conformance: -g takes cowkit or versitygw, not $GATEWAY" >&2; exit 2 ;;
esac

if [ -z "${COWKIT_TEST_XFS:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    exec bash "$REPO/scripts/rig.sh" bash "$0" -g "$GATEWAY" -o "$OUT" -j "$JOBS" "$@"
  fi
  echo "s3-conformance: not root and COWKIT_TEST_XFS unset: serving from a temporary directory" >&2
fi

export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
unset AWS_CA_BUNDLE AWS_PROFILE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN

VGW=$(command -v versitygw || true)
if [ -z "$VGW" ] || ! go version -m "$VGW" | grep -q "github.com/versity/versitygw[[:space:]]*$VGW_VERSION"; then
  echo "s3-conformance: installing versitygw $VGW_VERSION (go install)" >&2
  GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION"
fi
# The suite runs `./versitygw` (its admin commands: users, bucket owners)
# from its working directory; each test runs in a directory where that is
# this binary.
VGW=$(command -v versitygw)
GROUPS_GO="$(go env GOMODCACHE)/github.com/versity/versitygw@$VGW_VERSION/tests/integration/group-tests.go"
if [ ! -f "$GROUPS_GO" ]; then
  GOFLAGS=-mod=mod go mod download "github.com/versity/versitygw@$VGW_VERSION"
fi

# The reference needs no cowkit binary.
if [ "$GATEWAY" = cowkit ] && [ -z "${COWKIT_BIN:-}" ]; then
  (cd "$REPO" && cargo build -q -p cowkit)
  COWKIT_BIN="$REPO/target/debug/cowkit"
fi
# The reference's command line, as VersityGW's runtests.sh starts the gateway
# for `full-flow` over http: root credentials, the internal IAM (users.json)
# in the served directory itself (its CI passes the same directory to
# --iam-dir and posix) so the suite's admin API calls (users, bucket owners)
# work, default ACLs, no --versioning-dir, no --data-integrity-etag, no
# sidecar. ROOT and PORT are filled in per test.
VGW_SERVE='versitygw -a AK -s SK -p 127.0.0.1:PORT --iam-dir ROOT posix ROOT'

mkdir -p "$(dirname "$OUT")"
LOGS=${S3_CONFORMANCE_LOGS:-$(mktemp -d /tmp/s3-conformance-logs.XXXXXX)}
mkdir -p "$LOGS"

# The test list: every ts.Run(...) and ts.Sync(...) reachable from
# TestFullFlow (Sync: tests the suite runs after the parallel ones, such as
# the seven ListBuckets tests, which see every bucket), minus the
# branches taken only with --versioning-enabled or --azure-test-mode, plus
# the suite's other multipart tests.
if [ $# -gt 0 ]; then
  printf '%s\n' "$@" >"$LOGS/tests.txt"
else
  python3 "$REPO/scripts/s3_conformance_suite.py" "$GROUPS_GO" >"$LOGS/tests.txt"
fi

SERVE_DIR=$(mktemp -d "${COWKIT_TEST_XFS:-/tmp}/s3-conformance.XXXXXX")
trap 'rm -rf --one-file-system "$SERVE_DIR"' EXIT
if [ "$GATEWAY" = cowkit ]; then SERVER=$COWKIT_BIN; else SERVER="$VGW (reference: $VGW_SERVE)"; fi
echo "s3-conformance: $(wc -l <"$LOGS/tests.txt") tests against $SERVER on $(stat -f -c %T "$SERVE_DIR"), logs in $LOGS" >&2

# One server per test, on an empty directory: the suite names its buckets
# test-bucket-1, -2, ... in every run, so one test's leftovers would fail the
# tests after it.
run_one() {
  local t=$1 dir="$SERVE_DIR/$1" pid endpoint port cmd
  mkdir -p "$dir/root"
  ln -s "$VGW" "$dir/versitygw"
  if [ "$GATEWAY" = cowkit ]; then
    # The suite's full-flow run models VersityGW started without
    # versioning, whose object-lock buckets are not versioned: the same
    # here (S3, and cowkit by default, version them).
    "$COWKIT_BIN" s3 serve --root "$dir/root" --listen 127.0.0.1:0 --json \
      --object-lock-without-versioning \
      --access-key "$AK" --secret-key "$SK" >"$dir/serve.out" 2>"$LOGS/$t.server.log" &
    pid=$!
    for _ in $(seq 200); do
      grep -q listening "$dir/serve.out" 2>/dev/null && break
      sleep 0.05
    done
    endpoint=$(sed -n 's/.*"endpoint":"\([^"]*\)".*/\1/p' "$dir/serve.out" | head -1)
  else
    # versitygw cannot listen on port 0 and tell us the port: take one the
    # kernel hands out free (a small race with the other job, which would
    # show as a bind error in the server log), then wait until it accepts.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # VGW_SERVE filled in: ROOT after the others, as test names are in it.
    cmd=${VGW_SERVE/AK/$AK}
    cmd=${cmd/SK/$SK}
    cmd=${cmd/PORT/$port}
    cmd=${cmd//ROOT/$dir/root}
    # Request log on stdout as in its CI (no --quiet), into the server log.
    ${cmd/#versitygw/$VGW} >"$LOGS/$t.server.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    endpoint="http://127.0.0.1:$port"
  fi
  if (cd "$dir" && timeout 120 ./versitygw test -a "$AK" -s "$SK" -e "$endpoint" "$t") >"$LOGS/$t.log" 2>&1; then
    echo "$t PASS"
  else
    echo "$t FAIL"
  fi
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  rm -rf --one-file-system "$dir"
}
export -f run_one
export AK SK LOGS COWKIT_BIN SERVE_DIR VGW GATEWAY VGW_SERVE
xargs -P "$JOBS" -I{} bash -c 'run_one {}' <"$LOGS/tests.txt" >"$LOGS/results.txt"

COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$LOGS" "$OUT" "$COMMIT" "$VGW_VERSION" "$(dirname "$GROUPS_GO")" "$GATEWAY" "$VGW_SERVE" <<'EOF'
import os, re, sys, collections, datetime
logs, out, commit, vgw, suite, gateway, vgw_serve = sys.argv[1:8]
order = [l.strip() for l in open(os.path.join(logs, "tests.txt")) if l.strip()]
res = dict(l.split() for l in open(os.path.join(logs, "results.txt")) if l.strip())

# Operations `cowkit s3 serve` implements (test name prefixes), and the
# multipart tests (the issue's 128).
IMPLEMENTED = """Authentication PresignedAuth CreateBucket HeadBucket ListBuckets DeleteBucket
GetBucketLocation PutObject HeadObject GetObjectAttributes GetObject ListObjects ListObjectsV2
ListObjectVersions DeleteObject DeleteObjects CopyObject CreateMultipartUpload UploadPart
UploadPartCopy ListParts ListMultipartUploads AbortMultipartUpload CompleteMultipartUpload
CompletedMultipartUpload UnsignedStreamingPayloadTrailer UnsignedStreaminPayloadTrailer
SignedStreamingPayload SignedStreamingPayloadTrailer Server PutObjectTagging GetObjectTagging
DeleteObjectTagging PutBucketTagging GetBucketTagging DeleteBucketTagging""".split()
# Operations added in round 3: earlier runs counted the set without them.
ROUND3 = set("""PutObjectTagging GetObjectTagging DeleteObjectTagging PutBucketTagging
GetBucketTagging DeleteBucketTagging""".split())
MULTIPART = re.compile(r"Multipart|UploadPart|ListParts")
def op(t):
    if t.startswith("Router"):
        return "Router"
    return t.split("_", 1)[0]

def reason(t):
    try:
        text = open(os.path.join(logs, t + ".log"), errors="replace").read()
    except OSError:
        return ""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    # Not the suite's RUN line: test names hold "expected" or "fail" too.
    lines = [l for l in lines if not re.search(r"RUN\s", l[:16])]
    for l in lines:
        if re.search(r"FAIL|fail|error|expected", l) and "PASS" not in l:
            return re.sub(r"\s+", " ", l)[:300]
    return (lines[-1] if lines else "no output")[:300]

def server_log(t):
    try:
        return open(os.path.join(logs, t + ".server.log"), errors="replace").read()
    except OSError:
        return ""

# The suite's admin API (users, bucket owners), which `./versitygw admin`
# calls on the endpoint (answered 501 before cowkit had accounts).
ADMIN = re.compile(r'"method":"(\w+)"[^\n]*"path":"/(create-user|delete-user|update-user|'
                   r'list-users|change-bucket-owner|list-buckets)"[^\n]*"status":(\d+)')

def reason_of(t):
    r = reason(t)
    m = ADMIN.search(server_log(t))
    if m and re.search(r"exit status", r):
        r += f" (the suite's admin API: {m.group(1)} /{m.group(2)} answered {m.group(3)})"
    return r

# Each test's Go source, to tell which features it uses.
bodies = {}
for f in os.listdir(suite):
    if f.endswith(".go"):
        src = open(os.path.join(suite, f), errors="replace").read()
        for m in re.finditer(r"^func (\w+)\(s \*S3Conf\) error \{\n(.*?)(?=^func )", src + "\nfunc ",
                             re.S | re.M):
            bodies[m.group(1)] = m.group(2)

# A failing test is out of scope when it uses a feature cowkit leaves out by
# design and failed where that feature was asked for (the admin API called,
# or NotImplemented in its error line).
FEATURES = [
    ("IAM/users (the suite's admin API)", None),
    ("object lock", re.compile(r"withLock\(|ObjectLockEnabledForBucket|ObjectLockLegalHold|ObjectLockMode")),
    ("versioning", re.compile(r"withVersioning\(|PutBucketVersioning")),
    ("bucket policy", re.compile(r"BucketPolicy")),
    ("ACLs", re.compile(r"GetBucketAcl|PutBucketAcl|\bACL:|Grant\w+:")),
]

def out_of_scope(t, st, r):
    if st == "PASS":
        return None
    if any(m.group(3) == "501" for m in ADMIN.finditer(server_log(t))):
        return FEATURES[0][0]
    if "NotImplemented" not in r:
        return None
    body = bodies.get(t, "")
    for name, pat in FEATURES[1:]:
        if pat.search(body):
            return name
    return None

rows = []
for t in order:
    st = res.get(t, "FAIL")
    rows.append((t, st, op(t), "" if st == "PASS" else reason_of(t)))
excluded = collections.OrderedDict()
for t, st, o, r in rows:
    # Features cowkit leaves out say nothing about the reference.
    why = out_of_scope(t, st, r) if o in IMPLEMENTED and gateway == "cowkit" else None
    if why:
        excluded[t] = why
with open(out + ".tsv", "w") as f:
    f.write("test\tresult\toperation\treason\n")
    for r in rows:
        f.write("\t".join(x.replace("\t", " ") for x in r) + "\n")

def tally(sel):
    n = [r for r in rows if sel(r[0])]
    return sum(r[1] == "PASS" for r in n), len(n)
def pct(p, n):
    return f"{p}/{n} ({100.0 * p / n:.1f} %)" if n else "0/0"
allp = tally(lambda t: True)
impl = tally(lambda t: op(t) in IMPLEMENTED)
impl2 = tally(lambda t: op(t) in IMPLEMENTED and op(t) not in ROUND3)
mp = tally(lambda t: MULTIPART.search(t) is not None)
impl_in_scope = tally(lambda t: op(t) in IMPLEMENTED and t not in excluded)

by_op = collections.OrderedDict()
for r in rows:
    by_op.setdefault(r[2], []).append(r)
with open(out + ".md", "w") as f:
    if gateway == "cowkit":
        f.write(f"# S3 conformance: versitygw {vgw} suite against cowkit s3 serve\n\n")
        f.write(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, cowkit {commit}, "
                f"`scripts/s3-conformance.sh` (each test run alone against one server on a loop XFS; "
                f"{os.cpu_count()} CPUs).\n\n")
    else:
        f.write(f"# S3 conformance: versitygw {vgw} suite against VersityGW {vgw} itself (the reference)\n\n")
        f.write(f"Gateway measured: VersityGW {vgw} (posix backend), not cowkit. "
                f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
                f"`scripts/s3-conformance.sh -g versitygw` at cowkit {commit} (each test run alone "
                f"against one server on a loop XFS; {os.cpu_count()} CPUs), the same test list as "
                f"the cowkit runs.\n\n")
        f.write(f"Server per test: `{vgw_serve}`, the options VersityGW's own CI (`runtests.sh`) "
                f"uses for its plain posix `full-flow` run over http: internal IAM in the served "
                f"directory (so the suite's admin API works), no `--versioning-dir`, no "
                f"`--data-integrity-etag`, no `--sidecar`, ACLs on (no `--noacl`).\n\n")
    f.write("| set | passed |\n|---|---:|\n")
    f.write(f"| all tests run (`full-flow`'s and the suite's other multipart tests) | {pct(*allp)} |\n")
    f.write(f"| tests of the operations cowkit implements | {pct(*impl)} |\n")
    f.write(f"| the same without the tagging operations (the set rounds 1 and 2 counted) | {pct(*impl2)} |\n")
    f.write(f"| multipart tests (`Multipart`, `UploadPart`, `ListParts` in the name) | {pct(*mp)} |\n")
    if gateway == "cowkit":
        f.write(f"| tests of the implemented operations, without the {len(excluded)} that need a feature "
                f"left out by design (listed below) | {pct(*impl_in_scope)} |\n\n")
        f.write("Implemented operations counted: " + ", ".join(IMPLEMENTED) + ".\n\n")
        f.write("Tests of the implemented operations left out of the last row: each uses a feature "
                "cowkit leaves out by design (its Go source asks for it) and failed where it asked "
                "(`NotImplemented` in its error line, or the suite's admin API called):\n\n")
        by_why = collections.OrderedDict()
        for t, why in excluded.items():
            by_why.setdefault(why, []).append(t)
        for why, ts in by_why.items():
            f.write(f"- {why} ({len(ts)}): " + ", ".join(f"`{t}`" for t in ts) + "\n")
        f.write("\n")
    else:
        f.write("\nOperations counted in the second and third rows (the ones cowkit implements, "
                "for comparison with the cowkit runs): " + ", ".join(IMPLEMENTED) + ".\n\n")
    f.write("## Per operation\n\n| operation | passed | failed |\n|---|---:|---:|\n")
    for o, rs in by_op.items():
        p = sum(r[1] == "PASS" for r in rs)
        mark = "" if o in IMPLEMENTED else (" (not implemented)" if gateway == "cowkit"
                                            else " (not implemented by cowkit)")
        f.write(f"| {o}{mark} | {p} | {len(rs) - p} |\n")
    f.write("\n## Failures\n\n")
    for o, rs in by_op.items():
        fails = [r for r in rs if r[1] != "PASS"]
        if not fails:
            continue
        f.write(f"### {o}\n\n")
        for r in fails:
            f.write(f"- `{r[0]}`: {r[3]}\n")
        f.write("\n")
if gateway == "cowkit":
    print(f"all: {pct(*allp)}; implemented operations: {pct(*impl)} "
          f"(without tagging: {pct(*impl2)}); multipart: {pct(*mp)}; "
          f"implemented operations without {len(excluded)} out-of-scope tests: {pct(*impl_in_scope)}")
else:
    print(f"reference VersityGW {vgw}: all: {pct(*allp)}; operations cowkit implements: {pct(*impl)} "
          f"(without tagging: {pct(*impl2)}); multipart: {pct(*mp)}")
print(f"summary: {out}.md, {out}.tsv")
EOF
