#!/bin/sh
# Re-make every figure in bench/README.md into bench/results/ (about
# forty minutes on a 2-core machine; nothing else should run meanwhile).
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
# The same 16-bit calls with the vector kernels off (a setting changed).
for t in float16 bfloat16; do
    DCOLL_NO_HALF_VEC=1 $run 4 600 "$perf" -b 16M -e 16M -R 7 -d $t all_reduce
done >"$res/np4-half-scalar.txt"
# Every collective at default settings (MPI's blocking calls under the
# watchdog), beside the A/A noise floor, and in the opt-in mode whose
# timeouts return (polled; dcoll's own algorithms for small calls), that
# one also in rounds that do not interleave the two sides (-S).
colls="all_reduce broadcast reduce all_gather gather scatter reduce_scatter all_to_all barrier"
for np in 2 4; do
    $run $np 1200 "$perf" -b 8 -e 16M -f 8 -R 11 $colls \
        >"$res/modes-np$np-default.txt"
    $run $np 1200 "$perf" -A -b 8 -e 16M -f 8 -R 11 $colls \
        >"$res/modes-np$np-calibrate.txt"
    DCOLL_ON_TIMEOUT=return $run $np 1200 "$perf" -b 8 -e 16M -f 8 -R 11 \
        $colls >"$res/modes-np$np-return.txt"
    DCOLL_ON_TIMEOUT=return $run $np 1200 "$perf" -S -b 8 -e 16M -f 8 \
        -R 11 $colls >"$res/modes-np$np-return-apart.txt"
done
# CPU a rank burns while it waits 1 s for a late peer, raw and dcoll.
for np in 2 3 4; do
    $run $np 300 "$build/bench/dcoll-waitcpu" -s 1 -r 3 \
        >"$res/waitcpu-np$np.txt"
done
# No deadline, no recorder, against the A/A noise, on 2 ranks.
{
    echo "# DCOLL_TIMEOUT=0 DCOLL_FLIGHT_RECORDER=0 test/mpirun.sh 2 300" \
         "build/bench/dcoll-perf -b 8 -e 4K -f 8 -R 11 [-A] all_reduce" \
         "broadcast"
    echo "# columns: [-A] size(B) redop dcoll(us) raw(us) ratio +us"
    for a in "" -A; do
        DCOLL_TIMEOUT=0 DCOLL_FLIGHT_RECORDER=0 $run 2 300 "$perf" $a -b 8 \
            -e 4K -f 8 -R 11 all_reduce broadcast |
            awk -v a="$a" '!/^#/ && NF { print a, $1, $4, $6, $10, $13, $14 }'
    done
} >"$res/debug-off-np2.txt"
# Instructions per call (callgrind), twice to show they repeat; then with
# the deadline and recorder switched off and on.
"$here/overhead.sh" "$build" 2 >"$res/overhead.txt"
for env in "DCOLL_TIMEOUT=0 DCOLL_FLIGHT_RECORDER=0" "DCOLL_TIMEOUT=0" \
           "DCOLL_TIMEOUT=1800"; do
    echo "== $env"
    env $env "$here/overhead.sh" "$build" 1 | sed 1d
done >"$res/overhead-fault.txt"
"$here/plot.sh" "$res/np4-float32.csv" "$res/np4"
