"""Driver of bench/s3-complete-vs.sh: cowkit s3 serve and VersityGW's posix
gateway side by side on one XFS, in rotating order: the time a client waits
for CompleteMultipartUpload of N parts, a GET of the object, and a PutObject
that replaces an object in a versioned bucket (the old bytes kept as a
version) against one in a plain bucket. Writes YYYY-MM-DD-s3-complete-vs.{md,json}."""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import socket
import statistics
import subprocess
import time

import boto3
from botocore.config import Config

from benchlib import loadavg

MiB = 1 << 20
AK, SK = "benchak", "bench-secret-key"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    """One gateway over its own directory of the XFS, with a versioned
    bucket and a plain one."""

    def __init__(self, kind, exe, root, log):
        self.kind = kind
        os.makedirs(root, exist_ok=True)
        port = free_port()
        if kind == "cowkit":
            argv = [exe, "s3", "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
                    "--access-key", AK, "--secret-key", SK]
        else:
            vdir = root + ".versions"
            os.makedirs(vdir, exist_ok=True)
            argv = [exe, "-a", AK, "-s", SK, "-p", f"127.0.0.1:{port}", "--iam-dir", root,
                    "posix", "--versioning-dir", vdir, root]
        self.proc = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{kind} did not start; see {log}")
                time.sleep(0.1)
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=AK,
                               aws_secret_access_key=SK, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}, max_pool_connections=8,
                                             read_timeout=3600, retries={"max_attempts": 1}))
        self.s3.create_bucket(Bucket="plain")
        self.s3.create_bucket(Bucket="versioned")
        self.s3.put_bucket_versioning(Bucket="versioned",
                                      VersioningConfiguration={"Status": "Enabled"})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def complete(gw, buf, nparts, part, n):
    """Seconds the client waits for the complete, and for a GET of the
    object (read whole, warm)."""
    s3, key = gw.s3, f"mp-{n}"
    uid = s3.create_multipart_upload(Bucket="plain", Key=key)["UploadId"]

    def up(i):
        off = ((i * 7919) % 16) * MiB
        return s3.upload_part(Bucket="plain", Key=key, UploadId=uid, PartNumber=i,
                              Body=buf[off:off + part])["ETag"]

    with cf.ThreadPoolExecutor(4) as ex:
        etags = list(ex.map(up, range(1, nparts + 1)))
    parts = [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]
    os.sync()
    t0 = time.monotonic()
    s3.complete_multipart_upload(Bucket="plain", Key=key, UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    t_complete = time.monotonic() - t0
    t0 = time.monotonic()
    body, got = s3.get_object(Bucket="plain", Key=key)["Body"], 0
    while True:
        chunk = body.read(8 * MiB)
        if not chunk:
            break
        got += len(chunk)
    t_get = time.monotonic() - t0
    assert got == nparts * part, (gw.kind, got)
    s3.delete_object(Bucket="plain", Key=key)
    time.sleep(2)  # let the part files go (cowkit removes them after answering)
    os.sync()
    return t_complete, t_get


def puts(gw, buf, size, count):
    """Median seconds of a PutObject replacing an object, in the plain and
    in the versioned bucket (each key written `count` times)."""
    out = {}
    for bucket in ("plain", "versioned"):
        times = []
        for i in range(count):
            off = (i % 16) * MiB
            t0 = time.monotonic()
            gw.s3.put_object(Bucket=bucket, Key="obj", Body=buf[off:off + size])
            times.append(time.monotonic() - t0)
        out[bucket] = statistics.median(times[1:])  # the first one replaces nothing
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--versitygw", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parts", type=int, default=820)
    ap.add_argument("--part-mib", type=int, default=5)
    ap.add_argument("--put-mib", type=int, default=64)
    ap.add_argument("--puts", type=int, default=9)
    a = ap.parse_args()
    part = a.part_mib * MiB
    buf = os.urandom(max(part, a.put_mib * MiB) + 16 * MiB)
    load0 = loadavg()
    exes = {"cowkit": a.cowkit, "versitygw": a.versitygw}
    gws = {k: Gateway(k, exe, f"{a.mount}/{k}", f"{a.mount}/{k}.log") for k, exe in exes.items()}
    rows = {k: {"complete": [], "get": [], "put_plain": [], "put_versioned": []} for k in gws}
    try:
        for r in range(a.rounds):
            order = list(gws) if r % 2 == 0 else list(reversed(gws))
            for k in order:
                tc, tg = complete(gws[k], buf, a.parts, part, r)
                p = puts(gws[k], buf, a.put_mib * MiB, a.puts)
                rows[k]["complete"].append(tc)
                rows[k]["get"].append(tg)
                rows[k]["put_plain"].append(p["plain"])
                rows[k]["put_versioned"].append(p["versioned"])
                print(f"round {r + 1} {k}: complete {tc:.3f} s, get {tg:.3f} s, "
                      f"put {p['plain'] * 1e3:.1f} ms, versioned put {p['versioned'] * 1e3:.1f} ms",
                      flush=True)
    finally:
        for g in gws.values():
            g.stop()
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in rows.items()}
    day = datetime.date.today().isoformat()
    size_gib = a.parts * a.part_mib / 1024
    c, v = med["cowkit"], med["versitygw"]
    lines = [
        f"# CompleteMultipartUpload, GET and versioned PUT: cowkit against VersityGW ({day})", "",
        f"Machine: {os.uname().release}; {os.cpu_count()} CPUs; load before/after "
        f"{' '.join(load0)} / {' '.join(loadavg())}.",
        f"Both gateways on one loop-mounted reflink XFS, each over its own directory; VersityGW "
        f"`posix --versioning-dir`; {a.rounds} rounds in alternating order; medians in seconds. "
        f"The complete: {a.parts} parts of {a.part_mib} MiB ({size_gib:.1f} GiB), parts synced "
        f"first, the time the client waits for the answer. GET: the whole object read warm. PUT: "
        f"{a.put_mib} MiB replacing an object, median of {a.puts - 1} per round, in a plain and a "
        f"versioned bucket.", "",
        "| measure | cowkit | VersityGW | VersityGW ÷ cowkit |",
        "|---|---|---|---|",
    ]
    for m, name in (("complete", f"complete, {a.parts} parts"), ("get", "GET of the object"),
                    ("put_plain", "PUT, plain bucket"), ("put_versioned", "PUT, versioned bucket")):
        lines.append(f"| {name} | {c[m]:.3f} | {v[m]:.3f} | {v[m] / c[m]:.2f} |")
    lines += ["", f"Versioned PUT ÷ plain PUT: cowkit {c['put_versioned'] / c['put_plain']:.2f}, "
              f"VersityGW {v['put_versioned'] / v['put_plain']:.2f}.", ""]
    base = os.path.join(a.results, f"{day}-s3-complete-vs")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines))
    with open(base + ".json", "w") as f:
        json.dump({"rows": rows, "medians": med, "args": vars(a)}, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
