#!/usr/bin/env python3
"""A fleet of `cowkit s3 serve` gateways on one shared filesystem, one gateway per mount.

Driver of bench/s3-fleet-glusterfs.sh (boto3 from the repository's .venv):

  s3_fleet_glusterfs.py --cowkit BIN --parts 64 --part-mib 5 MOUNT1 MOUNT2 [MOUNT3 ...]

Each MOUNT is a mount of the same volume; gateway i serves MOUNT_i/s3. It checks, and prints as
JSON lines:
  multipart  an upload made through one gateway, parts round-robin through all, completed through
             another; the complete's time and its access log line (bytes_cloned, bytes_copied,
             bytes_written); every gateway reads the object back (MD5 of the whole body)
  race       one upload completed through two gateways at once: both answers, same ETag
  overwrite  PutObject through gateway 1, then at once GetObject through gateway 2: stale reads
  during     GetObject through gateway 2 while gateway 1 overwrites the key in a loop: NoSuchKey
  versions   gateway 1 overwrites one key in a loop with self-identifying versions (a first line
             naming the version, its length and the SHA-256 of the rest; 1 KiB, 100 KiB and 3 MiB,
             so that bodies read whole, streamed in one chunk and in several go through), while
             every other gateway GETs and HEADs it (boto3 without retries): the answers by status,
             the 5xx, and every GET body checked to be one whole version (a body that ends short,
             a connection aborted mid-body, is counted apart; a body mixing versions or failing
             its hash is a failure)
"""
import argparse, concurrent.futures as cf, hashlib, json, os, subprocess, sys, threading, time
import boto3
from botocore.config import Config

AK, SK = "fleetkey", "fleetsecret-fleetsecret"
MiB = 1 << 20


class Gateway:
    def __init__(self, cowkit, root, log):
        os.makedirs(root, exist_ok=True)
        self.log_path = log
        self.proc = subprocess.Popen(
            [cowkit, "s3", "serve", "--root", root, "--listen", "127.0.0.1:0", "--json",
             "--access-key", AK, "--secret-key", SK],
            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        with open(log + ".pid", "w") as f:  # for the script's clean-up after a kill
            f.write(str(self.proc.pid))
        self.endpoint = json.loads(self.proc.stdout.readline())["endpoint"]
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=AK,
                               aws_secret_access_key=SK, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}, max_pool_connections=8,
                                             read_timeout=3600, retries={"total_max_attempts": 1}))

    def completes(self):
        with open(self.log_path) as f:
            return [json.loads(l[l.index("{"):]) for l in f if '"CompleteMultipartUpload"' in l]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def out(**kw):
    print(json.dumps(kw), flush=True)


def body_md5(gw, key):
    h = hashlib.md5()
    for chunk in gw.s3.get_object(Bucket="fleet", Key=key)["Body"].iter_chunks(MiB):
        h.update(chunk)
    return h.hexdigest()


def upload_parts(gws, key, nparts, part, buf):
    uid = gws[1 % len(gws)].s3.create_multipart_upload(Bucket="fleet", Key=key)["UploadId"]
    whole = hashlib.md5()
    bodies = []
    for i in range(1, nparts + 1):
        off = ((i * 7919) % 16) * MiB
        bodies.append(buf[off:off + part])
        whole.update(bodies[-1])

    def up(i):
        gw = gws[i % len(gws)]  # part i through gateway i mod n
        return gw.s3.upload_part(Bucket="fleet", Key=key, UploadId=uid, PartNumber=i,
                                 Body=bodies[i - 1])["ETag"]

    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(4) as ex:
        etags = list(ex.map(up, range(1, nparts + 1)))
    t_up = time.monotonic() - t0
    return uid, [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)], whole.hexdigest(), t_up


def multipart(gws, nparts, part, buf, rnd):
    key = f"mp/{nparts}x{part // MiB}-{rnd}"
    uid, parts, md5, t_up = upload_parts(gws, key, nparts, part, buf)
    done = gws[-1]
    n0 = len(done.completes())
    t0 = time.monotonic()
    r = done.s3.complete_multipart_upload(Bucket="fleet", Key=key, UploadId=uid,
                                          MultipartUpload={"Parts": parts})
    dt = time.monotonic() - t0
    logs = done.completes()[n0:]
    c = logs[-1] if logs else {}
    seen = [body_md5(gw, key) == md5 for gw in gws]
    heads = [gw.s3.head_object(Bucket="fleet", Key=key)["ETag"] == r["ETag"] for gw in gws]
    out(test="multipart", round=rnd, parts=nparts, part_mib=part // MiB, upload_s=round(t_up, 3),
        complete_s=round(dt, 3), etag=r["ETag"], every_gateway_reads_same_bytes=all(seen),
        every_gateway_heads_same_etag=all(heads),
        access_log={k: c.get(k) for k in ("bytes_cloned", "bytes_copied", "bytes_written",
                                           "unaligned_parts", "ms")})
    return all(seen) and all(heads)


def race(gws, nparts, part, buf, rnd):
    key = f"race/{rnd}"
    uid, parts, md5, _ = upload_parts(gws, key, nparts, part, buf)
    barrier = threading.Barrier(2)

    def comp(gw):
        barrier.wait()
        t0 = time.monotonic()
        try:
            r = gw.s3.complete_multipart_upload(Bucket="fleet", Key=key, UploadId=uid,
                                                MultipartUpload={"Parts": parts})
            return {"etag": r["ETag"], "s": round(time.monotonic() - t0, 3)}
        except Exception as e:  # an answer, reported as it came
            return {"error": str(e), "s": round(time.monotonic() - t0, 3)}

    with cf.ThreadPoolExecutor(2) as ex:
        rs = list(ex.map(comp, [gws[0], gws[1]]))
    ok = all("etag" in r for r in rs) and rs[0]["etag"] == rs[1]["etag"]
    seen = [body_md5(gw, key) == md5 for gw in gws]
    out(test="race", round=rnd, answers=rs, same_etag=ok, every_gateway_reads_same_bytes=all(seen))
    return ok and all(seen)


def overwrite(gws, rounds):
    stale, missing = 0, 0
    for i in range(rounds):
        body = f"version {i}".encode()
        gws[0].s3.put_object(Bucket="fleet", Key="ow", Body=body)
        try:
            got = gws[1].s3.get_object(Bucket="fleet", Key="ow")["Body"].read()
            stale += got != body
        except gws[1].s3.exceptions.NoSuchKey:
            missing += 1
    out(test="overwrite", rounds=rounds, stale_reads=stale, missing_reads=missing)
    return stale == 0 and missing == 0


def during(gws, seconds):
    """GetObject through gateway 2 while gateway 1 overwrites the key in a loop."""
    gws[0].s3.put_object(Bucket="fleet", Key="dur", Body=b"first")
    stop = time.monotonic() + seconds
    puts = [0]

    def writer():
        while time.monotonic() < stop:
            gws[0].s3.put_object(Bucket="fleet", Key="dur", Body=b"v%d" % puts[0])
            puts[0] += 1

    t = threading.Thread(target=writer)
    t.start()
    gets, missing, errors = 0, 0, {}
    while time.monotonic() < stop:
        try:
            gws[1].s3.get_object(Bucket="fleet", Key="dur")["Body"].read()
        except gws[1].s3.exceptions.NoSuchKey:
            missing += 1
        except Exception as e:  # counted by kind
            k = str(e)[:100]
            errors[k] = errors.get(k, 0) + 1
        gets += 1
    t.join()
    out(test="during", seconds=seconds, puts=puts[0], gets=gets, missing=missing, errors=errors)
    return missing == 0 and not errors


VERSION_SIZES = (1 << 10, 100 << 10, 3 * MiB)


def version_body(n):
    """Version n of the key: a first line naming it, then bytes made from n."""
    size = VERSION_SIZES[n % len(VERSION_SIZES)]
    seed = hashlib.sha256(b"%d" % n).digest()
    rest = (seed * (size // len(seed) + 1))[:size]
    head = b"cowkit-fleet-version %d %d %s\n" % (n, len(rest), hashlib.sha256(rest).hexdigest().encode())
    return head + rest


def version_of(body):
    """The version a GET body is, or None when it is not one whole version."""
    head, sep, rest = body.partition(b"\n")
    f = head.split(b" ")
    if not sep or len(f) != 4 or f[0] != b"cowkit-fleet-version":
        return None
    try:
        n, size = int(f[1]), int(f[2])
    except ValueError:
        return None
    if len(rest) != size or hashlib.sha256(rest).hexdigest().encode() != f[3]:
        return None
    return n


def versions(gws, seconds, writers=1, readers_per_gateway=2):
    """Racing overwrites through gateway 1, GETs and HEADs through the others."""
    import botocore.exceptions as bx
    key = "versions"
    gws[0].s3.put_object(Bucket="fleet", Key=key, Body=version_body(0))
    stop = time.monotonic() + seconds
    put = [1]
    lock = threading.Lock()
    c = {"gets": 0, "heads": 0, "status": {}, "whole": 0, "not_a_version": 0, "unknown_version": 0,
         "aborted_mid_body": 0, "client_errors": {}, "versions_seen": set()}

    def count(k, d=None, n=1):
        with lock:
            if d is None:
                c[k] += n
            else:
                c[k][d] = c[k].get(d, 0) + n

    def writer():
        while time.monotonic() < stop:
            with lock:
                n = put[0]
                put[0] += 1
            gws[0].s3.put_object(Bucket="fleet", Key=key, Body=version_body(n))

    def reader(gw, r):
        i = 0
        while time.monotonic() < stop:
            i += 1
            head = (i + r) % 4 == 0
            try:
                if head:
                    rs = gw.s3.head_object(Bucket="fleet", Key=key)
                    count("heads")
                    count("status", str(rs["ResponseMetadata"]["HTTPStatusCode"]))
                    continue
                rs = gw.s3.get_object(Bucket="fleet", Key=key)
                count("gets")
                count("status", str(rs["ResponseMetadata"]["HTTPStatusCode"]))
                try:
                    body = rs["Body"].read()
                except (bx.IncompleteReadError, bx.ResponseStreamingError, bx.ReadTimeoutError) as e:
                    count("aborted_mid_body")
                    count("client_errors", type(e).__name__)
                    continue
                n = version_of(body)
                if n is None:
                    count("not_a_version")
                    with open(os.path.join(os.environ.get("FLEET_BAD_DIR", "/tmp"),
                                           "bad-%d-%d" % (r, i)), "wb") as f:
                        f.write(body)
                elif n >= put[0]:
                    count("unknown_version")
                else:
                    count("whole")
                    with lock:
                        c["versions_seen"].add(n)
            except bx.ClientError as e:
                count("heads" if head else "gets")
                count("status", str(e.response["ResponseMetadata"]["HTTPStatusCode"]))
                count("client_errors", e.response.get("Error", {}).get("Code", "?"))
            except Exception as e:  # a connection failure before the head: counted by kind
                count("heads" if head else "gets")
                count("client_errors", type(e).__name__)

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    for j, gw in enumerate(gws[1:]):
        threads += [threading.Thread(target=reader, args=(gw, j * readers_per_gateway + r))
                    for r in range(readers_per_gateway)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    five = sum(n for s, n in c["status"].items() if s.startswith("5"))
    seen = len(c.pop("versions_seen"))
    out(test="versions", seconds=seconds, puts=put[0], writers=writers, readers=len(threads) - writers, **c,
        responses_5xx=five, distinct_versions_read=seen)
    return five == 0 and c["not_a_version"] == 0 and c["unknown_version"] == 0 and not (
        set(c["client_errors"]) - {"IncompleteReadError", "ResponseStreamingError"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--part-mib", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="multipart,race,overwrite,during,versions")
    ap.add_argument("--during-seconds", type=int, default=10)
    ap.add_argument("--versions-seconds", type=int, default=60)
    ap.add_argument("--versions-writers", type=int, default=1)
    ap.add_argument("mounts", nargs="+")
    a = ap.parse_args()
    gws = [Gateway(a.cowkit, os.path.join(m, "s3"), os.path.join(a.logs, f"gw{i}.log"))
           for i, m in enumerate(a.mounts)]
    ok = True
    try:
        try:
            gws[0].s3.create_bucket(Bucket="fleet")
        except gws[0].s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        buf = os.urandom(a.part_mib * MiB + 16 * MiB)
        only = a.only.split(",")
        for rnd in range(a.rounds):
            if "multipart" in only:
                ok &= multipart(gws, a.parts, a.part_mib * MiB, buf, rnd)
            if "race" in only:
                ok &= race(gws, 8, a.part_mib * MiB, buf, rnd)
        if "overwrite" in only:
            ok &= overwrite(gws, 100)
        if "during" in only:
            ok &= during(gws, a.during_seconds)
        if "versions" in only:
            ok &= versions(gws, a.versions_seconds, a.versions_writers)
    finally:
        for gw in gws:
            gw.stop()
    out(test="summary", all_ok=bool(ok))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
