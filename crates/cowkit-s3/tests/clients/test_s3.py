"""boto3 and aws CLI against `cowkit s3 serve` on real XFS, Btrfs and ext4."""
import array
import concurrent.futures as cf
import fcntl
import hashlib
import http.client
import os
import struct
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

from conftest import AK, SK, Server

MiB = 1 << 20


def code(exc):
    return exc.value.response["Error"]["Code"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def md5(b):
    return hashlib.md5(b).hexdigest()


def rand(n, seed):
    # Deterministic, incompressible enough, fast.
    out = bytearray()
    h = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h * 128
    return bytes(out[:n])


def multipart(s3, bucket, key, sizes, seed=0, **kw):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    parts, data = [], []
    for i, n in enumerate(sizes, 1):
        d = rand(n, (seed, i))
        data.append(d)
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i, Body=d)["ETag"]
        assert e.strip('"') == md5(d)
        parts.append({"PartNumber": i, "ETag": e})
    return uid, parts, b"".join(data), [md5(d) for d in data]


def expected_etag(md5s):
    return hashlib.md5(b"".join(bytes.fromhex(m) for m in md5s)).hexdigest() + f"-{len(md5s)}"


# ---- FIEMAP and the block device's write counter ---------------------------

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
FIEMAP_EXTENT_LAST = 1
FIEMAP_EXTENT_SHARED = 0x2000


def fiemap(path):
    """[(logical, physical, length, flags)] of the whole file."""
    out, start = [], 0
    with open(path, "rb") as f:
        while True:
            count = 256
            buf = bytearray(struct.pack("=QQLLLL", start, 2**64 - 1 - start, FIEMAP_FLAG_SYNC, 0, count, 0))
            buf += bytes(56 * count)
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf, True)
            mapped = struct.unpack_from("=L", buf, 20)[0]
            last = False
            for i in range(mapped):
                lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQL", buf, 32 + 56 * i)
                out.append((lo, ph, ln, fl))
                last |= bool(fl & FIEMAP_EXTENT_LAST)
            if last or mapped < count:
                return out
            start = out[-1][0] + out[-1][2]


def sectors_written(device):
    name = os.path.basename(os.path.realpath(device))
    with open(f"/sys/block/{name}/stat") as f:
        return int(f.read().split()[6])


# ---- buckets -----------------------------------------------------------------

def test_buckets(server):
    s3 = server.client()
    s3.create_bucket(Bucket="alpha")
    s3.create_bucket(Bucket="beta.2")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert names == ["alpha", "beta.2"]
    s3.head_bucket(Bucket="alpha")
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket="nosuch")
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket="alpha")
    assert code(e) == "BucketAlreadyOwnedByYou"
    for bad in ["UPPER", "a_b", "ab", "192.168.0.1"]:
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=bad)
        assert status(e) == 400, bad
    s3.put_object(Bucket="alpha", Key="x/y", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket="alpha")
    assert code(e) == "BucketNotEmpty"
    s3.delete_object(Bucket="alpha", Key="x/y")
    assert not os.path.exists(os.path.join(server.root, "alpha", "x")), "empty dirs are removed"
    # Issue 16: uploads in progress do not keep the bucket (as on S3); they
    # go with it.
    uid = s3.create_multipart_upload(Bucket="alpha", Key="k")["UploadId"]
    s3.upload_part(Bucket="alpha", Key="k", UploadId=uid, PartNumber=1, Body=b"p")
    s3.delete_bucket(Bucket="alpha")
    assert not os.path.exists(os.path.join(server.root, ".cowkit-s3", "uploads", uid))
    s3.create_bucket(Bucket="alpha")
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="alpha", Key="k", UploadId=uid)
    assert code(e) == "NoSuchUpload"
    s3.delete_bucket(Bucket="alpha")
    s3.delete_bucket(Bucket="beta.2")
    assert s3.list_buckets()["Buckets"] == []


# ---- objects -----------------------------------------------------------------

KEYS = [
    "plain.txt",
    "a/b/c/d/e/f/g/deep.bin",
    "a/b/sibling",
    "ünïcödé/ключ/鍵 with spaces.txt",
    "emoji-😀/x+y=z&w?q#frag%25.dat",
    "dots..in..name/.hidden/..x",
]


def test_objects_roundtrip(server):
    s3 = server.client()
    s3.create_bucket(Bucket="objs")
    want = {}
    for i, k in enumerate(KEYS):
        body = rand(1000 * i + 7, k)
        want[k] = body
        s3.put_object(Bucket="objs", Key=k, Body=body, ContentType=f"application/x-{i}",
                      Metadata={"Index": str(i), "name": "u-value"})
    for k, body in want.items():
        r = s3.get_object(Bucket="objs", Key=k)
        got = r["Body"].read()
        assert md5(got) == md5(body) and r["ETag"].strip('"') == md5(body)
        assert r["ContentType"] == f"application/x-{KEYS.index(k)}"
        assert r["Metadata"]["index"] == str(KEYS.index(k))
        h = s3.head_object(Bucket="objs", Key=k)
        assert h["ContentLength"] == len(body)
        # The object is a plain file under DIR/bucket/key.
        with open(os.path.join(server.root, "objs", k), "rb") as f:
            assert md5(f.read()) == md5(body)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket="objs")["Contents"]]
    assert listed == sorted(KEYS, key=lambda k: k.encode())
    # Overwrite keeps one object with the new content.
    s3.put_object(Bucket="objs", Key="plain.txt", Body=b"new")
    assert s3.get_object(Bucket="objs", Key="plain.txt")["Body"].read() == b"new"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="objs", Key="nosuch")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="nosuchbucket", Key="x", Body=b"x")
    assert code(e) == "NoSuchBucket"
    # A key that is a file cannot also be a directory, and the reverse.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="objs", Key="plain.txt/child", Body=b"x")
    assert status(e) == 409
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="objs", Key="a/b", Body=b"x")
    assert status(e) == 409
    r = s3.delete_objects(Bucket="objs", Delete={"Objects": [{"Key": k} for k in KEYS]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(KEYS)
    assert "Contents" not in s3.list_objects_v2(Bucket="objs")
    s3.delete_bucket(Bucket="objs")


def test_ranged_get(server):
    s3 = server.client()
    s3.create_bucket(Bucket="rng")
    body = rand(3 * MiB + 123, "rng")
    s3.put_object(Bucket="rng", Key="r", Body=body)
    for rng, (a, b) in {
        "bytes=0-0": (0, 1), "bytes=10-99": (10, 100), "bytes=-500": (len(body) - 500, len(body)),
        f"bytes={MiB}-": (MiB, len(body)), f"bytes=5-{len(body) + 100}": (5, len(body)),
    }.items():
        r = s3.get_object(Bucket="rng", Key="r", Range=rng)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert r["Body"].read() == body[a:b], rng
        assert r["ContentRange"] == f"bytes {a}-{b - 1}/{len(body)}"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="rng", Key="r", Range=f"bytes={len(body) + 10}-")
    assert status(e) == 416


def test_list_pagination(server):
    s3 = server.client()
    s3.create_bucket(Bucket="lst")
    keys = [f"p/{i:03}/obj" for i in range(25)] + [f"p/top{i}" for i in range(5)] + ["q/x", "r"]
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket="lst", Key=k, Body=k.encode()), keys))
    # V2, max-keys pages with continuation tokens.
    got, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket="lst", Prefix="p/", MaxKeys=7, **kw)
        got += [o["Key"] for o in r.get("Contents", [])]
        assert r["KeyCount"] <= 7
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert got == sorted(k for k in keys if k.startswith("p/"))
    # Delimiter: common prefixes count towards max-keys and are not repeated.
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket="lst", Prefix="p/", Delimiter="/", MaxKeys=4, **kw)
        seen += [c["Prefix"] for c in r.get("CommonPrefixes", [])] + [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert sorted(seen) == sorted([f"p/{i:03}/" for i in range(25)] + [f"p/top{i}" for i in range(5)])
    assert len(seen) == len(set(seen))
    r = s3.list_objects_v2(Bucket="lst", Delimiter="/")
    assert [c["Prefix"] for c in r["CommonPrefixes"]] == ["p/", "q/"]
    assert [o["Key"] for o in r["Contents"]] == ["r"]
    r = s3.list_objects_v2(Bucket="lst", StartAfter="p/top3")
    assert [o["Key"] for o in r["Contents"]] == ["p/top4", "q/x", "r"]
    # V1 with markers.
    got, marker = [], ""
    while True:
        r = s3.list_objects(Bucket="lst", MaxKeys=10, Marker=marker)
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or got[-1]
    assert got == sorted(keys)
    r = s3.list_objects(Bucket="lst", Prefix="p/0", Delimiter="/", MaxKeys=3)
    assert [c["Prefix"] for c in r["CommonPrefixes"]] == ["p/000/", "p/001/", "p/002/"]
    assert r["IsTruncated"]


def test_copy_object(server):
    s3 = server.client()
    s3.create_bucket(Bucket="src")
    s3.create_bucket(Bucket="dst")
    body = rand(8 * MiB + 100, "copy")
    s3.put_object(Bucket="src", Key="orig/ü", Body=body, ContentType="text/orig", Metadata={"a": "1"})
    os.sync()
    s3.copy_object(Bucket="dst", Key="copy/1", CopySource={"Bucket": "src", "Key": "orig/ü"})
    h = s3.head_object(Bucket="dst", Key="copy/1")
    assert h["ContentType"] == "text/orig" and h["Metadata"] == {"a": "1"}
    assert s3.get_object(Bucket="dst", Key="copy/1")["Body"].read() == body
    s3.copy_object(Bucket="dst", Key="copy/2", CopySource={"Bucket": "src", "Key": "orig/ü"},
                   MetadataDirective="REPLACE", ContentType="text/new", Metadata={"b": "2"})
    h = s3.head_object(Bucket="dst", Key="copy/2")
    assert h["ContentType"] == "text/new" and h["Metadata"] == {"b": "2"}
    log = [l for l in server.access_log() if l.get("op") == "CopyObject"]
    assert len(log) == 2
    if server.fs in ("xfs", "btrfs"):
        assert all(l["method"] == "clone" and l["bytes"]["cloned"] == len(body) for l in log), log
        ext = fiemap(os.path.join(server.root, "dst", "copy/1"))
        assert ext and all(e[3] & FIEMAP_EXTENT_SHARED for e in ext), ext
    else:
        assert all(l["method"] != "clone" for l in log), log


# ---- multipart -----------------------------------------------------------------

def test_multipart_5mib(server):
    s3 = server.client()
    s3.create_bucket(Bucket="mpu")
    sizes = [5 * MiB, 5 * MiB, 5 * MiB, 777]
    uid, parts, data, md5s = multipart(s3, "mpu", "dir/big ü.bin", sizes, ContentType="video/x-test",
                                       Metadata={"origin": "test"})
    lp = s3.list_parts(Bucket="mpu", Key="dir/big ü.bin", UploadId=uid)
    assert [(p["PartNumber"], p["Size"]) for p in lp["Parts"]] == list(enumerate(sizes, 1))
    lp = s3.list_parts(Bucket="mpu", Key="dir/big ü.bin", UploadId=uid, MaxParts=2)
    assert lp["IsTruncated"] and lp["NextPartNumberMarker"] == 2
    ups = s3.list_multipart_uploads(Bucket="mpu")["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("dir/big ü.bin", uid)]
    r = s3.complete_multipart_upload(Bucket="mpu", Key="dir/big ü.bin", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert r["ETag"].strip('"') == expected_etag(md5s)
    # Retried complete: same answer.
    r2 = s3.complete_multipart_upload(Bucket="mpu", Key="dir/big ü.bin", UploadId=uid,
                                      MultipartUpload={"Parts": parts})
    assert r2["ETag"] == r["ETag"]
    g = s3.get_object(Bucket="mpu", Key="dir/big ü.bin")
    assert md5(g["Body"].read()) == md5(data)
    assert g["ContentType"] == "video/x-test" and g["Metadata"] == {"origin": "test"}
    assert g["ETag"] == r["ETag"]
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="mpu")
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket="mpu", Key="dir/big ü.bin", UploadId=uid, PartNumber=9, Body=b"x")
    assert code(e) == "NoSuchUpload"
    # Ranged read across a part boundary.
    a, b = 5 * MiB - 10, 5 * MiB + 10
    assert s3.get_object(Bucket="mpu", Key="dir/big ü.bin", Range=f"bytes={a}-{b - 1}")["Body"].read() == data[a:b]


def test_multipart_unaligned(server):
    s3 = server.client()
    s3.create_bucket(Bucket="unal")
    sizes = [5 * MiB + 1000, 5 * MiB + 3, 5 * MiB + 4093, 5 * MiB, 12345]
    uid, parts, data, md5s = multipart(s3, "unal", "u", sizes, seed=1)
    r = s3.complete_multipart_upload(Bucket="unal", Key="u", UploadId=uid, MultipartUpload={"Parts": parts})
    assert r["ETag"].strip('"') == expected_etag(md5s)
    assert md5(s3.get_object(Bucket="unal", Key="u")["Body"].read()) == md5(data)
    log = [l for l in server.access_log() if l.get("op") == "CompleteMultipartUpload"][-1]
    assert log["unaligned_parts"] == 4, log
    assert log["bytes_cloned"] + log["bytes_copied"] + log["bytes_written"] == len(data)


def test_multipart_errors_and_abort(server):
    s3 = server.client()
    s3.create_bucket(Bucket="err")
    uid, parts, _, _ = multipart(s3, "err", "small", [1024, 1024, 10])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="err", Key="small", UploadId=uid, MultipartUpload={"Parts": parts})
    assert code(e) == "EntityTooSmall"
    uid2, parts2, _, _ = multipart(s3, "err", "order", [5 * MiB, 100])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="err", Key="order", UploadId=uid2,
                                     MultipartUpload={"Parts": parts2[::-1]})
    assert code(e) == "InvalidPartOrder"
    bad = [dict(parts2[0]), dict(parts2[1], ETag='"00000000000000000000000000000000"')]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="err", Key="order", UploadId=uid2, MultipartUpload={"Parts": bad})
    assert code(e) == "InvalidPart"
    missing = [parts2[0], {"PartNumber": 7, "ETag": parts2[1]["ETag"]}]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="err", Key="order", UploadId=uid2, MultipartUpload={"Parts": missing})
    assert code(e) == "InvalidPart"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="err", Key="order", UploadId="0" * 32, MultipartUpload={"Parts": parts2})
    assert code(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="err", Key="order", UploadId="../../../../etc")
    assert code(e) == "NoSuchUpload"
    # Abort: the upload and its parts are gone.
    s3.abort_multipart_upload(Bucket="err", Key="order", UploadId=uid2)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="err", Key="order", UploadId=uid2)
    assert code(e) == "NoSuchUpload"
    assert not os.path.exists(os.path.join(server.root, ".cowkit-s3", "uploads", uid2))
    s3.abort_multipart_upload(Bucket="err", Key="small", UploadId=uid)
    # A failed complete left nothing behind.
    assert "Contents" not in s3.list_objects_v2(Bucket="err")


def test_concurrent_completes(server):
    s3 = server.client()
    s3.create_bucket(Bucket="race")
    uid, parts, data, md5s = multipart(s3, "race", "r", [5 * MiB, 5 * MiB, 5 * MiB + 1], seed=3)

    def complete(_):
        c = server.client()
        return c.complete_multipart_upload(Bucket="race", Key="r", UploadId=uid,
                                           MultipartUpload={"Parts": parts})["ETag"]

    with cf.ThreadPoolExecutor(6) as ex:
        etags = list(ex.map(complete, range(6)))
    assert set(etags) == {f'"{expected_etag(md5s)}"'}
    assert md5(s3.get_object(Bucket="race", Key="r")["Body"].read()) == md5(data)
    done = [l for l in server.access_log() if l.get("op") == "CompleteMultipartUpload"]
    assert sum(1 for l in done if not l.get("retry")) == 1, done


def test_upload_part_copy(server):
    s3 = server.client()
    s3.create_bucket(Bucket="upc")
    src = rand(12 * MiB + 5, "upc")
    s3.put_object(Bucket="upc", Key="src", Body=src)
    uid = s3.create_multipart_upload(Bucket="upc", Key="dst")["UploadId"]
    ranges = [(0, 6 * MiB - 1), (6 * MiB + 1000, 12 * MiB - 1), (12 * MiB, 12 * MiB + 4)]
    parts = []
    for i, (a, b) in enumerate(ranges, 1):
        r = s3.upload_part_copy(Bucket="upc", Key="dst", UploadId=uid, PartNumber=i,
                                CopySource={"Bucket": "upc", "Key": "src"}, CopySourceRange=f"bytes={a}-{b}")
        assert r["CopyPartResult"]["ETag"].strip('"') == md5(src[a:b + 1])
        parts.append({"PartNumber": i, "ETag": r["CopyPartResult"]["ETag"]})
    s3.complete_multipart_upload(Bucket="upc", Key="dst", UploadId=uid, MultipartUpload={"Parts": parts})
    want = b"".join(src[a:b + 1] for a, b in ranges)
    assert md5(s3.get_object(Bucket="upc", Key="dst")["Body"].read()) == md5(want)
    log = [l for l in server.access_log() if l.get("op") == "UploadPartCopy"]
    if server.fs in ("xfs", "btrfs"):
        assert log[0]["bytes"]["cloned"] == 6 * MiB, log[0]
        assert log[1]["bytes"]["cloned"] == 0, log[1]  # offset 1000: cannot share blocks


def test_many_parts(fs, make_server):
    """1,100 parts (the S3 5 MiB minimum lowered by --min-part-size so that
    the test fits the rig's images); one record file per part, no xattrs."""
    server = make_server(fs, ["--min-part-size", "8192"])
    s3 = server.client(max_pool_connections=16)
    s3.create_bucket(Bucket="many")
    n = 1100
    uid = s3.create_multipart_upload(Bucket="many", Key="m")["UploadId"]
    bodies = [rand(8192 if i < n else 3000, ("many", i)) for i in range(1, n + 1)]

    def put(i):
        return s3.upload_part(Bucket="many", Key="m", UploadId=uid, PartNumber=i, Body=bodies[i - 1])["ETag"]

    with cf.ThreadPoolExecutor(12) as ex:
        etags = list(ex.map(put, range(1, n + 1)))
    parts = [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]
    got, marker = [], 0
    while True:
        lp = s3.list_parts(Bucket="many", Key="m", UploadId=uid, PartNumberMarker=marker)
        got += lp["Parts"]
        if not lp["IsTruncated"]:
            break
        marker = lp["NextPartNumberMarker"]
    assert len(got) == n
    r = s3.complete_multipart_upload(Bucket="many", Key="m", UploadId=uid, MultipartUpload={"Parts": parts})
    assert r["ETag"].strip('"') == expected_etag([md5(b) for b in bodies])
    assert md5(s3.get_object(Bucket="many", Key="m")["Body"].read()) == md5(b"".join(bodies))
    # The same upload with the real 5 MiB minimum is refused.
    strict = make_server(fs)
    c = strict.client()
    c.create_bucket(Bucket="strict")
    uid, parts, _, _ = multipart(c, "strict", "s", [8192] * 3)
    with pytest.raises(ClientError) as e:
        c.complete_multipart_upload(Bucket="strict", Key="s", UploadId=uid, MultipartUpload={"Parts": parts})
    assert code(e) == "EntityTooSmall"


@pytest.mark.parametrize("fs", ["xfs", "btrfs", "ext4"])
def test_complete_clones(fs, make_server):
    """On XFS and Btrfs the completed object shares its extents with the
    parts and the complete writes (almost) nothing; on ext4 the fallback
    copies and the bytes are identical."""
    server = make_server(fs, ["--keep-parts"])
    s3 = server.client()
    s3.create_bucket(Bucket="fmap")
    sizes = [8 * MiB, 8 * MiB, 8 * MiB, 3 * MiB + 4096]
    uid, parts, data, _ = multipart(s3, "fmap", "obj", sizes, seed=9)
    os.sync()
    before = sectors_written(server.device)
    s3.complete_multipart_upload(Bucket="fmap", Key="obj", UploadId=uid, MultipartUpload={"Parts": parts})
    os.sync()
    written = (sectors_written(server.device) - before) * 512
    log = [l for l in server.access_log() if l.get("op") == "CompleteMultipartUpload"][-1]
    obj = os.path.join(server.root, "fmap", "obj")
    with open(obj, "rb") as f:
        assert md5(f.read()) == md5(data)
    if fs in ("xfs", "btrfs"):
        assert log["bytes_cloned"] == len(data) and log["bytes_copied"] == 0 and log["bytes_written"] == 0, log
        ext = fiemap(obj)
        assert all(e[3] & FIEMAP_EXTENT_SHARED for e in ext), ext
        part_phys = set()
        pdir = os.path.join(server.root, ".cowkit-s3", "uploads", uid)
        for i in range(1, len(sizes) + 1):
            for e in fiemap(os.path.join(pdir, f"p{i:05}")):
                assert e[3] & FIEMAP_EXTENT_SHARED
                part_phys.add((e[1], e[2]))
        obj_bytes = sum(e[2] for e in ext)
        shared_with_parts = sum(e[2] for e in ext if any(p <= e[1] < p + n for p, n in part_phys))
        assert shared_with_parts == obj_bytes, (ext, part_phys)
        assert written < len(data) // 10, f"complete wrote {written} bytes for a {len(data)}-byte object"
    else:
        assert log["bytes_cloned"] == 0 and log["bytes_copied"] + log["bytes_written"] == len(data), log
        assert written >= len(data) * 9 // 10, written


def test_fsync_mode(fs, make_server):
    server = make_server(fs, ["--fsync"])
    s3 = server.client()
    s3.create_bucket(Bucket="dur")
    s3.put_object(Bucket="dur", Key="a/b", Body=b"durable")
    uid, parts, data, _ = multipart(s3, "dur", "m", [5 * MiB, 100])
    s3.complete_multipart_upload(Bucket="dur", Key="m", UploadId=uid, MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket="dur", Key="m")["Body"].read() == data


# ---- auth ----------------------------------------------------------------------

def test_auth(fs, make_server):
    server = make_server(fs)
    s3 = server.client()
    s3.create_bucket(Bucket="auth")
    s3.put_object(Bucket="auth", Key="k", Body=b"secret data")
    with pytest.raises(ClientError) as e:
        server.client(secret="wrong").get_object(Bucket="auth", Key="k")
    assert status(e) == 403 and code(e) == "SignatureDoesNotMatch"
    with pytest.raises(ClientError) as e:
        server.client(secret="wrong").put_object(Bucket="auth", Key="k2", Body=b"x")
    assert status(e) == 403
    # No signature at all.
    for method, path in [("GET", "/auth/k"), ("PUT", "/auth/unsigned"), ("GET", "/")]:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(server.endpoint + path, method=method, data=b"x" if method == "PUT" else None))
        assert e.value.code == 403, (method, path)
    # Presigned: valid, then expired, then tampered.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "auth", "Key": "k"}, ExpiresIn=2)
    assert urllib.request.urlopen(url).read() == b"secret data"
    time.sleep(3)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 403
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "auth", "Key": "k"}, ExpiresIn=600)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url.replace("/auth/k", "/auth/k2"))
    assert e.value.code == 403
    assert not os.path.exists(os.path.join(server.root, "auth", "unsigned"))
    assert not os.path.exists(os.path.join(server.root, "auth", "k2"))


# ---- hostile keys -----------------------------------------------------------------

HOSTILE = ["../escape", "a/../../escape", "../../../../../../tmp/escape", "a/./b", "a//b", "./x",
           "..", ".", "x/..", "trailing/", "a\x00b", "k" * 1025, ("d" * 256) + "/x"]


def snapshot(path):
    out = set()
    for dp, dns, fns in os.walk(path):
        for n in dns + fns:
            out.add(os.path.join(dp, n))
    return out


def test_hostile_keys(fs, make_server):
    server = make_server(fs)
    s3 = server.client()
    s3.create_bucket(Bucket="host")
    outside = {p for p in snapshot(server.mount) if not p.startswith(server.root + '/')}
    for k in HOSTILE:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="host", Key=k, Body=b"evil")
        assert 400 <= status(e) < 500, (k, e.value.response)
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket="host", Key=k)
        assert 400 <= status(e) < 500, k
        with pytest.raises(ClientError):
            s3.copy_object(Bucket="host", Key=k, CopySource={"Bucket": "host", "Key": "nothing"})
    # Raw requests with encoded dot segments and an unsigned anonymous server.
    anon = make_server(fs, ["--anonymous"])
    c = anon.client()
    c.create_bucket(Bucket="host")
    for path in ["/host/..%2F..%2Fescape", "/host/%2E%2E/%2E%2E/escape", "/host/a/../../../escape",
                 "/host//abs", "/host/a%00b"]:
        conn = http.client.HTTPConnection(anon.endpoint.split("//")[1])
        conn.request("PUT", path, body=b"evil")
        r = conn.getresponse()
        r.read()
        assert r.status >= 400 or not os.path.exists(os.path.join(anon.base, "escape")), path
        conn.close()
    # A symlink planted in the bucket by another tool cannot lead outside DIR.
    os.symlink("/", os.path.join(anon.root, "host", "link"))
    c.put_object(Bucket="host", Key="link/tmp/escape-through-link", Body=b"x")
    assert not os.path.exists("/tmp/escape-through-link")
    after = {p for p in snapshot(server.mount)
             if not p.startswith(server.root + "/") and not p.startswith(anon.base)}
    assert after == outside, after ^ outside
    for p in [os.path.join(server.base, "escape"), os.path.join(server.mount, "escape"), "/tmp/escape"]:
        assert not os.path.exists(p), p
    # Anonymous access works only with --anonymous.
    assert c.get_object(Bucket="host", Key="link/tmp/escape-through-link")["Body"].read() == b"x"


# ---- aws CLI -----------------------------------------------------------------------

def aws(server, *args, check=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    exe = os.path.join(os.path.dirname(os.path.realpath(os.sys.executable)), "aws")
    if not os.path.exists(exe):
        exe = os.path.join(os.path.dirname(os.sys.executable), "aws")
    r = subprocess.run([exe, "--endpoint-url", server.endpoint, *args], env=env, capture_output=True, text=True)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def test_aws_cli(server, tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(rand(21 * MiB + 17, "cli"))
    small = tmp_path / "small ü.txt"
    small.write_bytes(b"small file\n")
    aws(server, "s3", "mb", "s3://cli")
    aws(server, "s3", "cp", str(big), "s3://cli/dir/big.bin")  # multipart (8 MiB chunks)
    aws(server, "s3", "cp", str(small), "s3://cli/dir/sub/small ü.txt", "--content-type", "text/plain",
        "--metadata", "k=v")
    out = aws(server, "s3", "ls", "--recursive", "s3://cli/").stdout
    assert "dir/big.bin" in out and "dir/sub/small ü.txt" in out
    aws(server, "s3", "cp", "s3://cli/dir/big.bin", "s3://cli/copy/big.bin")  # server-side copy
    aws(server, "s3", "cp", "s3://cli/copy/big.bin", str(tmp_path / "back.bin"))
    assert md5((tmp_path / "back.bin").read_bytes()) == md5(big.read_bytes())
    head = aws(server, "s3api", "head-object", "--bucket", "cli", "--key", "dir/sub/small ü.txt").stdout
    assert '"ContentType": "text/plain"' in head and '"k": "v"' in head
    etag = aws(server, "s3api", "head-object", "--bucket", "cli", "--key", "dir/big.bin").stdout
    assert "-3" in etag  # 21 MiB in 8 MiB parts
    aws(server, "s3api", "get-object", "--bucket", "cli", "--key", "dir/big.bin", "--range", "bytes=100-199",
        str(tmp_path / "range.bin"))
    assert (tmp_path / "range.bin").read_bytes() == big.read_bytes()[100:200]
    aws(server, "s3", "sync", str(tmp_path), "s3://cli/synced/")
    lst = aws(server, "s3api", "list-objects-v2", "--bucket", "cli", "--prefix", "synced/").stdout
    assert "synced/small ü.txt" in lst
    r = aws(server, "s3", "rb", "s3://cli", check=False)
    assert r.returncode != 0
    aws(server, "s3", "rm", "--recursive", "s3://cli/")
    aws(server, "s3", "rb", "s3://cli")
    assert "cli" not in aws(server, "s3", "ls").stdout


def test_keepalive_complete(make_server):
    """A complete that outlasts --keepalive-after-ms (0 here) answers 200 at
    once, sends whitespace while assembling, then the XML; boto3 parses it."""
    server = make_server("ext4", ["--keepalive-after-ms", "0"])
    s3 = server.client()
    s3.create_bucket(Bucket="keep")
    uid, parts, data, md5s = multipart(s3, "keep", "k", [5 * MiB + 1, 5 * MiB, 7])
    body = "<CompleteMultipartUpload>" + "".join(
        f"<Part><PartNumber>{p['PartNumber']}</PartNumber><ETag>{p['ETag']}</ETag></Part>" for p in parts
    ) + "</CompleteMultipartUpload>"
    # Signed raw request, to see the bytes on the wire.
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials
    url = f"{server.endpoint}/keep/k?uploadId={uid}"
    req = botocore.awsrequest.AWSRequest(method="POST", url=url, data=body.encode())
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection(server.endpoint.split("//")[1])
    conn.request("POST", f"/keep/k?uploadId={uid}", body=body.encode(), headers=dict(req.headers))
    r = conn.getresponse()
    raw = r.read().decode()
    assert r.status == 200 and r.getheader("Transfer-Encoding") == "chunked", (r.status, raw)
    head, _, rest = raw.partition("?>")
    assert head.startswith("<?xml") and "<CompleteMultipartUploadResult" in rest, raw
    assert expected_etag(md5s) in rest
    assert md5(s3.get_object(Bucket="keep", Key="k")["Body"].read()) == md5(data)
    # And through boto3 (a retry: the same answer, by the plain path).
    r = s3.complete_multipart_upload(Bucket="keep", Key="k", UploadId=uid, MultipartUpload={"Parts": parts})
    assert r["ETag"].strip('"') == expected_etag(md5s)
    uid, parts, data, md5s = multipart(s3, "keep", "k2", [5 * MiB + 1, 5 * MiB, 7])
    r = s3.complete_multipart_upload(Bucket="keep", Key="k2", UploadId=uid, MultipartUpload={"Parts": parts})
    assert r["ETag"].strip('"') == expected_etag(md5s)
