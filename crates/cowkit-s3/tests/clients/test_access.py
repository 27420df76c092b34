"""Issue 27: bucket ACLs, object ownership and bucket policies, and the
unsigned requests they let in (public buckets). The gateway has one key
pair, its admin; requests of other accounts need the accounts of issue 27
and are covered by the unit tests of `authz`, `acl` and `policy` until
then. On XFS only: none of this depends on the filesystem."""
import json
import os
import signal
import subprocess

import boto3
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import AK, SK


def code(exc):
    return exc.value.response["Error"]["Code"]


def message(exc):
    return exc.value.response["Error"].get("Message")


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def srv(make_server):
    return make_server("xfs")


def anonymous(endpoint):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                      retries={"max_attempts": 1}))


def refused(fn, st, c, m=None):
    with pytest.raises(ClientError) as e:
        fn()
    assert (status(e), code(e)) == (st, c), (status(e), code(e), message(e))
    if m is not None:
        assert message(e) == m
    return e


def policy(*statements, version="2012-10-17"):
    return json.dumps({"Version": version, "Statement": list(statements)})


def statement(effect, action, resource, principal="*", condition=None):
    s = {"Effect": effect, "Principal": principal, "Action": action, "Resource": resource}
    if condition:
        s["Condition"] = condition
    return s


def grants(acl):
    return [(g["Grantee"]["Type"], g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]]


def test_bucket_acl_round_trip_and_refusals(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="acl", ObjectOwnership="BucketOwnerPreferred")
    acl = s3.get_bucket_acl(Bucket="acl")
    assert acl["Owner"]["ID"] == AK
    assert grants(acl) == [("CanonicalUser", AK, "FULL_CONTROL")]
    s3.put_bucket_acl(Bucket="acl", ACL="public-read-write")
    assert grants(s3.get_bucket_acl(Bucket="acl")) == [
        ("CanonicalUser", AK, "FULL_CONTROL"), ("Group", "all-users", "READ"),
        ("Group", "all-users", "WRITE")]
    s3.put_bucket_acl(Bucket="acl", GrantRead=f'id="{AK}"',
                      GrantWrite='uri="http://acs.amazonaws.com/groups/global/AllUsers"')
    assert grants(s3.get_bucket_acl(Bucket="acl"))[1:] == [
        ("CanonicalUser", AK, "READ"), ("Group", "all-users", "WRITE")]
    doc = {"Owner": {"ID": AK}, "Grants": [
        {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"},
         "Permission": "READ"}]}
    s3.put_bucket_acl(Bucket="acl", AccessControlPolicy=doc)
    kept = grants(s3.get_bucket_acl(Bucket="acl"))
    assert kept == [("CanonicalUser", AK, "FULL_CONTROL"), ("Group", "authenticated-users", "READ")]
    # Every refusal leaves the ACL as it was.
    refused(lambda: s3.put_bucket_acl(Bucket="acl"), 404, "MissingSecurityHeader")
    refused(lambda: s3.put_bucket_acl(Bucket="acl", ACL="private", GrantRead=f'id="{AK}"'), 400,
            "InvalidRequest", "Specifying both Canned ACLs and Header Grants is not allowed.")
    refused(lambda: s3.put_bucket_acl(Bucket="acl", ACL="private", AccessControlPolicy=doc), 400,
            "UnexpectedContent")
    refused(lambda: s3.put_bucket_acl(Bucket="acl", GrantRead="id=nobody"), 400, "InvalidArgument",
            "Invalid id")
    for bad in [{"Grants": doc["Grants"]},
                {"Owner": {"ID": AK}, "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": AK},
                                                  "Permission": "EVERYTHING"}]},
                {"Owner": {"ID": AK}, "Grants": [{"Grantee": {"Type": "Nobody", "ID": AK},
                                                  "Permission": "READ"}]}]:
        refused(lambda: s3.put_bucket_acl(Bucket="acl", AccessControlPolicy=bad), 400,
                "MalformedACLError")
    refused(lambda: s3.put_bucket_acl(Bucket="acl", AccessControlPolicy={**doc, "Owner": {"ID": "x"}}),
            400, "InvalidArgument", "Invalid id")
    assert grants(s3.get_bucket_acl(Bucket="acl")) == kept
    refused(lambda: s3.get_bucket_acl(Bucket="nosuch"), 404, "NoSuchBucket")
    # A bucket made without an ownership setting has ACLs disabled, as on S3.
    s3.create_bucket(Bucket="plain")
    refused(lambda: s3.put_bucket_acl(Bucket="plain", ACL="public-read"), 400,
            "AccessControlListNotSupported", "The bucket does not allow ACLs.")


def test_ownership_controls(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="own")
    rules = lambda: s3.get_bucket_ownership_controls(Bucket="own")["OwnershipControls"]["Rules"]
    assert rules() == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    s3.put_bucket_ownership_controls(Bucket="own", OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    assert rules() == [{"ObjectOwnership": "ObjectWriter"}]
    for bad in [[{"ObjectOwnership": "ObjectWriter"}, {"ObjectOwnership": "BucketOwnerPreferred"}],
                [{"ObjectOwnership": "Nobody"}]]:
        refused(lambda: s3.put_bucket_ownership_controls(Bucket="own", OwnershipControls={"Rules": bad}),
                400, "MalformedXML")
    assert rules() == [{"ObjectOwnership": "ObjectWriter"}]
    s3.delete_bucket_ownership_controls(Bucket="own")
    refused(lambda: s3.get_bucket_ownership_controls(Bucket="own"), 404, "OwnershipControlsNotFoundError")
    # Without a setting, ACLs apply.
    s3.put_bucket_acl(Bucket="own", ACL="public-read")
    refused(lambda: s3.get_bucket_ownership_controls(Bucket="nosuch"), 404, "NoSuchBucket")
    # A public ACL on a new bucket needs an ownership that allows ACLs.
    refused(lambda: s3.create_bucket(Bucket="pub", ACL="public-read"), 400,
            "InvalidBucketAclWithObjectOwnership")
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["own"]
    s3.create_bucket(Bucket="pub", ACL="public-read", ObjectOwnership="ObjectWriter")
    assert ("Group", "all-users", "READ") in grants(s3.get_bucket_acl(Bucket="pub"))


def test_bucket_policy_put_get_delete(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="pol")
    refused(lambda: s3.get_bucket_policy(Bucket="pol"), 404, "NoSuchBucketPolicy",
            "The bucket policy does not exist.")
    doc = policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::pol/*"),
                 statement("Deny", ["s3:DeleteBucket"], "arn:aws:s3:::pol", principal={"AWS": [AK]}))
    r = s3.put_bucket_policy(Bucket="pol", Policy=doc)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_bucket_policy(Bucket="pol")["Policy"] == doc
    bad = {
        "false": "Policies must be valid JSON and the first byte must be '{'",
        "{asdf": "This policy contains invalid Json",
        "{}": "Missing required field Statement",
        policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::pol/*", principal="nobody")):
            "Invalid principal in policy",
        policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::other/*")): "Policy has invalid resource",
        policy(statement("Allow", "s3:ListBucket", "arn:aws:s3:::pol/*")):
            "Action does not apply to any resource(s) in statement",
        policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::pol/*",
                         condition={"IpAddress": {"aws:SourceIp": "300.1.1.1/40"}})):
            "Invalid IP address in Conditions",
        policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::pol/*"), version="2020-01-01"):
            "The policy must contain a valid version string",
    }
    for d, m in bad.items():
        refused(lambda: s3.put_bucket_policy(Bucket="pol", Policy=d), 400, "MalformedPolicy", m)
    # Over 20 KB: refused before it is read.
    big = policy(statement("Allow", "s3:GetObject", [f"arn:aws:s3:::pol/{i:05}" for i in range(1200)]))
    assert len(big) > 20 * 1024
    refused(lambda: s3.put_bucket_policy(Bucket="pol", Policy=big), 400, "MalformedPolicy")
    assert s3.get_bucket_policy(Bucket="pol")["Policy"] == doc
    r = s3.delete_bucket_policy(Bucket="pol")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    refused(lambda: s3.get_bucket_policy(Bucket="pol"), 404, "NoSuchBucketPolicy")
    s3.delete_bucket_policy(Bucket="pol")
    refused(lambda: s3.put_bucket_policy(Bucket="nosuch", Policy=doc), 404, "NoSuchBucket")
    # A bucket made again under the name starts without the old policy.
    s3.put_bucket_policy(Bucket="pol", Policy=doc)
    s3.delete_bucket(Bucket="pol")
    s3.create_bucket(Bucket="pol")
    refused(lambda: s3.get_bucket_policy(Bucket="pol"), 404, "NoSuchBucketPolicy")


def test_anonymous_requests_and_public_acls(srv):
    s3, anon = srv.client(), anonymous(srv.endpoint)
    s3.create_bucket(Bucket="pub", ObjectOwnership="BucketOwnerPreferred")
    s3.put_object(Bucket="pub", Key="k", Body=b"hello")
    denied = "Access Denied."
    refused(lambda: anon.get_object(Bucket="pub", Key="k"), 403, "AccessDenied", denied)
    refused(lambda: anon.list_objects_v2(Bucket="pub"), 403, "AccessDenied", denied)
    refused(lambda: anon.list_buckets(), 403, "AccessDenied", denied)
    refused(lambda: anon.get_bucket_ownership_controls(Bucket="pub"), 403, "AccessDenied",
            "s3:GetBucketOwnershipControls does not support Anonymous requests!")
    refused(lambda: anon.put_bucket_acl(Bucket="pub", ACL="public-read"), 403, "AccessDenied",
            "Anonymous users cannot invoke this API. Please authenticate.")
    s3.put_bucket_acl(Bucket="pub", ACL="public-read")
    assert anon.get_object(Bucket="pub", Key="k")["Body"].read() == b"hello"
    assert [o["Key"] for o in anon.list_objects_v2(Bucket="pub")["Contents"]] == ["k"]
    refused(lambda: anon.put_object(Bucket="pub", Key="n", Body=b"x"), 403, "AccessDenied")
    refused(lambda: anon.get_bucket_acl(Bucket="pub"), 403, "AccessDenied")
    s3.put_bucket_acl(Bucket="pub", ACL="public-read-write")
    anon.put_object(Bucket="pub", Key="n", Body=b"from anyone")
    assert s3.get_object(Bucket="pub", Key="n")["Body"].read() == b"from anyone"
    # An explicit Deny in the policy wins over the public ACL.
    s3.put_bucket_policy(Bucket="pub", Policy=policy(statement("Deny", "s3:PutObject", "arn:aws:s3:::pub/*")))
    refused(lambda: anon.put_object(Bucket="pub", Key="m", Body=b"x"), 403, "AccessDenied")
    refused(lambda: s3.head_object(Bucket="pub", Key="m"), 404, "404")
    assert anon.get_object(Bucket="pub", Key="k")["Body"].read() == b"hello"
    # Back to private: nothing for the anonymous.
    s3.delete_bucket_policy(Bucket="pub")
    s3.put_bucket_acl(Bucket="pub", ACL="private")
    refused(lambda: anon.get_object(Bucket="pub", Key="k"), 403, "AccessDenied", denied)
    # Object ACLs are still refused, not ignored (for the admin after
    # authorisation; the anonymous get S3's refusal first).
    refused(lambda: s3.put_object(Bucket="pub", Key="o", Body=b"x", ACL="public-read"), 501, "NotImplemented")
    refused(lambda: s3.put_object_acl(Bucket="pub", Key="k", ACL="public-read"), 501, "NotImplemented")
    refused(lambda: anon.put_object_acl(Bucket="pub", Key="k", ACL="public-read"), 403, "AccessDenied",
            "Anonymous users cannot invoke this API. Please authenticate.")


def unsigned_put(srv, path, body, declared, headers=None):
    """An unsigned PUT of `body` to `path` declaring the SHA-256 `declared`:
    (status, body text)."""
    import urllib.error
    import urllib.request
    h = {"x-amz-content-sha256": declared, "Content-Length": str(len(body)), **(headers or {})}
    req = urllib.request.Request(f"{srv.endpoint}{path}", data=body, method="PUT", headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_unsigned_bodies_are_held_to_their_declared_sha256(srv):
    """An unsigned request's x-amz-content-sha256 (anything but S3's
    markers) is the body's hash: a mismatch is S3's 400 and nothing is
    written; before, the header was ignored."""
    import hashlib
    s3 = srv.client()
    s3.create_bucket(Bucket="hashes")
    s3.put_bucket_policy(Bucket="hashes", Policy=policy(
        statement("Allow", "s3:PutObject", "arn:aws:s3:::hashes/*")))

    def put(key, body, declared):
        return unsigned_put(srv, f"/hashes/{key}", body, declared)

    good = hashlib.sha256(b"abc").hexdigest()
    for key, body, declared in [("empty", b"", "incorrect_hash"),
                                ("wrong", b"abc", "0" * 64),
                                ("junk", b"abc", "incorrect_hash")]:
        st, text = put(key, body, declared)
        assert st == 400 and "<Code>XAmzContentSHA256Mismatch</Code>" in text, (key, st, text)
        computed = hashlib.sha256(body).hexdigest()
        assert f"<S3ComputedContentSHA256>{computed}</S3ComputedContentSHA256>" in text
        assert f"<ClientComputedContentSHA256>{declared}</ClientComputedContentSHA256>" in text
        refused(lambda: s3.head_object(Bucket="hashes", Key=key), 404, "404")
    assert put("right", b"abc", good.upper())[0] == 200
    assert put("unsigned", b"abc", "UNSIGNED-PAYLOAD")[0] == 200
    assert s3.get_object(Bucket="hashes", Key="right")["Body"].read() == b"abc"
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="hashes")["Contents"]) == ["right", "unsigned"]


def test_a_wrong_declared_sha256_on_an_xml_body_is_a_400(srv):
    """The same rule for an operation whose XML body s3s reads itself
    (PutObjectTagging through a public policy): S3's 400
    XAmzContentSHA256Mismatch and the tags as they were; before, a 500
    InternalError."""
    import hashlib
    s3 = srv.client()
    s3.create_bucket(Bucket="taghash")
    s3.put_object(Bucket="taghash", Key="k", Body=b"x")
    s3.put_object_tagging(Bucket="taghash", Key="k",
                          Tagging={"TagSet": [{"Key": "keep", "Value": "1"}]})
    s3.put_bucket_policy(Bucket="taghash", Policy=policy(
        statement("Allow", "s3:PutObjectTagging", "arn:aws:s3:::taghash/*")))
    body = (b'<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>'
            b'<Tag><Key>new</Key><Value>2</Value></Tag></TagSet></Tagging>')

    def put(declared):
        return unsigned_put(srv, "/taghash/k?tagging", body, declared,
                            {"Content-Type": "application/xml"})

    st, text = put("0" * 64)
    assert st == 400 and "<Code>XAmzContentSHA256Mismatch</Code>" in text, (st, text)
    computed = hashlib.sha256(body).hexdigest()
    assert f"<S3ComputedContentSHA256>{computed}</S3ComputedContentSHA256>" in text
    tags = s3.get_object_tagging(Bucket="taghash", Key="k")["TagSet"]
    assert tags == [{"Key": "keep", "Value": "1"}]
    assert put(computed)[0] == 200
    tags = s3.get_object_tagging(Bucket="taghash", Key="k")["TagSet"]
    assert tags == [{"Key": "new", "Value": "2"}]


def test_a_refused_request_keeps_its_connection(srv):
    """A request refused before its body is read (here an anonymous
    RestoreObject) is answered, its body (sent after the headers, as Go's
    SDK does under load) is read, and the next request on the connection
    is answered too; before, the connection was closed under it (EOF)."""
    import hashlib
    import socket
    import time
    srv.client().create_bucket(Bucket="conn")
    host, port = srv.endpoint.rsplit("/", 1)[1].split(":")
    body = (b'<RestoreRequest xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Days>1</Days>'
            b'</RestoreRequest>')
    with socket.create_connection((host, int(port)), timeout=30) as s:
        answers = []
        for _ in range(3):
            s.sendall((f"POST /conn/k?restore HTTP/1.1\r\nHost: {host}\r\n"
                       f"Content-Length: {len(body)}\r\nContent-Type: application/xml\r\n"
                       f"x-amz-content-sha256: {hashlib.sha256(body).hexdigest()}\r\n\r\n").encode())
            time.sleep(0.3)
            s.sendall(body)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                assert chunk, f"connection closed after {len(answers)} answers"
                head += chunk
            status = head.split(b" ", 2)[1]
            length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            rest = head.split(b"\r\n\r\n", 1)[1]
            while len(rest) < length:
                rest += s.recv(4096)
            answers.append((status, b"AccessDenied" in rest))
        assert answers == [(b"403", True)] * 3


def test_object_acls_answered_by_the_buckets_ownership(srv):
    """Under BucketOwnerEnforced (a new bucket's default) object ACLs have
    no effect: S3 takes `bucket-owner-full-control` (what tools writing
    into another account's bucket send) and refuses any other ACL with
    AccessControlListNotSupported; with ACLs enabled the gateway would
    have to keep an object ACL, which it does not: NotImplemented. Each
    refusal writes nothing."""
    s3 = srv.client()
    s3.create_bucket(Bucket="enforced")
    s3.create_bucket(Bucket="preferred", ObjectOwnership="BucketOwnerPreferred")
    s3.put_object(Bucket="enforced", Key="src", Body=b"src")
    full = {"ACL": "bucket-owner-full-control"}
    s3.put_object(Bucket="enforced", Key="a", Body=b"a", **full)
    s3.copy_object(Bucket="enforced", Key="b", CopySource="enforced/src", **full)
    up = s3.create_multipart_upload(Bucket="enforced", Key="c", **full)
    s3.abort_multipart_upload(Bucket="enforced", Key="c", UploadId=up["UploadId"])
    for acl in [{"ACL": "public-read"}, {"GrantRead": f'id="{AK}"'}]:
        refused(lambda: s3.put_object(Bucket="enforced", Key="x", Body=b"x", **acl), 400,
                "AccessControlListNotSupported", "The bucket does not allow ACLs")
        refused(lambda: s3.copy_object(Bucket="enforced", Key="x", CopySource="enforced/src", **acl),
                400, "AccessControlListNotSupported")
        refused(lambda: s3.create_multipart_upload(Bucket="enforced", Key="x", **acl), 400,
                "AccessControlListNotSupported")
    for acl in [full, {"ACL": "public-read"}]:
        refused(lambda: s3.put_object(Bucket="preferred", Key="x", Body=b"x", **acl), 501,
                "NotImplemented")
    # A missing bucket is named first, whatever the ACL.
    refused(lambda: s3.put_object(Bucket="nosuch", Key="x", Body=b"x", ACL="public-read"), 404,
            "NoSuchBucket")
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="enforced")["Contents"]) == ["a", "b", "src"]
    assert "Contents" not in s3.list_objects_v2(Bucket="preferred")
    assert s3.list_multipart_uploads(Bucket="enforced").get("Uploads", []) == []


def test_public_policy_with_source_ip_conditions(srv):
    s3, anon = srv.client(), anonymous(srv.endpoint)
    s3.create_bucket(Bucket="ipb")
    s3.put_object(Bucket="ipb", Key="k", Body=b"data")
    inside = statement("Allow", "s3:GetObject", "arn:aws:s3:::ipb/*",
                       condition={"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}})
    s3.put_bucket_policy(Bucket="ipb", Policy=policy(inside))
    assert anon.get_object(Bucket="ipb", Key="k")["Body"].read() == b"data"
    refused(lambda: anon.list_objects_v2(Bucket="ipb"), 403, "AccessDenied")
    # The policy operations answer a public policy's requests as S3 does.
    s3.put_bucket_policy(Bucket="ipb", Policy=policy(statement("Allow", "s3:*", "arn:aws:s3:::ipb")))
    refused(lambda: anon.get_bucket_policy(Bucket="ipb"), 405, "MethodNotAllowed")
    outside = statement("Allow", "s3:GetObject", "arn:aws:s3:::ipb/*",
                        condition={"NotIpAddress": {"aws:SourceIp": "127.0.0.1"}})
    s3.put_bucket_policy(Bucket="ipb", Policy=policy(outside))
    refused(lambda: anon.get_object(Bucket="ipb", Key="k"), 403, "AccessDenied")


def test_two_gateways_see_one_policy(srv):
    """A fleet reads bucket records anew: a policy put through one gateway
    holds at once in another on the same root."""
    s3 = srv.client()
    proc = subprocess.Popen(
        [os.environ["COWKIT_BIN"], "s3", "serve", "--root", srv.root, "--listen", "127.0.0.1:0",
         "--json", "-q", "--access-key", AK, "--secret-key", SK],
        stdout=subprocess.PIPE, text=True)
    try:
        other = anonymous(json.loads(proc.stdout.readline())["endpoint"])
        s3.create_bucket(Bucket="fleet")
        s3.put_object(Bucket="fleet", Key="k", Body=b"shared")
        refused(lambda: other.get_object(Bucket="fleet", Key="k"), 403, "AccessDenied")
        s3.put_bucket_policy(Bucket="fleet", Policy=policy(statement("Allow", "s3:GetObject", "arn:aws:s3:::fleet/*")))
        assert other.get_object(Bucket="fleet", Key="k")["Body"].read() == b"shared"
        s3.delete_bucket_policy(Bucket="fleet")
        refused(lambda: other.get_object(Bucket="fleet", Key="k"), 403, "AccessDenied")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
