"""The authorization model of docs/security.md ("Who may do what"), end to
end through boto3, raw SigV4 requests and browser forms against `cowkit s3
serve` with accounts: the attacks it refuses (a WRITE grantee or any signed
account on a public-read-write bucket taking the bucket's policy, ownership
controls or the bucket itself; an owner locked out by its own Deny; writers
setting object lock retentions no ACL or public grant gives them; a `user`
creating buckets by any spelling of CreateBucket), and what stays allowed
(the owner, admins, FULL_CONTROL grantees, policies granting others access
to objects). XFS only: nothing here depends on the filesystem."""
import datetime
import json
import urllib.error
import urllib.request

import boto3
import pytest
from botocore import UNSIGNED
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from test_accounts import client_of, create_user
from test_post_object import element, post

UNTIL = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)
LOCK = {"ObjectLockMode": "COMPLIANCE", "ObjectLockRetainUntilDate": UNTIL}
HOLD = {"ObjectLockLegalHoldStatus": "ON"}


@pytest.fixture
def srv(make_server):
    s = make_server("xfs")
    for name, role in [("alice", "userplus"), ("bob", "user"), ("carol", "user"),
                       ("erin", "user"), ("frank", "user")]:
        create_user(s, name, role)
    return s


def anonymous(srv):
    return boto3.client(
        "s3", endpoint_url=srv.endpoint, region_name="us-east-1",
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                      retries={"max_attempts": 1}))


def refused(fn, st=403, c="AccessDenied"):
    with pytest.raises(ClientError) as e:
        fn()
    got = (e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value.response["Error"]["Code"])
    assert got == (st, c), (got, e.value.response["Error"].get("Message"))


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(principal, action, resource, effect="Allow"):
    return {"Effect": effect, "Principal": principal, "Action": action, "Resource": resource}


def signed(srv, method, path, who, body=b""):
    """A raw SigV4 request of `who` (secret `who-secret`): (status, text)."""
    import hashlib
    url = srv.endpoint + path
    req = AWSRequest(method=method, url=url, data=body,
                     headers={"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    SigV4Auth(Credentials(who, who + "-secret"), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(req.url, data=body or None, method=method,
                               headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def attack_bucket_takeover(srv, attacker, bucket):
    """What the attacker tried: a policy allowing itself everything and
    denying the owner, the ownership controls, the bucket itself."""
    evil = policy(allow({"AWS": [attacker]}, "s3:*", [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]),
                  allow({"AWS": ["alice"]}, "s3:*", [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                        effect="Deny"))
    c = client_of(srv, attacker)
    refused(lambda: c.put_bucket_policy(Bucket=bucket, Policy=evil))
    refused(lambda: c.delete_bucket_policy(Bucket=bucket))
    refused(lambda: c.get_bucket_policy(Bucket=bucket))
    refused(lambda: c.put_bucket_ownership_controls(
        Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}))
    refused(lambda: c.delete_bucket_ownership_controls(Bucket=bucket))
    refused(lambda: c.delete_bucket(Bucket=bucket))
    # Nor may it read what it was not granted.
    refused(lambda: c.get_object(Bucket=bucket, Key="secret"))


def test_a_write_grantee_cannot_take_the_bucket(srv):
    alice = client_of(srv, "alice")
    alice.create_bucket(Bucket="owned", ObjectOwnership="BucketOwnerPreferred")
    alice.put_object(Bucket="owned", Key="secret", Body=b"alice's")
    alice.put_bucket_acl(Bucket="owned", GrantWrite='id="bob"', GrantFullControl='id="alice"')
    attack_bucket_takeover(srv, "bob", "owned")
    # What WRITE does give: writing and deleting objects.
    bob = client_of(srv, "bob")
    bob.put_object(Bucket="owned", Key="from-bob", Body=b"b")
    bob.delete_object(Bucket="owned", Key="from-bob")
    # The bucket emptied by its owner: still not the grantee's to delete.
    alice.delete_object(Bucket="owned", Key="secret")
    refused(lambda: bob.delete_bucket(Bucket="owned"))
    alice.head_bucket(Bucket="owned")
    refused(lambda: alice.get_bucket_policy(Bucket="owned"), 404, "NoSuchBucketPolicy")
    rules = alice.get_bucket_ownership_controls(Bucket="owned")["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerPreferred"}]
    alice.delete_bucket(Bucket="owned")


def test_any_account_on_a_public_read_write_bucket_cannot_take_it(srv):
    alice = client_of(srv, "alice")
    alice.create_bucket(Bucket="open", ObjectOwnership="ObjectWriter", ACL="public-read-write")
    alice.put_object(Bucket="open", Key="secret", Body=b"alice's")
    # The public grant is READ and WRITE: frank (a plain `user`) reads and
    # writes objects, and gets no further.
    frank = client_of(srv, "frank")
    assert frank.get_object(Bucket="open", Key="secret")["Body"].read() == b"alice's"
    alice.put_bucket_acl(Bucket="open", ACL="public-read-write")
    attack = policy(allow({"AWS": ["frank"]}, "s3:*", ["arn:aws:s3:::open", "arn:aws:s3:::open/*"]))
    refused(lambda: frank.put_bucket_policy(Bucket="open", Policy=attack))
    refused(lambda: frank.delete_bucket_policy(Bucket="open"))
    refused(lambda: frank.put_bucket_ownership_controls(
        Bucket="open", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}))
    refused(lambda: frank.delete_bucket_ownership_controls(Bucket="open"))
    alice.delete_object(Bucket="open", Key="secret")
    refused(lambda: frank.delete_bucket(Bucket="open"))
    refused(lambda: anonymous(srv).delete_bucket(Bucket="open"))
    refused(lambda: anonymous(srv).put_bucket_policy(Bucket="open", Policy=attack))
    assert [b["Name"] for b in alice.list_buckets()["Buckets"]] == ["open"]


def test_grantees_cannot_delete_or_retake_an_empty_bucket(srv):
    """The owner's empty bucket, a WRITE grantee's and (public-read-write)
    any account's: not theirs to delete, and so not theirs to make again
    as their own; nor are its ownership controls theirs to remove."""
    create_user(srv, "mallory", "userplus")
    alice, bob, mallory = client_of(srv, "alice"), client_of(srv, "bob"), client_of(srv, "mallory")
    alice.create_bucket(Bucket="granted-empty", ObjectOwnership="BucketOwnerPreferred")
    alice.put_bucket_acl(Bucket="granted-empty", GrantWrite='id="bob"', GrantFullControl='id="alice"')
    alice.create_bucket(Bucket="open-empty", ObjectOwnership="ObjectWriter", ACL="public-read-write")
    refused(lambda: bob.delete_bucket_ownership_controls(Bucket="granted-empty"))
    refused(lambda: bob.delete_bucket(Bucket="granted-empty"))
    refused(lambda: mallory.delete_bucket_ownership_controls(Bucket="open-empty"))
    refused(lambda: mallory.delete_bucket(Bucket="open-empty"))
    refused(lambda: mallory.create_bucket(Bucket="open-empty"), 409, "BucketAlreadyExists")
    owners = {b["Name"] for b in alice.list_buckets()["Buckets"]}
    assert owners == {"granted-empty", "open-empty"}
    assert alice.get_bucket_ownership_controls(Bucket="open-empty")["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "ObjectWriter"}]


def test_full_control_grantees_and_policies_still_work(srv):
    """What stays allowed: FULL_CONTROL grantees read, write and manage the
    ACL; a policy grants another account objects; the owner does
    everything; the root account (an admin) too."""
    alice, erin, carol = client_of(srv, "alice"), client_of(srv, "erin"), client_of(srv, "carol")
    alice.create_bucket(Bucket="shared", ObjectOwnership="BucketOwnerPreferred")
    alice.put_object(Bucket="shared", Key="k", Body=b"data")
    alice.put_bucket_acl(Bucket="shared", GrantFullControl='id="erin"')
    assert erin.get_object(Bucket="shared", Key="k")["Body"].read() == b"data"
    erin.put_object(Bucket="shared", Key="e", Body=b"erin")
    assert [o["Key"] for o in erin.list_objects_v2(Bucket="shared")["Contents"]] == ["e", "k"]
    erin.put_bucket_acl(Bucket="shared", GrantFullControl='id="erin"', GrantRead='id="carol"')
    assert carol.get_object(Bucket="shared", Key="k")["Body"].read() == b"data"
    refused(lambda: carol.put_object(Bucket="shared", Key="c", Body=b"c"))
    # Not the policy, the ownership controls or the bucket.
    refused(lambda: erin.put_bucket_policy(Bucket="shared", Policy=policy(
        allow({"AWS": ["erin"]}, "s3:*", "arn:aws:s3:::shared"))))
    refused(lambda: erin.delete_bucket(Bucket="shared"))
    # A policy gives frank the objects under pub/ (beside the ACL).
    frank = client_of(srv, "frank")
    alice.put_object(Bucket="shared", Key="pub/x", Body=b"x")
    alice.put_bucket_policy(Bucket="shared", Policy=policy(
        allow({"AWS": ["frank"]}, ["s3:GetObject", "s3:PutObject"], "arn:aws:s3:::shared/pub/*")))
    assert frank.get_object(Bucket="shared", Key="pub/x")["Body"].read() == b"x"
    frank.put_object(Bucket="shared", Key="pub/y", Body=b"y")
    refused(lambda: frank.get_object(Bucket="shared", Key="k"))
    # The ACL still counts beside the policy; the owner still does all.
    assert carol.get_object(Bucket="shared", Key="k")["Body"].read() == b"data"
    alice.put_bucket_versioning(Bucket="shared", VersioningConfiguration={"Status": "Enabled"})
    alice.put_bucket_tagging(Bucket="shared", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})
    root = srv.client()
    root.put_bucket_ownership_controls(
        Bucket="shared", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    # ACLs disabled: the grants no longer count, the policy does.
    refused(lambda: carol.get_object(Bucket="shared", Key="k"))
    assert frank.get_object(Bucket="shared", Key="pub/x")["Body"].read() == b"x"


def test_the_owner_locked_out_by_its_policy_can_mend_it(srv):
    alice = client_of(srv, "alice")
    alice.create_bucket(Bucket="mine")
    alice.put_object(Bucket="mine", Key="k", Body=b"v")
    deny_all = policy(allow("*", "s3:*", ["arn:aws:s3:::mine", "arn:aws:s3:::mine/*"], effect="Deny"))
    alice.put_bucket_policy(Bucket="mine", Policy=deny_all)
    # The Deny holds for the owner too...
    refused(lambda: alice.get_object(Bucket="mine", Key="k"))
    refused(lambda: alice.put_object(Bucket="mine", Key="n", Body=b"n"))
    refused(lambda: alice.delete_bucket(Bucket="mine"))
    # ...except for the policy operations.
    assert alice.get_bucket_policy(Bucket="mine")["Policy"] == deny_all
    deny_put = policy(allow("*", "s3:PutObject", "arn:aws:s3:::mine/*", effect="Deny"))
    alice.put_bucket_policy(Bucket="mine", Policy=deny_put)
    assert alice.get_object(Bucket="mine", Key="k")["Body"].read() == b"v"
    alice.put_bucket_policy(Bucket="mine", Policy=deny_all)
    alice.delete_bucket_policy(Bucket="mine")
    alice.put_object(Bucket="mine", Key="n", Body=b"n")


def lock_bucket(srv, name, **kw):
    alice = client_of(srv, "alice")
    alice.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True, **kw)
    alice.put_object(Bucket=name, Key="owners", Body=b"alice's")
    return alice


def assert_nothing_locked(alice, bucket):
    """Every version deletable and the bucket too: nothing was locked."""
    for v in alice.list_object_versions(Bucket=bucket).get("Versions", []):
        assert "ObjectLockMode" not in alice.head_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
        alice.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
    for m in alice.list_object_versions(Bucket=bucket).get("DeleteMarkers", []):
        alice.delete_object(Bucket=bucket, Key=m["Key"], VersionId=m["VersionId"])
    alice.delete_bucket(Bucket=bucket)


def test_public_writers_cannot_lock_objects(srv):
    alice = lock_bucket(srv, "pubrw", ObjectOwnership="ObjectWriter", ACL="public-read-write")
    anon = anonymous(srv)
    anon.put_object(Bucket="pubrw", Key="plain", Body=b"anyone")
    for kw in (LOCK, HOLD):
        refused(lambda: anon.put_object(Bucket="pubrw", Key="locked", Body=b"x", **kw))
        refused(lambda: client_of(srv, "frank").put_object(Bucket="pubrw", Key="locked", Body=b"x", **kw))
    refused(lambda: anon.put_object_retention(
        Bucket="pubrw", Key="owners", Retention={"Mode": "COMPLIANCE", "RetainUntilDate": UNTIL}))
    refused(lambda: anon.put_object_legal_hold(Bucket="pubrw", Key="owners", LegalHold={"Status": "ON"}))
    # A browser form without a signature, the lock in its fields.
    until = UNTIL.strftime("%Y-%m-%dT%H:%M:%SZ")
    status, _, body = post(f"{srv.endpoint}/pubrw", {
        "key": "formed", "x-amz-object-lock-mode": "COMPLIANCE",
        "x-amz-object-lock-retain-until-date": until}, b"form")
    assert status == 403 and element(body, "Code") == "AccessDenied", body
    status, _, body = post(f"{srv.endpoint}/pubrw", {"key": "formed"}, b"form")
    assert status == 204, body
    refused(lambda: alice.head_object(Bucket="pubrw", Key="locked"), 404, "404")
    assert_nothing_locked(alice, "pubrw")


def test_a_public_put_policy_does_not_give_locks(srv):
    alice = lock_bucket(srv, "pubput")
    alice.put_bucket_policy(Bucket="pubput", Policy=policy(
        allow("*", "s3:PutObject", "arn:aws:s3:::pubput/*")))
    anon, frank = anonymous(srv), client_of(srv, "frank")
    anon.put_object(Bucket="pubput", Key="plain", Body=b"anyone")
    frank.put_object(Bucket="pubput", Key="franks", Body=b"frank")
    for c in (anon, frank):
        for kw in (LOCK, HOLD):
            refused(lambda: c.put_object(Bucket="pubput", Key="locked", Body=b"x", **kw))
    for kw in (LOCK, HOLD):
        refused(lambda: frank.create_multipart_upload(Bucket="pubput", Key="locked", **kw))
    for c in (anon, frank):
        refused(lambda: c.put_object_retention(
            Bucket="pubput", Key="owners", Retention={"Mode": "COMPLIANCE", "RetainUntilDate": UNTIL}))
        refused(lambda: c.put_object_legal_hold(Bucket="pubput", Key="owners", LegalHold={"Status": "ON"}))
    status, _, body = post(f"{srv.endpoint}/pubput", {
        "key": "formed", "x-amz-object-lock-legal-hold": "ON"}, b"form")
    assert status == 403 and element(body, "Code") == "AccessDenied", body
    alice.delete_bucket_policy(Bucket="pubput")
    assert_nothing_locked(alice, "pubput")


def test_acl_grantees_cannot_lock_objects(srv):
    alice = lock_bucket(srv, "granted", ObjectOwnership="BucketOwnerPreferred")
    alice.put_bucket_acl(Bucket="granted", GrantWrite='id="bob"', GrantFullControl='id="erin"')
    version = alice.head_object(Bucket="granted", Key="owners")["VersionId"]
    for who in ("bob", "erin"):
        c = client_of(srv, who)
        c.put_object(Bucket="granted", Key=f"{who}s", Body=b"ok")
        for kw in (LOCK, HOLD):
            refused(lambda: c.put_object(Bucket="granted", Key="locked", Body=b"x", **kw))
            refused(lambda: c.create_multipart_upload(Bucket="granted", Key="locked", **kw))
        refused(lambda: c.put_object_retention(
            Bucket="granted", Key="owners", VersionId=version,
            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": UNTIL}))
        refused(lambda: c.put_object_legal_hold(
            Bucket="granted", Key="owners", VersionId=version, LegalHold={"Status": "ON"}))
    # FULL_CONTROL reads the source of a copy, and gets no lock by it.
    erin = client_of(srv, "erin")
    erin.copy_object(Bucket="granted", Key="copied", CopySource="granted/owners")
    for kw in (LOCK, HOLD):
        refused(lambda: erin.copy_object(Bucket="granted", Key="locked", CopySource="granted/owners", **kw))
    # A form signed by the grantee, the lock in its fields.
    bob = client_of(srv, "bob")
    until = UNTIL.strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = {"x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": until}
    p = bob.generate_presigned_post("granted", "formed", Fields=fields,
                                    Conditions=[{k: v} for k, v in fields.items()])
    status, _, body = post(p["url"], p["fields"], b"form")
    assert status == 403 and element(body, "Code") == "AccessDenied", body
    assert_nothing_locked(alice, "granted")


def test_a_user_cannot_create_buckets_by_any_spelling(srv):
    root = srv.client()
    # Every spelling s3s takes as CreateBucket, path-style (the gateway has
    # no virtual-host addressing).
    for path in ["/new1", "/new1/", "/new1?x-id=CreateBucket", "/new1/?x-id=CreateBucket",
                 "/new1?", "/new1?foo=bar"]:
        status, text = signed(srv, "PUT", path, "frank")
        assert status == 403 and "<Code>AccessDenied</Code>" in text, (path, status, text)
        refused(lambda: root.head_bucket(Bucket="new1"), 404, "404")
    refused(lambda: client_of(srv, "frank").create_bucket(Bucket="new1"))
    # With a body (a location constraint) too.
    body = (b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>")
    status, text = signed(srv, "PUT", "/new1?x-id=CreateBucket", "frank", body)
    assert status in (400, 403), (status, text)
    refused(lambda: root.head_bucket(Bucket="new1"), 404, "404")
    assert [b["Name"] for b in root.list_buckets()["Buckets"]] == []
    # A userplus may, by the same spelling.
    status, text = signed(srv, "PUT", "/new2?x-id=CreateBucket", "alice")
    assert status == 200, text
    assert [b["Name"] for b in client_of(srv, "alice").list_buckets()["Buckets"]] == ["new2"]


def test_an_upload_is_aborted_and_listed_by_its_initiator_and_the_owner(srv):
    """S3 leaves aborting an upload and listing its parts to the bucket's
    owner and the upload's initiator (and policies): a WRITE or
    FULL_CONTROL grant, or everyone's WRITE on a public-read-write bucket,
    does not give them for someone else's upload."""
    alice, bob, erin = (client_of(srv, w) for w in ("alice", "bob", "erin"))
    alice.create_bucket(Bucket="uploads", ObjectOwnership="BucketOwnerPreferred")
    alice.put_bucket_acl(Bucket="uploads", GrantWrite='id="bob"', GrantFullControl='id="erin"')
    owners = alice.create_multipart_upload(Bucket="uploads", Key="k")["UploadId"]
    alice.upload_part(Bucket="uploads", Key="k", UploadId=owners, PartNumber=1, Body=b"alice's part")
    bobs = bob.create_multipart_upload(Bucket="uploads", Key="k")["UploadId"]
    bob.upload_part(Bucket="uploads", Key="k", UploadId=bobs, PartNumber=1, Body=b"bob's part")
    for c in (bob, erin):
        refused(lambda: c.list_parts(Bucket="uploads", Key="k", UploadId=owners))
        refused(lambda: c.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=owners))
    refused(lambda: erin.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=bobs))
    # Its initiator lists and aborts its own; the owner any.
    assert [p["PartNumber"] for p in bob.list_parts(Bucket="uploads", Key="k", UploadId=bobs)["Parts"]] == [1]
    assert [p["PartNumber"] for p in alice.list_parts(Bucket="uploads", Key="k", UploadId=bobs)["Parts"]] == [1]
    bob.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=bobs)
    # Everyone's WRITE: no abort of the owner's upload either.
    alice.put_bucket_acl(Bucket="uploads", ACL="public-read-write")
    anon = anonymous(srv)
    refused(lambda: anon.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=owners))
    refused(lambda: anon.list_parts(Bucket="uploads", Key="k", UploadId=owners))
    refused(lambda: bob.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=owners))
    ups = alice.list_multipart_uploads(Bucket="uploads").get("Uploads", [])
    assert [u["UploadId"] for u in ups] == [owners]
    alice.abort_multipart_upload(Bucket="uploads", Key="k", UploadId=owners)
