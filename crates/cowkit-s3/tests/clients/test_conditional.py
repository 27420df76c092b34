"""Conditional requests as S3 answers them, through boto3 (which signs every
header it sends, so s3s sees them signed) and through a presigned URL with
an unsigned If-None-Match: entity tags quoted or not, `*`, HTTP dates, the
precedence of the four headers on GET and HEAD (412 before 304), conditional
PUT, CompleteMultipartUpload, CopyObject, UploadPartCopy and DeleteObject,
and a malformed signed Range answered with the whole object. On XFS only:
none of this depends on the filesystem."""
import datetime
import re
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError


NOT_MODIFIED = ("NotModified", 304)
FAILED = ("PreconditionFailed", 412)


def err(fn, **kw):
    with pytest.raises(ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def s3srv(make_server):
    return make_server("xfs", ["--min-part-size", "4096"])


def test_conditional_reads(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="cond-read")
    etag = s3.put_object(Bucket="cond-read", Key="k", Body=b"0123456789")["ETag"]
    bare = etag.strip('"')
    mtime = s3.head_object(Bucket="cond-read", Key="k")["LastModified"]
    before = mtime - datetime.timedelta(days=3)
    after = mtime + datetime.timedelta(days=3)
    for op in (s3.get_object, s3.head_object):
        def call(**kw):
            return op(Bucket="cond-read", Key="k", **kw)

        def fails(**kw):
            # HEAD answers and 304s have no body: botocore's code is the
            # status then.
            code, st = err(call, **kw)
            if op == s3.head_object or st == 304:
                assert code == str(st), code
                code = {304: "NotModified", 412: "PreconditionFailed"}[st]
            return code, st

        # Entity tags quoted, bare, weak, in a list, or *.
        for good in (etag, bare, f'W/{etag}', f'"nope", {etag}', "*"):
            assert call(IfMatch=good)["ETag"] == etag
            assert fails(IfNoneMatch=good) == NOT_MODIFIED
        assert fails(IfMatch="nope") == FAILED
        assert call(IfNoneMatch="nope")["ETag"] == etag
        # Dates.
        assert call(IfModifiedSince=before)["ETag"] == etag
        assert fails(IfModifiedSince=after) == NOT_MODIFIED
        assert call(IfUnmodifiedSince=after)["ETag"] == etag
        assert fails(IfUnmodifiedSince=before) == FAILED
        # Precedence: a holding If-Match overrides If-Unmodified-Since, a
        # non-matching If-None-Match overrides If-Modified-Since, and 412
        # comes before 304.
        assert call(IfMatch=bare, IfUnmodifiedSince=before)["ETag"] == etag
        assert call(IfNoneMatch="nope", IfModifiedSince=after)["ETag"] == etag
        assert fails(IfMatch="nope", IfNoneMatch=bare) == FAILED
        assert fails(IfUnmodifiedSince=before, IfNoneMatch=bare) == FAILED
        assert fails(IfMatch=bare, IfNoneMatch=bare) == NOT_MODIFIED
        assert fails(IfMatch=bare, IfModifiedSince=after) == NOT_MODIFIED
    assert s3.get_object(Bucket="cond-read", Key="k", IfMatch=bare)["Body"].read() == b"0123456789"
    # Missing objects are 404 whatever the conditions say.
    assert err(s3.get_object, Bucket="cond-read", Key="none", IfNoneMatch="*")[0] == "NoSuchKey"
    # A malformed Range, signed: S3 sends the whole object.
    r = s3.get_object(Bucket="cond-read", Key="k", Range="bytes=abc", IfMatch=bare)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["Body"].read() == b"0123456789"
    r = s3.get_object(Bucket="cond-read", Key="k", Range="bytes=2-3")
    assert r["Body"].read() == b"23"
    # An empty object: a suffix range gets it whole, other ranges are 416.
    s3.put_object(Bucket="cond-read", Key="empty", Body=b"")
    r = s3.get_object(Bucket="cond-read", Key="empty", Range="bytes=-1")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200 and "ContentRange" not in r
    assert r["Body"].read() == b""
    for rng in ("bytes=0-0", "bytes=-0", "bytes=0-"):
        assert err(s3.get_object, Bucket="cond-read", Key="empty", Range=rng) == ("InvalidRange", 416), rng


def test_conditional_presigned_unsigned_header(s3srv):
    s3 = s3srv.client(config_sig="s3v4")
    s3.create_bucket(Bucket="cond-presigned")
    etag = s3.put_object(Bucket="cond-presigned", Key="k", Body=b"data")["ETag"]
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "cond-presigned", "Key": "k"})
    req = urllib.request.Request(url, headers={"If-None-Match": etag.strip('"')})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 304
    req = urllib.request.Request(url, headers={"If-None-Match": "other"})
    assert urllib.request.urlopen(req).read() == b"data"
    # A tampered presigned URL still fails its signature check.
    sig = re.search(r"X-Amz-Signature=([0-9a-f]{64})", url).group(1)
    bad = url.replace(sig, ("1" if sig[0] == "0" else "0") + sig[1:])
    req = urllib.request.Request(bad, headers={"If-Match": "x"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 403


def test_conditional_writes(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="cond-write")
    etag = s3.put_object(Bucket="cond-write", Key="k", Body=b"one")["ETag"]
    bare = etag.strip('"')
    put = s3.put_object
    assert err(put, Bucket="cond-write", Key="k", Body=b"x", IfNoneMatch="*") == FAILED
    assert err(put, Bucket="cond-write", Key="k", Body=b"x", IfMatch="nope") == FAILED
    assert err(put, Bucket="cond-write", Key="k", Body=b"x", IfNoneMatch=bare) == ("NotImplemented", 501)
    assert err(put, Bucket="cond-write", Key="k", Body=b"x", IfMatch=bare, IfNoneMatch="*") == ("NotImplemented", 501)
    assert err(put, Bucket="cond-write", Key="new", Body=b"x", IfMatch=bare)[0] == "NoSuchKey"
    assert s3.get_object(Bucket="cond-write", Key="k")["Body"].read() == b"one"
    etag2 = put(Bucket="cond-write", Key="k", Body=b"two", IfMatch=bare)["ETag"]
    assert s3.get_object(Bucket="cond-write", Key="k")["Body"].read() == b"two"

    # CompleteMultipartUpload: a failed condition leaves the upload there.
    uid = s3.create_multipart_upload(Bucket="cond-write", Key="k")["UploadId"]
    p = s3.upload_part(Bucket="cond-write", Key="k", UploadId=uid, PartNumber=1, Body=b"m" * 10)
    parts = {"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]}
    done = dict(Bucket="cond-write", Key="k", UploadId=uid, MultipartUpload=parts)
    assert err(s3.complete_multipart_upload, IfNoneMatch="*", **done) == FAILED
    assert err(s3.complete_multipart_upload, IfMatch=bare, **done) == FAILED
    assert err(s3.complete_multipart_upload, IfNoneMatch=bare, **done) == ("NotImplemented", 501)
    s3.complete_multipart_upload(IfMatch=etag2.strip('"'), **done)
    assert s3.get_object(Bucket="cond-write", Key="k")["Body"].read() == b"m" * 10
    uid = s3.create_multipart_upload(Bucket="cond-write", Key="fresh")["UploadId"]
    p = s3.upload_part(Bucket="cond-write", Key="fresh", UploadId=uid, PartNumber=1, Body=b"f")
    s3.complete_multipart_upload(Bucket="cond-write", Key="fresh", UploadId=uid, IfNoneMatch="*",
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert s3.get_object(Bucket="cond-write", Key="fresh")["Body"].read() == b"f"


def test_conditional_copies_and_deletes(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="cond-copy")
    etag = s3.put_object(Bucket="cond-copy", Key="src", Body=b"source")["ETag"]
    bare = etag.strip('"')
    mtime = s3.head_object(Bucket="cond-copy", Key="src")["LastModified"]
    after = mtime + datetime.timedelta(days=3)
    src = {"Bucket": "cond-copy", "Key": "src"}
    copy = s3.copy_object
    # Every failed copy-source condition is 412 (S3 documents 412 for
    # CopyObject where a GET gets 304).
    for kw in ({"CopySourceIfMatch": "nope"}, {"CopySourceIfNoneMatch": bare},
               {"CopySourceIfModifiedSince": after},
               {"CopySourceIfUnmodifiedSince": mtime - datetime.timedelta(days=3)}):
        assert err(copy, Bucket="cond-copy", Key="dst", CopySource=src, **kw) == FAILED, kw
    assert err(s3.head_object, Bucket="cond-copy", Key="dst")[1] == 404
    copy(Bucket="cond-copy", Key="dst", CopySource=src, CopySourceIfMatch=bare, CopySourceIfModifiedSince=mtime - datetime.timedelta(days=3))
    assert s3.get_object(Bucket="cond-copy", Key="dst")["Body"].read() == b"source"
    # The destination's If-None-Match: *.
    assert err(copy, Bucket="cond-copy", Key="dst", CopySource=src, IfNoneMatch="*") == FAILED

    uid = s3.create_multipart_upload(Bucket="cond-copy", Key="mp")["UploadId"]
    upc = dict(Bucket="cond-copy", Key="mp", UploadId=uid, PartNumber=1, CopySource=src)
    assert err(s3.upload_part_copy, CopySourceIfNoneMatch=etag, **upc) == FAILED
    assert err(s3.upload_part_copy, CopySourceIfMatch="nope", **upc) == FAILED
    assert s3.list_parts(Bucket="cond-copy", Key="mp", UploadId=uid).get("Parts", []) == []
    s3.upload_part_copy(CopySourceIfMatch=bare, **upc)
    assert len(s3.list_parts(Bucket="cond-copy", Key="mp", UploadId=uid)["Parts"]) == 1

    # DeleteObject: If-Match (quoted or not), size, last-modified time.
    size = 6
    dele = s3.delete_object
    assert err(dele, Bucket="cond-copy", Key="src", IfMatch="nope") == FAILED
    assert err(dele, Bucket="cond-copy", Key="src", IfMatchSize=size + 1) == FAILED
    assert err(dele, Bucket="cond-copy", Key="src", IfMatchLastModifiedTime=after) == FAILED
    assert s3.get_object(Bucket="cond-copy", Key="src")["Body"].read() == b"source"
    dele(Bucket="cond-copy", Key="src", IfMatch=bare, IfMatchSize=size, IfMatchLastModifiedTime=mtime)
    assert err(s3.head_object, Bucket="cond-copy", Key="src")[1] == 404
    assert err(dele, Bucket="cond-copy", Key="src", IfMatch=bare)[0] == "NoSuchKey"


def test_copy_source_shape_and_repeated_metadata(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="shape")
    s3.put_object(Bucket="shape", Key="src", Body=b"x")
    cases = [("shape/%ZZ", "Invalid copy source encoding", "shape/%ZZ"),
             ("shape/%C3%", "Invalid copy source encoding", "shape/%C3%"),
             ("192.168.1.1/src", "Invalid copy source bucket name", "192.168.1.1/src"),
             ("shape", "Invalid copy source object key", ""),
             ("shape/a/../../b", "Invalid copy source object key", "a/../../b")]
    # botocore quotes CopySource: the raw header is set just before signing.
    raw = {}

    def set_raw(request, **_):
        request.headers.replace_header("x-amz-copy-source", raw["v"])
    s3.meta.events.register("before-sign.s3.CopyObject", set_raw)
    for src, msg, value in cases:
        raw["v"] = src
        with pytest.raises(ClientError) as e:
            s3.copy_object(Bucket="shape", Key="dst", CopySource=src)
        r = e.value.response
        assert (r["Error"]["Code"], r["Error"]["Message"]) == ("InvalidArgument", msg), src
        assert (r["Error"].get("ArgumentValue") or "") == value, src
    # The destination bucket is looked at first.
    raw["v"] = "Bad"
    assert err(s3.copy_object, Bucket="no-such-bucket", Key="d", CopySource="Bad")[0] == "NoSuchBucket"
    raw["v"] = "/shape/src"
    s3.copy_object(Bucket="shape", Key="dst", CopySource="/shape/src")
    assert s3.get_object(Bucket="shape", Key="dst")["Body"].read() == b"x"

    # Repeated x-amz-meta-* headers, signed: joined with "," as S3 does.
    st, text = signed_put(s3srv, "/shape/meta", [
        ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), ("x-amz-meta-k", "v1"),
        ("x-amz-meta-K", "v2"), ("x-amz-meta-k", "v3"), ("x-amz-meta-one", "1")], b"data")
    assert st == 200, text
    meta = s3.head_object(Bucket="shape", Key="meta")["Metadata"]
    assert meta == {"k": "v1,v2,v3", "one": "1"}


def test_bad_digest_names_both_digests(s3srv):
    import base64
    import hashlib

    s3 = s3srv.client()
    s3.create_bucket(Bucket="digest")
    body = b"dummy data"
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="digest", Key="k", Body=body, ContentMD5=wrong)
    r = e.value.response["Error"]
    assert r["Code"] == "BadDigest"
    assert r["Message"] == "The Content-MD5 you specified did not match what we received."
    # S3 gives the computed one in base64 and the given one in hex.
    assert r["CalculatedDigest"] == base64.b64encode(hashlib.md5(body).digest()).decode()
    assert r["ExpectedDigest"] == hashlib.md5(b"other").hexdigest()
    assert err(s3.head_object, Bucket="digest", Key="k")[1] == 404


def signed_put(s3srv, path, headers, body):
    """A PUT signed by botocore with headers as given (repeats kept),
    sent as is; returns (status, body)."""
    import http.client
    import urllib.parse

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from conftest import AK, SK

    url = f"{s3srv.endpoint}{path}"
    req = AWSRequest(method="PUT", url=url, data=body)
    for name, v in headers:
        req.headers[name] = v  # appends: email.message semantics
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.putrequest("PUT", u.path, skip_accept_encoding=True)
    for k, v in req.headers.items():
        conn.putheader(k, v)
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    resp = conn.getresponse()
    out = resp.status, resp.read().decode()
    conn.close()
    return out


def test_unsigned_trailer_streams(s3srv):
    s3 = s3srv.client()
    s3.create_bucket(Bucket="trail")
    base = [("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            ("content-encoding", "aws-chunked"), ("x-amz-decoded-content-length", "11")]
    declared = [("x-amz-trailer", "x-amz-checksum-crc64nvme")]
    # No x-amz-trailer and no trailer: accepted, S3's default CRC64NVME kept.
    st, text = signed_put(s3srv, "/trail/plain", base, b"B\r\nhello world\r\n0\r\n\r\n")
    assert st == 200, text
    h = s3.head_object(Bucket="trail", Key="plain", ChecksumMode="ENABLED")
    assert h["ChecksumCRC64NVME"] == "jSnVw/bqjr4="
    # A declared trailer that does not come, or a trailer not declared.
    for hs, body in [(base + declared, b"B\r\nhello world\r\n0\r\n\r\n"),
                     (base, b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc64nvme:jSnVw/bqjr4=\r\n\r\n")]:
        st, text = signed_put(s3srv, "/trail/bad", hs, body)
        assert st == 400 and "<Code>MalformedTrailerError</Code>" in text, text
    assert err(s3.head_object, Bucket="trail", Key="bad")[1] == 404
    # Declared and sent: checked.
    st, text = signed_put(s3srv, "/trail/ok", base + declared,
                          b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc64nvme:jSnVw/bqjr4=\r\n\r\n")
    assert st == 200, text
    st, text = signed_put(s3srv, "/trail/wrong", base + declared,
                          b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc64nvme:AAAAAAAAAAA=\r\n\r\n")
    assert st == 400 and "<Code>BadDigest</Code>" in text, text
    # Streaming bodies belong to PutObject and UploadPart only, with a
    # decoded length.
    st, text = signed_put(s3srv, "/trail?tagging", base, b"5\r\nabcde\r\n0\r\n\r\n")
    assert st == 400 and "The value of x-amz-content-sha256 header is invalid." in text, text
    st, text = signed_put(s3srv, "/trail/nolen", base[:2], b"5\r\nabcde\r\n0\r\n\r\n")
    assert st == 411 and "<Code>MissingContentLength</Code>" in text, text
