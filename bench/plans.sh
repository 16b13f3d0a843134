#!/bin/sh
# The plans' figures in bench/README.md ("Plans"), into bench/results/
# (about twenty minutes on a 2-core machine; nothing else should run
# meanwhile). Needs the Open MPI build (BUILD_DIR) and the MPICH one
# (MPICH_BUILD_DIR, as scripts/mpich.sh makes it).
#   bench/plans.sh [BUILD_DIR] [MPICH_BUILD_DIR]
set -eu
build=${1:-build}
mpich=${2:-build-mpich}
here=$(cd "$(dirname "$0")" && pwd)
res=$here/results
run="$here/../test/mpirun.sh"
# Every kind with a plan (bench/plans.c's rows).
colls="all_reduce broadcast reduce all_gather gather scatter reduce_scatter
all_to_all barrier send_recv all_gatherv gatherv scatterv all_to_allv
reduce_scatterv scan exscan neighbor_all_gather neighbor_all_to_allv
neighbor_all_to_allw"
mkdir -p "$res"
# A plan's blocking start against MPI's blocking call and MPI's
# persistent request, every kind, 8 B to 16 MiB; MPICH on 2 ranks only:
# its ranks poll, so 4 of them on 2 cores measure the scheduler.
for np in 2 4; do
    $run $np 1800 "$build/bench/dcoll-perf" -P -R 11 -b 8 -e 16M -f 8 \
        -o "$res/plans-ompi-np$np.csv" $colls >"$res/plans-ompi-np$np.txt"
done
if [ -x "$mpich/bench/dcoll-perf" ]; then
    DCOLL_MPI=mpich DCOLL_MPIRUN=mpirun.mpich \
        $run 2 1800 "$mpich/bench/dcoll-perf" -P -R 11 -b 8 -e 16M -f 8 \
        -o "$res/plans-mpich-np2.csv" $colls >"$res/plans-mpich-np2.txt"
fi
# Below 4 KiB, each side's calls in rounds of their own (-S): a call's
# leftover work is not charged to the next side's call there.
$run 2 900 "$build/bench/dcoll-perf" -P -S -R 11 -b 8 -e 4K -f 8 \
    $colls >"$res/plans-apart.txt"
# Async starts + wait against MPI's nonblocking call + wait.
$run 2 600 "$build/bench/dcoll-perf" -P -a -b 8 -e 16M -f 8 \
    all_reduce broadcast all_gather >"$res/plans-async-ompi-np2.txt"
# Debug mode: a plan's starts against the blocking call, both under
# DCOLL_DEBUG=detail, beside the default mode.
for mode in off detail; do
    DCOLL_DEBUG=$mode $run 2 600 "$build/bench/dcoll-perf" -b 8 -e 64K \
        -f 8 all_reduce all_gather
    DCOLL_DEBUG=$mode $run 2 600 "$build/bench/dcoll-perf" -P -b 8 \
        -e 64K -f 8 all_reduce all_gather
done >"$res/plans-debug-np2.txt"
