"""The answers the VersityGW suite checks that the gateway gives
(messages, keys that are not paths, CreateBucket's ACL and ownership
values, directory objects' content type, ListParts' integers, a
percent-encoded `?versionId=` in a copy source). On XFS only: none of this
depends on the filesystem."""
import pytest
from botocore.exceptions import ClientError


def code(exc):
    return exc.value.response["Error"]["Code"]


def message(exc):
    return exc.value.response["Error"].get("Message")


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def srv(make_server):
    return make_server("xfs")


def rewrite(s3, event, fn):
    """Change the request just before it is signed (for values botocore
    would not send)."""
    s3.meta.events.register(f"before-sign.s3.{event}", lambda request, **kw: fn(request))


def test_keys_that_are_not_paths_are_a_bare_400(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="names")
    for k in [".", "..", "./", "../x", "a/../b", "a/./b", "//", "/..", "for/../../bar/"]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="names", Key=k, Body=b"x")
        assert (status(e), code(e), message(e)) == (400, "400", "Bad Request"), k
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket="names", Key=k)
        assert (status(e), code(e)) == (400, "400"), k
    # Keys S3 would store but a path cannot hold: InvalidArgument, saying
    # why (the user learns it is this gateway's limit).
    for k in ["a//b", "/etc/passwd"]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="names", Key=k, Body=b"x")
        assert (status(e), code(e)) == (400, "InvalidArgument"), k
        assert "not a key this gateway can store" in message(e), k
    # Keys refused for another reason keep their own answer.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="names", Key="k" * 1025, Body=b"x")
    assert code(e) == "KeyTooLongError"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="names", Key="a\x00b", Body=b"x")
    # (The message quotes the key escaped: a raw NUL would make the XML
    # document unreadable, and the client would see a bare 400.)
    assert (code(e), message(e)) == (
        "InvalidArgument", "`a\\0b` is not a key this gateway can store: it contains a NUL byte")
    assert "Contents" not in s3.list_objects_v2(Bucket="names")


def test_create_bucket_acl_and_ownership_values(srv):
    s3 = srv.client()
    cases = [
        (dict(ObjectOwnership="invalid_ownership"), 400, "InvalidArgument",
         "Invalid x-amz-object-ownership header: invalid_ownership"),
        (dict(ACL="invalid_acl"), 400, "InvalidArgument", None),
        (dict(ACL="public-read", ObjectOwnership="BucketOwnerEnforced"), 400,
         "InvalidBucketAclWithObjectOwnership",
         "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"),
        (dict(GrantRead="id=someone", ObjectOwnership="BucketOwnerEnforced"), 400,
         "InvalidBucketAclWithObjectOwnership", None),
        # Without an ownership header a new bucket has ACLs disabled
        # (BucketOwnerEnforced), as on S3 (issue 27).
        (dict(ACL="public-read"), 400, "InvalidBucketAclWithObjectOwnership", None),
    ]
    for args, st, c, m in cases:
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket="acl", **args)
        assert (status(e), code(e)) == (st, c), args
        if m is not None:
            assert message(e) == m, args
    # None of them made the bucket; valid values without an ACL do.
    assert s3.list_buckets()["Buckets"] == []
    s3.create_bucket(Bucket="acl", ObjectOwnership="BucketOwnerEnforced", ACL="private")
    s3.create_bucket(Bucket="acl2", ObjectOwnership="BucketOwnerPreferred")
    # A valid ACL with an ownership that allows ACLs makes the bucket
    # (issue 27; before, `NotImplemented`).
    s3.create_bucket(Bucket="acl3", ObjectOwnership="ObjectWriter", ACL="public-read")
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["acl", "acl2", "acl3"]


def test_directory_object_content_type(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="dirs")
    s3.put_object(Bucket="dirs", Key="my-dir/", Body=b"")
    r = s3.get_object(Bucket="dirs", Key="my-dir/")
    assert (r["ContentType"], r["ContentLength"]) == ("application/x-directory", 0)
    assert s3.head_object(Bucket="dirs", Key="my-dir/")["ContentType"] == "application/x-directory"
    # A type given is kept; a plain object keeps S3's default.
    s3.put_object(Bucket="dirs", Key="typed/", Body=b"", ContentType="text/plain")
    assert s3.get_object(Bucket="dirs", Key="typed/")["ContentType"] == "text/plain"
    s3.put_object(Bucket="dirs", Key="file", Body=b"x")
    assert s3.get_object(Bucket="dirs", Key="file")["ContentType"] == "binary/octet-stream"


def test_list_parts_integers(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="lparts")
    up = s3.create_multipart_upload(Bucket="lparts", Key="k")["UploadId"]
    for v in ["invalid", "2736457823532448723"]:
        c = srv.client()
        rewrite(c, "ListParts", lambda r, v=v: setattr(
            r, "url", r.url.replace("part-number-marker=1", f"part-number-marker={v}")))
        with pytest.raises(ClientError) as e:
            c.list_parts(Bucket="lparts", Key="k", UploadId=up, PartNumberMarker=1)
        assert (status(e), code(e)) == (400, "InvalidArgument"), v
        assert message(e) == f"Provided {v} not an integer or within integer range"
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket="lparts", Key="k", UploadId=up, PartNumberMarker=-14)
    assert (code(e), message(e)) == ("InvalidArgument",
                                     "Argument -14 must be an integer between 0 and 2147483647")
    assert s3.list_parts(Bucket="lparts", Key="k", UploadId=up, PartNumberMarker=3).get("Parts", []) == []


def test_encoded_version_id_in_copy_source(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="ver")
    s3.put_object(Bucket="ver", Key="src-obj", Body=b"0123456789")
    up = s3.create_multipart_upload(Bucket="ver", Key="dst")["UploadId"]
    c = srv.client()
    raw = "ver/src-obj%3FversionId%3D..%2f..%2fsecret.txt"
    rewrite(c, "UploadPartCopy", lambda r: r.headers.replace_header("x-amz-copy-source", raw))
    with pytest.raises(ClientError) as e:
        c.upload_part_copy(Bucket="ver", Key="dst", UploadId=up, PartNumber=1, CopySource="ver/src-obj")
    assert (status(e), code(e), message(e)) == (400, "InvalidArgument", "Invalid version id specified")
    assert e.value.response["Error"].get("ArgumentValue") == "../../secret.txt"
    # The same source unencoded copies.
    s3.upload_part_copy(Bucket="ver", Key="dst", UploadId=up, PartNumber=1, CopySource="ver/src-obj")
