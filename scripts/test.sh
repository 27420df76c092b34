#!/usr/bin/env bash
# Set up and run every test on real XFS, Btrfs, ext4 and tmpfs mounts.
#   scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --workspace --all-targets --locked
exec bash scripts/rig.sh cargo test --workspace --locked "$@"
