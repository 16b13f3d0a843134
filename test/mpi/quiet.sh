#!/bin/sh
# A program that starts MPI with MPI_Init runs without a word from dcoll
# at the built-in timeout; with a timeout of its own, rank 0 says once
# that a hang could not name the missing ranks, and at 1 rank never.
# quiet.sh MPIRUN_SH TEST_QUIET
mpirun_sh=$1 prog=$2
fail=0
said() {   # said NP [VAR=VALUE]: how often the line came
    err=$(env ${2:-X_=1} "$mpirun_sh" "$1" 60 ${2:+-x "${2%%=*}"} \
          "$prog" 2>&1 >/dev/null) || { echo "FAIL: exit $?: $err"; fail=1; }
    echo "$err" | grep -c "MPI runs below MPI_THREAD_MULTIPLE"
}
n=$(said 2); [ "$n" = 0 ] || { echo "FAIL: said $n time(s) at the default timeout"; fail=1; }
n=$(said 2 DCOLL_TIMEOUT=60); [ "$n" = 1 ] || { echo "FAIL: said $n time(s) with DCOLL_TIMEOUT=60, not once"; fail=1; }
n=$(said 1 DCOLL_TIMEOUT=60); [ "$n" = 0 ] || { echo "FAIL: said $n time(s) at 1 rank"; fail=1; }
[ "$fail" = 0 ] && echo "quiet: nothing said by default, once with a timeout"
exit "$fail"
