#!/usr/bin/env bash
# Set up and run every test on real XFS, Btrfs, ext4 and tmpfs mounts, then the two tiers that run
# against Fedora's current package tools: rpm 4.20 (scripts/test-rpm420.sh) and dnf5 with rpm 4.20
# (scripts/test-dnf5.sh).
#   scripts/test.sh [extra cargo test args]
#
# The tools are found at once where scripts/fedora-tools.sh built them before (the prefix it
# stamps), else built now from ../shared/fedora-tools: about 32 minutes on an idle 2-core machine.
# That build starts first, at the lowest CPU priority, beside the build and the workspace's tests,
# and the tiers wait for it. With extra cargo test arguments only the workspace's tests run (a
# filtered run), and the script says that the tiers did not.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if [ $# -gt 0 ]; then
  cargo build --workspace --all-targets --locked
  bash scripts/rig.sh cargo test --workspace --locked "$@"
  echo "test: arguments given ($*): the rpm 4.20 and dnf5 tiers did not run" \
    "(scripts/test-rpm420.sh, scripts/test-dnf5.sh)" >&2
  exit 0
fi

# rpm 4.20 and dnf5 create the host's /usr/lib/sysimage/rpm when a command is given no root; the
# tests give every one a root, and the end checks that none was made.
sysimage_before=$([ -e /usr/lib/sysimage/rpm ] && echo yes || echo no)

tools_log=$(mktemp /tmp/cowkit-fedora-tools.XXXXXX)
# Its own process group, so that an early end stops the whole build, not only its shell.
setsid nice -n 19 bash scripts/fedora-tools.sh all >"$tools_log" 2>&1 &
tools_pid=$!
stop_tools() {
  if kill -0 "$tools_pid" 2>/dev/null; then kill -- "-$tools_pid" 2>/dev/null || true; fi
  rm -f "$tools_log"
}
trap stop_tools EXIT

cargo build --workspace --all-targets --locked
bash scripts/rig.sh cargo test --workspace --locked

echo "== Fedora's tools: rpm 4.20 and dnf5 (scripts/fedora-tools.sh all)"
waited=$(date +%s)
if ! wait "$tools_pid"; then
  cat "$tools_log" >&2
  echo "test: building Fedora's tools failed (above); the rpm 4.20 and dnf5 tiers cannot run" >&2
  exit 1
fi
grep -E '^fedora-tools: ' "$tools_log" >&2 || true
echo "test: waited $(($(date +%s) - waited))s for the tools after the workspace's tests" >&2
COWKIT_FEDORA_TOOLS=$(tail -1 "$tools_log")
export COWKIT_FEDORA_TOOLS

echo "== the rpm 4.20 tier (scripts/test-rpm420.sh)"
bash scripts/test-rpm420.sh
echo "== the dnf5 tier (scripts/test-dnf5.sh)"
bash scripts/test-dnf5.sh

if [ "$sysimage_before" = no ] && [ -e /usr/lib/sysimage/rpm ]; then
  echo "test: the run created the host's /usr/lib/sysimage/rpm (an rpm 4.20 or dnf5 command" \
    "without a root); it breaks the mkosi test of the next run: remove it and find the command" >&2
  exit 1
fi
