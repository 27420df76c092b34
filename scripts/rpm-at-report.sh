#!/usr/bin/env bash
# rpm 4.18's own install/upgrade/erase/config/replace/conflict/order/
# verify/scriptlet scenarios (rpm's tests/*.at, the files its module docs
# list), each run by the real rpm and by `cowkit install` on twin roots (the
# test crates/cowkit/tests/rpm_at.rs), written as a markdown table:
# scenario, outcome, first difference or cowkit's refusal.
#
#   scripts/rpm-at-report.sh [OUT]
#
# OUT defaults to bench/results/<date>-rpm-at.md. Runs under the test rig
# (as root). The report is written even when scenarios end otherwise than
# the test's expectation table says (the test then fails; its status is
# this script's).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/bench/results/$(date +%F)-rpm-at.md}"
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
cd "$here"
COWKIT_RPM_AT_REPORT="$table" bash scripts/rig.sh \
  cargo test -p cowkit --test rpm_at -- --nocapture >&2
status=$?
if [ ! -s "$table" ]; then
  echo "rpm-at-report: the test wrote no report (status $status)" >&2
  exit 1
fi
{
  echo "# rpm 4.18's own scenarios: real rpm against cowkit install"
  echo
  echo "- date: $(date -u +%FT%TZ)"
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' (with uncommitted changes)')"
  echo "- rpm: $(rpm --version)"
  echo "- machine: $(uname -srm), $(nproc) CPUs, $(awk '{print $1, $2, $3}' /proc/loadavg) load average at the end"
  echo "- method: \`crates/cowkit/tests/rpm_at.rs\`: each step once by \`rpm --root A\` and once by"
  echo "  \`cowkit install --root B\` (erase steps by \`rpm -e\` on both: cowkit has no erase), compared"
  echo "  after each step by exit status, the scenario's checks, \`rpm -qa\` with file states, \`rpm -Va\`"
  echo "  and the tree; the expected outcome of each is in \`crates/cowkit/tests/rpm_at/expected.rs\`."
  echo
  cat "$table"
} >"$out"
echo "rpm-at-report: wrote $out" >&2
exit "$status"
