#!/bin/sh
# A rank killed mid-collective under plain mpirun (no recovery): mpirun
# ends the whole job, names the dead rank and exits non-zero, and no rank
# is left running. fault-plain.sh MPIRUN_SH TEST_FAULT
mpirun_sh=$1; prog=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
"$mpirun_sh" 3 60 "$prog" killed >"$out" 2>&1
rc=$?
took=$(($(date +%s) - start))
[ "$rc" = 77 ] && exit 77
fail=0
[ "$rc" != 0 ] || { echo "FAIL: mpirun exited 0"; fail=1; }
# OpenMPI's words, or hydra's.
grep -q "exited on signal 9\|Killed (signal 9)" "$out" ||
    { echo "FAIL: mpirun did not name the dead rank"; cat "$out"; fail=1; }
# Give the kernel a moment, then look for live (not zombie) ranks.
sleep 1
left=$(ps -eo stat=,args= | awk -v p="$prog" '$1 !~ /^Z/ && index($0, p " killed")' | wc -l)
[ "$left" = 0 ] || { echo "FAIL: $left rank(s) still running"; fail=1; }
echo "plain mpirun, rank killed: exit $rc after ${took} s, $left left"
exit $fail
