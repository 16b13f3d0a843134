#!/bin/sh
# Re-make every figure in bench/README.md into bench/results/ (about fifteen
# minutes on a 2-core machine; nothing else should run meanwhile).
#   bench/readme-runs.sh [BUILD_DIR]
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
res=$here/results
run="$here/../test/mpirun.sh"
perf=$build/bench/dcoll-perf
mkdir -p "$res"

# all_reduce and broadcast, float32, 8 B to 64 MiB on 4 ranks.
$run 4 3000 "$perf" -b 8 -e 64M -R 11 -o "$res/np4-float32.csv" \
    all_reduce broadcast >"$res/np4-float32.txt"
# The same with the raw call on both sides: this machine's noise floor.
$run 4 3000 "$perf" -A -b 8 -e 64M -R 11 -o "$res/np4-calibrate.csv" \
    all_reduce broadcast >"$res/np4-calibrate.txt"
# Small calls without oversubscription (2 ranks) and alone (1 rank).
$run 2 600 "$perf" -b 8 -e 32K -R 21 -o "$res/np2-small.csv" \
    all_reduce broadcast >"$res/np2-small.txt"
$run 1 600 "$perf" -b 8 -e 32K -R 21 -o "$res/np1-small.csv" \
    all_reduce broadcast >"$res/np1-small.txt"
# 1,000 tensors of 1 KiB.
$run 4 600 "$perf" -b 1024000 -e 1024000 -t 1000 -R 7 \
    -o "$res/np4-coalesced.csv" all_reduce_coalesced >"$res/np4-coalesced.txt"
# 16-bit floats against float32 at 16 MiB.
for t in float32 float16 bfloat16; do
    $run 4 600 "$perf" -b 16M -e 16M -R 7 -d $t -o "$res/np4-$t-16M.csv" \
        all_reduce
done >"$res/np4-half.txt"
# Instructions per call (callgrind), twice to show they repeat.
"$here/overhead.sh" "$build" 2 >"$res/overhead.txt"
"$here/plot.sh" "$res/np4-float32.csv" "$res/np4"
