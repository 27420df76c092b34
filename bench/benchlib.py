"""Shared helpers of the bench/ Python drivers: durability and caches,
timing a command, the machine's load, number formats and the results files.
The drivers import it from their own directory (`import benchlib`)."""

import ctypes
import json
import os
import subprocess
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)


def syncfs(path):
    """syncfs(2) of the filesystem holding the directory `path`; an error
    raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if LIBC.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "syncfs: " + os.strerror(err), path)
    finally:
        os.close(fd)


def drop_caches():
    """Write back every dirty page, then drop the page cache, dentries and
    inodes (cold-cache runs; needs root)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(cmd, env=None, ok=(0,), stdout=subprocess.DEVNULL):
    """Run `cmd` (stderr captured): (seconds on the monotonic clock, the
    CompletedProcess). An exit status not in `ok` ends the driver with the
    command and its stderr."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE)
    t = time.monotonic() - t0
    if p.returncode not in ok:
        sys.exit("command failed (%d): %s\n%s" % (p.returncode, " ".join(map(str, cmd)), p.stderr.decode()))
    return t, p


def loadavg():
    """The 1, 5 and 15 minute load averages, as the strings /proc shows."""
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def fmt_s(x):
    """Seconds with three decimals."""
    return "%.3f" % x


def fmt_size(n):
    """Bytes in B, KiB, MiB or GiB (one decimal above bytes)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0
    return str(n)


def fmt_mib(n):
    """Bytes as MiB with one decimal, without the unit."""
    return "%.1f" % (n / 1048576.0)


def mib(n):
    """Bytes as MiB with one decimal and the unit."""
    return fmt_mib(n) + " MiB"


def write_results(stem, doc, md):
    """The run's results: `doc` as STEM.json, the text `md` as STEM.md."""
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(md)
