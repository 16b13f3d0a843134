#!/bin/sh
# dcollrun --max-restarts across two nodes (test/nodes/nodes.sh): rank 3,
# on node 2, fails at step 7 of the first attempt of examples/survive's
# restart; every node's processes stop, both dcollruns start the job
# again together (a node that comes back first waits for node 0 to serve
# the new attempt's store), and the second attempt resumes from the
# step-5 checkpoints and completes: both exit 0, nothing is left.
#   restart.sh DCOLLRUN RESTART
set -u
here=$(cd "$(dirname "$0")" && pwd)
dcollrun=$(readlink -f "$1") prog=$(readlink -f "$2")
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_up 2
nodes_join_env
master=$(node_addr 1)
port=$((20000 + $$ % 20000))
cd "$tmp" || exit 1
start=$(date +%s)
on 2 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 1 -n 2 \
    --rdzv-endpoint "$master:$port" --max-restarts 2 "$prog" 3 7 \
    >"$tmp/out.2" 2>&1 &
p2=$!
on 1 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 0 -n 2 \
    --rdzv-endpoint "$master:$port" --max-restarts 2 "$prog" 3 7 \
    >"$tmp/out.1" 2>&1
rc1=$?
wait "$p2"; rc2=$?
took=$(($(date +%s) - start))
echo "== node 1 exit $rc1, node 2 exit $rc2, after $took s"
cat "$tmp/out.1" "$tmp/out.2"
[ "$rc1" = 0 ] || bad "node 1 exited $rc1"
[ "$rc2" = 0 ] || bad "node 2 exited $rc2"
grep -q "attempt 0 failed: .*process 3 (node 1, $(node_name 2)) exited with code 1.*starting the job again (restart 1 of 2)" \
    "$tmp/out.2" || bad "node 2 did not restart after rank 3's failure"
grep -q "attempt 0 failed: .*starting the job again (restart 1 of 2)" \
    "$tmp/out.1" || bad "node 1 did not restart"
grep -q "^restart: attempt 1 starts at step 5$" "$tmp/out.1" ||
    bad "attempt 1 did not resume from step 5"
grep -q "^restart: 20 steps on 4 ranks in attempt 1: ok$" "$tmp/out.1" ||
    bad "attempt 1 did not complete"
sleep 0.5
for k in 1 2; do
    pids=$(ip netns pids "$(node_ns "$k")")
    left=$(echo "$pids" | grep -c .)
    [ "$left" = 0 ] || bad "$left process(es) left on node $k: $(for p in $pids; do ps -o pid=,ppid=,stat=,etimes=,args= -p "$p"; done)"
done
exit $fail
