"""Fixtures for the S3 client tests: a `cowkit s3 serve` started on 127.0.0.1
with a free port, on the rig's XFS, Btrfs and ext4 mounts.

Environment: COWKIT_BIN (the cowkit binary), COWKIT_TEST_XFS / _BTRFS /
_EXT4 (mount points from scripts/rig.sh). With CI or COWKIT_RIG set, a
missing mount fails the run; otherwise the tests on it are skipped.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import boto3
import pytest
from botocore.config import Config

AK, SK = "cowkit-test-ak", "cowkit-test-secret"
FILESYSTEMS = ["xfs", "btrfs", "ext4"]


def mount_for(fs):
    var = "COWKIT_TEST_" + fs.upper()
    path = os.environ.get(var)
    if not path or not os.path.isdir(path):
        if os.environ.get("CI") or os.environ.get("COWKIT_RIG"):
            pytest.fail(f"{var} is not set to a mounted {fs} directory (run under scripts/rig.sh)")
        pytest.skip(f"SKIPPED: {var} not set (run under scripts/rig.sh)")
    with open("/proc/self/mountinfo") as f:
        best = None
        for line in f:
            parts = line.split()
            mnt = parts[4]
            fstype = parts[parts.index("-") + 1]
            src = parts[parts.index("-") + 2]
            if (path + "/").startswith(mnt.rstrip("/") + "/") and (best is None or len(mnt) > len(best[0])):
                best = (mnt, fstype, src)
    assert best and best[1] == fs, f"{path} is {best}, not {fs}"
    return path, best[2]


class Server:
    def __init__(self, fs, extra=(), creds=True, mount=None, preexec=None):
        self.fs = fs
        # `mount`: a filesystem the test made itself (e.g. a small one).
        self.mount, self.device = (mount, None) if mount else mount_for(fs)
        self.base = tempfile.mkdtemp(prefix="s3-", dir=self.mount)
        self.root = os.path.join(self.base, "root")
        os.mkdir(self.root)
        self.log_path = os.path.join(self.base, "server.log")
        args = [os.environ["COWKIT_BIN"], "s3", "serve", "--root", self.root,
                "--listen", "127.0.0.1:0", "--json", *extra]
        if creds:
            args += ["--access-key", AK, "--secret-key", SK]
        self.log = open(self.log_path, "w")
        # `preexec`: run in the child before exec (e.g. to set rlimits).
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     preexec_fn=preexec)
        line = self.proc.stdout.readline()
        assert line, f"server did not start: {open(self.log_path).read()}"
        self.info = json.loads(line)
        assert self.info["event"] == "listening"
        self.endpoint = self.info["endpoint"]

    def client(self, secret=SK, region="us-east-1", config_sig=None, **cfg):
        if config_sig:
            cfg["signature_version"] = config_sig
        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=AK,
            aws_secret_access_key=secret, region_name=region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          read_timeout=600, **cfg))

    def access_log(self):
        out = []
        with open(self.log_path) as f:
            for line in f:
                i = line.find("{")
                if i >= 0:
                    try:
                        out.append(json.loads(line[i:]))
                    except ValueError:
                        pass
        return out

    def stop(self):
        if self.log.closed:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise AssertionError("server did not stop within 30 s of SIGTERM")
            assert rc == 0, f"server exited {rc} on SIGTERM: {open(self.log_path).read()[-2000:]}"
            rest = self.proc.stdout.read()
            assert '"stopped"' in rest, rest
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(params=FILESYSTEMS)
def fs(request):
    return request.param


@pytest.fixture
def server(fs):
    s = Server(fs)
    yield s
    s.stop()


@pytest.fixture
def make_server():
    made = []

    def make(fs, extra=(), creds=True, mount=None, preexec=None):
        s = Server(fs, extra, creds, mount, preexec)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()
