#!/bin/sh
# dcollrun --on-failure continue across two nodes (test/nodes/nodes.sh),
# 2 ranks each; dcoll's keeper (rank 0's child, on node 1) says who died:
#   killed  examples/survive's shrink kills rank 2 (node 2) at step 5:
#           rank 3 sees its process end on their host and tells the
#           keeper; the three survivors finish on a group of themselves.
#           Node 2's dcollrun exits 137 (its rank's), node 1's 0.
#   node    every rank loops on all_reduce (test_shrink link); every
#           process of node 2 is killed, dcollrun included: the keeper
#           takes ranks 2 and 3 as dead once their lease has lapsed
#           (DCOLL_FENCE=3), node 1's ranks shrink to two and finish, and
#           node 1's dcollrun names node 2 as gone silent (exit 1).
# Nothing may be left on either node.
#   continue.sh DCOLLRUN SHRINK_EXAMPLE TEST_SHRINK
set -u
here=$(cd "$(dirname "$0")" && pwd)
dcollrun=$(readlink -f "$1") example=$(readlink -f "$2") prog=$(readlink -f "$3")
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_up 2
nodes_join_env
master=$(node_addr 1)
cd "$tmp" || exit 1
export DCOLL_FENCE=3 DCOLL_ON_TIMEOUT=return DCOLL_TIMEOUT=60

run_nodes() {   # run_nodes PORT PROGRAM ARGS...: both nodes in background
    port=$1; shift
    for k in 2 1; do
        on "$k" timeout -k 5 120 "$dcollrun" --nnodes 2 \
            --node-rank $((k - 1)) -n 2 --rdzv-endpoint "$master:$port" \
            --on-failure continue "$@" >"$tmp/out.$k" 2>&1 &
        eval "p$k=\$!"
    done
}

left() {
    n=0
    for k in 1 2; do
        n=$((n + $(ip netns pids "$(node_ns "$k")" | wc -l)))
    done
    echo "$n"
}

# killed
run_nodes $((20000 + $$ % 20000)) "$example" 2 5
wait "$p1"; rc1=$?
wait "$p2"; rc2=$?
echo "== killed: node 1 exit $rc1, node 2 exit $rc2"
cat "$tmp/out.1" "$tmp/out.2"
[ "$rc1" = 0 ] || bad "killed: node 1 exited $rc1, want 0"
[ "$rc2" = 137 ] || bad "killed: node 2 exited $rc2, want 137"
grep -q "process 2 killed by signal 9 (Killed); the others go on" \
    "$tmp/out.2" || bad "killed: node 2's dcollrun did not say the others go on"
grep -q "^dcoll keeper: rank 2 died (its process, pid [0-9]* on $(node_name 2), ended, as rank 3 on that host saw); the others go on$" \
    "$tmp/out.1" || bad "killed: the keeper did not say rank 2 died, as rank 3 saw"
grep -q "^shrink: a rank died at step 5; going on with 3$" "$tmp/out.1" &&
    grep -q "^shrink: 10 steps, 35 rank-steps: ok$" "$tmp/out.1" ||
    bad "killed: the survivors did not shrink and finish"
sleep 1
[ "$(left)" = 0 ] || bad "killed: $(left) process(es) left on the nodes"

# node
run_nodes $((20000 + $$ % 20000 + 3)) "$prog" link
i=0
while [ "$(grep -c "^looping$" "$tmp/out.1" "$tmp/out.2" |
           awk -F: '{s += $2} END {print s}')" -lt 4 ] && [ "$i" -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
sleep 0.5
t0=$(date +%s.%N)
# shellcheck disable=SC2046
kill -KILL $(ip netns pids "$(node_ns 2)")
wait "$p1"; rc1=$?
took=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
wait "$p2"
echo "== node: node 1 exit $rc1 after $took s"
cat "$tmp/out.1"
[ "$rc1" = 1 ] || bad "node: node 1 exited $rc1, want 1"
grep -q "^dcoll keeper: rank 2 died (it sent dcoll's keeper no heartbeat" \
    "$tmp/out.1" || bad "node: the keeper did not take rank 2 as dead"
[ "$(grep -c "^link: rank [01] ok$" "$tmp/out.1")" = 2 ] ||
    bad "node: node 1's ranks did not go on"
grep -q "node 1 went silent (no word for 3 s) before its processes ended" \
    "$tmp/out.1" || bad "node: node 1's dcollrun did not name node 2 as lost"
sleep 1
[ "$(left)" = 0 ] || bad "node: $(left) process(es) left on the nodes"
echo "continue across nodes: killed, then node 2 lost, in $took s"
exit $fail
