"""Driver of bench/s3-complete.sh: starts `cowkit s3 serve` on each mount,
uploads parts with boto3, times CompleteMultipartUpload and reads the loop
device's write counter; PutObject/GetObject against dd. Writes
YYYY-MM-DD-s3.{md,json}."""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import statistics
import subprocess
import time

import boto3
from botocore.config import Config

from benchlib import drop_caches, loadavg

MiB = 1 << 20
AK, SK = "bench", "bench-secret"


def sectors_written(dev):
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[6]) * 512


class Server:
    def __init__(self, cowkit, root, log):
        os.makedirs(root, exist_ok=True)
        self.log_path = log
        self.proc = subprocess.Popen(
            [cowkit, "s3", "serve", "--root", root, "--listen", "127.0.0.1:0", "--json",
             "--access-key", AK, "--secret-key", SK],
            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        self.endpoint = json.loads(self.proc.stdout.readline())["endpoint"]
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=AK,
                               aws_secret_access_key=SK, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}, max_pool_connections=8,
                                             read_timeout=3600, retries={"max_attempts": 1}))

    def last_complete(self):
        with open(self.log_path) as f:
            lines = [json.loads(l[l.index("{"):]) for l in f if '"CompleteMultipartUpload"' in l]
        return lines[-1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def complete_run(srv, mnt, dev, size, part, synced, buf, n):
    s3 = srv.s3
    key = f"obj-{size}-{part}-{int(synced)}-{n}"
    uid = s3.create_multipart_upload(Bucket="bench", Key=key)["UploadId"]
    nparts = -(-size // part)

    def up(i):
        ln = min(part, size - (i - 1) * part)
        off = ((i * 7919) % 16) * MiB  # vary the content a little between parts
        body = buf[off:off + ln]
        return s3.upload_part(Bucket="bench", Key=key, UploadId=uid, PartNumber=i, Body=body)["ETag"]

    with cf.ThreadPoolExecutor(4) as ex:
        etags = list(ex.map(up, range(1, nparts + 1)))
    parts = [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]
    if synced:
        os.sync()
    w0 = sectors_written(dev)
    t0 = time.monotonic()
    s3.complete_multipart_upload(Bucket="bench", Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    dt = time.monotonic() - t0
    w_during = sectors_written(dev) - w0
    os.sync()
    w_after_sync = sectors_written(dev) - w0
    c = srv.last_complete()
    s3.delete_object(Bucket="bench", Key=key)
    os.sync()
    return {"seconds": dt, "parts": nparts, "written_during": w_during, "written_incl_sync": w_after_sync,
            "bytes_cloned": c["bytes_cloned"], "bytes_copied": c["bytes_copied"] + c["bytes_written"],
            "server_ms": c["ms"]}


def throughput(srv, mnt, buf):
    n = 1024 * MiB
    src = "/dev/shm/cowkit-s3bench.src"
    with open(src, "wb") as f:
        for _ in range(n // len(buf)):
            f.write(buf)
    out = {}
    try:
        drop_caches()
        t0 = time.monotonic()
        subprocess.run(["dd", f"if={src}", f"of={mnt}/dd.bin", "bs=4M", "conv=fsync", "status=none"], check=True)
        out["dd_write_fsync"] = n / (time.monotonic() - t0)
        drop_caches()
        t0 = time.monotonic()
        subprocess.run(["dd", f"if={mnt}/dd.bin", "of=/dev/null", "bs=4M", "status=none"], check=True)
        out["dd_read_cold"] = n / (time.monotonic() - t0)
        os.unlink(f"{mnt}/dd.bin")
        drop_caches()
        t0 = time.monotonic()
        with open(src, "rb") as f:
            srv.s3.put_object(Bucket="bench", Key="put", Body=f)
        t1 = time.monotonic()
        os.sync()
        t2 = time.monotonic()
        out["put"] = n / (t1 - t0)
        out["put_plus_sync"] = n / (t2 - t0)
        drop_caches()
        t0 = time.monotonic()
        body = srv.s3.get_object(Bucket="bench", Key="put")["Body"]
        got = 0
        while True:
            chunk = body.read(4 * MiB)
            if not chunk:
                break
            got += len(chunk)
        assert got == n
        out["get_cold"] = n / (time.monotonic() - t0)
        srv.s3.delete_object(Bucket="bench", Key="put")
    finally:
        os.unlink(src)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cowkit", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--img-backing", default="")
    ap.add_argument("specs", nargs="+", help="fs:mount:device:io")
    a = ap.parse_args()
    sizes = [int(x) * MiB for x in os.environ["SIZES"].split()]
    part_sizes = [int(x) * MiB for x in os.environ["PARTS"].split()]
    rounds = [int(x) for x in os.environ["ROUNDS"].split()]
    buf = os.urandom(80 * MiB)
    started = time.time()
    load0 = loadavg()
    results = []
    tput = {}
    for spec in a.specs:
        fs, mnt, dev, io = spec.split(":")
        srv = Server(a.cowkit, f"{mnt}/root", f"{mnt}/server.log")
        srv.s3.create_bucket(Bucket="bench")
        tput[fs] = throughput(srv, mnt, buf[:64 * MiB])
        print(fs, "throughput MB/s", {k: round(v / 1e6) for k, v in tput[fs].items()}, flush=True)
        for size, nr in zip(sizes, rounds):
            for part in part_sizes:
                for synced in (True, False):
                    runs = [complete_run(srv, mnt, dev, size, part, synced, buf, r) for r in range(nr)]
                    med = statistics.median(r["seconds"] for r in runs)
                    row = {"fs": fs, "loop_io": io, "size": size, "part": part, "synced": synced,
                           "rounds": nr, "median_s": med, "runs": runs}
                    results.append(row)
                    r0 = runs[len(runs) // 2]
                    print(f"{fs} {size // MiB} MiB / {part // MiB} MiB parts ({r0['parts']}) "
                          f"{'synced' if synced else 'unsynced'}: {med:.3f} s, "
                          f"{med * 1e3 / r0['parts']:.2f} ms/part, written {r0['written_during'] / MiB:.1f} MiB "
                          f"(incl. sync {r0['written_incl_sync'] / MiB:.1f} MiB), cloned {r0['bytes_cloned'] / MiB:.0f} MiB, "
                          f"copied {r0['bytes_copied'] / MiB:.0f} MiB", flush=True)
        srv.stop()
    load1 = loadavg()
    day = datetime.date.today().isoformat()
    machine = (f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // (1 << 30)} GiB RAM, "
               f"kernel {os.uname().release}; loadavg {' '.join(load0)} at start, {' '.join(load1)} at end "
               f"(the machine is shared); images: sparse files on {a.img_backing}; "
               f"runtime {time.time() - started:.0f} s")
    with open(os.path.join(a.results, f"{day}-s3.json"), "w") as f:
        json.dump({"machine": machine, "complete": results, "throughput_bytes_per_s": tput}, f, indent=1)
    lines = [f"# S3 gateway: CompleteMultipartUpload and Put/Get throughput ({day})", "",
             f"Machine: {machine}.", "",
             "Produced by `bench/s3-complete.sh`. Parts uploaded with boto3 (4 threads); *synced*: `sync` "
             "before the complete; *unsynced*: the complete right after the last part, its pages still dirty. "
             "Time: wall clock of the `complete_multipart_upload` call (median of the rounds). *Written*: "
             "sectors the loop device wrote between the start and the end of the complete (for unsynced parts "
             "on XFS this includes the parts' own writeback, which cloning forces); *incl. sync*: the same "
             "counted until a `sync` after the complete (for unsynced parts, all their data). *Cloned/copied*: "
             "from the server's access log.", "",
             "| fs | object | part | parts | parts synced | rounds | complete (median) | ms/part | written | written incl. sync | cloned | copied |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        r0 = r["runs"][len(r["runs"]) // 2]
        lines.append(f"| {r['fs']} | {r['size'] // MiB} MiB | {r['part'] // MiB} MiB | {r0['parts']} | "
                     f"{'yes' if r['synced'] else 'no'} | {r['rounds']} | {r['median_s']:.3f} s | "
                     f"{r['median_s'] * 1e3 / r0['parts']:.2f} | {r0['written_during'] / MiB:.1f} MiB | "
                     f"{r0['written_incl_sync'] / MiB:.1f} MiB | {r0['bytes_cloned'] / MiB:.0f} MiB | "
                     f"{r0['bytes_copied'] / MiB:.0f} MiB |")
    lines += ["", "Throughput of one 1 GiB object (MB/s, caches dropped before each; PutObject from /dev/shm "
              "through boto3, GetObject read to memory in 4 MiB chunks; dd with 4 MiB blocks):", "",
              "| fs | dd write + fsync | PutObject | PutObject + sync | dd read | GetObject |",
              "|---|---:|---:|---:|---:|---:|"]
    for fs, t in tput.items():
        lines.append(f"| {fs} | {t['dd_write_fsync'] / 1e6:.0f} | {t['put'] / 1e6:.0f} | {t['put_plus_sync'] / 1e6:.0f} | "
                     f"{t['dd_read_cold'] / 1e6:.0f} | {t['get_cold'] / 1e6:.0f} |")
    with open(os.path.join(a.results, f"{day}-s3.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
