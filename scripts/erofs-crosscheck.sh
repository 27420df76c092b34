#!/usr/bin/env bash
# Cross-check cowkit's EROFS images against erofs-utils itself (not in CI:
# Debian 12 ships erofs-utils 1.5, which predates fingerprints).
#
#   bash scripts/erofs-crosscheck.sh [ERofs-UTILS-SOURCE-DIR]
#
# Builds erofs-utils 1.9.3 (cloned from GitHub unless a source tree is
# given), writes one small tree with `mkfs.erofs --xattr-inode-digest` and
# with `cowkit image create`, and checks: fsck.erofs accepts cowkit's
# image; both carry the same long-prefix table, superblock prefix fields
# and byte-identical fingerprint xattr entries.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="${1:-}"
if [ -z "$src" ]; then
    src="$work/erofs-utils"
    git clone -q --depth 1 --branch v1.9.3 https://github.com/erofs/erofs-utils "$src"
fi
if [ ! -x "$src/mkfs/mkfs.erofs" ]; then
    (cd "$src" && ./autogen.sh && ./configure --disable-lz4 --disable-lzma --without-selinux && make -j"$(nproc)") >"$work/build.log" 2>&1 \
        || { tail -20 "$work/build.log"; exit 1; }
fi
cargo build -q --manifest-path "$here/Cargo.toml" -p cowkit
ck="$here/target/debug/cowkit"
mkdir -p "$work/tree/sub"
head -c 300000 /dev/urandom >"$work/tree/big"
echo small >"$work/tree/sub/small"
: >"$work/tree/empty"
"$src/mkfs/mkfs.erofs" --xattr-inode-digest "$work/ref.erofs" "$work/tree" >/dev/null
"$ck" -q image create t --from "$work/tree" --store "$work/store"
"$src/fsck/fsck.erofs" "$work/store/images/t.erofs"
python3 - "$work/ref.erofs" "$work/store/images/t.erofs" <<'PY'
import re, sys
def facts(path):
    b = open(path, 'rb').read()
    sb = b[1024:1152]
    start = int.from_bytes(sb[92:96], 'little') * 4
    n = int.from_bytes(b[start:start + 2], 'little')
    entries = sorted(b[m.start() - 4:m.start() + 39] for m in re.finditer(rb'sha256:', b))
    return {
        'ishare compat bit': bool(int.from_bytes(sb[8:12], 'little') & 0x20),
        'xattr_prefixes incompat bit': bool(int.from_bytes(sb[80:84], 'little') & 0x40),
        'prefix count': sb[91],
        'ishare prefix id': sb[105],
        'prefix': b[start + 2:start + 2 + n],
        'fingerprint entries': entries,
    }
ref, ours = facts(sys.argv[1]), facts(sys.argv[2])
for k in ref:
    print(f"{k}: {'same' if ref[k] == ours[k] else 'DIFFERENT'}")
assert ref == ours, (ref, ours)
assert len(ours['fingerprint entries']) == 2
print("cowkit's fingerprints are those of mkfs.erofs --xattr-inode-digest")
PY
