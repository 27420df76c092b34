"""Driver of bench/s3-slowloris.sh: one `cowkit s3 serve` under a slowloris
attack (silent connections, half-sent heads, heads trickled a byte at a
time, from 127.0.0.2-9, each reopened when the gateway closes it) while a
signed boto3 client keeps calling ListBuckets. Prints one line per
sampling period (latencies, the gateway's descriptors and RSS, the
attacker's open sockets) and a Markdown summary at the end.

Usage: s3_slowloris.py COWKIT LABEL [--soft-nofile N] [--attack N]
       [--seconds S] [--serve-arg ARG]...
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import boto3
from botocore.config import Config

AK, SK = "bench-ak", "bench-secret-key"


class Attack:
    def __init__(self, target, n):
        self.target, self.n = target, n
        self.socks = [None] * n
        self.opened = self.closed_by_server = self.connect_errors = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, i):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((f"127.0.0.{2 + i % 8}", 0))
            s.connect(self.target)
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            self.connect_errors += 1
            return None
        self.opened += 1
        if i % 3 == 1:
            try:
                s.send(b"PUT /bucket/key HTTP/1.1\r\nHost: x\r\n")
            except OSError:
                pass
        return s

    def run(self):
        while not self.stop.is_set():
            for i in range(self.n):
                s = self.socks[i]
                if s is not None:
                    try:
                        gone = s.recv(4096) == b""
                    except BlockingIOError:
                        gone = False
                    except OSError:
                        gone = True
                    if gone:
                        s.close()
                        s = self.socks[i] = None
                        self.closed_by_server += 1
                if s is None:
                    s = self.socks[i] = self.open(i)
                if s is not None and i % 3 == 2:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
            self.stop.wait(1.0)
        for s in self.socks:
            if s is not None:
                s.close()

    def open_now(self):
        return sum(s is not None for s in self.socks)


def proc_stats(pid):
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return fds, rss // 1024
    except (FileNotFoundError, StopIteration, ProcessLookupError):
        return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cowkit")
    ap.add_argument("label")
    ap.add_argument("--soft-nofile", type=int, default=1024)
    ap.add_argument("--attack", type=int, default=1500)
    ap.add_argument("--seconds", type=int, default=90)
    ap.add_argument("--serve-arg", action="append", default=[])
    ap.add_argument("--json-out")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    base = tempfile.mkdtemp(prefix="s3-slowloris-")
    root = os.path.join(base, "root")
    os.mkdir(root)
    log = open(os.path.join(base, "server.log"), "w")
    gw_soft = min(a.soft_nofile, hard)
    proc = subprocess.Popen(
        [a.cowkit, "s3", "serve", "--root", root, "--listen", "127.0.0.1:0", "--json", "-q",
         "--access-key", AK, "--secret-key", SK, *a.serve_arg],
        stdout=subprocess.PIPE, stderr=log, text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (gw_soft, hard)))
    info = json.loads(proc.stdout.readline())
    pid = info["pid"]
    host, port = info["listen"].rsplit(":", 1)
    s3 = boto3.client(
        "s3", endpoint_url=info["endpoint"], aws_access_key_id=AK, aws_secret_access_key=SK,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, connect_timeout=10, read_timeout=10,
                      retries={"mode": "standard", "max_attempts": 3}))
    s3.create_bucket(Bucket="bench")
    with open(f"/proc/{pid}/limits") as f:
        nofile = next(l for l in f if l.startswith("Max open files")).split()[3:5]
    print(f"# {a.label}: gateway pid {pid}, open files soft/hard {nofile[0]}/{nofile[1]}, "
          f"max_connections {info.get('max_connections', 'n/a')}, attack {a.attack} sockets")
    attack = Attack((host, int(port)), a.attack)
    attack.thread.start()
    lat, errors, samples = [], [], []
    t0 = time.monotonic()
    period = []
    next_sample = t0 + 5
    print("   t  calls  errors  max_ms  median_ms  gw_fds  gw_rss_mb  attack_open")
    while time.monotonic() - t0 < a.seconds:
        t = time.monotonic()
        try:
            s3.list_buckets()
            ms = (time.monotonic() - t) * 1e3
            lat.append(ms)
            period.append(ms)
        except Exception as e:  # noqa: BLE001 (any failure counts)
            what = type(e).__name__
            if hasattr(e, "response"):
                what += " " + str(e.response.get("Error", {}).get("Code"))
            errors.append((round(time.monotonic() - t0, 1), what))
            period.append(None)
        time.sleep(0.2)
        if time.monotonic() >= next_sample:
            fds, rss = proc_stats(pid)
            ok = [x for x in period if x is not None]
            row = {
                "t": round(time.monotonic() - t0), "calls": len(period),
                "errors": period.count(None),
                "max_ms": round(max(ok), 1) if ok else None,
                "median_ms": round(statistics.median(ok), 1) if ok else None,
                "fds": fds, "rss_mb": rss, "attack_open": attack.open_now()}
            samples.append(row)
            print(f"{row['t']:4d}  {row['calls']:5d}  {row['errors']:6d}  "
                  f"{row['max_ms'] or float('nan'):6.0f}  {row['median_ms'] or float('nan'):9.1f}  "
                  f"{fds or 0:6d}  {rss or 0:9d}  {row['attack_open']:11d}", flush=True)
            period = []
            next_sample += 5
    attack.stop.set()
    attack.thread.join()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    shutil.rmtree(base, ignore_errors=True)
    summary = {
        "label": a.label, "nofile": nofile, "max_connections": info.get("max_connections"),
        "attack": a.attack, "seconds": a.seconds, "calls": len(lat) + len(errors),
        "errors": len(errors), "first_errors": errors[:5],
        "median_ms": round(statistics.median(lat), 1) if lat else None,
        "p99_ms": round(sorted(lat)[int(len(lat) * 0.99)], 1) if lat else None,
        "max_ms": round(max(lat), 1) if lat else None,
        "max_fds": max((s["fds"] or 0) for s in samples),
        "max_rss_mb": max((s["rss_mb"] or 0) for s in samples),
        "attack_opened": attack.opened, "attack_closed_by_server": attack.closed_by_server,
        "attack_connect_errors": attack.connect_errors, "samples": samples,
    }
    kinds = sorted({w for _, w in errors})
    print(f"# {a.label}: {summary['calls']} ListBuckets, {summary['errors']} failed {kinds}; "
          f"latency median {summary['median_ms']} ms, p99 {summary['p99_ms']} ms, "
          f"max {summary['max_ms']} ms; gateway fds max {summary['max_fds']}, "
          f"RSS max {summary['max_rss_mb']} MB; attack opened {attack.opened}, "
          f"closed by the gateway {attack.closed_by_server}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
