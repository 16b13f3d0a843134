#!/bin/sh
# Survivors go on, under dcollrun (test_shrink says what each mode does):
#   shrink.sh DCOLLRUN TEST_SHRINK killed|killed0|twice|slow|restart|abort|
#             rows|rows-killed
#   shrink.sh DCOLLRUN TEST_SHRINK_DOUBLE gpu|gpu-fresh|gpu-ipc
#   shrink.sh DCOLLRUN EXAMPLE example-restart|example-shrink
# killed, twice and gpu: dcollrun --on-failure continue, a return-mode world
# with a 20-s timeout; every survivor prints its ok line, the deaths are
# seen well within the timeout, and dcollrun exits with the dead rank's
# status (128 + 9); rows-killed too, two rows at once. slow and rows:
# nobody left out, exit 0. restart: --max-restarts
# 2, rank 1 fails in attempt 0 and every rank completes attempt 1, exit 0.
# abort: killed at the default (abort mode): the survivors' blocking call
# cannot return, and the job ends with the report naming the dead rank
# well before the timeout, each survivor with exit code 3.
# example-restart, example-shrink: examples/survive's programs, a rank
# failing at step 7 (restart: resumed from step 5) or killed at step 5
# (shrink: finished on 3).
# No process of the job may be left running.
set -u
run=$(readlink -f "$1"); prog=$(readlink -f "$2"); mode=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/left.sh"
left_mark
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
start=$(date +%s)
case $mode in
killed|killed0|gpu|gpu-fresh|gpu-ipc) n=4 ok=3 want=137 ;;
twice) n=4 ok=2 want=137 ;;
rows) n=4 ok=4 want=0 ;;
rows-killed) n=4 ok=3 want=137 ;;
slow) n=3 ok=3 want=0 ;;
restart) n=3 ok=3 want=0 ;;
abort) n=3 ok=0 want=137 ;;
example-restart) n=3 ok=0 want=0 ;;
example-shrink) n=4 ok=0 want=137 ;;
*) echo "usage: shrink.sh DCOLLRUN TEST_SHRINK killed|killed0|twice|slow|restart|abort|rows|rows-killed|gpu|gpu-fresh|gpu-ipc"
   exit 2 ;;
esac
if [ "$mode" = restart ]; then
    out=$("$here/nolauncher.sh" 120 "$run" --max-restarts 2 -n $n \
          "$prog" restart 2>&1)
elif [ "$mode" = example-restart ]; then
    out=$("$here/nolauncher.sh" 120 "$run" --max-restarts 2 -n $n \
          "$prog" 1 7 2>&1)
elif [ "$mode" = example-shrink ]; then
    out=$("$here/nolauncher.sh" 120 env -u UCX_TLS "$run" \
          --on-failure continue -n $n "$prog" 2 5 2>&1)
elif [ "$mode" = abort ]; then
    out=$(DCOLL_TIMEOUT=60 "$here/nolauncher.sh" 120 env -u UCX_TLS \
          "$run" --on-failure continue -n $n "$prog" abort 2>&1)
else
    # UCX_TLS left to dcollrun, which keeps UCX's cma off for survivors.
    out=$(DCOLL_ON_TIMEOUT=return DCOLL_TIMEOUT=20 \
          "$here/nolauncher.sh" 120 env -u UCX_TLS "$run" \
          --on-failure continue -n $n "$prog" "$mode" 2>&1)
fi
rc=$?
took=$(($(date +%s) - start))
if [ "$rc" = 77 ]; then
    echo "$out" | grep -m1 "skipping" || echo "$out"
    exit 77
fi
echo "$out"
fail=0
got=$(echo "$out" | grep -c "^$mode: rank [0-9]* ok")
case $mode in abort|example-*) got=0 ;; esac
[ "$got" = "$ok" ] || { echo "FAIL: $got of $ok survivors said ok"; fail=1; }
[ "$rc" = "$want" ] || { echo "FAIL: dcollrun exited $rc, want $want"; fail=1; }
case $mode in
killed|killed0|twice|rows-killed|gpu|gpu-fresh|gpu-ipc)
    v=2; [ "$mode" = killed0 ] && v=0; [ "$mode" = rows-killed ] && v=1
    echo "$out" | grep -q "process $v killed by signal 9 (Killed); the others go on" ||
        { echo "FAIL: dcollrun did not say the others go on"; fail=1; }
    # Seen at the launcher's word, not the 20-s timeout.
    for ms in $(echo "$out" | sed -n "s/^$mode: .* seen in \([0-9]*\) ms$/\1/p"); do
        [ "$ms" -lt 10000 ] || { echo "FAIL: a death seen after $ms ms"; fail=1; }
    done ;;
example-restart)
    echo "$out" | grep -q "^restart: attempt 1 starts at step 5$" &&
    echo "$out" | grep -q "^restart: 20 steps on 3 ranks in attempt 1: ok$" ||
        { echo "FAIL: the example did not resume and finish"; fail=1; } ;;
example-shrink)
    echo "$out" | grep -q "^shrink: a rank died at step 5; going on with 3$" &&
    echo "$out" | grep -q "^shrink: 10 steps, 35 rank-steps: ok$" ||
        { echo "FAIL: the example did not shrink and finish"; fail=1; } ;;
abort)
    echo "$out" | grep -q "rank 2 (world 2) died (killed by signal 9 (Killed), said its launcher). dcoll ends the job" ||
        { echo "FAIL: no report of the death"; fail=1; }
    got=$(echo "$out" | grep -c "process [01] exited with code 3; the others go on")
    [ "$got" = 2 ] || { echo "FAIL: $got survivors ended with code 3"; fail=1; }
    [ "$took" -lt 30 ] || { echo "FAIL: took $took s"; fail=1; } ;;
restart)
    echo "$out" | grep -q "attempt 0 failed: .*process 1 exited with code 5; starting the job again (restart 1 of 2)" ||
        { echo "FAIL: dcollrun did not say it restarts"; fail=1; }
    got=$(echo "$out" | grep -c "ok in attempt 1$")
    [ "$got" = 3 ] || { echo "FAIL: $got ranks completed attempt 1"; fail=1; } ;;
esac
sleep 1
left_none "$prog" || fail=1
echo "shrink $mode: exit $rc after ${took} s"
exit $fail
