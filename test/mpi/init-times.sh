#!/bin/sh
# DCOLL_INIT_TIMES=1: rank 0 alone says how long each step of dcoll_init
# took; a value other than 0 or 1 is refused, naming it.
#   init-times.sh MPIRUN_SH DCOLL_LAUNCH_BENCH
mpirun_sh=$1 prog=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# One timed call a round: only init is looked at (the default 200 took
# 8 s a run).
out=$(DCOLL_INIT_TIMES=1 "$mpirun_sh" 2 60 -x DCOLL_INIT_TIMES "$prog" 1 2>&1)
line=$(printf '%s\n' "$out" | grep 'dcoll_init took')
[ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] ||
    fail "want one line, from rank 0: $out"
for s in "on 2 rank(s): checks" "MPI start" "host names" "local ranks" \
         "settings agreed" "tuning table" "backend" "watchdog"; do
    printf '%s' "$line" | grep -qF "$s" || fail "no '$s' in: $line"
done
printf '%s' "$line" | grep -q '^dcoll\[0\]: dcoll_init took [0-9.]* ms' ||
    fail "not rank 0's, or no total: $line"
out=$(DCOLL_INIT_TIMES=0 "$mpirun_sh" 2 60 -x DCOLL_INIT_TIMES "$prog" 1 2>&1)
printf '%s' "$out" | grep -q 'dcoll_init took' && fail "said with 0: $out"
out=$(DCOLL_INIT_TIMES=yes "$mpirun_sh" 1 60 -x DCOLL_INIT_TIMES "$prog" 1 2>&1)
printf '%s' "$out" | grep -qF "DCOLL_INIT_TIMES='yes' is not 0 or 1" ||
    fail "'yes' not refused: $out"
[ "$fails" -eq 0 ] && echo "init steps said by rank 0, bad values refused"
exit "$fails"
