"""Object tagging: `x-amz-tagging` on PutObject, CreateMultipartUpload and
CopyObject (COPY/REPLACE), Put/Get/DeleteObjectTagging, `x-amz-tagging-count`
on GET and HEAD, and S3's validation of tag sets. On XFS only: nothing here
depends on the filesystem."""
import pytest
from botocore.exceptions import ClientError

MiB = 1 << 20


def code(exc):
    return exc.value.response["Error"]["Code"]


def message(exc):
    return exc.value.response["Error"]["Message"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def tags(s3, bucket, key):
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]}


@pytest.fixture
def s3(make_server):
    srv = make_server("xfs", ["--min-part-size", "4096"])
    c = srv.client()
    c.create_bucket(Bucket="tagb")
    return c


def test_tagging_header_on_put(s3):
    for header, want in [
        ("&&&", {}),
        ("key", {"key": ""}),
        ("key=&", {"key": ""}),
        ("k1=v1&k2=v2", {"k1": "v1", "k2": "v2"}),
        ("key@=val@", {"key@": "val@"}),
        ("a%2E=b%2F&c++d=e%20f", {"a.": "b/", "c  d": "e f"}),
    ]:
        s3.put_object(Bucket="tagb", Key="obj", Body=b"x", Tagging=header)
        assert tags(s3, "tagb", "obj") == want, header
        head = s3.head_object(Bucket="tagb", Key="obj")
        got = s3.get_object(Bucket="tagb", Key="obj")
        count = head["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count")
        assert count == (str(len(want)) if want else None), header
        assert got.get("TagCount") == (len(want) or None), header
    # A directory object keeps its tags too.
    s3.put_object(Bucket="tagb", Key="dir/", Tagging="d=1")
    assert tags(s3, "tagb", "dir/") == {"d": "1"}
    # A new object under the key has only its own tags.
    s3.put_object(Bucket="tagb", Key="obj", Body=b"y")
    assert tags(s3, "tagb", "obj") == {}


def test_tagging_header_refusals(s3):
    for header, want_code, want_msg in [
        ("=", "InvalidArgument", "The header 'x-amz-tagging' shall be encoded"),
        ("key%", "InvalidArgument", "The header 'x-amz-tagging' shall be encoded"),
        ("k=v&k=v", "InvalidArgument", "The header 'x-amz-tagging' shall be encoded"),
        ("key?=val", "InvalidTag", "The TagKey you have provided is invalid"),
        ("key=val!", "InvalidTag", "The TagValue you have provided is invalid"),
        ("&".join(f"k{i}=v" for i in range(11)), "BadRequest", "Object tags cannot be greater than 10"),
    ]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="tagb", Key="bad", Body=b"x", Tagging=header)
        assert code(e) == want_code and message(e).startswith(want_msg), header
        assert status(e) == 400
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket="tagb", Key="bad", Tagging=header)
        assert code(e) == want_code, header
    # Nothing was stored, and the connection is still usable.
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="tagb", Key="bad")
    assert status(e) == 404
    assert s3.list_multipart_uploads(Bucket="tagb").get("Uploads", []) == []


def test_put_get_delete_object_tagging(s3):
    s3.put_object(Bucket="tagb", Key="o", Body=b"data", Metadata={"m": "1"}, ContentType="text/plain")
    etag = s3.head_object(Bucket="tagb", Key="o")["ETag"]
    assert tags(s3, "tagb", "o") == {}
    s3.put_object_tagging(Bucket="tagb", Key="o", Tagging={"TagSet": [
        {"Key": "a", "Value": "1"}, {"Key": "b c", "Value": "x:y/z"}]})
    assert tags(s3, "tagb", "o") == {"a": "1", "b c": "x:y/z"}
    # The object and its other metadata are untouched.
    head = s3.head_object(Bucket="tagb", Key="o")
    assert head["ETag"] == etag and head["Metadata"] == {"m": "1"} and head["ContentType"] == "text/plain"
    assert s3.get_object(Bucket="tagb", Key="o")["Body"].read() == b"data"
    r = s3.delete_object_tagging(Bucket="tagb", Key="o")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert tags(s3, "tagb", "o") == {}
    assert "TagCount" not in s3.get_object(Bucket="tagb", Key="o")
    # A missing object, or one under a file used as a directory.
    for key in ["missing", "o/below"]:
        for call in [lambda: s3.get_object_tagging(Bucket="tagb", Key=key),
                     lambda: s3.delete_object_tagging(Bucket="tagb", Key=key),
                     lambda: s3.put_object_tagging(Bucket="tagb", Key=key, Tagging={"TagSet": []})]:
            with pytest.raises(ClientError) as e:
                call()
            assert code(e) == "NoSuchKey", key
    # Tags go with the object.
    s3.put_object_tagging(Bucket="tagb", Key="o", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    s3.delete_object(Bucket="tagb", Key="o")
    s3.put_object(Bucket="tagb", Key="o", Body=b"again")
    assert tags(s3, "tagb", "o") == {}


def test_put_object_tagging_refusals(s3):
    s3.put_object(Bucket="tagb", Key="o", Body=b"x", Tagging="keep=1")
    cases = [
        ([{"Key": "k" * 129, "Value": "v"}], "InvalidTag", "The TagKey you have provided is invalid"),
        ([{"Key": "k", "Value": "v" * 257}], "InvalidTag", "The TagValue you have provided is invalid"),
        ([{"Key": "user!name", "Value": "v"}], "InvalidTag", "The TagKey you have provided is invalid"),
        ([{"Key": "data%20", "Value": "v"}], "InvalidTag", "The TagKey you have provided is invalid"),
        ([{"Key": "k", "Value": "comma,separated"}], "InvalidTag", "The TagValue you have provided is invalid"),
        ([{"Key": "same", "Value": "1"}, {"Key": "same", "Value": "2"}], "InvalidTag",
         "Cannot provide multiple Tags with the same key"),
        ([{"Key": f"k{i}", "Value": "v"} for i in range(11)], "BadRequest", "Object tags cannot be greater than 10"),
    ]
    for tagset, want_code, want_msg in cases:
        with pytest.raises(ClientError) as e:
            s3.put_object_tagging(Bucket="tagb", Key="o", Tagging={"TagSet": tagset})
        assert (code(e), message(e), status(e)) == (want_code, want_msg, 400), tagset
    assert tags(s3, "tagb", "o") == {"keep": "1"}
    ten = [{"Key": f"k{i}", "Value": "v" * 256} for i in range(10)]
    s3.put_object_tagging(Bucket="tagb", Key="o", Tagging={"TagSet": ten})
    assert len(tags(s3, "tagb", "o")) == 10


def test_copy_object_tagging_directive(s3):
    s3.put_object(Bucket="tagb", Key="src", Body=b"x" * 100, Tagging="foo=bar&baz=quxx")
    s3.copy_object(Bucket="tagb", Key="copied", CopySource="tagb/src")
    assert tags(s3, "tagb", "copied") == {"foo": "bar", "baz": "quxx"}
    s3.copy_object(Bucket="tagb", Key="copied2", CopySource="tagb/src", TaggingDirective="COPY", Tagging="ignored=1")
    assert tags(s3, "tagb", "copied2") == {"foo": "bar", "baz": "quxx"}
    s3.copy_object(Bucket="tagb", Key="replaced", CopySource="tagb/src", TaggingDirective="REPLACE", Tagging="n=1")
    assert tags(s3, "tagb", "replaced") == {"n": "1"}
    s3.copy_object(Bucket="tagb", Key="cleared", CopySource="tagb/src", TaggingDirective="REPLACE")
    assert tags(s3, "tagb", "cleared") == {}
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="tagb", Key="src", CopySource="tagb/src", TaggingDirective="invalid")
    assert code(e) == "InvalidArgument" and message(e) == "Unknown tagging directive."
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="tagb", Key="r2", CopySource="tagb/src", TaggingDirective="REPLACE", Tagging="a!=1")
    assert code(e) == "InvalidTag"
    assert tags(s3, "tagb", "src") == {"foo": "bar", "baz": "quxx"}


def test_multipart_carries_tags(s3):
    up = s3.create_multipart_upload(Bucket="tagb", Key="mp", Tagging="k1=v1&k2")
    p1 = s3.upload_part(Bucket="tagb", Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"a" * 8192)
    p2 = s3.upload_part(Bucket="tagb", Key="mp", UploadId=up["UploadId"], PartNumber=2, Body=b"b" * 10)
    s3.complete_multipart_upload(Bucket="tagb", Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    assert tags(s3, "tagb", "mp") == {"k1": "v1", "k2": ""}
    assert s3.head_object(Bucket="tagb", Key="mp")["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"


def test_bucket_tagging(make_server):
    s3 = make_server("xfs").client()
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket="nobucket")
    assert code(e) == "NoSuchBucket"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket="nobucket", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    assert code(e) == "NoSuchBucket"
    made = s3.create_bucket(Bucket="tagged", CreateBucketConfiguration={
        "Tags": [{"Key": "team", "Value": "blue"}, {"Key": "a b", "Value": ""}]})
    assert made["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-arn"] == "arn:aws:s3:::tagged"
    assert s3.head_bucket(Bucket="tagged")["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-arn"] == \
        "arn:aws:s3:::tagged"
    got = s3.get_bucket_tagging(Bucket="tagged")["TagSet"]
    assert {t["Key"]: t["Value"] for t in got} == {"team": "blue", "a b": ""}
    r = s3.put_bucket_tagging(Bucket="tagged", Tagging={"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(50)]})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert len(s3.get_bucket_tagging(Bucket="tagged")["TagSet"]) == 50
    for tagset, want in [
        ([{"Key": f"k{i}", "Value": "v"} for i in range(51)], ("BadRequest", "Bucket tag count cannot be greater than 50")),
        ([{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}],
         ("InvalidTag", "Cannot provide multiple Tags with the same key")),
        ([{"Key": "k!", "Value": "1"}], ("InvalidTag", "The TagKey you have provided is invalid")),
    ]:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_tagging(Bucket="tagged", Tagging={"TagSet": tagset})
        assert (code(e), message(e)) == want
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket="refused", CreateBucketConfiguration={"Tags": tagset})
        assert (code(e), message(e)) == want
    # A refused CreateBucket made no bucket.
    assert "refused" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    r = s3.delete_bucket_tagging(Bucket="tagged")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket="tagged")
    assert code(e) == "NoSuchTagSet" and status(e) == 404
    assert message(e) == "The TagSet does not exist."
    # A bucket made again under the name does not inherit the old tags.
    s3.put_bucket_tagging(Bucket="tagged", Tagging={"TagSet": [{"Key": "old", "Value": "1"}]})
    s3.delete_bucket(Bucket="tagged")
    s3.create_bucket(Bucket="tagged")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket="tagged")
    assert code(e) == "NoSuchTagSet"
