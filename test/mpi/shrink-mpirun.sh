#!/bin/sh
# Survivors go on under mpirun, told by dcoll's keeper:
#   shrink-mpirun.sh MPIRUN_SH TEST_SHRINK killed|killed0|stopped|slow
# With DCOLL_ON_FAILURE=continue and the launcher's settings that keep
# the survivors (Open MPI: orte_enable_recovery 1 and
# orte_abort_on_non_zero_status 0; MPICH's hydra: -disable-auto-cleanup,
# which mpirun.sh passes for the first). killed and killed0: rank 2 (0)
# is killed in a call; the keeper, on that host, sees its process end and
# the survivors shrink. stopped: rank 2 stops past DCOLL_FENCE (3 s); the
# keeper's lease takes it as dead, the survivors shrink and let it go on,
# and it ends itself (exit code 4) before its call returns. slow: a rank
# asleep past the fence and the timeout still beats: nobody left out.
# Hydra's proxy kills every rank when one dies of a signal, so killed and
# killed0 skip on MPICH. No process of the job may be left running.
set -u
mpirun_sh=$(readlink -f "$1"); prog=$(readlink -f "$2"); mode=$3
. "$(dirname "$0")/left.sh"
left_mark
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
case $mode in
killed) n=4 ok=3 witness="its process, pid" ;;
killed0) n=4 ok=3 witness="its process, pid" ;;
stopped) n=4 ok=3 witness="it sent dcoll's keeper no heartbeat" ;;
slow) n=3 ok=3 witness= ;;
*) echo "usage: shrink-mpirun.sh MPIRUN_SH TEST_SHRINK killed|killed0|stopped|slow"
   exit 2 ;;
esac
case ${DCOLL_MPI:-openmpi}:$mode in
mpich:killed|mpich:killed0)
    echo "MPICH's hydra kills every rank when one dies of a signal" \
         "(docs/failures.md): skipping"
    exit 77 ;;
esac
export OMPI_MCA_orte_enable_recovery=1 OMPI_MCA_orte_abort_on_non_zero_status=0
export DCOLL_ON_FAILURE=continue DCOLL_ON_TIMEOUT=return DCOLL_TIMEOUT=20
export DCOLL_FENCE=3 TEST_SHRINK_WITNESS="$witness"
[ "$mode" = slow ] && export DCOLL_FENCE=2
start=$(date +%s)
# Each rank's own exit code, kept by a shell around it that exits with
# it: the launcher's exit status is not enough (see below). Hydra sends
# SIGUSR1 to the ranks' process groups when one leaves without PMI's
# finalize (MPICH's ranks take it); the shell must live through it.
keep='trap : USR1; "$0" "$@"; c=$?; echo $c >"'"$dir"'/rc.${PMI_RANK:-$OMPI_COMM_WORLD_RANK}"; exit $c'
out=$("$mpirun_sh" $n 90 -x DCOLL_ON_FAILURE -x DCOLL_ON_TIMEOUT \
      -x DCOLL_TIMEOUT -x DCOLL_FENCE -x TEST_SHRINK_WITNESS \
      sh -c "$keep" "$prog" "$mode" 2>&1)
rc=$?
took=$(($(date +%s) - start))
[ "$rc" = 77 ] && exit 77
echo "$out"
fail=0
got=$(echo "$out" | grep -c "^$mode: rank [0-9]* ok")
[ "$got" = "$ok" ] || { echo "FAIL: $got of $ok survivors said ok"; fail=1; }
# Open MPI's mpirun with abort_on_non_zero_status 0 exits 0 whatever the
# ranks did. Hydra's exit status, once ranks left without PMI's finalize
# (the fenced one, and the survivors, which skip MPI_Finalize with a rank
# dead), depends on which of its two notices of each end it handles
# first: 4, 1 and 0 were all seen for the same run. So only its time
# limit counts there; the ranks' own codes say the rest.
case ${DCOLL_MPI:-openmpi}:$mode in
openmpi:*|*:slow)
    [ "$rc" = 0 ] || { echo "FAIL: mpirun exited $rc, want 0"; fail=1; } ;;
*)
    case $rc in 124|137) echo "FAIL: mpirun ran past its limit ($rc)"; fail=1 ;; esac ;;
esac
victim=; case $mode in killed|stopped) victim=2 ;; killed0) victim=0 ;; esac
r=0
while [ "$r" -lt "$n" ]; do
    code=$(cat "$dir/rc.$r" 2>/dev/null) || code=none
    want=0
    if [ "$r" = "$victim" ]; then
        want=137; [ "$mode" = stopped ] && want=4
    fi
    [ "$code" = "$want" ] ||
        { echo "FAIL: rank $r exited $code, want $want"; fail=1; }
    r=$((r + 1))
done
case $mode in
killed|killed0)
    v=2; [ "$mode" = killed0 ] && v=0
    echo "$out" | grep -q "^dcoll keeper: rank $v died (its process, pid [0-9]* on .*, ended, as .* saw); the others go on$" ||
        { echo "FAIL: the keeper did not say rank $v died"; fail=1; } ;;
stopped)
    echo "$out" | grep -q "^dcoll keeper: rank 2 died (it sent dcoll's keeper no heartbeat for [0-9]* s" ||
        { echo "FAIL: the keeper did not take rank 2 as dead"; fail=1; }
    # Its lease over, or the keeper's notice read: either ends it.
    echo "$out" | grep -q "^dcoll\[2\]: \(the keeper took this rank as dead (.*)\|dcoll's keeper at .* last heard from this rank [0-9.]* s ago .*\); this rank ends itself (exit code 4)" ||
        { echo "FAIL: rank 2 did not end itself"; fail=1; }
    echo "$out" | grep -q "the fenced rank went on" &&
        { echo "FAIL: rank 2 went on after the fence"; fail=1; } ;;
slow)
    echo "$out" | grep -q "died" &&
        { echo "FAIL: a slow rank was taken as dead"; fail=1; } ;;
esac
echo "$out" | grep -q "^FAIL" && fail=1
# The keeper ends after the last rank; nothing of the job stays.
sleep 1
pids=$(left_pids "$prog")
left=$(echo "$pids" | grep -c .)
[ "$left" = 0 ] || { echo "FAIL: $left process(es) left"; for p in $pids; do ps -o pid=,stat=,args= -p "$p"; done; kill -9 $pids; fail=1; }
echo "shrink under mpirun ($mode): exit $rc in $took s"
exit $fail
