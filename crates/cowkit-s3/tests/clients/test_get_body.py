"""The GetObject body path (issue: GET throughput): the object's bytes are
read in chunks of 2 MiB (`cowkit_s3::body::CHUNK`), a few ahead, into
reused buffers. These tests check what that must not change: ranges that
start, end or straddle chunk boundaries, partNumber reads, large objects
byte for byte, and a file truncated during a GET (the response must end in
an error, never in padding or a hang). Each runs on both body paths: the
default (`sendfile` on HTTP/1) and `--no-sendfile` (`pread`)."""
import hashlib
import os

import botocore.exceptions
import pytest
import urllib3.exceptions
from boto3.s3.transfer import TransferConfig

from conftest import Server

MiB = 1 << 20
CHUNK = 2 * MiB
# Ranges across a larger boundary too (a body frame size tried once).
FRAME = 8 * MiB


@pytest.fixture(params=["pread", "sendfile"])
def server(request, fs):
    s = Server(fs, ["--no-sendfile"] if request.param == "pread" else [])
    yield s
    s.stop()


def pattern(n, seed):
    """`n` bytes in which no two 4 KiB blocks are alike (a reused buffer
    holding an older chunk would show)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha512(f"{seed}:{i}".encode()).digest() * 64
        i += 1
    return bytes(out[:n])


def test_ranges_around_chunk_boundaries(server):
    s3 = server.client()
    s3.create_bucket(Bucket="get-ranges")
    size = 4 * CHUNK + 12345
    data = pattern(size, "ranges")
    s3.put_object(Bucket="get-ranges", Key="o", Body=data)
    ranges = [
        (0, 1), (0, CHUNK), (0, CHUNK + 1), (CHUNK - 1, CHUNK + 1), (CHUNK, 2 * CHUNK),
        (CHUNK - 7, 3 * CHUNK + 9), (1, size), (size - 1, size), (3 * CHUNK, size), (12345, 12345 + 3 * CHUNK),
        (FRAME - 1, FRAME + 1), (FRAME - 5, size), (FRAME, size),
    ]
    for a, b in ranges:
        r = s3.get_object(Bucket="get-ranges", Key="o", Range=f"bytes={a}-{b - 1}")
        assert r["ContentLength"] == b - a
        assert r["ContentRange"] == f"bytes {a}-{b - 1}/{size}"
        assert r["Body"].read() == data[a:b], (a, b)
    # Open-ended and suffix ranges.
    assert s3.get_object(Bucket="get-ranges", Key="o", Range=f"bytes={CHUNK + 3}-")["Body"].read() == data[CHUNK + 3:]
    assert s3.get_object(Bucket="get-ranges", Key="o", Range=f"bytes=-{CHUNK + 5}")["Body"].read() == data[-(CHUNK + 5):]
    # A range past the end is still refused, and the whole object is whole.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket="get-ranges", Key="o", Range=f"bytes={size}-")
    assert e.value.response["Error"]["Code"] == "InvalidRange"
    whole = s3.get_object(Bucket="get-ranges", Key="o")
    assert whole["ContentLength"] == size and "ContentRange" not in whole
    assert whole["Body"].read() == data
    # HEAD with a range says the same as GET.
    h = s3.head_object(Bucket="get-ranges", Key="o", Range=f"bytes={CHUNK - 1}-{CHUNK}")
    assert h["ContentLength"] == 2 and h["ContentRange"] == f"bytes {CHUNK - 1}-{CHUNK}/{size}"
    # Empty object.
    s3.put_object(Bucket="get-ranges", Key="empty", Body=b"")
    assert s3.get_object(Bucket="get-ranges", Key="empty")["Body"].read() == b""


def test_part_number_reads_across_chunks(server):
    s3 = server.client()
    s3.create_bucket(Bucket="get-parts")
    sizes = [5 * MiB + 3, 7 * MiB - 1, 1234]
    parts = [pattern(n, ("part", i)) for i, n in enumerate(sizes)]
    uid = s3.create_multipart_upload(Bucket="get-parts", Key="m")["UploadId"]
    etags = [s3.upload_part(Bucket="get-parts", Key="m", UploadId=uid, PartNumber=i, Body=p)["ETag"]
             for i, p in enumerate(parts, 1)]
    s3.complete_multipart_upload(Bucket="get-parts", Key="m", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]})
    whole = b"".join(parts)
    off = 0
    for i, p in enumerate(parts, 1):
        r = s3.get_object(Bucket="get-parts", Key="m", PartNumber=i)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert r["PartsCount"] == 3
        assert r["ContentRange"] == f"bytes {off}-{off + len(p) - 1}/{len(whole)}"
        assert r["Body"].read() == p, i
        off += len(p)
    assert s3.get_object(Bucket="get-parts", Key="m")["Body"].read() == whole


def test_large_object_byte_for_byte(server, tmp_path):
    s3 = server.client()
    s3.create_bucket(Bucket="get-large")
    size = 96 * MiB + 4097
    data = pattern(size, "large")
    want = hashlib.sha256(data).hexdigest()
    s3.put_object(Bucket="get-large", Key="big", Body=data)
    # One GET, streamed in odd-sized reads.
    body = s3.get_object(Bucket="get-large", Key="big")["Body"]
    h = hashlib.sha256()
    n = 0
    while True:
        c = body.read(777_777)
        if not c:
            break
        h.update(c)
        n += len(c)
    assert n == size and h.hexdigest() == want
    # boto3's managed download: ranged GETs on several connections at once.
    out = tmp_path / "big"
    s3.download_file("get-large", "big", str(out), Config=TransferConfig(multipart_chunksize=5 * MiB + 11,
                                                                  max_concurrency=6))
    assert os.path.getsize(out) == size
    with open(out, "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == want
    # Several whole GETs at once, on separate connections.
    import concurrent.futures as cf

    def get(_):
        return hashlib.sha256(s3.get_object(Bucket="get-large", Key="big")["Body"].read()).hexdigest()

    with cf.ThreadPoolExecutor(4) as ex:
        assert list(ex.map(get, range(4))) == [want] * 4


def test_file_truncated_during_get_ends_in_error(server):
    s3 = server.client()
    s3.create_bucket(Bucket="get-trunc")
    size = 128 * MiB
    data = pattern(size, "shrink")
    s3.put_object(Bucket="get-trunc", Key="t", Body=data)
    path = os.path.join(server.root, "get-trunc", "t")
    assert os.path.getsize(path) == size
    r = s3.get_object(Bucket="get-trunc", Key="t")
    assert r["ContentLength"] == size
    body = r["Body"]
    got = bytearray(body.read(MiB))
    # The server is at most a few chunks and the socket buffers ahead of
    # this reader: far from 48 MiB.
    os.truncate(path, 48 * MiB)
    err = None
    try:
        while True:
            c = body.read(4 * MiB)
            if not c:
                break
            got += c
    except (botocore.exceptions.BotoCoreError, urllib3.exceptions.HTTPError, ConnectionError) as e:
        err = e
    assert err is not None, f"the body ended cleanly after {len(got)} of {size} bytes"
    assert not isinstance(err, (botocore.exceptions.ReadTimeoutError, urllib3.exceptions.ReadTimeoutError)), err
    assert len(got) < size
    assert bytes(got) == data[:len(got)], "bytes that are not the object's"
    # The server goes on serving.
    assert s3.get_object(Bucket="get-trunc", Key="t")["Body"].read() == data[:48 * MiB]
    log = server.access_log()
    assert any(e.get("method") == "GET" and e.get("path") == "/get-trunc/t" for e in log)


def test_small_bodies_around_the_whole_read_threshold(server):
    # Bodies up to 16 KiB are read whole and sent with the head; larger
    # ones take the chunked path. Both sides of the threshold, whole
    # objects and ranges, byte for byte.
    s3 = server.client()
    s3.create_bucket(Bucket="get-small")
    small = 16 << 10
    for size in [0, 1, 100, small - 1, small, small + 1, 3 * small]:
        data = pattern(size, f"small{size}")
        s3.put_object(Bucket="get-small", Key=f"s{size}", Body=data)
        r = s3.get_object(Bucket="get-small", Key=f"s{size}")
        assert r["ContentLength"] == size
        assert r["Body"].read() == data, size
        if size > 2:
            for a, b in [(1, size - 2), (0, min(size, small) - 1), (size - 2, size - 1)]:
                r = s3.get_object(Bucket="get-small", Key=f"s{size}", Range=f"bytes={a}-{b}")
                assert r["Body"].read() == data[a:b + 1], (size, a, b)
