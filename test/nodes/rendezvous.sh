#!/bin/sh
# env:// and tcp:// across nodes (test/nodes/nodes.sh) with no launcher:
# ranks 0 and 1 on node 1, 2 and 3 on node 2, started by hand as torchrun
# would on each node, the store served by rank 0 at node 1's address with
# a token. A process on node 3 that is not of the job, and has no token,
# is refused while the job runs. Each rank's local rank is its node's.
#   rendezvous.sh TEST_NODES
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=$1
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_up 3
# MPI between the nodes over their network; no launcher anywhere.
nodes_join_env
master=$(node_addr 1)
token=t$$-$(date +%s%N)
port=$((20000 + $$ % 20000))
for scheme in env tcp; do
    port=$((port + 1))
    rm -f "$tmp/done"
    pids=""
    for r in 0 1 2 3; do
        k=$((r / 2 + 1))
        case $scheme in
            env) url="env://?token=$token" ;;
            tcp) url="tcp://$master:$port?rank=$r&world_size=4&token=$token" ;;
        esac
        RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 \
        MASTER_ADDR=$master MASTER_PORT=$port \
            on "$k" timeout -k 5 90 "$prog" "$url" "$tmp/done" \
            >"$tmp/$scheme.$r" 2>&1 &
        pids="$pids $!"
    done
    # The outsider asks once the store is up (rank 0 has said so).
    for i in $(seq 1 300); do
        grep -q ": ok" "$tmp/$scheme.0" 2>/dev/null && break
        sleep 0.1
    done
    on 3 timeout -k 5 30 "$prog" outsider "$master" "$port" \
        >"$tmp/$scheme.outsider" 2>&1 || bad "$scheme: the outsider was served"
    touch "$tmp/done"
    for p in $pids; do
        wait "$p" || bad "$scheme: a rank exited non-zero"
    done
    cat "$tmp/$scheme".[0-3] "$tmp/$scheme.outsider"
    for r in 0 1 2 3; do
        k=$((r / 2 + 1)) l=$((r % 2))
        grep -q "^rank $r of 4 on $(node_name $k): local rank $l of 2, 2 nodes: ok" \
            "$tmp/$scheme.$r" || bad "$scheme: rank $r"
    done
    grep -q "refused" "$tmp/$scheme.outsider" || bad "$scheme: no refusal"
    # What the ranks started (Open MPI's daemons) may end a moment after
    # them: 5 s for that (once, 1 run in 7, one was still there at once).
    for k in 1 2 3; do
        for i in $(seq 1 50); do
            left=$(ip netns pids "$(node_ns "$k")" | wc -l)
            [ "$left" = 0 ] && break
            sleep 0.1
        done
        [ "$left" = 0 ] || bad "$scheme: $left process(es) left on node $k"
    done
done
exit $fail
