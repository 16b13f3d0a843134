#!/bin/sh
# Run one libFuzzer target (built by test/fuzz/meson.build) for a bounded
# time on a copy of its seeds: run.sh TARGET SEEDS CORPUS [SECONDS].
# A crash, leak or sanitizer report fails the test.
set -eu
exe=$1; seeds=$2; corpus=$3; secs=${4:-20}
mkdir -p "$corpus"
cp "$seeds"/* "$corpus"/ 2>/dev/null || true
log=$corpus.log
echo "== $(basename "$exe") for ${secs}s"
if ! "$exe" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
       "$corpus" > "$log" 2>&1; then
    tail -40 "$log"
    exit 1
fi
grep -E "stat::number_of_executed_units|Done" "$log" | tail -2
