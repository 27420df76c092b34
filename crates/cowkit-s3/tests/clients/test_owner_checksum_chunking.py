"""Answers S3 gives and the gateway gives too: expected bucket owners,
checksums s3s 0.14 has no field for (SHA-512, ListParts' `null` checksum,
a header beside a declared trailer), a header section over 8 KiB, the
order of errors, version ids, and the aws-chunked framing (only the last
chunk may be short). On XFS only: none of this depends on the
filesystem."""
import base64
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from conftest import AK


def code(exc):
    return exc.value.response["Error"]["Code"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def srv(make_server):
    return make_server("xfs", ["--min-part-size", "4096"])


def test_expected_bucket_owner(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="own")
    s3.put_object(Bucket="own", Key="k", Body=b"x", ExpectedBucketOwner=AK)
    assert s3.get_object(Bucket="own", Key="k", ExpectedBucketOwner=AK)["Body"].read() == b"x"
    wrong = AK + "something"
    for call in [
        lambda: s3.delete_bucket(Bucket="own", ExpectedBucketOwner=wrong),
        lambda: s3.delete_object(Bucket="own", Key="k", ExpectedBucketOwner=wrong),
        lambda: s3.head_object(Bucket="own", Key="k", ExpectedBucketOwner=wrong),
        lambda: s3.put_object(Bucket="own", Key="k2", Body=b"y", ExpectedBucketOwner=wrong),
        lambda: s3.copy_object(Bucket="own", Key="k3", CopySource="own/k", ExpectedSourceBucketOwner=wrong),
    ]:
        with pytest.raises(ClientError) as e:
            call()
        assert status(e) == 403
        if e.value.response["Error"].get("Code") != "403":  # HEAD has no body
            assert code(e) == "AccessDenied"
            assert e.value.response["Error"]["Message"] == "Access Denied."
    # Nothing was changed by the refused requests.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="own")["Contents"]] == ["k"]
    s3.copy_object(Bucket="own", Key="k3", CopySource="own/k", ExpectedSourceBucketOwner=AK,
                   ExpectedBucketOwner=AK)
    s3.delete_object(Bucket="own", Key="k", ExpectedBucketOwner=AK)
    s3.delete_object(Bucket="own", Key="k3")
    s3.delete_bucket(Bucket="own", ExpectedBucketOwner=AK)


def b64(b):
    return base64.b64encode(b).decode()


def sha512(b):
    return b64(hashlib.sha512(b).digest())


def test_list_parts_without_checksum_says_null(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="nul")
    up = s3.create_multipart_upload(Bucket="nul", Key="k")
    s3.upload_part(Bucket="nul", Key="k", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10)
    r = s3.list_parts(Bucket="nul", Key="k", UploadId=up["UploadId"])
    assert r["ChecksumAlgorithm"] == "null" and r["ChecksumType"] == "null"
    assert "ChecksumCRC64NVME" not in r["Parts"][0]
    up = s3.create_multipart_upload(Bucket="nul", Key="k", ChecksumAlgorithm="SHA256")
    r = s3.list_parts(Bucket="nul", Key="k", UploadId=up["UploadId"])
    assert r["ChecksumAlgorithm"] == "SHA256" and r["ChecksumType"] == "COMPOSITE"


def test_sha512_in_xml_documents(srv):
    """SHA-512 checksums (s3s 0.14 has no field for them) in ListParts,
    UploadPartCopy, CopyObject, CompleteMultipartUpload (request and answer)
    and GetObjectAttributes; GetObjectAttributes' ETag without quotes."""
    s3 = srv.client()
    s3.create_bucket(Bucket="sha")
    src = os.urandom(5000)
    put = s3.put_object(Bucket="sha", Key="src", Body=src, ChecksumSHA512=sha512(src))
    attrs = s3.get_object_attributes(Bucket="sha", Key="src", ObjectAttributes=["ETag", "Checksum"])
    assert attrs["ETag"] == put["ETag"].strip('"') == hashlib.md5(src).hexdigest()
    assert attrs["Checksum"] == {"ChecksumSHA512": sha512(src), "ChecksumType": "FULL_OBJECT"}
    cp = s3.copy_object(Bucket="sha", Key="copy", CopySource="sha/src", ChecksumAlgorithm="SHA512")
    assert cp["CopyObjectResult"]["ChecksumSHA512"] == sha512(src)

    up = s3.create_multipart_upload(Bucket="sha", Key="mp", ChecksumAlgorithm="SHA512")
    uid = up["UploadId"]
    p1 = os.urandom(8192)
    r1 = s3.upload_part(Bucket="sha", Key="mp", UploadId=uid, PartNumber=1, Body=p1, ChecksumSHA512=sha512(p1))
    assert r1["ChecksumSHA512"] == sha512(p1)
    r2 = s3.upload_part_copy(Bucket="sha", Key="mp", UploadId=uid, PartNumber=2, CopySource="sha/src")
    assert r2["CopyPartResult"]["ChecksumSHA512"] == sha512(src)
    listed = s3.list_parts(Bucket="sha", Key="mp", UploadId=uid)
    assert [p.get("ChecksumSHA512") for p in listed["Parts"]] == [sha512(p1), sha512(src)]
    assert listed["ChecksumAlgorithm"] == "SHA512"
    parts = [{"PartNumber": 1, "ETag": r1["ETag"], "ChecksumSHA512": sha512(p1)},
             {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"], "ChecksumSHA512": sha512(src)}]
    # A part's checksum that is not the part's: refused, the upload stays.
    wrong = [dict(parts[0]), dict(parts[1], ChecksumSHA512=sha512(b"other"))]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket="sha", Key="mp", UploadId=uid, MultipartUpload={"Parts": wrong})
    assert code(e) == "InvalidPart"
    composite = b64(hashlib.sha512(hashlib.sha512(p1).digest() + hashlib.sha512(src).digest()).digest()) + "-2"
    done = s3.complete_multipart_upload(Bucket="sha", Key="mp", UploadId=uid, MultipartUpload={"Parts": parts})
    assert done["ChecksumSHA512"] == composite and done["ChecksumType"] == "COMPOSITE"
    attrs = s3.get_object_attributes(Bucket="sha", Key="mp", ObjectAttributes=["Checksum", "ETag"])
    assert attrs["Checksum"]["ChecksumSHA512"] == composite
    assert attrs["ETag"] == done["ETag"].strip('"')
    assert s3.get_object(Bucket="sha", Key="mp")["Body"].read() == p1 + src


def test_checksum_header_and_trailer_are_two(srv):
    from test_conditional import signed_put

    s3 = srv.client()
    s3.create_bucket(Bucket="two")
    base = [("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            ("content-encoding", "aws-chunked"), ("x-amz-decoded-content-length", "11"),
            ("x-amz-trailer", "x-amz-checksum-crc64nvme")]
    body = b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc64nvme:jSnVw/bqjr4=\r\n\r\n"
    st, text = signed_put(srv, "/two/k", base + [("x-amz-checksum-crc32", "DUoRhQ==")], body)
    assert st == 400 and "Multiple checksum Types are not allowed." in text, text
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="two", Key="k")
    assert status(e) == 404
    st, text = signed_put(srv, "/two/k", base, body)
    assert st == 200, text


def test_header_section_over_8_kib(srv):
    from test_conditional import signed_put

    s3 = srv.client()
    s3.create_bucket(Bucket="hdr")
    st, text = signed_put(srv, "/hdr/k", [("x-amz-custom-header", "d" * 8192)], b"x")
    assert st == 400 and "<Code>RequestHeaderSectionTooLarge</Code>" in text, text
    assert "<MaxSizeAllowed>8192</MaxSizeAllowed>" in text, text
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="hdr", Key="k")
    assert status(e) == 404
    sha = ("x-amz-content-sha256", hashlib.sha256(b"x").hexdigest())
    st, text = signed_put(srv, "/hdr/k", [sha, ("x-amz-custom-header", "d" * 4096)], b"x")
    assert st == 200, text


def test_missing_bucket_named_before_a_malformed_upload_id(srv):
    s3 = srv.client()
    calls = [
        lambda b: s3.abort_multipart_upload(Bucket=b, Key="k", UploadId="uploadId"),
        lambda b: s3.upload_part(Bucket=b, Key="k", UploadId="uploadId", PartNumber=1, Body=b"x"),
        lambda b: s3.list_parts(Bucket=b, Key="k", UploadId="uploadId"),
        lambda b: s3.complete_multipart_upload(Bucket=b, Key="k", UploadId="uploadId", MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": '"0123456789abcdef0123456789abcdef"'}]}),
    ]
    for call in calls:
        with pytest.raises(ClientError) as e:
            call("no-such-bucket")
        assert code(e) == "NoSuchBucket"
    s3.create_bucket(Bucket="has-bucket")
    for call in calls:
        with pytest.raises(ClientError) as e:
            call("has-bucket")
        assert code(e) == "NoSuchUpload"


def test_version_ids_other_than_null_refused(srv):
    # No bucket is versioned: an object's only version is `null`.
    s3 = srv.client()
    s3.create_bucket(Bucket="ver")
    s3.put_object(Bucket="ver", Key="src", Body=b"v1")
    assert s3.get_object(Bucket="ver", Key="src", VersionId="null")["Body"].read() == b"v1"
    s3.head_object(Bucket="ver", Key="src", VersionId="null")
    s3.copy_object(Bucket="ver", Key="c1", CopySource={"Bucket": "ver", "Key": "src", "VersionId": "null"})
    up = s3.create_multipart_upload(Bucket="ver", Key="mp")
    for call in [
        lambda: s3.get_object(Bucket="ver", Key="src", VersionId="someversion"),
        lambda: s3.copy_object(Bucket="ver", Key="c2",
                               CopySource={"Bucket": "ver", "Key": "src", "VersionId": "someversion"}),
        lambda: s3.upload_part_copy(Bucket="ver", Key="mp", UploadId=up["UploadId"], PartNumber=1,
                                    CopySource="ver/src?versionId=someversion"),
    ]:
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "InvalidArgument" and e.value.response["Error"]["Message"] == "Invalid version id specified"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="ver", Key="src", VersionId="someversion")
    assert status(e) == 400
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="ver")["Contents"]] == ["c1", "src"]
    assert s3.list_parts(Bucket="ver", Key="mp", UploadId=up["UploadId"]).get("Parts", []) == []


def test_only_the_last_chunk_may_be_short(srv):
    from test_conditional import signed_put

    s3 = srv.client()
    s3.create_bucket(Bucket="chunks")

    def stream(sizes):
        body = b""
        for n in sizes:
            body += b"%x\r\n" % n + b"c" * n + (b"\r\n" if n else b"")
        return body + b"\r\n", sum(sizes)

    for sizes, want in [([8192, 10, 0], 200), ([100, 0], 200), ([10, 10, 0], 400),
                        ([8192, 100, 8192, 0], 400)]:
        body, n = stream(sizes)
        hs = [("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
              ("content-encoding", "aws-chunked"), ("x-amz-decoded-content-length", str(n))]
        st, text = signed_put(srv, "/chunks/k", hs, body)
        assert st == want, (sizes, text)
        if want == 400:
            assert "<Code>InvalidChunkSizeError</Code>" in text, text
            assert "Only the last chunk is allowed to have a size less than 8192 bytes" in text
        else:
            assert s3.get_object(Bucket="chunks", Key="k")["Body"].read() == b"c" * n
            s3.delete_object(Bucket="chunks", Key="k")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="chunks", Key="k")
    assert status(e) == 404
    # boto3's own streamed uploads (aws-chunked with a trailer) still pass.
    s3.put_object(Bucket="chunks", Key="boto", Body=os.urandom(100_000))
    up = s3.create_multipart_upload(Bucket="chunks", Key="mp")
    s3.upload_part(Bucket="chunks", Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=os.urandom(70_000))


def test_aws_chunked_framing(srv):
    from test_conditional import signed_put

    s3 = srv.client()
    s3.create_bucket(Bucket="frame")
    base = [("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            ("content-encoding", "aws-chunked"), ("x-amz-decoded-content-length", "10")]
    declared = [("x-amz-trailer", "x-amz-checksum-crc64nvme")]
    good = b"A\r\ndummy data\r\n0\r\nx-amz-checksum-crc64nvme:dPVWc2vU1+Q=\r\n\r\n"
    for body, code_ in [
        # Ends before its last, empty line.
        (b"A\r\ndummy data\r\n0\r\n", "IncompleteBody"),
        (b"A\r\ndummy data\r\n0\r\nx-amz-checksum-crc64nvme:dPVWc2vU1+Q=\r\n", "IncompleteBody"),
        # A trailer line without a name; bytes after the end.
        (b"A\r\ndummy data\r\n0\r\n:dPVWc2vU1+Q=\r\n\r\n", "MalformedTrailerError"),
        (good + b"x-amz-more:1\r\n\r\n", "MalformedTrailerError"),
    ]:
        st, text = signed_put(srv, "/frame/k", base + declared, body)
        assert st == 400 and f"<Code>{code_}</Code>" in text, (body, text)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="frame", Key="k")
    assert status(e) == 404
    st, text = signed_put(srv, "/frame/k", base + declared, good)
    assert st == 200, text
    assert s3.get_object(Bucket="frame", Key="k")["Body"].read() == b"dummy data"


def test_unsigned_aws_chunked_bodies_are_decoded(srv):
    """An unsigned STREAMING-UNSIGNED-PAYLOAD-TRAILER body (a public
    bucket's writer) is decoded as a signed one is: stored without its
    framing, its trailer checksum checked. Before, it was stored with the
    framing (without a trailer) or refused (with one)."""
    import json
    import urllib.error
    import urllib.request
    s3 = srv.client()
    s3.create_bucket(Bucket="pubchunks")
    s3.put_bucket_policy(Bucket="pubchunks", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::pubchunks/*"}]}))
    data = b"hello world, unsigned"

    def put(key, body, trailer=None, decoded=len(data)):
        h = {"x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "Content-Encoding": "aws-chunked",
             "x-amz-decoded-content-length": str(decoded)}
        if trailer:
            h["x-amz-trailer"] = trailer
        req = urllib.request.Request(f"{srv.endpoint}/pubchunks/{key}", data=body, method="PUT", headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    framed = b"%x\r\n" % len(data) + data + b"\r\n0\r\n"
    crc32 = base64.b64encode(__import__("zlib").crc32(data).to_bytes(4, "big")).decode()
    sha256 = base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert put("plain", framed + b"\r\n") == (200, "")
    st, text = put("crc32", framed + f"x-amz-checksum-crc32:{crc32}\r\n\r\n".encode(), "x-amz-checksum-crc32")
    assert st == 200, text
    st, text = put("sha256", framed + f"x-amz-checksum-sha256:{sha256}\r\n\r\n".encode(), "x-amz-checksum-sha256")
    assert st == 200, text
    for key in ["plain", "crc32", "sha256"]:
        assert s3.get_object(Bucket="pubchunks", Key=key)["Body"].read() == data, key
    h = s3.head_object(Bucket="pubchunks", Key="crc32", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == crc32 and h["ContentLength"] == len(data)
    # A trailer that does not match, a length that does not, a framing
    # that is not aws-chunked: refused, nothing stored.
    st, text = put("bad", framed + b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n", "x-amz-checksum-crc32")
    assert st == 400 and "<Code>BadDigest</Code>" in text, text
    st, text = put("bad", framed + b"\r\n", decoded=len(data) + 1)
    assert st == 400 and "<Code>IncompleteBody</Code>" in text, text
    st, text = put("bad", b"zz\r\n" + data + b"\r\n0\r\n\r\n")
    assert st == 400, text
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="pubchunks", Key="bad")
    assert status(e) == 404
