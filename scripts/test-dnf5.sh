#!/bin/bash
# The dnf5 tier: dnf5 resolving for cowkit through cowkit's libdnf5 plugin
# (crates/cowkit/tests/dnf5.rs). Finds or builds dnf5 and rpm 4.20 first
# (scripts/fedora-tools.sh all: about 35 minutes on a cold 2-core machine, instant once built;
# or the prefix COWKIT_FEDORA_TOOLS names),
# builds the plugin against that prefix into the cargo target directory, then runs the tier on
# the rig. scripts/test.sh (and so CI) runs it after the rpm 4.20 tier.
#   bash scripts/test-dnf5.sh [cargo test arguments after --]
set -euo pipefail
cd "$(dirname "$0")/.."
# COWKIT_FEDORA_TOOLS names a prefix already built (dnf5 and rpm 4.20 in its bin).
prefix=${COWKIT_FEDORA_TOOLS:-$(bash scripts/fedora-tools.sh all | tail -1)}
target=${CARGO_TARGET_DIR:-$PWD/target}
make -s -C crates/cowkit-dnf/dnf5-plugin PREFIX="$prefix" OUT="$target/dnf5-plugin" >&2
export COWKIT_FEDORA_TOOLS=$prefix
export COWKIT_DNF5_PLUGIN=$target/dnf5-plugin/cowkit.so
exec bash scripts/rig.sh cargo test -p cowkit --test dnf5 -- --ignored "$@"
