# rpm's order of a transaction that mixes install elements (install-only
# packages beside their installed versions) and upgrades, as dnf builds
# it with rpm's Python bindings. Reads nothing but its arguments:
#   ROOT DBPATH (i|u):PACKAGE...
# Prints one line per element in rpm's order: "+NEVRA" or "-NEVRA".
# Verbose, as `rpm -v`: rpm's warnings about the packages it leaves out as
# it adds them ("package A was already added, skipping B") go to stderr.
import os
import sys

import rpm

root, dbpath = sys.argv[1], sys.argv[2]
rpm.addMacro("_dbpath", dbpath)
rpm.setVerbosity(rpm.RPMLOG_INFO)
ts = rpm.TransactionSet(root)
ts.setVSFlags(rpm._RPMVSF_NOSIGNATURES | rpm._RPMVSF_NODIGESTS)
for arg in sys.argv[3:]:
    how, path = arg.split(":", 1)
    fd = os.open(path, os.O_RDONLY)
    try:
        hdr = ts.hdrFromFdno(fd)
    finally:
        os.close(fd)
    ts.addInstall(hdr, path, how)
ts.check()
ts.order()
for te in ts:
    sign = "+" if te.Type() == rpm.TR_ADDED else "-"
    print(sign + te.NEVRA())
