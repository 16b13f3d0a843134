#!/bin/sh
# The tuning tables' figures in bench/README.md ("Tuning tables"), into
# bench/results/. For each MPI and launch (Open MPI under plain mpirun
# with its own settings, and under test/mpirun.sh's, which turn its
# shared-memory single copy off; MPICH as test/mpirun.sh starts it):
#   1. dcoll-tune on 2 and 4 ranks, twice each, the second run with -k
#      (a way is kept only where both launches picked it: Open MPI's
#      calls can be bimodal from one launch to the next), one table for
#      both sizes (tune-LAUNCH.table);
#   2. dcoll-perf with DCOLL_TUNING=that table, the five kinds a table
#      covers, 8 B to 16 MiB, each side's calls apart (-S: the way and
#      MPI's call are different algorithms);
#   3. dcoll-perf with the table, every collective at -f 8, call by call
#      (the table touches only those five: the rest must stay put).
# About an hour and a half on a 2-core machine for all three launches,
# nothing else running. Then, per launch and size:
#   bench/tables.py tune bench/results/tune-LAUNCH.table NP \
#       bench/results/tune-LAUNCH-npNP-apart.txt
#   bench/tune.sh [BUILD_DIR] [MPICH_BUILD_DIR] [LAUNCH...]
set -eu
build=${1:-build}
mpich=${2:-build-mpich}
shift $(($# < 2 ? $# : 2))
launches=${*:-ompi-plain ompi-testrun mpich}
here=$(cd "$(dirname "$0")" && pwd)
res=$here/results
testrun="$here/../test/mpirun.sh"
mkdir -p "$res"

# plain: Open MPI's defaults, loopback only (the machine's rules).
plain() {
    np=$1; shift
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
        timeout -k 10 3000 mpirun --oversubscribe -x DCOLL_TUNING -n "$np" "$@"
}
testrun() {
    np=$1; shift
    "$testrun" "$np" 3000 -x DCOLL_TUNING "$@"
}

for launch in $launches; do
    case $launch in
    ompi-plain) run=plain dir=$build ;;
    ompi-testrun) run=testrun dir=$build ;;
    mpich)
        [ -x "$mpich/tools/dcoll-tune" ] || { echo "no $mpich: skipping"; continue; }
        export DCOLL_MPI=mpich DCOLL_MPIRUN=mpirun.mpich
        run=testrun dir=$mpich ;;
    *) echo "unknown launch $launch"; exit 2 ;;
    esac
    # MPICH's ranks poll: 4 of them on 2 cores measure the scheduler.
    nps="2 4"
    [ "$launch" != mpich ] || nps=2
    table=$res/tune-$launch.table
    rm -f "$table"
    export DCOLL_TUNING=
    kinds="all_reduce reduce_scatter broadcast reduce all_gather"
    for np in $nps; do
        $run $np "$dir/tools/dcoll-tune" -o "$table" \
            >"$res/tune-$launch-np$np.txt" 2>&1
        $run $np "$dir/tools/dcoll-tune" -k -o "$table" \
            >"$res/tune-$launch-np$np-k.txt" 2>&1
    done
    export DCOLL_TUNING=$table
    for np in $nps; do
        $run $np "$dir/bench/dcoll-perf" -S -R 7 -b 8 -e 16M -f 2 \
            $kinds >"$res/tune-$launch-np$np-apart.txt"
        $run $np "$dir/bench/dcoll-perf" -b 8 -e 16M -f 8 all \
            >"$res/tune-$launch-np$np-all.txt"
    done
    unset DCOLL_MPI DCOLL_MPIRUN
done
