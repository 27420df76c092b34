# Record the file states of packages just registered header-only
# (`rpm --justdb` leaves every file of a new package "normal"), the way
# rpm's own markReplacedFiles rewrites an installed header's states:
# librpm's iterator in rewrite mode, inside rpm's transaction lock.
#   ROOT DBPATH WRITABLE, stdin: one line per package
#   "NAME<TAB>NEVRA<TAB>STATES", STATES one digit per file (rpm's state
#   numbers); only the states among the digits WRITABLE are written:
#   "234" (not installed, net shared, wrong color) for new packages,
#   every state to put back an installed package's states.
# Prints one line per package changed: its NEVRA.
import ctypes
import os
import sys

import rpm

root, dbpath, writable = sys.argv[1], sys.argv[2], sys.argv[3]
rpm.addMacro("_dbpath", dbpath)
# librpm as rpm's module loaded it (librpm.so.9 of rpm 4.18, librpm.so.10
# of rpm 4.20): the one in this process, found in its own map.
lib = None
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split()[-1]
        if os.path.basename(path).startswith("librpm.so."):
            lib = ctypes.CDLL(path)
            break
if lib is None:
    sys.exit("rpm's Python module loaded no librpm")
vp = ctypes.c_void_p
for name, res, args in [
    ("rpmtsCreate", vp, []),
    ("rpmtsSetRootDir", ctypes.c_int, [vp, ctypes.c_char_p]),
    ("rpmtsOpenDB", ctypes.c_int, [vp, ctypes.c_int]),
    ("rpmtxnBegin", vp, [vp, ctypes.c_int]),
    ("rpmtxnEnd", vp, [vp]),
    ("rpmtsFree", vp, [vp]),
    ("rpmtsInitIterator", vp, [vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]),
    ("rpmdbSetIteratorRewrite", ctypes.c_int, [vp, ctypes.c_int]),
    ("rpmdbSetIteratorModified", ctypes.c_int, [vp, ctypes.c_int]),
    ("rpmdbNextIterator", vp, [vp]),
    ("rpmdbFreeIterator", vp, [vp]),
    ("headerGetAsString", vp, [vp, ctypes.c_int]),
    ("rpmtdNew", vp, []),
    ("rpmtdFree", vp, [vp]),
    ("rpmtdFreeData", None, [vp]),
    ("rpmtdCount", ctypes.c_uint32, [vp]),
    ("rpmtdSetIndex", ctypes.c_int, [vp, ctypes.c_int]),
    ("rpmtdGetChar", ctypes.POINTER(ctypes.c_char), [vp]),
    ("headerGet", ctypes.c_int, [vp, ctypes.c_int, vp, ctypes.c_int]),
]:
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = args

wanted = {}
for line in sys.stdin.read().splitlines():
    name, nevra, states = line.split("\t")
    wanted.setdefault(name, {})[nevra] = states

ts = lib.rpmtsCreate()
if lib.rpmtsSetRootDir(ts, root.encode()) != 0 or lib.rpmtsOpenDB(ts, os.O_RDWR) != 0:
    sys.exit("cannot open the database")
txn = lib.rpmtxnBegin(ts, 1 << 1)
if not txn:
    sys.exit("cannot take rpm's transaction lock")
try:
    for name, byn in wanted.items():
        mi = lib.rpmtsInitIterator(ts, rpm.RPMTAG_NAME, name.encode(), 0)
        lib.rpmdbSetIteratorRewrite(mi, 1)
        while True:
            h = lib.rpmdbNextIterator(mi)
            if not h:
                break
            s = lib.headerGetAsString(h, rpm.RPMTAG_NEVRA)
            nevra = ctypes.cast(s, ctypes.c_char_p).value.decode()
            states = byn.get(nevra)
            if states is None:
                continue
            td = lib.rpmtdNew()
            if not lib.headerGet(h, rpm.RPMTAG_FILESTATES, td, 1):
                lib.rpmtdFree(td)
                sys.exit(nevra + ": no file states")
            if lib.rpmtdCount(td) != len(states):
                sys.exit(nevra + ": %d file states, %d given" % (lib.rpmtdCount(td), len(states)))
            changed = False
            for i, want in enumerate(states):
                if want not in writable:
                    continue
                lib.rpmtdSetIndex(td, i)
                c = lib.rpmtdGetChar(td)
                if c[0] != bytes([int(want)]):
                    c[0] = bytes([int(want)])
                    changed = True
            lib.rpmtdFreeData(td)
            lib.rpmtdFree(td)
            if changed:
                lib.rpmdbSetIteratorModified(mi, 1)
                print(nevra)
        lib.rpmdbFreeIterator(mi)
finally:
    lib.rpmtxnEnd(txn)
    lib.rpmtsFree(ts)
