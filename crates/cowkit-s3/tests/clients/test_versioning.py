"""Bucket versioning and object lock (issue 27): version ids, older versions
kept in the gateway's area by a second name of the same inode (no byte
copied), delete markers, ListObjectVersions paging, GET/HEAD/DELETE/copy by
version, suspended buckets' `null` versions, multipart completes; object
lock configuration, retention, legal hold and the governance bypass. On XFS
only: nothing here depends on the filesystem."""
import datetime
import os

import pytest
from botocore.exceptions import ClientError

MiB = 1 << 20


def code(exc):
    return exc.value.response["Error"]["Code"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def headers(exc):
    return exc.value.response["ResponseMetadata"]["HTTPHeaders"]


def body(s3, bucket, key, **kw):
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def later(**kw):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(**kw)


@pytest.fixture
def srv(make_server):
    return make_server("xfs", ["--min-part-size", "4096"])


@pytest.fixture
def s3(srv):
    c = srv.client()
    c.create_bucket(Bucket="vbk")
    return c


def versions_dir(srv, bucket):
    return os.path.join(srv.root, ".cowkit-s3", "versions", bucket)


def test_overwrites_keep_old_versions_without_copying(srv, s3):
    s3.put_object(Bucket="vbk", Key="k", Body=b"one")
    assert "Status" not in s3.get_bucket_versioning(Bucket="vbk")
    # Unversioned: no version id is shown.
    assert "VersionId" not in s3.head_object(Bucket="vbk", Key="k")
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket="vbk")["Status"] == "Enabled"
    ino_one = os.stat(os.path.join(srv.root, "vbk", "k")).st_ino
    v2 = s3.put_object(Bucket="vbk", Key="k", Body=b"two")["VersionId"]
    ino_two = os.stat(os.path.join(srv.root, "vbk", "k")).st_ino
    v3 = s3.put_object(Bucket="vbk", Key="k", Body=b"three")["VersionId"]
    assert len({v2, v3, "null"}) == 3 and v2 < v3
    # The key is a plain file holding the current version.
    assert open(os.path.join(srv.root, "vbk", "k"), "rb").read() == b"three"
    # The older versions are the very inodes that were the key: linked,
    # not copied or cloned.
    kept = {}
    for h in os.listdir(versions_dir(srv, "vbk")):
        for name in os.listdir(os.path.join(versions_dir(srv, "vbk"), h)):
            if not name.endswith(".json"):
                kept[name] = os.stat(os.path.join(versions_dir(srv, "vbk"), h, name)).st_ino
    assert kept == {"null": ino_one, v2: ino_two}
    assert body(s3, "vbk", "k") == b"three"
    assert body(s3, "vbk", "k", VersionId=v2) == b"two"
    assert body(s3, "vbk", "k", VersionId="null") == b"one"
    assert s3.head_object(Bucket="vbk", Key="k", VersionId=v2)["ContentLength"] == 3
    assert s3.get_object(Bucket="vbk", Key="k")["VersionId"] == v3
    listed = s3.list_object_versions(Bucket="vbk")["Versions"]
    assert [(v["VersionId"], v["IsLatest"], v["Size"]) for v in listed] == [
        (v3, True, 5), (v2, False, 3), ("null", False, 3)]


def test_delete_markers(srv, s3):
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="vbk", Key="d/k", Body=b"one")["VersionId"]
    r = s3.delete_object(Bucket="vbk", Key="d/k")
    assert r["DeleteMarker"] is True
    marker = r["VersionId"]
    # The tree no longer has the key; S3 shows a 404 naming the marker.
    assert not os.path.exists(os.path.join(srv.root, "vbk", "d", "k"))
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="vbk", Key="d/k")
    assert status(e) == 404 and headers(e).get("x-amz-delete-marker") == "true"
    assert headers(e).get("x-amz-version-id") == marker
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="vbk", Key="d/k", VersionId=marker)
    assert status(e) == 405
    assert s3.list_objects_v2(Bucket="vbk").get("KeyCount") == 0
    out = s3.list_object_versions(Bucket="vbk")
    assert [(m["VersionId"], m["IsLatest"]) for m in out["DeleteMarkers"]] == [(marker, True)]
    assert [(v["VersionId"], v["IsLatest"]) for v in out["Versions"]] == [(v1, False)]
    # A bucket with versions left is not empty.
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket="vbk")
    assert code(e) == "BucketNotEmpty"
    # Removing the marker brings the version back to its key.
    r = s3.delete_object(Bucket="vbk", Key="d/k", VersionId=marker)
    assert r["DeleteMarker"] is True and r["VersionId"] == marker
    assert open(os.path.join(srv.root, "vbk", "d", "k"), "rb").read() == b"one"
    assert body(s3, "vbk", "d/k") == b"one"
    # A directory object has no versions: it goes as in an unversioned
    # bucket (a directory cannot have a second name).
    s3.put_object(Bucket="vbk", Key="dir/")
    s3.delete_object(Bucket="vbk", Key="dir/")
    assert not os.path.exists(os.path.join(srv.root, "vbk", "dir"))
    # Deleting the current version by id brings no marker.
    r = s3.delete_object(Bucket="vbk", Key="d/k", VersionId=v1)
    assert "DeleteMarker" not in r
    assert s3.list_object_versions(Bucket="vbk").get("Versions", []) == []
    s3.delete_bucket(Bucket="vbk")


def test_version_ids_are_checked(s3):
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket="vbk", Key="a", Body=b"a")["VersionId"]
    s3.put_object(Bucket="vbk", Key="b", Body=b"b")
    for bad in ["invalid_version_id", "../../a", v.lower(), v + "0"]:
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="vbk", Key="a", VersionId=bad)
        assert code(e) == "InvalidArgument", bad
    # A version of another key, or one that never was.
    for other in [("b", v), ("a", "01G65Z755AFWAKHE12NY0CQ9FH")]:
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket="vbk", Key=other[0], VersionId=other[1])
        assert code(e) == "NoSuchVersion", other
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="vbk", Key="c", CopySource="vbk/a?versionId=..%2F..%2Fx")
    assert code(e) == "InvalidArgument"
    with pytest.raises(ClientError):
        s3.head_object(Bucket="vbk", Key="c")


def test_suspended_writes_replace_the_null_version(srv, s3):
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="vbk", Key="k", Body=b"one")["VersionId"]
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Suspended"})
    # The null version: no id in the answer (as VersityGW), `null` on reads.
    assert "VersionId" not in s3.put_object(Bucket="vbk", Key="k", Body=b"two")
    assert "VersionId" not in s3.put_object(Bucket="vbk", Key="k", Body=b"three")
    assert s3.head_object(Bucket="vbk", Key="k")["VersionId"] == "null"
    listed = s3.list_object_versions(Bucket="vbk")["Versions"]
    assert [(v["VersionId"], v["IsLatest"]) for v in listed] == [("null", True), (v1, False)]
    assert body(s3, "vbk", "k", VersionId=v1) == b"one"
    # A delete in a suspended bucket: a null delete marker, the null
    # version gone.
    r = s3.delete_object(Bucket="vbk", Key="k")
    assert r["DeleteMarker"] is True and r["VersionId"] == "null"
    out = s3.list_object_versions(Bucket="vbk")
    assert [v["VersionId"] for v in out["Versions"]] == [v1]
    assert [m["VersionId"] for m in out["DeleteMarkers"]] == ["null"]


def test_copy_and_complete_by_version(srv, s3):
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="vbk", Key="src", Body=b"old source")["VersionId"]
    s3.put_object(Bucket="vbk", Key="src", Body=b"new source")
    r = s3.copy_object(Bucket="vbk", Key="dst", CopySource={"Bucket": "vbk", "Key": "src", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and r["VersionId"]
    assert body(s3, "vbk", "dst") == b"old source"
    # A multipart complete over a key keeps the old version and clones
    # its parts as any complete does.
    up = s3.create_multipart_upload(Bucket="vbk", Key="dst")["UploadId"]
    parts = []
    for n in (1, 2):
        e = s3.upload_part(Bucket="vbk", Key="dst", UploadId=up, PartNumber=n, Body=bytes([n]) * 8192)["ETag"]
        parts.append({"PartNumber": n, "ETag": e})
    done = s3.complete_multipart_upload(Bucket="vbk", Key="dst", UploadId=up,
                                        MultipartUpload={"Parts": parts})
    assert done["VersionId"] and done["VersionId"] != r["VersionId"]
    assert body(s3, "vbk", "dst", VersionId=r["VersionId"]) == b"old source"
    assert len(body(s3, "vbk", "dst")) == 16384
    # UploadPartCopy from an older version.
    up = s3.create_multipart_upload(Bucket="vbk", Key="p")["UploadId"]
    e = s3.upload_part_copy(Bucket="vbk", Key="p", UploadId=up, PartNumber=1,
                            CopySource={"Bucket": "vbk", "Key": "src", "VersionId": v1})
    s3.complete_multipart_upload(Bucket="vbk", Key="p", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e["CopyPartResult"]["ETag"]}]})
    assert body(s3, "vbk", "p") == b"old source"


def test_list_object_versions_pages(s3):
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    want = []
    for key in ["foo", "bar", "baz"]:
        ids = [s3.put_object(Bucket="vbk", Key=key, Body=b"x")["VersionId"] for _ in range(3)]
        want += [(key, v) for v in reversed(ids)]
    want.sort(key=lambda kv: kv[0])  # keys in order, each newest first (stable)
    got, kw = [], {}
    while True:
        out = s3.list_object_versions(Bucket="vbk", MaxKeys=4, **kw)
        got += [(v["Key"], v["VersionId"]) for v in out.get("Versions", [])]
        if not out["IsTruncated"]:
            break
        assert out["NextVersionIdMarker"] == got[-1][1]
        kw = {"KeyMarker": out["NextKeyMarker"], "VersionIdMarker": out["NextVersionIdMarker"]}
    assert got == want
    out = s3.list_object_versions(Bucket="vbk", Prefix="ba", Delimiter="z")
    assert [p["Prefix"] for p in out["CommonPrefixes"]] == ["baz"]
    assert {v["Key"] for v in out["Versions"]} == {"bar"}


def test_object_lock_retention_and_legal_hold(s3):
    s3.create_bucket(Bucket="lbk", ObjectLockEnabledForBucket=True)
    # Object lock turns versioning on, as on S3.
    assert s3.get_bucket_versioning(Bucket="lbk")["Status"] == "Enabled"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket="lbk", VersioningConfiguration={"Status": "Suspended"})
    assert code(e) == "InvalidBucketState"
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket="vbk")
    assert code(e) == "ObjectLockConfigurationNotFoundError"
    s3.put_object_lock_configuration(Bucket="lbk", ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    rule = s3.get_object_lock_configuration(Bucket="lbk")["ObjectLockConfiguration"]["Rule"]
    assert rule["DefaultRetention"] == {"Mode": "GOVERNANCE", "Days": 1}
    for bad in [{"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, {"Mode": "x", "Days": 1}]:
        with pytest.raises(ClientError) as e:
            s3.put_object_lock_configuration(Bucket="lbk", ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": bad}})
        assert code(e) == "MalformedXML", bad
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket="lbk", ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": -3}}})
    assert code(e) == "InvalidArgument"
    v = s3.put_object(Bucket="lbk", Key="k", Body=b"locked")["VersionId"]
    r = s3.get_object_retention(Bucket="lbk", Key="k")["Retention"]
    assert r["Mode"] == "GOVERNANCE" and r["RetainUntilDate"] > later(hours=23)
    # A delete without a version id makes a marker (the version stays).
    s3.delete_object(Bucket="lbk", Key="k")
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket="lbk", Key="k", VersionId=v)
    assert code(e) == "AccessDenied" and status(e) == 403
    assert body(s3, "lbk", "k", VersionId=v) == b"locked"
    # Governance: shortened or removed only with the bypass.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket="lbk", Key="k", VersionId=v, Retention={
            "Mode": "GOVERNANCE", "RetainUntilDate": later(hours=1)})
    assert code(e) == "AccessDenied"
    s3.put_object_retention(Bucket="lbk", Key="k", VersionId=v, BypassGovernanceRetention=True,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later(hours=1)})
    # Compliance: not even with the bypass; a date in the past is refused.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket="lbk", Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket="lbk", Key="k", VersionId=v, BypassGovernanceRetention=True,
                                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later(hours=2)})
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket="lbk", Key="k", VersionId=v, Retention={
            "Mode": "COMPLIANCE", "RetainUntilDate": later(hours=-1)})
    assert code(e) == "InvalidArgument"
    # Legal hold, on an object put with one.
    w = s3.put_object(Bucket="lbk", Key="h", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.get_object_legal_hold(Bucket="lbk", Key="h")["LegalHold"]["Status"] == "ON"
    s3.put_object_retention(Bucket="lbk", Key="h", VersionId=w, BypassGovernanceRetention=True,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later(seconds=2)})
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket="lbk", Key="h", VersionId=w, BypassGovernanceRetention=True)
    assert code(e) == "AccessDenied"
    s3.put_object_legal_hold(Bucket="lbk", Key="h", VersionId=w, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket="lbk", Key="h", VersionId=w, BypassGovernanceRetention=True)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="lbk", Key="h", VersionId=w)
    assert status(e) == 404
    # Object lock headers and calls on a bucket without object lock.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="vbk", Key="x", Body=b"x", ObjectLockLegalHoldStatus="ON")
    assert code(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket="vbk", Key="x")
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket="vbk", Key="x")
    assert code(e) == "NoSuchKey"
    s3.put_object(Bucket="vbk", Key="x", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket="vbk", Key="x")
    assert code(e) == "InvalidRequest"


def test_object_lock_without_versioning(make_server):
    srv = make_server("xfs", ["--object-lock-without-versioning"])
    s3 = srv.client()
    s3.create_bucket(Bucket="lbk", ObjectLockEnabledForBucket=True)
    assert "Status" not in s3.get_bucket_versioning(Bucket="lbk")
    s3.put_object(Bucket="lbk", Key="k", Body=b"one", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=later(hours=1))
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="lbk", Key="k", Body=b"two")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket="lbk", Key="k")
    assert code(e) == "AccessDenied"
    assert body(s3, "lbk", "k") == b"one"
    s3.delete_object(Bucket="lbk", Key="k", BypassGovernanceRetention=True)
    with pytest.raises(ClientError):
        s3.head_object(Bucket="lbk", Key="k")


def test_governance_bypass_is_the_policys_to_grant(make_server):
    """As VersityGW decides it: replacing a GOVERNANCE-locked object (a lock
    bucket kept unversioned) needs a bucket policy allowing
    s3:BypassGovernanceRetention, from the admin too; the bypass header on a
    delete is the admin's, and another account's only with that allowance."""
    import json
    from conftest import AK
    from test_accounts import client_of, create_user
    srv = make_server("xfs", ["--object-lock-without-versioning", "--min-part-size", "4096"])
    s3 = srv.client()
    s3.create_bucket(Bucket="lbk", ObjectLockEnabledForBucket=True,
                     ObjectOwnership="BucketOwnerPreferred")
    create_user(srv, "hal", "user")
    s3.put_bucket_acl(Bucket="lbk", GrantFullControl='id="hal"')
    for k in ("a", "b", "c", "mp"):
        s3.put_object(Bucket="lbk", Key=k, Body=b"one", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=later(hours=1))
    hal = client_of(srv, "hal")
    # No policy: no overwrite (not even by the admin), no bypass for hal.
    for who in (s3, hal):
        with pytest.raises(ClientError) as e:
            who.put_object(Bucket="lbk", Key="a", Body=b"two")
        assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        hal.delete_object(Bucket="lbk", Key="b", BypassGovernanceRetention=True)
    assert code(e) == "AccessDenied"
    assert body(s3, "lbk", "b") == b"one"
    # The policy (which alone decides for hal now) grants hal deletes and
    # the bypass, and the admin the bypass, on lbk/*.
    s3.put_bucket_policy(Bucket="lbk", Policy=json.dumps({"Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["hal", AK]},
        "Action": ["s3:BypassGovernanceRetention", "s3:DeleteObject"],
        "Resource": "arn:aws:s3:::lbk/*"}]}))
    s3.put_object(Bucket="lbk", Key="a", Body=b"two")
    assert body(s3, "lbk", "a") == b"two"
    s3.copy_object(Bucket="lbk", Key="c", CopySource="lbk/a")
    assert body(s3, "lbk", "c") == b"two"
    up = s3.create_multipart_upload(Bucket="lbk", Key="mp")["UploadId"]
    etag = s3.upload_part(Bucket="lbk", Key="mp", UploadId=up, PartNumber=1,
                          Body=b"x" * 8192)["ETag"]
    s3.complete_multipart_upload(Bucket="lbk", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert body(s3, "lbk", "mp") == b"x" * 8192
    with pytest.raises(ClientError) as e:
        hal.delete_object(Bucket="lbk", Key="b")
    assert code(e) == "AccessDenied"
    hal.delete_object(Bucket="lbk", Key="b", BypassGovernanceRetention=True)
    with pytest.raises(ClientError):
        s3.head_object(Bucket="lbk", Key="b")


def test_retention_and_hold_without_a_document_on_a_missing_bucket(s3):
    """S3 names the missing bucket before the missing document."""
    for call in (lambda: s3.put_object_retention(Bucket="nosuch", Key="k"),
                 lambda: s3.put_object_legal_hold(Bucket="nosuch", Key="k")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "NoSuchBucket"
    # On a bucket that exists, the missing document is the error.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket="vbk", Key="k")
    assert code(e) == "MalformedXML"


def test_fleet_race_on_a_versioned_locked_bucket(srv, s3):
    """Two gateways on one root race on a versioned bucket with object lock:
    concurrent overwrites of one key through both keep every version (each
    its own bytes, listed by both gateways alike), a version under legal hold
    set through one gateway cannot be deleted through either, however many
    deletes race, and goes once the hold is off."""
    import concurrent.futures as cf
    import json
    import signal
    import subprocess
    import boto3
    from botocore.config import Config
    from conftest import AK, SK
    proc = subprocess.Popen(
        [os.environ["COWKIT_BIN"], "s3", "serve", "--root", srv.root, "--listen", "127.0.0.1:0",
         "--json", "-q", "--access-key", AK, "--secret-key", SK, "--min-part-size", "4096"],
        stdout=subprocess.PIPE, text=True)
    try:
        other = boto3.client(
            "s3", endpoint_url=json.loads(proc.stdout.readline())["endpoint"],
            aws_access_key_id=AK, aws_secret_access_key=SK, region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        s3.create_bucket(Bucket="lock", ObjectLockEnabledForBucket=True)
        gws = [s3, other]

        def put(i):
            return gws[i % 2].put_object(Bucket="lock", Key="k", Body=b"v%03d" % i)["VersionId"]

        with cf.ThreadPoolExecutor(8) as ex:
            ids = list(ex.map(put, range(60)))
        assert len(set(ids)) == 60
        listed = [sorted((v["VersionId"], v["ETag"]) for v in
                         g.list_object_versions(Bucket="lock")["Versions"]) for g in gws]
        assert listed[0] == listed[1] and len(listed[0]) == 60
        for i in (0, 17, 59):
            assert body(gws[(i + 1) % 2], "lock", "k", VersionId=ids[i]) == b"v%03d" % i
        # A hold through one gateway; deletes of that version through both, at once.
        held = ids[30]
        other.put_object_legal_hold(Bucket="lock", Key="k", VersionId=held,
                                    LegalHold={"Status": "ON"})

        def delete(i):
            try:
                gws[i % 2].delete_object(Bucket="lock", Key="k", VersionId=held)
                return "deleted"
            except ClientError as e:
                return e.response["Error"]["Code"]

        with cf.ThreadPoolExecutor(8) as ex:
            outcomes = set(ex.map(delete, range(16)))
        assert outcomes == {"AccessDenied"}, outcomes
        assert body(s3, "lock", "k", VersionId=held) == b"v030"
        s3.put_object_legal_hold(Bucket="lock", Key="k", VersionId=held,
                                 LegalHold={"Status": "OFF"})
        other.delete_object(Bucket="lock", Key="k", VersionId=held)
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket="lock", Key="k", VersionId=held)
        assert status(e) in (400, 404)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def raw_signed(srv, method, path, headers=None):
    """A request signed by botocore with the server's key pair, sent as is
    (botocore would leave an empty `versionId=` out): (status, body)."""
    import urllib.error
    import urllib.request

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from conftest import AK, SK
    req = AWSRequest(method=method, url=srv.endpoint + path,
                     headers={"x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                              **(headers or {})})
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(req.url, method=method, headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_an_empty_version_id_is_refused(srv, s3):
    """`versionId=` names no version: S3's 400 InvalidArgument on every
    request that takes a version id, not the current version (a GET) or a
    new delete marker (a DELETE)."""
    s3.put_bucket_versioning(Bucket="vbk", VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket="vbk", Key="k", Body=b"current")["VersionId"]
    for method, path in [("GET", "/vbk/k?versionId="), ("DELETE", "/vbk/k?versionId="),
                         ("GET", "/vbk/k?tagging&versionId="), ("GET", "/vbk/k?retention&versionId="),
                         ("GET", "/vbk/k?acl&versionId=")]:
        st, text = raw_signed(srv, method, path)
        assert st == 400, (method, path, st, text)
        assert "<Code>InvalidArgument</Code>" in text, text
        assert "<Message>Version id cannot be the empty string</Message>" in text, text
        assert "<ArgumentName>versionId</ArgumentName>" in text, text
    st, _ = raw_signed(srv, "HEAD", "/vbk/k?versionId=")
    assert st == 400
    # Nothing was deleted, no delete marker made.
    vs = s3.list_object_versions(Bucket="vbk")
    assert [x["VersionId"] for x in vs["Versions"]] == [v]
    assert "DeleteMarkers" not in vs
    assert body(s3, "vbk", "k") == b"current"
    # A copy source's empty version id, named as S3 names it.
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="vbk", Key="c", CopySource="vbk/k?versionId=")
    assert (status(e), code(e)) == (400, "InvalidArgument")
    assert e.value.response["Error"]["Message"] == "Version id cannot be the empty string"
    assert e.value.response["Error"]["ArgumentName"] == "x-amz-copy-source"
