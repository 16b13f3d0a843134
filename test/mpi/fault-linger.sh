#!/bin/sh
# A hang reported, and the rank that reported it did not end the job:
# the ranks it told end it (lib/diag/watchdog.c, LINGER: 3 s).
#   fault-linger.sh MPIRUN_SH TEST_FAULT ABORT_SHIM stuck|gone
# stuck: rank 0's MPI_Abort never returns; the lowest told rank aborts
# the job 3 s later, and another only 3 s after that.
# gone: rank 0 ended alone, its abort with a launcher that keeps the job
# (here: orte_abort_on_non_zero_status 0, told nothing): the told ranks
# end themselves instead of aborting again. 3 ranks; no process may be
# left.
set -u
mpirun_sh=$1; prog=$(readlink -f "$2"); shim=$(readlink -f "$3"); mode=$4
case ${DCOLL_MPI:-openmpi} in mpich)
    # Its abort's fallback (mpi_layer/watch.c) ends rank 0 after 1 s, and
    # hydra then the job, before the told ranks' 3 s are up.
    echo "MPICH ends the job at rank 0's abort fallback: skipping"
    exit 77 ;;
esac
. "$(dirname "$0")/left.sh"
left_mark
out=$(mktemp); dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT
export DCOLL_FLIGHT_DIR="$dir" DCOLL_REPORT=lines DCOLL_TEST_ABORT="$mode"
[ "$mode" = gone ] && export OMPI_MCA_orte_abort_on_non_zero_status=0
start=$(date +%s.%N)
# Each line stamped with when it came, to time the aborts.
rcf=$dir/rc
{ "$mpirun_sh" 3 60 -x DCOLL_FLIGHT_DIR -x DCOLL_REPORT -x DCOLL_TEST_ABORT \
      -x LD_PRELOAD="$shim" "$prog" hang absent 2>&1; echo $? >"$rcf"; } |
    while IFS= read -r line; do
        printf '%s %s\n' "$(date +%s.%N)" "$line"
    done >"$out"
rc=$(cat "$rcf")
took=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
cat "$out"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" != 124 ] && [ "$rc" != 137 ] || bad "the job ran into the test's time limit"
grep -q "^[0-9.]* dcoll\[0\]: .*timed out after 2 s" "$out" || bad "rank 0 printed no report"
at() { sed -n "s/^\([0-9.]*\) dcoll\[$1\]: the job did not end after a hang was reported; ending it from here$/\1/p" "$out" | head -n 1; }
case $mode in
stuck)
    [ "$rc" != 0 ] || bad "mpirun exited 0"
    first=$(at 1) second=$(at 2)
    [ -n "$first" ] || bad "rank 1, the lowest told, did not end the job"
    # Rank 2 aborts only if rank 1's abort has not ended the job by then.
    [ -z "$second" ] || [ -z "$first" ] ||
        awk -v a="$second" -v b="$first" 'BEGIN { exit !(a - b >= 2.5) }' ||
        bad "rank 2 aborted with rank 1 ($first, $second)" ;;
gone)
    for r in 1 2; do
        grep -q "^[0-9.]* dcoll\[$r\]: world rank 0, which ends the job, has ended, and the job still runs; this rank ends itself (exit code 3)" "$out" ||
            bad "rank $r did not end itself"
    done
    # No abort's help message (mpirun prints it once per abort, when it
    # can unpack it) and no told rank's abort line.
    grep -q "MPI_ABORT was invoked\|ending it from here" "$out" &&
        bad "a told rank aborted after rank 0 had ended" ;;
*) echo "usage: fault-linger.sh MPIRUN_SH TEST_FAULT ABORT_SHIM stuck|gone"; exit 2 ;;
esac
# Report at 2 s, told ranks at 3 s more: well inside 15.
awk -v t="$took" 'BEGIN { exit !(t <= 15.0) }' || bad "the job took $took s"
sleep 1
pids=$(left_pids "$prog")
[ -z "$pids" ] || { bad "processes left: $pids"; kill -9 $pids; }
echo "linger ($mode): exit $rc in $took s"
exit $fail
