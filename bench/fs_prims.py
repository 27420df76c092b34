#!/usr/bin/env python3
"""Probe the primitives the cowkit S3 fleet relies on, on two mounts of one shared filesystem.

Usage: fs_prims.py MOUNT1 MOUNT2 [BRICK_DIR...]
Prints one line per check: name, result, detail.
"""
import errno, fcntl, os, struct, subprocess, sys, time, ctypes

M1, M2 = sys.argv[1], sys.argv[2]
BRICKS = sys.argv[3:]
D1, D2 = os.path.join(M1, "prims"), os.path.join(M2, "prims")
os.makedirs(D1, exist_ok=True)
MiB = 1 << 20

def say(name, ok, detail=""):
    print(f"{name:40s} {ok:8s} {detail}", flush=True)

def brick_of(rel):
    for b in BRICKS:
        p = os.path.join(b, "prims", rel)
        if os.path.exists(p):
            return p
    return None

def fiemap(path):
    out = subprocess.run(["xfs_io", "-r", "-c", "fiemap -v", path], capture_output=True, text=True).stdout
    lines = [l for l in out.splitlines()[2:] if l.strip() and "hole" not in l]
    shared = sum(1 for l in lines if l.split()[-1].startswith("0x") and int(l.split()[-1], 16) & 0x2000)
    return len(lines), shared

def write_random(path, size):
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush(); os.fsync(f.fileno())

# 1. copy_file_range between files: find pairs on the same brick and on different bricks.
def cfr(name_src, name_dst, size=16 * MiB):
    src, dst = os.path.join(D1, name_src), os.path.join(D1, name_dst)
    write_random(src, size)
    fi = os.open(src, os.O_RDONLY); fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t = time.monotonic()
    try:
        n = os.copy_file_range(fi, fo, size, 0, 0)
        err = None
    except OSError as e:
        n, err = 0, e
    ms = (time.monotonic() - t) * 1000
    os.fsync(fo); os.close(fi); os.close(fo)
    bs, bd = brick_of(name_src), brick_of(name_dst)
    same = bs and bd and os.path.dirname(os.path.dirname(os.path.dirname(bs))) == os.path.dirname(os.path.dirname(os.path.dirname(bd)))
    ext = fiemap(bd) if bd else None
    identical = open(src, "rb").read() == open(dst, "rb").read()
    say(f"copy_file_range {name_src}->{name_dst}", "ok" if (n == size and identical) else "FAIL",
        f"returned={n} err={err} ms={ms:.1f} same_brick={bool(same)} src_brick={bs} dst_brick={bd} "
        f"dst_extents(total,shared)={ext} bytes_equal={identical}")

for i in range(4):
    cfr(f"cs{i}", f"cd{i}")

# 2. FICLONE on the mount.
FICLONE = 0x40049409
src = os.path.join(D1, "cs0"); dst = os.path.join(D1, "clone0")
fi = os.open(src, os.O_RDONLY); fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
try:
    fcntl.ioctl(fo, FICLONE, fi); say("FICLONE on mount", "ok")
except OSError as e:
    say("FICLONE on mount", "no", f"{errno.errorcode.get(e.errno)} ({e.strerror})")
os.close(fi); os.close(fo)

# 3. Locks across the two mounts (OFD and classic), in separate processes.
F_OFD_SETLK, F_OFD_SETLKW = 37, 38
lockf = os.path.join(D1, "lock")
open(lockf, "wb").close()
def flock_struct(typ, start, ln):
    # struct flock on x86_64: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
    return struct.pack("hhqqi4x", typ, 0, start, ln, 0)
def try_lock(path, cmd, start, ln=1):
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.fcntl(fd, cmd, flock_struct(fcntl.F_WRLCK, start, ln)); return fd, None
    except OSError as e:
        os.close(fd); return None, e
for cname, cmd in (("OFD F_OFD_SETLK", F_OFD_SETLK), ("classic F_SETLK", fcntl.F_SETLK)):
    r, w = os.pipe(); r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        fd, e = try_lock(os.path.join(D1, "lock"), cmd, 100)
        os.write(w, b"1" if fd is not None else b"E"); os.read(r2, 1); os._exit(0)
    held = os.read(r, 1)
    fd, e = try_lock(os.path.join(D2, "lock"), cmd, 100)
    fd_other, e_other = try_lock(os.path.join(D2, "lock"), cmd, 101)
    say(f"{cname} same byte across mounts", "ok" if (held == b"1" and fd is None and e.errno in (errno.EAGAIN, errno.EACCES)) else "FAIL",
        f"holder_got_it={held == b'1'} second={'got it (NOT EXCLUDED)' if fd is not None else errno.errorcode.get(e.errno)}")
    say(f"{cname} other byte across mounts", "ok" if fd_other is not None else "FAIL", f"{e_other}")
    for x in (fd, fd_other):
        if x is not None: os.close(x)
    # Same process, two descriptors (OFD must exclude, classic does not).
    os.write(w2, b"x"); os.waitpid(pid, 0)
    fa, ea = try_lock(os.path.join(D1, "lock"), cmd, 200)
    fb, eb = try_lock(os.path.join(D2, "lock"), cmd, 200)
    say(f"{cname} same process, two fds, two mounts", "excludes" if fb is None else "shares",
        f"first={'ok' if fa is not None else ea} second={'got it' if fb is not None else errno.errorcode.get(eb.errno)}")
    for x in (fa, fb):
        if x is not None: os.close(x)
    # Release on close / death: lock in child, child exits, we then get it.
    pid = os.fork()
    if pid == 0:
        fd, e = try_lock(os.path.join(D1, "lock"), cmd, 300); os._exit(0 if fd is not None else 1)
    _, st = os.waitpid(pid, 0)
    fd, e = try_lock(os.path.join(D2, "lock"), cmd, 300)
    say(f"{cname} released when holder dies", "ok" if (st == 0 and fd is not None) else "FAIL", f"child_rc={st} then={'got it' if fd is not None else e}")
    if fd is not None: os.close(fd)
# Blocking OFD lock waits and is granted after release across mounts.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    fd, e = try_lock(os.path.join(D1, "lock"), F_OFD_SETLK, 400); os.write(w, b"1"); time.sleep(1.0); os.close(fd); os._exit(0)
os.read(r, 1)
t = time.monotonic(); fd = os.open(os.path.join(D2, "lock"), os.O_RDWR)
fcntl.fcntl(fd, F_OFD_SETLKW, flock_struct(fcntl.F_WRLCK, 400, 1))
say("OFD F_OFD_SETLKW waits across mounts", "ok", f"waited_ms={(time.monotonic() - t) * 1000:.0f} (holder held 1000 ms)")
os.close(fd); os.waitpid(pid, 0)

# 4. rename atomicity seen from the other mount.
a = os.path.join(D1, "ren"); 
with open(a, "wb") as f: f.write(b"old")
stop = time.monotonic() + 3; seen = {"old": 0, "new": 0, "missing": 0, "other": 0, "ESTALE": 0}; n = 0
pid = os.fork()
if pid == 0:
    i = 0
    while time.monotonic() < stop:
        t = os.path.join(D1, f"ren.tmp{i % 2}")
        with open(t, "wb") as f: f.write(b"new" if i % 2 else b"old")
        os.rename(t, a); i += 1
    os._exit(0)
while time.monotonic() < stop:
    try:
        with open(os.path.join(D2, "ren"), "rb") as f: v = f.read().decode()
        seen[v if v in seen else "other"] += 1
    except FileNotFoundError:
        seen["missing"] += 1
    except OSError as e:
        k = errno.errorcode.get(e.errno, str(e.errno)); seen[k] = seen.get(k, 0) + 1
os.waitpid(pid, 0)
say("rename over a name, read from mount 2", "ok" if seen["old"] + seen["new"] == sum(seen.values()) else "FAIL", str(seen))

# 5. O_TMPFILE + linkat.
O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000)
try:
    fd = os.open(D1, O_TMPFILE | os.O_RDWR, 0o644); os.write(fd, b"tmp")
    say("O_TMPFILE", "ok")
    libc = ctypes.CDLL(None, use_errno=True)
    AT_EMPTY_PATH, AT_SYMLINK_FOLLOW = 0x1000, 0x400
    rc = libc.linkat(fd, b"", -100, os.path.join(D1, "linked").encode(), AT_EMPTY_PATH)
    e = ctypes.get_errno()
    if rc != 0:
        rc = libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, os.path.join(D1, "linked").encode(), AT_SYMLINK_FOLLOW)
        e2 = ctypes.get_errno()
        say("linkat O_TMPFILE", "ok" if rc == 0 else "FAIL", f"AT_EMPTY_PATH errno={errno.errorcode.get(e)} /proc path rc={rc} errno={errno.errorcode.get(e2)}")
    else:
        say("linkat O_TMPFILE", "ok", "AT_EMPTY_PATH")
    os.close(fd)
except OSError as e:
    say("O_TMPFILE", "no", f"{errno.errorcode.get(e.errno)} ({e.strerror})")

# 6. Unlink an open file (other mount unlinks), keep reading.
u = os.path.join(D1, "unl"); write_random(u, MiB)
fd = os.open(u, os.O_RDONLY); os.unlink(os.path.join(D2, "unl"))
try:
    data = os.pread(fd, MiB, 0); say("read open file after unlink via mount 2", "ok" if len(data) == MiB else "FAIL", f"read={len(data)}")
except OSError as e:
    say("read open file after unlink via mount 2", "FAIL", f"{errno.errorcode.get(e.errno)} ({e.strerror})")
os.close(fd)
fd = os.open(u + "2", os.O_RDWR | os.O_CREAT, 0o644); os.write(fd, b"x" * 4096); os.unlink(u + "2")
try:
    os.pwrite(fd, b"y" * 4096, 4096); d = os.pread(fd, 8192, 0)
    say("write/read own open file after unlink", "ok" if len(d) == 8192 else "FAIL", f"read={len(d)}")
except OSError as e:
    say("write/read own open file after unlink", "FAIL", f"{errno.errorcode.get(e.errno)}")
os.close(fd)

# 7. Negative lookup caching: mount 2 looks, mount 1 creates, mount 2 looks again at once.
n = os.path.join(D2, "late")
os.path.exists(n)  # mount 2 looks the name up before it exists
with open(os.path.join(D1, "late"), "wb") as f: f.write(b"x")
say("new name seen at once by mount 2", "ok" if os.path.exists(n) else "NO", "")
