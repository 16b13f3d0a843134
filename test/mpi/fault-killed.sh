#!/bin/sh
# The last of 3 ranks killed mid-collective (test_fault killed); after the
# job no rank may be left running.
#   fault-killed.sh MPIRUN_SH TEST_FAULT plain|recovery
# plain: mpirun ends the whole job, names the dead rank and exits non-zero.
# recovery: with the launcher's recovery on, the survivors report and
# leave without finalizing, each printing its verdict, and the verdict
# lines decide. Under OpenMPI the job must also exit 0. Under MPICH's
# hydra the exit status of a rank that ends without finalizing is a race:
# the proxy marks it 1 when it sees the PMI socket close, and that mark
# survives when the socket's event comes after waitpid's (hydra 4.0.2,
# pmip_cb.c), so mpiexec may print "Hangup (signal 1)" for a rank that
# exited 0.
mpirun_sh=$1; prog=$2; mode=$3; n=3
. "$(dirname "$0")/left.sh"
left_mark
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
case $mode in
plain) "$mpirun_sh" "$n" 60 "$prog" killed >"$out" 2>&1 ;;
recovery)
    OMPI_MCA_orte_enable_recovery=1 "$mpirun_sh" "$n" 60 "$prog" killed \
        >"$out" 2>&1 ;;
*) echo "usage: fault-killed.sh MPIRUN_SH TEST_FAULT plain|recovery"; exit 2 ;;
esac
rc=$?
took=$(($(date +%s) - start))
[ "$rc" = 77 ] && exit 77
fail=0
if [ "$mode" = plain ]; then
    [ "$rc" != 0 ] || { echo "FAIL: mpirun exited 0"; fail=1; }
    # OpenMPI's words, or hydra's.
    grep -q "exited on signal 9\|Killed (signal 9)" "$out" ||
        { echo "FAIL: mpirun did not name the dead rank"; cat "$out"; fail=1; }
else
    cat "$out"
    ok=$(grep -c "^killed: survivor [0-9]* ok$" "$out")
    [ "$ok" = $((n - 1)) ] ||
        { echo "FAIL: $ok of $((n - 1)) survivors reported ok"; fail=1; }
    grep -q "^killed: .* after [0-9.]* s (timeout" "$out" ||
        { echo "FAIL: rank 0 printed no report"; fail=1; }
    if [ "${DCOLL_MPI:-openmpi}" = mpich ]; then
        # Only hydra's mark for a rank that did not finalize is forgiven.
        case $rc in 0) ;; 1) grep -q "Hangup (signal 1)" "$out" ||
            { echo "FAIL: mpiexec exited 1"; fail=1; } ;;
        *) echo "FAIL: mpiexec exited $rc"; fail=1 ;; esac
    else
        [ "$rc" = 0 ] || { echo "FAIL: mpirun exited $rc"; fail=1; }
    fi
fi
# Give the kernel a moment, then look for live (not zombie) ranks.
sleep 1
left=$(left_pids "$prog" | wc -l)
[ "$left" = 0 ] || { echo "FAIL: $left rank(s) still running"; fail=1; }
echo "rank killed ($mode): exit $rc after ${took} s, $left left"
exit $fail
