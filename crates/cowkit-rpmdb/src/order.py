# rpm's order of a transaction as dnf builds it with rpm's Python bindings:
# install elements (install-only packages beside their installed versions,
# dnf5's installs of new names), upgrades, and installed packages erased as
# elements of their own (dnf5's erasures, `rpmtsAddEraseElement`), added in
# the order given. Reads nothing but its arguments:
#   ROOT DBPATH (i:PACKAGE|u:PACKAGE|e:NEVRA)...
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


def plain(nevra):
    """NEVRA with a zero epoch left out, as dnf5 writes it."""
    n, _, vra = nevra.rpartition("-")
    name, _, ver = n.rpartition("-")
    if ver.startswith("0:"):
        ver = ver[2:]
    return "%s-%s-%s" % (name, ver, vra)


for arg in sys.argv[3:]:
    how, what = arg.split(":", 1)
    if how == "e":
        name = what.rsplit("-", 2)[0]
        found = [h for h in ts.dbMatch("name", name) if plain(str(h[rpm.RPMTAG_NEVRA])) == plain(what)]
        if len(found) != 1:
            sys.exit("%s: %d installed package(s) of that NEVRA" % (what, len(found)))
        ts.addErase(found[0])
        continue
    fd = os.open(what, os.O_RDONLY)
    try:
        hdr = ts.hdrFromFdno(fd)
    finally:
        os.close(fd)
    ts.addInstall(hdr, what, how)
ts.check()
ts.order()
for te in ts:
    sign = "+" if te.Type() == rpm.TR_ADDED else "-"
    print(sign + te.NEVRA())
