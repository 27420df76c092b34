"""Answers S3 gives and the gateway gives too (the checks of issue 16):
checksums, refusals, auth edge cases, partNumber, listings, directory
objects. On XFS only: none of this depends on the
filesystem."""
import base64
import hashlib
import http.client
import os
import subprocess
import urllib.error
import urllib.request
import zlib

import pytest
from botocore.exceptions import ClientError

from conftest import AK, SK

MiB = 1 << 20


def code(exc):
    return exc.value.response["Error"]["Code"]


def message(exc):
    return exc.value.response["Error"]["Message"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def b64(b):
    return base64.b64encode(b).decode()


def crc32(b):
    return b64(zlib.crc32(b).to_bytes(4, "big"))


def crc_reflected(data, poly, width):
    # Bitwise reflected CRC, initial value and final XOR all ones: CRC32C
    # (poly 0x82F63B78) and CRC64NVME (0x9A6C9329AC4BC9B5). Slow; small bodies.
    mask = (1 << width) - 1
    c = mask
    for byte in data:
        c ^= byte
        for _ in range(8):
            c = (c >> 1) ^ (poly if c & 1 else 0)
    return c ^ mask


def crc32c(b):
    return b64(crc_reflected(b, 0x82F63B78, 32).to_bytes(4, "big"))


def crc64nvme(b):
    return b64(crc_reflected(b, 0x9A6C9329AC4BC9B5, 64).to_bytes(8, "big"))


def test_crc_helpers_match_the_check_values():
    assert crc_reflected(b"123456789", 0x82F63B78, 32) == 0xE3069283
    assert crc_reflected(b"123456789", 0x9A6C9329AC4BC9B5, 64) == 0xAE8B14860A799888


@pytest.fixture
def s3srv(make_server):
    return make_server("xfs", ["--min-part-size", "4096"])


def test_put_checksums(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="cks")
    body = b"hello checksums" * 100
    for algo in ["CRC32", "SHA1", "SHA256"]:
        r = s3.put_object(Bucket="cks", Key=algo, Body=body, ChecksumAlgorithm=algo)
        got = r["Checksum" + algo]
        h = s3.head_object(Bucket="cks", Key=algo, ChecksumMode="ENABLED")
        assert h["Checksum" + algo] == got
        assert h["ChecksumType"] == "FULL_OBJECT"
        g = s3.get_object(Bucket="cks", Key=algo, ChecksumMode="ENABLED")
        assert g["Checksum" + algo] == got and g["Body"].read() == body
    assert s3.head_object(Bucket="cks", Key="SHA1", ChecksumMode="ENABLED")["ChecksumSHA1"] == \
        b64(hashlib.sha1(body).digest())
    assert s3.head_object(Bucket="cks", Key="CRC32", ChecksumMode="ENABLED")["ChecksumCRC32"] == crc32(body)
    # CRC32C and CRC64NVME, which botocore computes only with its crt extra:
    # sent precomputed, checked, stored and returned; a wrong one refused.
    for algo, f in [("CRC32C", crc32c), ("CRC64NVME", crc64nvme)]:
        r = s3.put_object(Bucket="cks", Key=algo, Body=body, **{"Checksum" + algo: f(body)})
        assert r["Checksum" + algo] == f(body)
        h = s3.head_object(Bucket="cks", Key=algo, ChecksumMode="ENABLED")
        assert h["Checksum" + algo] == f(body) and h["ChecksumType"] == "FULL_OBJECT"
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="cks", Key="bad", Body=body, **{"Checksum" + algo: f(b"other")})
        assert code(e) == "BadDigest" and message(e) == \
            f"The {algo} you specified did not match the calculated checksum."
    # A PutObject without a checksum gets CRC64NVME, S3's default.
    s3n = s3srv.client(request_checksum_calculation="when_required")
    s3n.put_object(Bucket="cks", Key="plain", Body=body)
    h = s3.head_object(Bucket="cks", Key="plain", ChecksumMode="ENABLED")
    assert h["ChecksumCRC64NVME"] == crc64nvme(body)
    # A wrong checksum is refused and nothing is stored.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cks", Key="bad", Body=body, ChecksumCRC32=crc32(b"other"))
    assert code(e) == "BadDigest" and message(e) == "The CRC32 you specified did not match the calculated checksum."
    with pytest.raises(ClientError):
        s3.head_object(Bucket="cks", Key="bad")
    # Two checksum headers, or a malformed one.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cks", Key="bad", Body=body, ChecksumCRC32=crc32(body),
                      ChecksumSHA1=b64(hashlib.sha1(body).digest()))
    assert code(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cks", Key="bad", Body=body, ChecksumCRC32="not base64!")
    assert code(e) == "InvalidRequest" and "x-amz-checksum-crc32" in message(e)


def upload(s3, bucket, key, parts, **kw):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    done = []
    for n, data in enumerate(parts, 1):
        extra = {"ChecksumAlgorithm": kw["ChecksumAlgorithm"]} if "ChecksumAlgorithm" in kw else {}
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=data, **extra)
        p = {"PartNumber": n, "ETag": r["ETag"]}
        for k, v in r.items():
            if k.startswith("Checksum"):
                p[k] = v
        done.append(p)
    return uid, done


def test_multipart_checksums(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="mpu")
    parts = [b"a" * 8192, b"b" * 8192, b"c" * 100]
    whole = b"".join(parts)
    # Full object CRC32: the CRC of the whole object, from the parts' CRCs.
    uid, done = upload(s3, "mpu", "full", parts, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    lp = s3.list_parts(Bucket="mpu", Key="full", UploadId=uid)
    assert [p["ChecksumCRC32"] for p in lp["Parts"]] == [crc32(p) for p in parts]
    assert lp["ChecksumAlgorithm"] == "CRC32" and lp["ChecksumType"] == "FULL_OBJECT"
    r = s3.complete_multipart_upload(Bucket="mpu", Key="full", UploadId=uid,
                                     MultipartUpload={"Parts": done}, ChecksumCRC32=crc32(whole))
    assert r["ChecksumCRC32"] == crc32(whole) and r["ChecksumType"] == "FULL_OBJECT"
    h = s3.head_object(Bucket="mpu", Key="full", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == crc32(whole)
    # Composite SHA256: sha256 of the parts' digests, -N.
    uid, done = upload(s3, "mpu", "comp", parts, ChecksumAlgorithm="SHA256")
    r = s3.complete_multipart_upload(Bucket="mpu", Key="comp", UploadId=uid, MultipartUpload={"Parts": done})
    want = b64(hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in parts)).digest()) + "-3"
    assert r["ChecksumSHA256"] == want and r["ChecksumType"] == "COMPOSITE"
    # A wrong final checksum is refused.
    uid, done = upload(s3, "mpu", "bad", parts, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="mpu", Key="bad", UploadId=uid,
                                     MultipartUpload={"Parts": done}, ChecksumCRC32=crc32(b"x"))
    assert code(e) == "BadDigest"
    # A part with another algorithm than the upload's is refused.
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket="mpu", Key="bad", UploadId=uid, PartNumber=1, Body=b"x",
                       ChecksumAlgorithm="SHA1")
    assert code(e) == "InvalidRequest" and "Checksum Type mismatch" in message(e)
    # An algorithm that cannot be full-object.
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket="mpu", Key="x", ChecksumAlgorithm="SHA1", ChecksumType="FULL_OBJECT")
    assert code(e) == "InvalidRequest"


def test_part_number_and_attributes(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="pnum")
    parts = [b"1" * 8192, b"2" * 5000]
    uid, done = upload(s3, "pnum", "k", parts)
    s3.complete_multipart_upload(Bucket="pnum", Key="k", UploadId=uid, MultipartUpload={"Parts": done})
    g = s3.get_object(Bucket="pnum", Key="k", PartNumber=2)
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert g["PartsCount"] == 2 and g["ContentRange"] == "bytes 8192-13191/13192"
    assert g["Body"].read() == parts[1]
    h = s3.head_object(Bucket="pnum", Key="k", PartNumber=1)
    assert h["ContentLength"] == 8192 and h["PartsCount"] == 2
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="pnum", Key="k", PartNumber=3)
    assert code(e) == "InvalidPartNumber" and status(e) == 416
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="pnum", Key="k", PartNumber=1, Range="bytes=0-1")
    assert code(e) == "InvalidRequest"
    a = s3.get_object_attributes(Bucket="pnum", Key="k", ObjectAttributes=["ObjectSize", "StorageClass", "ObjectParts"])
    assert a["ObjectSize"] == 13192 and a["StorageClass"] == "STANDARD"
    assert a["ObjectParts"]["TotalPartsCount"] == 2
    assert s3.get_bucket_location(Bucket="pnum").get("LocationConstraint") is None
    v = s3.list_object_versions(Bucket="pnum")
    assert [(x["Key"], x["VersionId"], x["IsLatest"]) for x in v["Versions"]] == [("k", "null", True)]
    # Uploads in progress do not keep the bucket.
    s3.create_multipart_upload(Bucket="pnum", Key="open")
    s3.delete_object(Bucket="pnum", Key="k")
    s3.delete_bucket(Bucket="pnum")


def test_refusals(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="ref")
    # Server-side encryption would be a lie: refused, nothing stored.
    for kw in [{"ServerSideEncryption": "AES256"}, {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k"},
               {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "k" * 32}]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="ref", Key="enc", Body=b"secret", **kw)
        assert code(e) == "NotImplemented" and status(e) == 501
    with pytest.raises(ClientError):
        s3.head_object(Bucket="ref", Key="enc")
    # Features the gateway lacks are refused, not ignored: an object ACL
    # on a bucket with ACLs disabled (the default) as S3 refuses it
    # (issue 27; with ACLs enabled NotImplemented, test_access.py).
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="ref", Key="feat", Body=b"x", ACL="public-read")
    assert code(e) == "AccessControlListNotSupported"
    # Object lock is implemented since issue 27 (test_versioning.py); on a
    # bucket without it, its headers are refused.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="ref", Key="feat", Body=b"x", ObjectLockLegalHoldStatus="ON")
    assert code(e) == "InvalidRequest" and message(e) == "Bucket is missing ObjectLockConfiguration"
    s3.put_object(Bucket="ref", Key="feat", Body=b"x", ACL="private")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="ref", Key="meta", Body=b"x", Metadata={"big": "v" * 2100})
    assert code(e) == "MetadataTooLarge"
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket="ref", Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]})
    assert code(e) == "MalformedXML"
    # Presigned: X-Amz-Expires over 7 days; the region must be ours.
    url = s3srv.client(config_sig="s3v4").generate_presigned_url(
        "get_object", Params={"Bucket": "ref", "Key": "x"}, ExpiresIn=8 * 24 * 3600)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 400 and b"AuthorizationQueryParametersError" in e.value.read()
    other = s3srv.client(region="eu-west-1")
    with pytest.raises(ClientError) as e:
        other.list_buckets()
    assert code(e) == "AuthorizationHeaderMalformed" and "eu-west-1" in message(e)
    assert s3.list_buckets()["Owner"]["ID"] == AK
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert code(e) == "InvalidLocationConstraint" and status(e) == 400


def test_raw(make_server):
    # Unsigned requests on an anonymous server: the headers are the client's own.
    srv = make_server("xfs", ["--anonymous"], creds=False)
    for path, data in [("/raw", None), ("/raw/k", b"0123456789")]:
        urllib.request.urlopen(urllib.request.Request(srv.endpoint + path, data=data, method="PUT"))

    def get(path, headers):
        req = urllib.request.Request(srv.endpoint + path, headers=headers)
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()

    assert get("/raw/k", {"Range": "bytes=,"}) == (200, b"0123456789")
    assert get("/raw/k", {"Range": "bytes=5-2"}) == (200, b"0123456789")
    assert get("/raw/k", {"Range": "bytes=2-4"}) == (206, b"234")
    req = urllib.request.Request(srv.endpoint + "/raw/e", data=b"x", method="PUT", headers={"Content-MD5": ""})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 400 and b"InvalidDigest" in e.value.read()


def test_directory_objects(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="dirs")
    # A key ending in `/` is a directory: empty, listed, deleted like an object.
    s3.put_object(Bucket="dirs", Key="a/b/", Body=b"")
    assert s3.head_object(Bucket="dirs", Key="a/b/")["ContentLength"] == 0
    assert s3.get_object(Bucket="dirs", Key="a/b/")["Body"].read() == b""
    s3.put_object(Bucket="dirs", Key="a/b/c", Body=b"x")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="dirs")["Contents"]]
    assert keys == ["a/b/", "a/b/c"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="dirs", Prefix="a/b/")["Contents"]] == ["a/b/", "a/b/c"]
    # Without a record, a directory is not an object.
    for k in ["a/", "a", "a/b"]:
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket="dirs", Key=k)
        assert status(e) == 404, k
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="dirs", Key="d/", Body=b"data")
    assert code(e) == "DirectoryObjectContainsData"
    # Deleting the file keeps the directory object; deleting both empties the bucket.
    s3.delete_object(Bucket="dirs", Key="a/b/c")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="dirs")["Contents"]] == ["a/b/"]
    s3.delete_object(Bucket="dirs", Key="a/b/")
    assert "Contents" not in s3.list_objects_v2(Bucket="dirs")
    s3.delete_bucket(Bucket="dirs")


def test_conditional_put_and_default_checksum(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="cond")
    e1 = s3.put_object(Bucket="cond", Key="k", Body=b"one", IfNoneMatch="*")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cond", Key="k", Body=b"two", IfNoneMatch="*")
    assert code(e) == "PreconditionFailed" and status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cond", Key="k", Body=b"two", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert code(e) == "PreconditionFailed"
    s3.put_object(Bucket="cond", Key="k", Body=b"two", IfMatch=e1)
    assert s3.get_object(Bucket="cond", Key="k")["Body"].read() == b"two"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="cond", Key="missing", Body=b"x", IfMatch=e1)
    assert code(e) == "NoSuchKey"
    # A multipart upload without an algorithm still gets S3's default CRC64NVME.
    uid, done = upload(s3, "cond", "mp", [b"a" * 8192, b"b" * 10])
    assert "ChecksumCRC64NVME" not in s3.list_parts(Bucket="cond", Key="mp", UploadId=uid)["Parts"][0]
    r = s3.complete_multipart_upload(Bucket="cond", Key="mp", UploadId=uid, MultipartUpload={"Parts": done})
    assert r["ChecksumType"] == "FULL_OBJECT" and r["ChecksumCRC64NVME"]


def test_keepalive_error_is_one_document(make_server, tmp_path):
    """A complete that fails after its keepalive 200 has started (here the disk
    fills while the parts are copied: a small ext4 cannot clone) ends with one
    well-formed Error document, InsufficientStorage, which boto3 raises; the
    access log names the error; the upload is intact and completes once there
    is room."""
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials

    img, mnt = tmp_path / "small.img", tmp_path / "mnt"
    subprocess.run(["truncate", "-s", "64M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True)
    try:
        srv = make_server("ext4", ["--keepalive-after-ms", "0", "--min-part-size", "4096"], mount=str(mnt))
        s3 = srv.client()
        s3.create_bucket(Bucket="full")
        part = os.urandom(6 * MiB)
        up = s3.create_multipart_upload(Bucket="full", Key="big")["UploadId"]
        parts = []
        for n in (1, 2, 3):
            r = s3.upload_part(Bucket="full", Key="big", UploadId=up, PartNumber=n, Body=part)
            parts.append({"PartNumber": n, "ETag": r["ETag"]})
        # Leave about 8 MiB: the 18 MiB object cannot be copied.
        st = os.statvfs(str(mnt))
        filler = mnt / "filler"
        with open(filler, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, st.f_bavail * st.f_frsize - 8 * MiB)

        body = ("<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{p['PartNumber']}</PartNumber><ETag>{p['ETag']}</ETag></Part>" for p in parts
        ) + "</CompleteMultipartUpload>").encode()
        url = f"{srv.endpoint}/full/big?uploadId={up}"
        req = botocore.awsrequest.AWSRequest(method="POST", url=url, data=body)
        botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
        conn = http.client.HTTPConnection(srv.endpoint.split("//")[1])
        conn.request("POST", f"/full/big?uploadId={up}", body=body, headers=dict(req.headers))
        r = conn.getresponse()
        raw = r.read().decode()
        assert r.status == 200 and r.getheader("Transfer-Encoding") == "chunked", (r.status, raw)
        assert raw.count("<?xml") == 1 and raw.lstrip().startswith("<?xml"), raw
        assert raw.count("<Error>") == 1 and "<Code>InsufficientStorage</Code>" in raw, raw
        assert "CompleteMultipartUploadResult" not in raw, raw

        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket="full", Key="big", UploadId=up, MultipartUpload={"Parts": parts})
        assert code(e) == "InsufficientStorage"
        logged = [x for x in srv.access_log() if x.get("op") == "CompleteMultipartUpload"]
        assert any(x.get("error") == "InsufficientStorage" for x in logged), logged

        # Nothing lost: the upload is still there, and completes with room.
        assert [p["PartNumber"] for p in s3.list_parts(Bucket="full", Key="big", UploadId=up)["Parts"]] == [1, 2, 3]
        os.unlink(filler)
        s3.complete_multipart_upload(Bucket="full", Key="big", UploadId=up, MultipartUpload={"Parts": parts})
        assert s3.get_object(Bucket="full", Key="big")["Body"].read() == part * 3
        srv.stop()
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
