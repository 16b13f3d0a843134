#!/bin/sh
# Launch traps a port from MPI meets (test_launch.c does each side):
# plain dcoll_init under dcollrun makes one world, not N; explicit mpi://
# there is refused; dcoll_abort ends the whole job with its code, under
# mpirun and under dcollrun, and leaves nothing running; dcoll_wtime.
# With a fourth program (test/fortran/test_abort.f90), dcoll_abort from
# Fortran too.
#   launch.sh MPIRUN_SH DCOLLRUN TEST_LAUNCH [TEST_ABORT_F]
set -u
mpirun_sh=$1 dcollrun=$2 prog=$3 fprog=${4:-}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
name=$(basename "$prog")
# Processes still running (zombies waiting for their reaper are not).
left() { ps -C "$name" -o stat= | grep -vc '^Z'; }

out=$("$dcollrun" -n 3 "$prog" world 3 2>&1) || bad "dcollrun -n 3, plain init: $out"
echo "$out"
out=$("$dcollrun" -n 2 "$prog" mpi 2>&1) || bad "dcollrun -n 2, mpi://: $out"
echo "$out" | head -1

for how in mpirun dcollrun; do
    start=$(date +%s.%N)
    if [ $how = mpirun ]; then
        "$mpirun_sh" 3 60 "$prog" abort 7 >abort.log 2>&1; rc=$?
    else
        timeout -k 5 60 "$dcollrun" -n 3 "$prog" abort 7 >abort.log 2>&1; rc=$?
    fi
    took=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $start }")
    sleep 0.5
    n=$(left)
    echo "abort under $how: exit $rc after ${took} s, $n left running"
    grep -q "ends the job with code 7: the test asked for it" abort.log ||
        { bad "abort under $how: reason not printed"; cat abort.log; }
    [ "$rc" = 7 ] || { bad "abort under $how: exit $rc, want 7"; cat abort.log; }
    [ "$n" = 0 ] || { bad "abort under $how: $n process(es) left"; pkill -9 -x "$name"; }
done
rm -f abort.log

if [ -n "$fprog" ]; then
    "$mpirun_sh" 3 60 "$fprog" >abort.log 2>&1; rc=$?
    sleep 0.5
    n=$(ps -C "$(basename "$fprog")" -o stat= | grep -vc '^Z')
    echo "Fortran dcoll_abort: exit $rc, $n left running"
    [ "$rc" = 9 ] && [ "$n" = 0 ] &&
        grep -q "code 9: fortran asked for it" abort.log ||
        { bad "Fortran dcoll_abort"; cat abort.log; }
    rm -f abort.log
fi

"$mpirun_sh" 1 30 "$prog" wtime || bad "wtime"
exit $fail
