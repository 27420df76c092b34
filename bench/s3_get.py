"""Driver of bench/s3-get.sh: GetObject from the page cache, `cowkit s3 serve`
against VersityGW (posix backend) on the same filesystem, side by side.

Starts both gateways on MOUNT, puts the same objects into both, reads each
once (untimed: page cache warm, files open paths resolved), then for ROUNDS
rounds runs every client method on every size against both gateways in an
order that alternates from round to round. Writes DATE-s3-get.{md,json}."""
import argparse
import datetime
import hashlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from benchlib import loadavg

MiB = 1 << 20
AK, SK = "bench", "bench-secret-key"
BUCKET = "bench"
RUNNING = []  # gateways to stop on the way out, whatever happens


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(endpoint):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", max_pool_connections=16,
                                      read_timeout=600, retries={"max_attempts": 1}))


def wait_listening(port, proc, what):
    for _ in range(400):
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} is not listening on {port}")


class Gateway:
    def __init__(self, name, argv, port, log):
        self.name = name
        self.log = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd="/")
        RUNNING.append(self)
        wait_listening(port, self.proc, name)
        self.endpoint = f"http://127.0.0.1:{port}"
        self.s3 = client(self.endpoint)

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self in RUNNING:
            RUNNING.remove(self)
        self.proc.terminate()
        self.proc.wait(60)
        self.log.close()


def get_read(gw, key, size):
    body = gw.s3.get_object(Bucket=BUCKET, Key=key)["Body"]
    data = body.read()
    assert len(data) == size, (gw.name, key, len(data))


def get_download(gw, key, size):
    # boto3's managed download: ranged GETs on 10 threads above 8 MiB.
    with open("/dev/null", "wb") as f:
        gw.s3.download_fileobj(BUCKET, key, f, Config=TransferConfig())


def get_curl(gw, key, size):
    url = gw.s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=3600)
    out = subprocess.run(["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}", url],
                         check=True, capture_output=True, text=True).stdout
    assert int(out) == size, (gw.name, key, out)


METHODS = {
    "boto3-read": (get_read, "`get_object()['Body'].read()` into memory, one connection"),
    "boto3-download": (get_download, "`download_fileobj` to /dev/null (default TransferConfig: "
                                     "ranged GETs of 8 MiB on up to 10 threads above 8 MiB)"),
    "curl": (get_curl, "`curl -o /dev/null` of a presigned URL (a new process and connection per run)"),
}


def reps_for(size):
    # Enough GETs per sample that a sample takes a measurable time.
    return max(1, min(64, (256 * MiB) // size))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--versitygw", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--setup", default="")
    ap.add_argument("--cowkit-args", default="", help="more arguments for `cowkit s3 serve` (space-separated)")
    ap.add_argument("--pread-too", action="store_true",
                    help="a third gateway: cowkit with --no-sendfile, on its own root, in the same rounds")
    ap.add_argument("--pause", default="", help="command run with STOP before and CONT after the timed rounds")
    a = ap.parse_args()
    sizes = [int(x) * MiB for x in os.environ.get("SIZES", "1 64 1024").split()]
    rounds = int(os.environ.get("ROUNDS", "7"))
    methods = os.environ.get("METHODS", "boto3-read boto3-download curl").split()
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m}; known: {' '.join(METHODS)}")
    started = time.time()
    # SIGTERM from s3-get.sh: unwind, so that the gateways are stopped and
    # paused processes resumed.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))

    ck_root = os.path.join(a.mount, "cowkit")
    vg_root = os.path.join(a.mount, "versitygw")
    os.makedirs(ck_root)
    os.makedirs(vg_root)
    ck_port, vg_port = free_port(), free_port()
    gws = [
        Gateway("cowkit", [a.cowkit, "s3", "serve", "--root", ck_root, "--listen", f"127.0.0.1:{ck_port}",
                           "--access-key", AK, "--secret-key", SK] + a.cowkit_args.split(), ck_port, os.path.join(a.mount, "cowkit.log")),
        Gateway("versitygw", [a.versitygw, "--access", AK, "--secret", SK, "--port", f"127.0.0.1:{vg_port}",
                              "posix", vg_root], vg_port, os.path.join(a.mount, "versitygw.log")),
    ]
    if a.pread_too:
        pr_root, pr_port = os.path.join(a.mount, "cowkit-pread"), free_port()
        os.makedirs(pr_root)
        gws.append(Gateway("cowkit-pread", [a.cowkit, "s3", "serve", "--root", pr_root, "--listen",
                                            f"127.0.0.1:{pr_port}", "--access-key", AK, "--secret-key", SK,
                                            "--no-sendfile"] + a.cowkit_args.split(), pr_port,
                           os.path.join(a.mount, "cowkit-pread.log")))
    cowkits = [g.name for g in gws if g.name != "versitygw"]
    # The same bytes in both: a random 64 MiB block repeated, the last
    # block varied so that no two MiB of an object are alike by accident.
    block = os.urandom(64 * MiB)
    digests = {}
    for gw in gws:
        gw.s3.create_bucket(Bucket=BUCKET)
    for size in sizes:
        data = (block * (size // len(block) + 1))[:size]
        digests[size] = hashlib.md5(data).hexdigest()
        for gw in gws:
            gw.s3.put_object(Bucket=BUCKET, Key=f"obj-{size}", Body=data)
        del data
    os.sync()
    # Check once, untimed: every byte through both gateways (this also
    # brings the objects into the page cache).
    for size in sizes:
        for gw in gws:
            got = hashlib.md5(gw.s3.get_object(Bucket=BUCKET, Key=f"obj-{size}")["Body"].read()).hexdigest()
            if got != digests[size]:
                raise SystemExit(f"{gw.name}: obj-{size} reads back wrong ({got} != {digests[size]})")
    # Warm-up: one untimed run of each method.
    for m in methods:
        for gw in gws:
            METHODS[m][0](gw, f"obj-{sizes[0]}", sizes[0])

    load0 = loadavg()
    paused = False
    samples = []
    try:
        if a.pause:
            subprocess.run([a.pause, "STOP"], check=False, stdout=subprocess.DEVNULL)
            paused = True
            time.sleep(2)
        load_paused = loadavg()
        t_start = time.monotonic()
        for r in range(rounds):
            # Every gateway in every position over the rounds.
            k = r % len(gws)
            order = gws[k:] + gws[:k]
            if r // len(gws) % 2 == 1:
                order = order[::-1]
            for size in sizes:
                for m in methods:
                    for gw in order:
                        fn = METHODS[m][0]
                        n = reps_for(size)
                        c0 = gw.cpu_seconds()
                        t0 = time.monotonic()
                        for _ in range(n):
                            fn(gw, f"obj-{size}", size)
                        dt = time.monotonic() - t0
                        cpu = gw.cpu_seconds() - c0
                        samples.append({"round": r, "size": size, "method": m, "gateway": gw.name, "gets": n,
                                        "seconds": dt, "server_cpu_seconds": cpu})
            print(f"round {r + 1}/{rounds} done", flush=True)
        timed = time.monotonic() - t_start
        load1 = loadavg()
    finally:
        if paused:
            subprocess.run([a.pause, "CONT"], check=False, stdout=subprocess.DEVNULL)
    for gw in gws:
        gw.stop()

    rows = []
    for size in sizes:
        for m in methods:
            row = {"size": size, "method": m}
            for g in [g.name for g in gws]:
                ss = [s for s in samples if s["size"] == size and s["method"] == m and s["gateway"] == g]
                per = [s["seconds"] / s["gets"] for s in ss]
                cpu = [s["server_cpu_seconds"] / s["gets"] for s in ss]
                row[g] = {"median_s": statistics.median(per), "min_s": min(per), "max_s": max(per),
                          "median_mb_s": size / statistics.median(per) / 1e6,
                          "server_cpu_s_per_gb": statistics.median(cpu) / size * 1e9}
            row["ratio"] = row["versitygw"]["median_s"] / row["cowkit"]["median_s"]
            for g in cowkits:
                row[g]["ratio"] = row["versitygw"]["median_s"] / row[g]["median_s"]
            rows.append(row)

    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    vg_version = os.environ.get("VGW_LABEL") or subprocess.run(
        [a.versitygw, "--version"], capture_output=True, text=True).stdout.strip().replace("\n", ", ")
    ck_version = subprocess.run([a.cowkit, "--version"], capture_output=True, text=True).stdout.strip()
    commit = os.environ.get("COMMIT", "unknown")
    machine = {
        "cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(mem, 1), "kernel": platform.release(),
        "python": platform.python_version(), "boto3": boto3.__version__,
        "curl": subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
        "setup": a.setup, "cowkit": ck_version, "commit": commit, "cowkit_args": a.cowkit_args,
        "versitygw": vg_version,
        "loadavg_start": load0, "loadavg_paused": load_paused, "loadavg_end": load1,
        "paused_others": bool(a.pause), "timed_seconds": round(timed, 1),
        "runtime_seconds": round(time.time() - started, 1),
    }
    day = datetime.date.today().isoformat()
    base = os.path.join(a.results, os.environ.get("RESULTS_NAME") or f"{day}-s3-get")
    if os.path.exists(base + ".json"):
        base += "-" + datetime.datetime.now().strftime("%H%M%S")
    with open(base + ".json", "w") as f:
        json.dump({"machine": machine, "rounds": rounds, "rows": rows, "samples": samples}, f, indent=1)

    def fmt_size(b):
        return f"{b // MiB} MiB" if b >= MiB else f"{b} B"

    lines = [f"# S3 gateway: GetObject from the page cache, cowkit against VersityGW ({day})", "",
             f"Machine: {cpu}, {os.cpu_count()} cores, {mem:.1f} GiB RAM, kernel {platform.release()}; "
             f"{a.setup}; Python {platform.python_version()}, boto3 {boto3.__version__}; "
             f"cowkit `{ck_version}` ({commit}){', serving with `' + a.cowkit_args + '`' if a.cowkit_args else ''}; VersityGW `{vg_version}`.", "",
             f"Load average: {' '.join(load0)} before pausing, {' '.join(load_paused)} after pausing the other "
             f"builds and fuzzers ({'yes' if a.pause else 'not paused'}), {' '.join(load1)} at the end of the "
             f"timed rounds ({timed:.0f} s of {time.time() - started:.0f} s).", "",
             f"Produced by `bench/s3-get.sh`: {rounds} rounds, gateway order alternating from round to round; "
             "both gateways serve the same bytes from the same filesystem, read once before the rounds (so "
             "from the page cache). A sample is the time of `gets` back-to-back GETs divided by their number "
             "(1 for the large objects). Server CPU: user+system time of the gateway process during the "
             "sample, per GB served.", "",
             "Methods:", ""]
    for m in methods:
        lines.append(f"- `{m}`: {METHODS[m][1]}")
    if len(cowkits) > 1:
        lines += ["", "`cowkit-pread`: a second cowkit gateway with `--no-sendfile`, on its own root, timed "
                  "in the same rounds (each gateway in every position of the order over the rounds)."]
    lines += ["", "| object | method | gateway | cowkit (median) | MB/s | VersityGW (median) | MB/s | "
              "cowkit speed / VersityGW | server CPU s/GB cowkit | VersityGW |",
              "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        v = row["versitygw"]
        for g in cowkits:
            c = row[g]
            lines.append(f"| {fmt_size(row['size'])} | {row['method']} | {g} | {c['median_s'] * 1e3:.2f} ms "
                         f"({c['min_s'] * 1e3:.2f}–{c['max_s'] * 1e3:.2f}) | {c['median_mb_s']:.0f} | "
                         f"{v['median_s'] * 1e3:.2f} ms ({v['min_s'] * 1e3:.2f}–{v['max_s'] * 1e3:.2f}) | "
                         f"{v['median_mb_s']:.0f} | {c['ratio']:.2f} | {c['server_cpu_s_per_gb']:.3f} | "
                         f"{v['server_cpu_s_per_gb']:.3f} |")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {base}.md and .json")


if __name__ == "__main__":
    try:
        main()
    finally:
        for g in list(RUNNING):
            g.stop()
