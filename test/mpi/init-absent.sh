#!/bin/sh
# A rank that never comes to dcoll_init, at the default DCOLL_ON_TIMEOUT
# (abort): the ranks that came end the job within the init timeout (2 s)
# plus 3 s, with exit code 3 and a message saying what they waited for,
# and no rank is left running.
# init-absent.sh MPIRUN_SH TEST_INIT NP
mpirun_sh=$1; prog=$2; np=$3
. "$(dirname "$0")/left.sh"
left_mark
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
t0=$(date +%s.%N)
DCOLL_INIT_TIMEOUT=2 "$mpirun_sh" "$np" 60 "$prog" absent-abort >"$out" 2>"$err"
rc=$?
took=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
[ "$rc" = 77 ] && exit 77
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" != 0 ] || bad "mpirun exited 0"
[ "$rc" != 124 ] && [ "$rc" != 137 ] || bad "the job ran into the test's time limit"
grep "FAIL" "$out" && bad "dcoll_init returned"
grep -q "dcoll: dcoll_init: rank [0-9]* of the $np-rank communicator waited 2 s .*ends the job (DCOLL_ON_TIMEOUT=abort) with exit code 3" "$err" ||
    bad "no rank said what it waited for"
# The last rank sleeps 3.5 s before it would come: the job must end
# before (plus mpirun's own start and end).
awk -v t="$took" 'BEGIN { exit !(t <= 8.0) }' || bad "the job took $took s"
sleep 1
left=$(left_pids "$prog" | wc -l)
[ "$left" = 0 ] || bad "$left rank(s) still running"
if [ $fail = 1 ]; then echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fi
echo "init absent ($np ranks, abort): exit $rc after $took s"
grep -m1 "waited 2 s" "$err"
exit $fail
