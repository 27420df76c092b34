"""PostObject (issue 27): browser form uploads made with boto3's
`generate_presigned_post` and POSTed as `multipart/form-data` by urllib, as
a browser would. Success (204, 201 with its PostResponse, 303 to a
redirect), the object read back, and every refusal leaving nothing
stored: a policy condition violated, an expired policy, a bad signature,
`content-length-range`, fields over the limits, an unsigned form. A large
file goes through without the gateway holding it in memory. On XFS only:
nothing here depends on the filesystem."""
import hashlib
import html
import os
import re
import urllib.error
import urllib.request

import pytest

MiB = 1 << 20
BUCKET = "formb"


@pytest.fixture
def srv(make_server):
    s = make_server("xfs")
    s.client().create_bucket(Bucket=BUCKET)
    return s


def body_of(fields, data, filename="hello.txt", boundary="cowkitFormBoundary7MA4YWxk"):
    out = []
    for k, v in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
               'Content-Type: application/octet-stream\r\n\r\n'.encode())
    out.append(data)
    out.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(out), boundary


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def post(url, fields, data, filename="hello.txt"):
    """POST the form; (status, headers, body)."""
    body, boundary = body_of(fields, data, filename)
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=300) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def element(xml, name):
    m = re.search(rf"<{name}>(.*?)</{name}>".encode(), xml, re.S)
    return html.unescape(m.group(1).decode()) if m else None


def presign(srv, key, fields=None, conditions=None, expires=600, secret=None, sig="s3v4"):
    """A form signed with SigV4 (`x-amz-*` fields), or with `sig=None`
    as boto3 signs by default for us-east-1 (SigV2: `AWSAccessKeyId`,
    `signature`)."""
    c = srv.client(**({"secret": secret} if secret else {}), config_sig=sig)
    return c.generate_presigned_post(BUCKET, key, Fields=fields, Conditions=conditions, ExpiresIn=expires)


def stored(srv):
    return [o["Key"] for o in srv.client().list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def tmp_files(srv):
    tmp = os.path.join(srv.root, ".cowkit-s3", "tmp")
    return [f for _, _, files in os.walk(tmp) for f in files]


def test_post_object_success(srv):
    fields = {"success_action_status": "201", "Content-Type": "text/plain",
              "x-amz-meta-who": "browser", "tagging":
              "<Tagging><TagSet><Tag><Key>env</Key><Value>test</Value></Tag></TagSet></Tagging>"}
    conditions = [{"success_action_status": "201"}, {"Content-Type": "text/plain"},
                  {"x-amz-meta-who": "browser"}, {"tagging": fields["tagging"]},
                  ["starts-with", "$key", "up/"], ["content-length-range", 1, MiB]]
    p = presign(srv, "up/${filename}", fields, conditions)
    data = b"hello from a form\r\n--not the boundary\r\n"
    status, headers, body = post(p["url"], p["fields"], data)
    assert status == 201, body
    assert element(body, "Key") == "up/hello.txt"
    assert element(body, "Bucket") == BUCKET
    assert element(body, "ETag") == f'"{hashlib.md5(data).hexdigest()}"'
    assert headers["Location"] == f"{srv.endpoint}/{BUCKET}/up/hello.txt"
    c = srv.client()
    got = c.get_object(Bucket=BUCKET, Key="up/hello.txt")
    assert got["Body"].read() == data
    assert got["ContentType"] == "text/plain"
    assert got["Metadata"] == {"who": "browser"}
    assert c.get_object_tagging(Bucket=BUCKET, Key="up/hello.txt")["TagSet"] == [{"Key": "env", "Value": "test"}]
    with open(os.path.join(srv.root, BUCKET, "up", "hello.txt"), "rb") as f:
        assert f.read() == data
    # The default answer: 204 with the ETag and the Location.
    p = presign(srv, "plain")
    status, headers, body = post(p["url"], p["fields"], b"x")
    assert (status, body) == (204, b"")
    assert headers["ETag"] == f'"{hashlib.md5(b"x").hexdigest()}"'
    # A redirect: 303 to it with bucket, key and ETag.
    p = presign(srv, "redir", {"success_action_redirect": "http://example.com/done"},
                [{"success_action_redirect": "http://example.com/done"}])
    status, headers, _ = post(p["url"], p["fields"], b"y")
    assert status == 303
    assert headers["Location"].startswith(f"http://example.com/done?bucket={BUCKET}&key=redir&etag=")
    # boto3's default for us-east-1: a SigV2 form.
    p = presign(srv, "v2", sig=None)
    assert "signature" in p["fields"] and "AWSAccessKeyId" in p["fields"]
    assert post(p["url"], p["fields"], b"z")[0] == 204
    assert c.get_object(Bucket=BUCKET, Key="v2")["Body"].read() == b"z"


def refused(srv, p, data, want_status, want_code, fields=None):
    status, _, body = post(p["url"], fields if fields is not None else p["fields"], data)
    assert (status, element(body, "Code")) == (want_status, want_code), body
    assert stored(srv) == []
    assert tmp_files(srv) == []
    return body


def test_policy_condition_violated(srv):
    p = presign(srv, "${filename}", conditions=[["starts-with", "$key", "up/"]])
    body = refused(srv, p, b"data", 403, "AccessDenied")
    assert element(body, "Message") == \
        'Invalid according to Policy: Policy Condition failed: ["starts-with","$key","up/"]'
    # A field the policy does not name.
    p = presign(srv, "k")
    fields = dict(p["fields"], **{"x-amz-meta-extra": "1"})
    body = refused(srv, p, b"data", 403, "AccessDenied", fields)
    assert element(body, "Message") == "Invalid according to Policy: Extra input fields: x-amz-meta-extra"


def test_expired_policy(srv):
    p = presign(srv, "k", expires=-60)
    body = refused(srv, p, b"data", 403, "AccessDenied")
    assert element(body, "Message") == "Invalid according to Policy: Policy expired."


def test_bad_signature(srv):
    p = presign(srv, "k")
    sig = p["fields"]["x-amz-signature"]
    fields = dict(p["fields"], **{"x-amz-signature": ("0" if sig[0] != "0" else "1") + sig[1:]})
    body = refused(srv, p, b"data", 403, "SignatureDoesNotMatch", fields)
    assert element(body, "StringToSign") == p["fields"]["policy"]
    # Signed with another secret, SigV4 and SigV2.
    p = presign(srv, "k", secret="not-the-secret")
    refused(srv, p, b"data", 403, "SignatureDoesNotMatch")
    p = presign(srv, "k", secret="not-the-secret", sig=None)
    refused(srv, p, b"data", 403, "SignatureDoesNotMatch")
    # The policy changed after signing (a longer content-length-range).
    p = presign(srv, "k", conditions=[["content-length-range", 0, 1]])
    other = presign(srv, "k", conditions=[["content-length-range", 0, MiB]])
    fields = dict(p["fields"], policy=other["fields"]["policy"])
    refused(srv, p, b"data", 403, "SignatureDoesNotMatch", fields)


def test_content_length_range(srv):
    p = presign(srv, "k", conditions=[["content-length-range", 0, 5]])
    body = refused(srv, p, b"0123456789", 400, "EntityTooLarge")
    assert (element(body, "ProposedSize"), element(body, "MaxSizeAllowed")) == ("10", "5")
    p = presign(srv, "k", conditions=[["content-length-range", 100, 1024]])
    body = refused(srv, p, b"hi", 400, "EntityTooSmall")
    assert (element(body, "ProposedSize"), element(body, "MinSizeAllowed")) == ("2", "100")
    # A file far over the maximum: cut off, nothing kept.
    p = presign(srv, "k", conditions=[["content-length-range", 0, MiB]])
    refused(srv, p, os.urandom(3 * MiB), 400, "EntityTooLarge")
    # At the limits exactly: stored.
    p = presign(srv, "k", conditions=[["content-length-range", 5, 5]])
    assert post(p["url"], p["fields"], b"12345")[0] == 204
    assert stored(srv) == ["k"]


def test_oversize_form_fields(srv):
    p = presign(srv, "k")
    for fields in [
        dict(p["fields"], **{"x-ignore-pad": "x" * (30 << 10)}),
        dict(p["fields"], **{f"x-ignore-{i}": "v" for i in range(101)}),
        dict(p["fields"], policy="A" * (64 << 10)),
    ]:
        refused(srv, p, b"data", 400, "MaxPostPreDataLengthExceededError", fields)


def test_unsigned_form_refused(srv):
    status, _, body = post(f"{srv.endpoint}/{BUCKET}", {"key": "k"}, b"data")
    assert (status, element(body, "Message")) == (403, "Access Denied."), body
    assert stored(srv) == []


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


def test_large_file_streamed(srv):
    """A 192 MiB file goes to disk as it arrives: the gateway's peak
    memory grows by far less than the file (s3s's PostObject held it
    whole)."""
    data = os.urandom(192 * MiB)
    p = presign(srv, "big")
    before = peak_rss_kib(srv.proc.pid)
    status, headers, _ = post(p["url"], p["fields"], data)
    assert status == 204
    assert headers["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    grew_mib = (peak_rss_kib(srv.proc.pid) - before) / 1024
    assert grew_mib < 64, f"peak memory grew by {grew_mib:.0f} MiB for a 192 MiB file"
    assert os.path.getsize(os.path.join(srv.root, BUCKET, "big")) == len(data)
