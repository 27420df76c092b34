"""Issue 27: accounts with roles beside the server's key pair, VersityGW's
admin API (the requests `versitygw admin` sends, signed here with botocore's
SigV4), and ListBuckets' paging. XFS only: nothing here depends on the
filesystem."""
import hashlib
import os
import subprocess
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from conftest import AK, SK


@pytest.fixture
def srv(make_server):
    return make_server("xfs")


def admin(srv, path, body=b"", ak=AK, sk=SK, headers=None):
    """One admin API call as `versitygw admin` makes it: PATCH, SigV4 for
    service s3, the payload's SHA-256 in x-amz-content-sha256."""
    url = srv.endpoint + path
    h = {"x-amz-content-sha256": hashlib.sha256(body).hexdigest(), **(headers or {})}
    req = AWSRequest(method="PATCH", url=url, data=body, headers=h)
    SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, data=body, method="PATCH", headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def create_user(srv, access, role, secret=None):
    body = (f"<Account><Access>{access}</Access><Secret>{secret or access + '-secret'}</Secret>"
            f"<Role>{role}</Role><UserID>0</UserID><GroupID>0</GroupID><ProjectID>0</ProjectID>"
            "</Account>").encode()
    st, text = admin(srv, "/create-user", body)
    assert st == 201, text


def client_of(srv, access, secret=None):
    return boto3.client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=access,
        aws_secret_access_key=secret or access + "-secret", region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def code(exc):
    return exc.value.response["Error"]["Code"]


def test_second_user_cannot_read_or_list_anothers_bucket(srv):
    create_user(srv, "alice", "user")
    create_user(srv, "bob", "userplus")
    alice, bob, root = client_of(srv, "alice"), client_of(srv, "bob"), srv.client()
    bob.create_bucket(Bucket="bobs")
    bob.put_object(Bucket="bobs", Key="secret.txt", Body=b"bob's")
    # Alice sees none of it.
    assert [b["Name"] for b in alice.list_buckets()["Buckets"]] == []
    for call in (lambda: alice.get_object(Bucket="bobs", Key="secret.txt"),
                 lambda: alice.list_objects_v2(Bucket="bobs"),
                 lambda: alice.head_object(Bucket="bobs", Key="secret.txt"),
                 lambda: alice.put_object(Bucket="bobs", Key="x", Body=b"x"),
                 lambda: alice.delete_object(Bucket="bobs", Key="secret.txt"),
                 lambda: alice.delete_bucket(Bucket="bobs")):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # Nor can she copy out of it into a bucket of hers.
    root.create_bucket(Bucket="alices")
    st, text = admin(srv, "/change-bucket-owner/?bucket=alices&owner=alice")
    assert st == 200, text
    with pytest.raises(ClientError) as e:
        alice.copy_object(Bucket="alices", Key="stolen", CopySource="bobs/secret.txt")
    assert code(e) == "AccessDenied"
    # Her own bucket works, and is hers alone.
    alice.put_object(Bucket="alices", Key="k", Body=b"alice's")
    assert alice.get_object(Bucket="alices", Key="k")["Body"].read() == b"alice's"
    lb = alice.list_buckets()
    assert [b["Name"] for b in lb["Buckets"]] == ["alices"]
    assert lb["Owner"]["ID"] == "alice"
    with pytest.raises(ClientError) as e:
        bob.get_object(Bucket="alices", Key="k")
    assert code(e) == "AccessDenied"
    # The root key pair (an admin) sees and reads everything.
    assert [b["Name"] for b in root.list_buckets()["Buckets"]] == ["alices", "bobs"]
    assert root.get_object(Bucket="bobs", Key="secret.txt")["Body"].read() == b"bob's"
    st, text = admin(srv, "/list-buckets")
    assert st == 200
    assert "<Name>alices</Name><Owner>alice</Owner>" in text
    assert "<Name>bobs</Name><Owner>bob</Owner>" in text
    # Nothing was written where it was refused.
    assert os.listdir(os.path.join(srv.root, "bobs")) == ["secret.txt"]


def test_unknown_key_refused(srv):
    with pytest.raises(ClientError) as e:
        client_of(srv, "nobody").list_buckets()
    assert code(e) == "InvalidAccessKeyId"
    create_user(srv, "carol", "user")
    with pytest.raises(ClientError) as e:
        client_of(srv, "carol", "wrong-secret").list_buckets()
    assert code(e) == "SignatureDoesNotMatch"
    client_of(srv, "carol").list_buckets()
    # A deleted account's keys are unknown at once.
    st, text = admin(srv, "/delete-user?access=carol")
    assert st == 200, text
    with pytest.raises(ClientError) as e:
        client_of(srv, "carol").list_buckets()
    assert code(e) == "InvalidAccessKeyId"
    st, text = admin(srv, "/delete-user?access=carol")
    assert st == 404 and "XAdminUserNotFound" in text
    # An admin call with an unknown key changes nothing.
    st, text = admin(srv, "/create-user", b"<Account><Access>x</Access><Secret>y</Secret>"
                     b"<Role>admin</Role></Account>", ak="nobody", sk="x")
    assert st == 403
    assert "<Access>x</Access>" not in admin(srv, "/list-users")[1]


def test_user_without_the_role_cannot_create_buckets(srv):
    create_user(srv, "dave", "user")
    create_user(srv, "erin", "userplus")
    with pytest.raises(ClientError) as e:
        client_of(srv, "dave").create_bucket(Bucket="daves")
    assert code(e) == "AccessDenied"
    assert not os.path.exists(os.path.join(srv.root, "daves"))
    client_of(srv, "erin").create_bucket(Bucket="erins")
    # Another account's bucket name is taken.
    with pytest.raises(ClientError) as e:
        srv.client().create_bucket(Bucket="erins")
    assert code(e) == "BucketAlreadyExists"
    # Neither may use the admin API; a user the admin made admin may.
    for who in ("dave", "erin"):
        st, text = admin(srv, "/delete-user?access=dave", ak=who, sk=who + "-secret")
        assert st == 403 and "XAdminAccessDenied" in text, text
    st, text = admin(srv, "/update-user?access=dave",
                     b"<MutableProps><Role>admin</Role></MutableProps>")
    assert st == 200, text
    st, text = admin(srv, "/list-users", ak="dave", sk="dave-secret")
    assert st == 200, text
    assert "<Access>erin</Access><Role>userplus</Role>" in text
    assert "erin-secret" not in text
    # Bad requests are admin errors, and change nothing.
    st, text = admin(srv, "/create-user", b"<Account><Access>f</Access><Secret>s</Secret>"
                     b"<Role>root</Role></Account>")
    assert st == 400 and "XAdminInvalidArgument" in text
    st, text = admin(srv, "/create-user", b"<Account><Access>erin</Access><Secret>s</Secret>"
                     b"<Role>user</Role></Account>")
    assert st == 409 and "XAdminUserExists" in text
    st, text = admin(srv, "/create-user", b"<Account><Access>")
    assert st == 400 and "MalformedXML" in text
    st, text = admin(srv, "/create-user", b"<" * (65 << 10))
    assert st >= 400
    st, text = admin(srv, "/change-bucket-owner/?bucket=erins&owner=nobody")
    assert st == 404 and "XAdminUserNotFound" in text


def test_store_written_by_someone_else_refused(srv, tmp_path):
    create_user(srv, "gina", "user")
    client_of(srv, "gina").list_buckets()
    path = os.path.join(srv.root, ".cowkit-s3", "accounts.json")
    assert os.stat(path).st_mode & 0o077 == 0
    os.chown(path, 65534, 65534)
    # Whoever can write the file could make themselves an admin: it is
    # not used, and the server says why.
    with pytest.raises(ClientError) as e:
        client_of(srv, "gina").list_buckets()
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert "accounts.json" in open(srv.log_path).read()
    # The server's own key pair does not depend on the file.
    srv.client().list_buckets()
    # A server started on such a store refuses to start, naming the file.
    root2 = tmp_path / "root2"
    os.makedirs(root2 / ".cowkit-s3")
    with open(path, "rb") as f:
        (root2 / ".cowkit-s3" / "accounts.json").write_bytes(f.read())
    os.chown(root2 / ".cowkit-s3" / "accounts.json", 65534, 65534)
    r = subprocess.run([os.environ["COWKIT_BIN"], "s3", "serve", "--root", str(root2),
                        "--listen", "127.0.0.1:0", "--access-key", AK, "--secret-key", SK],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "accounts.json" in r.stderr and "uid 65534" in r.stderr, r.stderr
    assert "hint:" in r.stderr


def test_accounts_dir_writable_by_others_refused(tmp_path):
    acc = tmp_path / "acc"
    acc.mkdir()
    os.chmod(acc, 0o777)
    root = tmp_path / "root"
    root.mkdir()
    r = subprocess.run([os.environ["COWKIT_BIN"], "s3", "serve", "--root", str(root),
                        "--listen", "127.0.0.1:0", "--access-key", AK, "--secret-key", SK,
                        "--accounts-dir", str(acc)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert str(acc) in r.stderr and "writable by everyone" in r.stderr, r.stderr


def test_accounts_dir_shared_by_two_servers(make_server, tmp_path):
    acc = tmp_path / "acc"
    a = make_server("xfs", ["--accounts-dir", str(acc)])
    b = make_server("xfs", ["--accounts-dir", str(acc)])
    create_user(a, "hank", "userplus")
    client_of(b, "hank").create_bucket(Bucket="hanks")
    assert os.path.exists(acc / "accounts.json")
    assert not os.path.exists(os.path.join(a.root, ".cowkit-s3", "accounts.json"))


def test_list_buckets_pages_with_region(srv):
    c = srv.client()
    names = ["my-a", "my-b", "my-c", "other-a", "zz-b"]
    for n in names:
        c.create_bucket(Bucket=n)
    out = c.list_buckets()
    assert [b["Name"] for b in out["Buckets"]] == names
    assert all(b["BucketRegion"] == "us-east-1" for b in out["Buckets"])
    assert "ContinuationToken" not in out and "Prefix" not in out
    out = c.list_buckets(Prefix="my-", MaxBuckets=2)
    assert [b["Name"] for b in out["Buckets"]] == ["my-a", "my-b"]
    assert out["Prefix"] == "my-"
    assert out["ContinuationToken"] == "my-b"
    out = c.list_buckets(Prefix="my-", MaxBuckets=2, ContinuationToken=out["ContinuationToken"])
    assert [b["Name"] for b in out["Buckets"]] == ["my-c"]
    assert "ContinuationToken" not in out
    raw = srv.client(parameter_validation=False)
    for bad in (0, -3, 10001, 2000000):
        with pytest.raises(ClientError) as e:
            raw.list_buckets(MaxBuckets=bad)
        assert code(e) == "InvalidArgument"
        assert e.value.response["Error"]["Message"] == \
            "Argument max-buckets must be an integer between 1 and 10000."


def test_admin_creates_a_bucket_with_acl_ownership_and_lock(srv):
    """`PATCH /B/create` as VersityGW's suite sends it: owner `x-vgw-owner`,
    a read grant for another account, an ownership setting and object lock;
    a grant naming no account refused with nothing made."""
    create_user(srv, "fay", "user")
    create_user(srv, "gus", "user")
    body = (b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<Tags><Tag><Key>k</Key><Value>v</Value></Tag></Tags></CreateBucketConfiguration>")
    st, text = admin(srv, "/nobodys/create", body, headers={
        "x-vgw-owner": "fay", "x-amz-grant-read": "nobody"})
    assert st == 400, text
    assert not os.path.exists(os.path.join(srv.root, "nobodys"))
    st, text = admin(srv, "/fays/create", body, headers={
        "x-vgw-owner": "fay", "x-amz-grant-read": "gus",
        "x-amz-object-ownership": "BucketOwnerPreferred",
        "x-amz-bucket-object-lock-enabled": "true"})
    assert st == 201, text
    root = srv.client()
    assert root.get_bucket_tagging(Bucket="fays")["TagSet"] == [{"Key": "k", "Value": "v"}]
    rules = root.get_bucket_ownership_controls(Bucket="fays")["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerPreferred"}]
    acl = root.get_bucket_acl(Bucket="fays")
    assert acl["Owner"]["ID"] == "fay"
    grants = sorted((g["Grantee"]["ID"], g["Permission"]) for g in acl["Grants"])
    assert grants == [("fay", "FULL_CONTROL"), ("gus", "READ")]
    lock = root.get_object_lock_configuration(Bucket="fays")["ObjectLockConfiguration"]
    assert lock["ObjectLockEnabled"] == "Enabled"
    # The grant lets gus read, not write; fay owns it.
    client_of(srv, "fay").put_object(Bucket="fays", Key="a", Body=b"x")
    assert client_of(srv, "gus").get_object(Bucket="fays", Key="a")["Body"].read() == b"x"
    with pytest.raises(ClientError) as e:
        client_of(srv, "gus").put_object(Bucket="fays", Key="b", Body=b"y")
    assert code(e) == "AccessDenied"
    # Object ACLs are refused with VersityGW's message, not kept; nothing
    # is archived to restore.
    for call in (lambda: client_of(srv, "fay").get_object_acl(Bucket="fays", Key="a"),
                 lambda: client_of(srv, "fay").restore_object(Bucket="fays", Key="a",
                                                              RestoreRequest={"Days": 1})):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "NotImplemented"
        assert e.value.response["Error"]["Message"] == (
            "A header you provided implies functionality that is not implemented.")


def test_policy_reads_dot_segment_keys_as_the_object_they_name(srv):
    """A user allowed `public/*` by a policy must not reach `private.txt`
    by spelling it `public/../private.txt`: refused as AccessDenied (the
    key read as the object it names), and nothing changes; the owner is
    told the key is not one the gateway stores."""
    import json
    s3 = srv.client()
    s3.create_bucket(Bucket="dots")
    s3.put_object(Bucket="dots", Key="private.txt", Body=b"private")
    create_user(srv, "ivan", "user")
    s3.put_bucket_policy(Bucket="dots", Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["ivan"]},
        "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
        "Resource": "arn:aws:s3:::dots/public/*"}]}))
    ivan = client_of(srv, "ivan")
    sneaky = "public/../private.txt"
    for call in [lambda: ivan.get_object(Bucket="dots", Key=sneaky),
                 lambda: ivan.put_object(Bucket="dots", Key=sneaky, Body=b"overwrite"),
                 lambda: ivan.delete_object(Bucket="dots", Key=sneaky),
                 lambda: ivan.copy_object(Bucket="dots", Key="public/copied.txt",
                                          CopySource=f"dots/{sneaky}")]:
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    # What the policy allows still works; the owner learns why the key is refused.
    ivan.put_object(Bucket="dots", Key="public/ok.txt", Body=b"ok")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket="dots", Key="public/copied.txt", CopySource=f"dots/{sneaky}")
    assert code(e) == "InvalidArgument"
    assert e.value.response["Error"]["Message"] == "Invalid copy source object key"
    assert s3.get_object(Bucket="dots", Key="private.txt")["Body"].read() == b"private"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="dots")["Contents"]]
    assert keys == ["private.txt", "public/ok.txt"]


def test_put_bucket_acl_by_a_user_keeps_the_owner(srv):
    """A user allowed PutBucketAcl by a policy sets the bucket's ACL; the
    canned ACL's FULL_CONTROL grant goes to the bucket's owner, not to the
    user (before, a bucket the server's key made showed the caller)."""
    import json
    s3 = srv.client()
    s3.create_bucket(Bucket="shared-acl", ObjectOwnership="BucketOwnerPreferred")
    create_user(srv, "jane", "user")
    s3.put_bucket_policy(Bucket="shared-acl", Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["jane"]}, "Action": "s3:PutBucketAcl",
        "Resource": "arn:aws:s3:::shared-acl"}]}))
    client_of(srv, "jane").put_bucket_acl(Bucket="shared-acl", ACL="public-read")
    acl = s3.get_bucket_acl(Bucket="shared-acl")
    assert acl["Owner"]["ID"] == AK
    got = [(g["Grantee"]["Type"], g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]]
    assert got == [("CanonicalUser", AK, "FULL_CONTROL"), ("Group", "all-users", "READ")]


def test_admin_bodies_must_be_signed(srv):
    """The admin API refuses a body the signature does not cover
    (`x-amz-content-sha256: UNSIGNED-PAYLOAD`): whoever sits on the path
    could change the account it creates. Nothing is created."""
    body = (b"<Account><Access>mallory</Access><Secret>mallory-secret</Secret><Role>admin</Role>"
            b"<UserID>0</UserID><GroupID>0</GroupID><ProjectID>0</ProjectID></Account>")
    st, text = admin(srv, "/create-user", body, headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert st == 400 and "<Code>XAdminInvalidRequest</Code>" in text, (st, text)
    # A streaming marker is refused before (no admin call takes a stream).
    st, text = admin(srv, "/create-user", body,
                     headers={"x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER"})
    assert st == 400, text
    st, text = admin(srv, "/list-users")
    assert st == 200 and "mallory" not in text, text
    # A non-admin still hears only that it is not an admin.
    create_user(srv, "plain", "user")
    st, text = admin(srv, "/list-users", ak="plain", sk="plain-secret",
                     headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert st == 403 and "<Code>XAdminAccessDenied</Code>" in text, text
    # The signed body still works.
    create_user(srv, "signed", "user")
