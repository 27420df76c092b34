"""Bucket CORS (issue 27): Put/Get/DeleteBucketCors through boto3, their
refusals (S3's checks, malformed XML, a wrong Content-MD5, a document too
large), CORS preflights (`OPTIONS`,
unauthenticated) allowed and refused, and the CORS headers on an actual
request. On XFS only: nothing here depends on the filesystem."""
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

RULES = [
    {"AllowedOrigins": ["http://example.com"], "AllowedMethods": ["GET", "HEAD"],
     "AllowedHeaders": ["X-Amz-Date"], "ExposeHeaders": ["Content-Type"], "MaxAgeSeconds": 100,
     "ID": "first"},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
]


def error(exc):
    e = exc.value.response
    return e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"], e["Error"]["Message"]


@pytest.fixture
def srv(make_server):
    s = make_server("xfs")
    s.client().create_bucket(Bucket="corsb")
    return s


def raw_body(s3, op, body):
    """Make boto3 send `body` as the document of `op` (signed, no checksum)."""
    def swap(request, **_):
        request.data = body
        for h in ("Content-MD5", "x-amz-checksum-crc32", "x-amz-sdk-checksum-algorithm"):
            if h in request.headers:
                del request.headers[h]
        request.headers["Content-Length"] = str(len(body))
    s3.meta.events.register(f"before-sign.s3.{op}", swap)


def options(srv, path, headers):
    r = urllib.request.Request(srv.endpoint + path, method="OPTIONS", headers=headers)
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def test_bucket_cors_put_get_delete(srv):
    s3 = srv.client()
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket="corsb")
    assert error(e) == (404, "NoSuchCORSConfiguration", "The CORS configuration does not exist")
    s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES})
    assert s3.get_bucket_cors(Bucket="corsb")["CORSRules"] == RULES
    r = s3.delete_bucket_cors(Bucket="corsb")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket="corsb")
    assert error(e)[1] == "NoSuchCORSConfiguration"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket="nobucket", CORSConfiguration={"CORSRules": RULES})
    assert error(e)[1] == "NoSuchBucket"


def test_bucket_cors_refusals(srv):
    s3 = srv.client()
    for rule, msg in [
        ({"AllowedOrigins": ["*a*"], "AllowedMethods": ["GET"]},
         'AllowedOrigin "*a*" can not have more than one wildcard.'),
        ({"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]},
         "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"),
        ({"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["a b"]},
         'AllowedHeader "a b" contains invalid character.'),
    ]:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": [rule]})
        assert error(e) == (400, "InvalidRequest", msg)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES},
                           ContentMD5="uU0nuZNNPgilLlLX2n2r+s==")
    assert error(e)[1] == "BadDigest"
    # Nothing was stored by any of them.
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket="corsb")
    assert error(e)[1] == "NoSuchCORSConfiguration"


def test_malformed_documents(srv):
    s3 = srv.client()
    raw_body(s3, "PutBucketCors", b"<CORSConfiguration><CORSRule><AllowedOrigin>")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES})
    assert error(e)[:2] == (400, "MalformedXML")
    big = b"<CORSConfiguration>" + b" " * (64 * 1024) + b"</CORSConfiguration>"
    s3 = srv.client()
    raw_body(s3, "PutBucketCors", big)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES})
    assert error(e) == (400, "MaxMessageLengthExceeded", "Your request was too big.")


def test_preflight_allowed_and_refused(srv):
    s3 = srv.client()
    ask = {"Origin": "http://example.com", "Access-Control-Request-Method": "GET",
           "Access-Control-Request-Headers": "X-Amz-Date"}
    status, _, body = options(srv, "/corsb/key", ask)
    assert status == 403 and b"CORS is not enabled for this bucket" in body
    s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES})
    status, h, body = options(srv, "/corsb/key", ask)
    assert status == 200, body
    assert h["access-control-allow-origin"] == "http://example.com"
    assert h["access-control-allow-methods"] == "GET, HEAD"
    assert h["access-control-allow-headers"] == "x-amz-date"
    assert h["access-control-expose-headers"] == "Content-Type, ETag"
    assert h["access-control-max-age"] == "100"
    assert h["access-control-allow-credentials"] == "true"
    assert h["vary"] == "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
    status, h, _ = options(srv, "/corsb/key", {"Origin": "http://x.org",
                                               "Access-Control-Request-Method": "HEAD"})
    assert (status, h["access-control-allow-origin"]) == (200, "*")
    for refused in [{**ask, "Origin": "http://other.org"},
                    {**ask, "Access-Control-Request-Method": "PUT"},
                    {**ask, "Access-Control-Request-Headers": "X-Amz-Date,Extra"}]:
        status, _, body = options(srv, "/corsb/key", refused)
        assert status == 403 and b"<Code>AccessForbidden</Code>" in body, refused
    status, _, body = options(srv, "/corsb/key", {"Access-Control-Request-Method": "GET"})
    assert status == 400 and b"Origin request header needed" in body
    status, _, body = options(srv, "/corsb/key", {**ask, "Access-Control-Request-Method": "get"})
    assert status == 400 and b"Invalid Access-Control-Request-Method: get" in body
    status, _, body = options(srv, "/nobucket/key", ask)
    assert status == 404 and b"NoSuchBucket" in body


def test_cors_headers_on_actual_requests(srv):
    s3 = srv.client()
    s3.put_bucket_cors(Bucket="corsb", CORSConfiguration={"CORSRules": RULES})
    s3.put_object(Bucket="corsb", Key="k", Body=b"x")
    seen = {}

    def origin(origin):
        def add(request, **_):
            request.headers["Origin"] = origin
        return add

    def keep(http_response, **_):
        seen.update({k.lower(): v for k, v in http_response.headers.items()})

    s3.meta.events.register("before-sign.s3.HeadObject", origin("http://example.com"))
    s3.meta.events.register("after-call.s3.HeadObject", lambda **kw: keep(kw["http_response"]))
    s3.head_object(Bucket="corsb", Key="k")
    assert seen.get("access-control-allow-origin") == "http://example.com"
    assert seen.get("access-control-expose-headers") == "Content-Type, ETag"
    other = srv.client()
    seen.clear()
    other.meta.events.register("before-sign.s3.PutObject", origin("http://example.com"))
    other.meta.events.register("after-call.s3.PutObject", lambda **kw: keep(kw["http_response"]))
    other.put_object(Bucket="corsb", Key="k2", Body=b"y")
    assert "access-control-allow-origin" not in seen
