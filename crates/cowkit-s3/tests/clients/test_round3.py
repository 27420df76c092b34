"""Conformance round 3: answers S3 gives that the gateway now gives too
(expected bucket owners, ...). On XFS only: none of this depends on the
filesystem."""
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
    # Nothing was changed by the refused requests.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="own")["Contents"]] == ["k"]
    s3.copy_object(Bucket="own", Key="k3", CopySource="own/k", ExpectedSourceBucketOwner=AK,
                   ExpectedBucketOwner=AK)
    s3.delete_object(Bucket="own", Key="k", ExpectedBucketOwner=AK)
    s3.delete_object(Bucket="own", Key="k3")
    s3.delete_bucket(Bucket="own", ExpectedBucketOwner=AK)
