#!/bin/sh
# dcollrun: a job of 4 that meets by env://, a job whose rank 1 fails (its
# exit code comes back, nothing stays running), and bad arguments.
# dcollrun.sh DCOLLRUN TEST_JOIN
set -u
run=$1; prog=$2
here=$(dirname "$0")
. "$here/left.sh"
left_mark
fail=0
out=$("$here/nolauncher.sh" 120 "$run" -n 4 "$prog" child env 2>&1)
echo "$out"
echo "$out" | grep -q "dcollrun job of 4: ok" || { echo "FAIL: job of 4"; fail=1; }

# Rank 1 exits 5 at once; the others wait for it in dcoll_init.
out=$(JOIN_FAIL_RANK=1 "$here/nolauncher.sh" 120 "$run" -n 3 --timeout 100 \
      "$prog" child env 2>&1)
rc=$?
echo "$out"
[ "$rc" = 5 ] || { echo "FAIL: exit code $rc, want 5"; fail=1; }
echo "$out" | grep -q "process 1 exited with code 5" ||
    { echo "FAIL: no report of process 1"; fail=1; }
sleep 1
left_none "$prog" || fail=1

# The same under --on-failure continue: the others cannot start without
# it, and say so at once, naming it, not at the 100-s init timeout.
t0=$(date +%s)
out=$(JOIN_FAIL_RANK=1 "$here/nolauncher.sh" 120 "$run" -n 3 --timeout 100 \
      --on-failure continue "$prog" child env 2>&1)
t1=$(date +%s)
echo "$out" | grep -q "rank 1 exited with code 5.* before the rendezvous" ||
    { echo "FAIL: continue: no rank names process 1's end:"; echo "$out"; fail=1; }
[ $((t1 - t0)) -lt 30 ] ||
    { echo "FAIL: continue: the others took $((t1 - t0)) s"; fail=1; }
echo "continue, a rank gone before dcoll_init: said in $((t1 - t0)) s"
sleep 1
left_none "$prog" || fail=1

# Without stdin, stdout or stderr: dcollrun's (its ranks inherit them
# closed) or the program's own, closed before dcoll_init. The store and
# MPI must not take those numbers for their sockets (libuv aborts
# closing one; a socket on fd 1 would take the program's output).
for how in '<&-' '>&-' '2>&-' '<&- >&- 2>&-' 'JOIN_CLOSE=12' \
           'JOIN_CLOSE=012'; do
    case $how in
    JOIN_*) env "$how" "$here/nolauncher.sh" 60 "$run" -n 2 "$prog" child \
                env >/dev/null 2>&1 ;;
    *) eval "\"\$here/nolauncher.sh\" 60 \"\$run\" -n 2 \"\$prog\" child env \
             $how" >/dev/null 2>&1 ;;
    esac
    rc=$?
    [ "$rc" = 0 ] || { echo "FAIL: a job with $how exited $rc, want 0"; fail=1; }
done

if [ "${DCOLL_MPI:-openmpi}" = mpich ]; then
    # MPICH needs no helper program: dcoll serves PMI itself, so a job
    # runs with nothing on the PATH.
    out=$(env PATH=/nonexistent UCX_NET_DEVICES=lo UCX_TLS=self,sm,tcp \
          UCX_WARN_UNUSED_ENV_VARS=n /usr/bin/timeout 60 \
          "$run" -n 2 "$prog" child env 2>&1)
    rc=$?
    echo "$out" | tail -1
    [ "$rc" = 0 ] && echo "$out" | grep -q "dcollrun job of 2: ok" ||
        { echo "FAIL: MPICH job with no PATH gave $rc"; fail=1; }
else
    # No ompi-server to be found: a clear refusal, not a hang.
    out=$(env PATH=/nonexistent OMPI_ALLOW_RUN_AS_ROOT=1 \
          OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo \
          OMPI_MCA_btl_tcp_if_include=lo /usr/bin/timeout 60 \
          "$run" -n 2 "$prog" child env 2>&1)
    rc=$?
    echo "$out" | tail -2
    [ "$rc" = 1 ] && echo "$out" | grep -q "ompi-server" ||
        { echo "FAIL: no ompi-server gave $rc"; fail=1; }
fi

# A program that does not exist, and bad arguments: status 127 and 2.
"$run" -n 2 /nonexistent/prog >/dev/null 2>&1
rc=$?; [ "$rc" = 127 ] || { echo "FAIL: missing program gave $rc"; fail=1; }
for bad in "-n 0 true" "-n x true" "-n 2" "--master-port 70000 -n 2 true" \
           "--bogus -n 2 true" "--on-failure later -n 2 true" \
           "--on-failure continue --max-restarts 2 -n 2 true" \
           "--max-restarts -1 -n 2 true"; do
    # shellcheck disable=SC2086
    msg=$("$run" $bad 2>&1); rc=$?
    [ "$rc" = 2 ] || { echo "FAIL: '$bad' gave $rc"; fail=1; }
    echo "dcollrun $bad -> $rc: $(echo "$msg" | head -1)"
done

# torchrun's spellings of the options dcollrun has: a job of 2 each.
for good in "--nproc_per_node 2" "--nproc-per-node=2" \
            "--standalone --nproc_per_node=2" "--nnodes=1 -n 2" \
            "--rdzv-backend c10d --rdzv_id=job7 -n 2" \
            "--rdzv_backend=c10d --master_addr=127.0.0.1 -n 2"; do
    # shellcheck disable=SC2086
    got=$(/usr/bin/timeout 60 "$run" $good --timeout 50 /bin/sh -c \
          'echo "rank $RANK of $WORLD_SIZE"' 2>&1 | sort | tr '\n' ' ')
    [ "$got" = "rank 0 of 2 rank 1 of 2 " ] ||
        { echo "FAIL: dcollrun $good: $got"; fail=1; }
done
# And the ones it has no form of: status 2 and one line naming what to
# do instead, not the whole usage.
for bad in "--nnodes=1:4 -n 2|--nnodes M" "-m mod|python -m MODULE" \
           "--module -n 2|python -m MODULE" "--tee 3 -n 2|--tag-output" \
           "--rdzv-backend etcd -n 2|--rdzv-endpoint HOST:PORT" \
           "--standalone --nnodes 2 -n 2|--nnodes says 2" \
           "--bogus -n 2|dcollrun --help lists them"; do
    args=${bad%%|*} want=${bad#*|}
    # shellcheck disable=SC2086
    msg=$("$run" $args true 2>&1); rc=$?
    [ "$rc" = 2 ] && [ "$(echo "$msg" | wc -l)" = 1 ] &&
        echo "$msg" | grep -qF -- "$want" ||
        { echo "FAIL: dcollrun $args -> $rc: $msg"; fail=1; }
done
# The reader of dcollrun's output gone (`| true` ends at once): neither
# dcollrun (one process: it becomes the program) nor its ranks (writing
# straight to it, or relayed with --tag-output) die of SIGPIPE; the job
# runs to its end and dcollrun exits 0.
tmp=$(mktemp -d)
for how in "-n 1" "-n 2" "-n 2 --tag-output"; do
    rm -f "$tmp"/done.* "$tmp/rc"
    # shellcheck disable=SC2016,SC2086
    { /usr/bin/timeout 60 "$run" $how --timeout 50 /bin/sh -c \
          'sleep 0.5; i=0; while [ $i -lt 300 ]; do echo "line $i"; \
           i=$((i + 1)); done; touch "$0/done.$RANK"' "$tmp" 2>/dev/null
      echo $? >"$tmp/rc"; } | true
    rc=$(cat "$tmp/rc") n=${how#-n }; n=${n%% *}
    [ "$rc" = 0 ] && [ "$(find "$tmp" -name 'done.*' | wc -l)" = "$n" ] ||
        { echo "FAIL: dcollrun $how with its reader gone: exit $rc," \
               "$(find "$tmp" -name 'done.*' | wc -l) of $n finished"
          fail=1; }
done
echo "dcollrun and its ranks outlive their output's reader"
# A rank's process in a session of its own (setsid, double-forked) is out
# of reach of the rank's process group: dcollrun adopts it and, once the
# job is over, gives it its grace, then kills it; dcollrun returns after.
t0=$(date +%s)
/usr/bin/timeout 60 "$run" -n 2 /bin/sh -c \
    '(setsid /bin/sleep 50 </dev/null >/dev/null 2>&1 &) ; exit 0' \
    >/dev/null 2>&1
rc=$?
t1=$(date +%s)
[ "$rc" = 0 ] || { echo "FAIL: setsid job: rc $rc"; fail=1; }
left=$(left_pids /bin/sleep | tr '\n' ' ')
if [ -n "$left" ]; then
    echo "FAIL: a rank's setsid child ${left}outlived dcollrun"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null; fail=1
fi
echo "a rank's setsid child ended with the job ($((t1 - t0)) s: its grace)"
# dcollrun ended by a signal, its ranks relayed (--tag-output: each
# program a child of its relay) or not: nothing of the job stays.
for how in "TERM --tag-output" "INT --tag-output" "KILL --tag-output" \
           "KILL"; do
    sig=${how%% *} opt=${how#"$sig"}
    rm -f "$tmp"/pid.*
    # shellcheck disable=SC2016,SC2086
    /usr/bin/timeout 60 "$run" -n 2 $opt /bin/sh -c \
        'echo $$ >"$0/pid.$RANK.tmp" && mv "$0/pid.$RANK.tmp" "$0/pid.$RANK" &&
         exec sleep 50' "$tmp" >/dev/null 2>&1 &
    job=$!
    i=0
    while [ "$(find "$tmp" -name 'pid.?' | wc -l)" != 2 ] && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    # The timeout's child is dcollrun.
    kill -"$sig" "$(pgrep -P "$job" | head -1)" 2>/dev/null
    wait "$job" 2>/dev/null
    sleep 1
    [ "$(find "$tmp" -name 'pid.?' | wc -l)" = 2 ] ||
        { echo "FAIL: SIG$sig$opt: a rank never started"; fail=1; }
    # The ranks are this script's marked sleeps (zombies left for init
    # to reap aside).
    left=$(left_pids /bin/sleep | tr '\n' ' ')
    if [ -n "$left" ]; then
        echo "FAIL: SIG$sig to dcollrun$opt left rank pid(s) ${left}running"
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null; fail=1
    fi
done
echo "dcollrun ended by a signal leaves no rank running"
rm -rf "$tmp"
exit $fail
