#!/usr/bin/env bash
# Run every fuzz target for SECONDS_PER_TARGET (default 60) seconds, one
# after another, with libFuzzer's memory and per-input time limits; the
# corpus grows in fuzz/corpus/<target>/ and crashes land in
# fuzz/artifacts/<target>/. Needs the nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz --locked`). Afterwards, minimize what is worth
# committing with `cargo +nightly fuzz cmin TARGET`, and add a regression
# test for each crash. The fuzz package (fuzz/Cargo.toml) builds the crates
# with their `fuzzing` feature, which holds the targets' entry points.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(rpm_header cpio payload extents owners s3_names s3_request s3_chunked erofs macros)
fi
# FUZZ_JOBS > 1 runs that many processes per target (their logs go to
# fuzz/fuzz-N.log, libFuzzer's choice).
jobs=()
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
    jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
fi

cargo +nightly fuzz build -O
# ASan keeps freed memory in a 256 MiB quarantine by default, which alone
# reaches -rss_limit_mb=256; a smaller one keeps the limit about the target.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=10}
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    echo "== $t: ${seconds}s"
    start=$(date +%s)
    # -rss_limit_mb: an input that makes the target hold more is a bug
    # (the parsers bound memory by the verified header); -timeout: one
    # input taking more than FUZZ_TIMEOUT (10) s is a hang. libFuzzer
    # measures wall time: a fuzzer stopped (SIGSTOP) for longer reports a
    # false "timeout": run the artifact again to tell
    # (`cargo +nightly fuzz run -O TARGET ARTIFACT`).
    if ! cargo +nightly fuzz run -O "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=256 -timeout="${FUZZ_TIMEOUT:-10}" \
        -max_len=65536 -malloc_limit_mb=256 "${jobs[@]}" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" 2>"artifacts/$t.log"; then
        echo "!! $t failed: see fuzz/artifacts/$t.log and fuzz/artifacts/$t/"
        tail -n 30 "artifacts/$t.log"
        status=1
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "artifacts/$t.log" || true
    echo "   $(( $(date +%s) - start ))s, corpus: $(ls "corpus/$t" | wc -l) inputs"
done
exit $status
