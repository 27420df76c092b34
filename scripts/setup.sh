#!/usr/bin/env bash
# Install what a fresh Debian machine lacks for building and testing cowkit.
# Idempotent: installs only what is missing. The Rust toolchain is expected.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have mkfs.xfs || need+=(xfsprogs)
have xfs_io || need+=(xfsprogs)
have mkfs.btrfs || need+=(btrfs-progs)
have mkfs.ext4 || need+=(e2fsprogs)
have losetup || need+=(mount)
have unshare || need+=(util-linux)
have rpm || need+=(rpm)
have rpmbuild || need+=(rpm)
have cpio || need+=(cpio)
have setfattr || need+=(attr)
have setcap || need+=(libcap2-bin)
have setfacl || need+=(acl)
have strace || need+=(strace)
have filefrag || need+=(e2fsprogs)
have cc || need+=(gcc libc6-dev)
have gpg || need+=(gpg)
have gpg-agent || need+=(gpg-agent)
# cowkit-testutil repo: dnf on a local repository whose packages bring
# the host's static busybox as the root's /bin/sh.
have dnf || need+=(dnf)
have createrepo_c || need+=(createrepo-c)
# cowkit dnf_entry: a real image builder (mkosi 14) calling cowkit's `dnf`.
have mkosi || need+=(mkosi)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
# -sys crates (liblzma, zstd) probe with pkg-config.
have pkg-config || need+=(pkg-config)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
# cowkit nosync tests: eatmydata (the peer), objdump (the shim's symbol
# versions), Go (a program with no libc), setpriv (run as nobody).
have eatmydata || need+=(eatmydata)
have objdump || need+=(binutils)
have gzip || need+=(gzip)
have setpriv || need+=(util-linux)
have go || need+=(golang-go)
# `cc -static` for the static test programs needs libc.a.
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib/aarch64-linux-gnu/libc.a ] || need+=(libc6-dev)

if ((${#need[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages (${need[*]}); run as root to install them" >&2
    exit 1
  fi
  mapfile -t pkgs < <(printf '%s\n' "${need[@]}" | sort -u)
  echo "setup: installing ${pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

if ! have cargo; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
  have cargo || { echo "setup: cargo not found (install Rust 1.85 or newer)" >&2; exit 1; }
fi

# The S3 gateway's client tests (boto3, the aws CLI, pytest) run from a
# virtualenv in the repository (.venv, ignored by git), pinned versions.
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
s3_pins=(boto3==1.44.5 botocore==1.44.5 awscli==1.46.2 s3transfer==0.19.3 pytest==9.2.0)
if ! "$venv/bin/python" -c 'import boto3, pytest, awscli' >/dev/null 2>&1 ||
  [ "$(cat "$venv/.cowkit-pins" 2>/dev/null)" != "${s3_pins[*]}" ]; then
  echo "setup: creating $venv (${s3_pins[*]})" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${s3_pins[@]}"
  echo "${s3_pins[*]}" >"$venv/.cowkit-pins"
fi
