"""Peers that stop talking, and peers that only open connections, do not
take the gateway away from its clients (the checks of issue 25, item 3). Done as an
attacker would: raw TCP sockets, no credentials. On XFS only: none of this
depends on the filesystem.

No timed assertions: each check waits generously for something to happen
(a close, an answer) and fails only if it never does."""
import os
import resource
import socket
import subprocess
import threading
import time
import urllib.parse

import boto3
from botocore.config import Config

from conftest import AK, SK

# Long enough that a gateway that never closes anything fails, short
# enough to keep the test quick when it passes.
WAIT = 60


def addr(srv):
    host, port = srv.info["listen"].rsplit(":", 1)
    return host, int(port)


def closed_within(sock, wait=WAIT):
    """Read (and drop) whatever arrives until the peer closes; True if it
    closed within `wait` seconds, False if the socket stayed open."""
    sock.settimeout(wait)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def raw_request(method, url, headers=(), body=b""):
    u = urllib.parse.urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    head = f"{method} {path} HTTP/1.1\r\nHost: {u.netloc}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode() + b"\r\n" + body


def test_half_sent_head_and_idle_connections_are_closed(make_server):
    srv = make_server("xfs", extra=["--header-timeout", "2", "--idle-timeout", "3"])
    # Half a request head, then nothing.
    half = socket.create_connection(addr(srv))
    half.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Amz-Date: 2026")
    # A connection that never sends a byte.
    silent = socket.create_connection(addr(srv))
    # A head trickled one byte a second: complete only after 40 s.
    trickle = socket.create_connection(addr(srv))
    stop = threading.Event()

    def drip():
        for c in b"GET / HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 40:
            if stop.wait(1):
                return
            try:
                trickle.send(bytes([c]))
            except OSError:
                return

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    # A keep-alive connection after an answer (a 403: no credentials).
    idle = socket.create_connection(addr(srv))
    idle.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert idle.recv(12).startswith(b"HTTP/1.1 403")
    try:
        assert closed_within(half), "a half-sent head was kept open"
        assert closed_within(silent), "a connection that sent nothing was kept open"
        assert closed_within(trickle), "a trickled head was kept open"
        assert closed_within(idle), "an idle keep-alive connection was kept open"
    finally:
        stop.set()
        t.join()
    for s in (half, silent, trickle, idle):
        s.close()


def test_stalled_body_and_unread_response_are_cut_off(make_server):
    srv = make_server("xfs", extra=["--body-timeout", "2", "--send-timeout", "2"])
    s3 = srv.client()
    s3.create_bucket(Bucket="stall")
    # A body that stops after 10 of its 1,000 bytes.
    url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": "stall", "Key": "half"}, ExpiresIn=600)
    put = socket.create_connection(addr(srv))
    put.sendall(raw_request("PUT", url, [("Content-Length", "1000")], b"0123456789"))
    assert closed_within(put), "a request body that stopped sending was waited for forever"
    put.close()
    # A response the client stops reading.
    size = 64 << 20
    s3.put_object(Bucket="stall", Key="big", Body=b"\0" * size)
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "stall", "Key": "big"}, ExpiresIn=600)
    get = socket.socket()
    get.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    get.connect(addr(srv))
    get.sendall(raw_request("GET", url))
    # Read nothing for far longer than the send timeout, then everything:
    # a gateway that waited gets to send the whole object.
    time.sleep(15)
    got = 0
    get.settimeout(WAIT)
    try:
        while True:
            d = get.recv(1 << 20)
            if not d:
                break
            got += len(d)
    except (ConnectionResetError, socket.timeout):
        pass
    get.close()
    assert got < size, "a client that stopped reading was waited for"


class Attacker:
    """Hundreds of connections from 127.0.0.2-7 that never finish a
    request: silent ones, half-sent heads, heads trickled a byte at a
    time. Each one the gateway closes is opened again."""

    def __init__(self, target, n=300):
        self.target, self.n = target, n
        self.socks = [None] * n
        self.opened = 0
        self.reopened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, i):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i % 6}", 0))
        s.setblocking(False)
        try:
            s.connect(self.target)
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return None
        self.opened += 1
        if i % 3 == 1:
            try:
                s.send(b"PUT /bucket/key HTTP/1.1\r\nHost: x\r\n")
            except OSError:
                pass
        return s

    def alive(self, s):
        try:
            return s.recv(4096) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def run(self):
        while not self.stop.is_set():
            for i in range(self.n):
                s = self.socks[i]
                if s is not None and not self.alive(s):
                    s.close()
                    s = None
                    self.reopened += 1
                if s is None:
                    s = self.socks[i] = self.open(i)
                if s is not None and i % 3 == 2:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
            self.stop.wait(0.2)
        for s in self.socks:
            if s is not None:
                s.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_idle_and_slow_connections_do_not_lock_out_a_signed_client(make_server):
    cap = 48
    srv = make_server("xfs", extra=[
        "--max-connections", str(cap), "--max-connections-per-ip", "16",
        "--header-timeout", "5"])
    assert srv.info["max_connections"] == cap
    pid = srv.info["pid"]
    base = fd_count(pid)
    # A client as SDKs are configured: a few retries, generous timeouts.
    s3 = boto3.client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, connect_timeout=WAIT,
                      read_timeout=WAIT, retries={"mode": "standard", "max_attempts": 3}))
    s3.create_bucket(Bucket="served")
    most = base
    answered = 0
    with Attacker(addr(srv)) as attack:
        # Until the attack has opened more connections than the cap allows.
        deadline = time.monotonic() + WAIT
        while attack.opened < 3 * cap and time.monotonic() < deadline:
            time.sleep(0.1)
        assert attack.opened >= 3 * cap, attack.opened
        for _ in range(40):
            names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
            assert names == ["served"], names
            answered += 1
            most = max(most, fd_count(pid))
            time.sleep(0.1)
        reopened = attack.reopened
    assert answered == 40
    # The gateway's descriptors stayed bounded by its cap (plus what it had
    # open before the attack, and a few for the request being answered)...
    assert most <= base + cap + 8, (most, base, cap)
    # ...by closing attack connections.
    assert reopened > 0


def limit_soft(n):
    return lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def limit_both(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def test_serve_raises_the_open_file_limit_and_fits_its_cap(make_server):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    srv = make_server("xfs", preexec=limit_soft(256))
    with open(f"/proc/{srv.info['pid']}/limits") as f:
        line = next(l for l in f if l.startswith("Max open files"))
    soft = line.split()[3]
    want = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    assert soft == want, line
    # With the hard limit low too, the default cap fits under it...
    srv = make_server("xfs", preexec=limit_both(256))
    assert srv.info["max_connections"] == (256 - 64) // 4
    # ...and a cap that does not fit is refused up front.
    r = subprocess.run(
        [os.environ["COWKIT_BIN"], "s3", "serve", "--root", srv.root, "--listen", "127.0.0.1:0",
         "--access-key", AK, "--secret-key", SK, "--max-connections", "1000"],
        capture_output=True, text=True, preexec_fn=limit_both(256), timeout=WAIT)
    assert r.returncode != 0
    assert "--max-connections 1000 needs" in r.stderr and "hint:" in r.stderr, r.stderr
