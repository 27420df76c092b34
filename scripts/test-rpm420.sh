#!/bin/bash
# The rpm 4.20 tier: rpm's own scenarios (crates/cowkit/tests/rpm_at_420.rs) with rpm 4.20 as the
# reference and as the rpm that registers cowkit's roots. Finds or builds rpm 4.20 first
# (scripts/fedora-tools.sh rpm: about 25 minutes on a cold 2-core machine, instant once built;
# or the prefix COWKIT_FEDORA_TOOLS names), then runs the tier on the rig (1.5 minutes on a quiet 2-core machine, 3 beside other work).
# scripts/test.sh (and so CI) runs it after the workspace's tests.
#   bash scripts/test-rpm420.sh [cargo test arguments after --]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${COWKIT_FEDORA_TOOLS:-$(bash scripts/fedora-tools.sh rpm | tail -1)}
export COWKIT_FEDORA_TOOLS=$prefix
exec bash scripts/rig.sh cargo test -p cowkit --test rpm_at_420 -- --ignored "$@"
