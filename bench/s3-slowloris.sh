#!/usr/bin/env bash
# `cowkit s3 serve` under a slowloris attack (issue 25): hundreds of
# connections that never finish a request (silent, half-sent heads, heads
# trickled a byte a second; from 127.0.0.2-9, each reopened when the
# gateway closes it) while a signed boto3 client keeps calling ListBuckets.
# Prints every 5 s the client's latencies (max, median), failed calls, the
# gateway's open descriptors and RSS, and the attacker's open sockets; then
# a summary line.
#
#   bash bench/s3-slowloris.sh
#
# Settings (environment):
#   ATTACK=1500          attacking sockets
#   SECONDS_RUN=90       duration (past the 30 s header timeout, so the
#                        gateway's closes and the attacker's reopens show)
#   SOFT_NOFILE=1024     the gateway's soft open-file limit at start (the
#                        common default; `s3 serve` raises it to the hard one)
#   COWKIT=/path/to/cowkit  (default: target/release, else target/debug)
#   BASELINE=/path/to/older/cowkit   also run that binary first, the same way
#   SERVE_ARGS="..."     more arguments for `cowkit s3 serve`
#   JSON_DIR=DIR         write each run's summary and samples as DIR/LABEL.json
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ATTACK=${ATTACK:-1500}
SECONDS_RUN=${SECONDS_RUN:-90}
SOFT_NOFILE=${SOFT_NOFILE:-1024}
if [ -x "$REPO_ROOT/.venv/bin/python" ]; then PY="$REPO_ROOT/.venv/bin/python"; else PY=python3; fi
"$PY" -c 'import boto3' 2>/dev/null || die "boto3 missing: run scripts/setup.sh"
if [ -z "${COWKIT:-}" ]; then
  for c in "$REPO_ROOT/target/release/cowkit" "$REPO_ROOT/target/debug/cowkit"; do
    [ -x "$c" ] && COWKIT=$c && break
  done
fi
[ -x "${COWKIT:-}" ] || die "no cowkit binary: cargo build -p cowkit --locked, or set COWKIT"

run() {
  local bin=$1 label=$2 extra=()
  local a
  for a in ${SERVE_ARGS:-}; do extra+=(--serve-arg "$a"); done
  if [ -n "${JSON_DIR:-}" ]; then extra+=(--json-out "$JSON_DIR/$label.json"); fi
  "$PY" "$BENCH_DIR/s3_slowloris.py" "$bin" "$label" --soft-nofile "$SOFT_NOFILE" \
    --attack "$ATTACK" --seconds "$SECONDS_RUN" "${extra[@]}"
}

echo "# $(uname -srm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
if [ -n "${BASELINE:-}" ]; then
  run "$BASELINE" baseline
fi
run "$COWKIT" cowkit
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
