#!/bin/sh
# dcollrun across two nodes (test/nodes/nodes.sh), torchrun's way: each
# node runs dcollrun --nnodes 2 with its own --node-rank, both naming node
# 1's address (--master-addr/--master-port on one, --rdzv-endpoint on the
# other), 2 processes each. Checked: the C test (world, local ranks) with
# [rank] tags on node 1 and one log file per rank on node 2, and the
# Fortran example, each without and with a store token; a rank that fails
# on node 2 stops node 1's ranks, both dcollruns exit with its code,
# nothing is left on either node; a node that never comes, named at the
# timeout by node 1.
#   dcollrun.sh DCOLLRUN TEST_NODES GRID_F
set -u
here=$(cd "$(dirname "$0")" && pwd)
dcollrun=$1 prog=$2 grid_f=$3
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_up 2
nodes_join_env
master=$(node_addr 1)
port=$((20000 + $$ % 20000))

# job NAME CODE ARGS...: dcollrun on both nodes; node 1 (node rank 0)
# with --tag-output, node 2 with --log-dir; both must exit CODE; nothing
# stays on either node.
job() {
    name=$1 code=$2; shift 2
    port=$((port + 1))
    rm -rf "$tmp/logs"
    on 2 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 1 -n 2 \
        --rdzv-endpoint "$master:$port" --log-dir "$tmp/logs" "$@" \
        >"$tmp/$name.2" 2>&1 &
    p2=$!
    on 1 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 0 \
        --nproc-per-node 2 --master-addr "$master" --master-port "$port" \
        --tag-output "$@" >"$tmp/$name.1" 2>&1
    rc1=$?
    wait "$p2"; rc2=$?
    echo "== $name: node 1 exit $rc1, node 2 exit $rc2"
    cat "$tmp/$name.1" "$tmp/$name.2" "$tmp"/logs/* 2>/dev/null
    [ "$rc1" = "$code" ] || bad "$name: node 1 exited $rc1, want $code"
    [ "$rc2" = "$code" ] || bad "$name: node 2 exited $rc2, want $code"
    sleep 0.5
    for k in 1 2; do
        left=$(ip netns pids "$(node_ns "$k")" | wc -l)
        [ "$left" = 0 ] || bad "$name: $left process(es) left on node $k"
    done
}

# C and Fortran, without and with a store token (on every node): tagged
# lines on node 1, a log per rank on node 2.
for tok in none "t$$-$(date +%s%N)"; do
    if [ "$tok" = none ]; then unset DCOLL_STORE_TOKEN; t=""
    else export DCOLL_STORE_TOKEN="$tok"; t="-token"; fi
    job "c$t" 0 "$prog"
    for r in 0 1; do
        grep -q "^\[$r\] rank $r of 4 on $(node_name 1): local rank $r of 2, 2 nodes: ok" \
            "$tmp/c$t.1" || bad "c$t: rank $r untagged or wrong on node 1"
    done
    for r in 2 3; do
        grep -q "^rank $r of 4 on $(node_name 2): local rank $((r - 2)) of 2, 2 nodes: ok" \
            "$tmp/logs/rank-$r.log" 2>/dev/null || bad "c$t: rank $r's log"
    done
    [ "$(ls "$tmp/logs" | wc -l)" = 2 ] || bad "c$t: node 2 logs: $(ls "$tmp/logs")"
    [ "$grid_f" != - ] || continue
    job "fortran$t" 0 "$grid_f"
    grep -q "^\[0\] grid_f: 2 x 2 ranks.*: ok" "$tmp/fortran$t.1" ||
        bad "fortran$t: grid_f did not say ok"
done
unset DCOLL_STORE_TOKEN

# A rank failing on node 2 (rank 3, code 7) stops node 1's ranks.
start=$(date +%s)
job fail 7 "$prog" exit 3 7
took=$(($(date +%s) - start))
grep -q "process 3 (node 1, $(node_name 2)) exited with code 7; every node's processes were stopped" \
    "$tmp/fail.1" || bad "fail: node 1 does not name rank 3 on $(node_name 2)"
[ "$took" -lt 30 ] || bad "fail: took $took s to stop"

# Node 2 never comes: node 1 names it at the timeout, after saying so
# while it waits, and exits non-zero having started nothing.
port=$((port + 1))
DCOLL_INIT_TIMEOUT=4 DCOLL_INIT_REPORT=1 on 1 timeout -k 5 60 "$dcollrun" \
    --nnodes 2 --node-rank 0 -n 2 --rdzv-endpoint "$master:$port" \
    "$prog" >"$tmp/absent" 2>&1
rc=$?
cat "$tmp/absent"
[ "$rc" != 0 ] || bad "absent: node 1 exited 0"
grep -q "waiting at $master:$port: 1 of 2 nodes have come (not yet: node(s) 1" \
    "$tmp/absent" || bad "absent: no progress line"
grep -q "1 of 2 nodes came within 4 s; node(s) 1 never did" "$tmp/absent" ||
    bad "absent: node 2 not named"
grep -q "rank 0 of" "$tmp/absent" && bad "absent: processes ran"
exit $fail
