#!/bin/sh
# Faults between nodes (test/nodes/nodes.sh), 2 nodes x 2 ranks under
# mpirun, in the middle of a loop of 4 MiB all_reduces at default
# settings but a 2 s timeout (DCOLL_TIMEOUT=2):
#   link      node 2's link goes down (and comes back once the report is
#             out)
#   node      every process of node 2 is killed: mpirun (its daemon there
#             gone) ends the job itself at once
#   node-env  the same in a job no launcher started (env://, two processes
#             started by hand on each node, as torchrun would)
#   loss   node 2's link drops 30% of packets (tc netem): slower, but the
#          job's sums stay right (skipped where the kernel has no netem)
# For link and node-env, node 1's ranks must report node 2's ranks
# missing, by node, within the timeout + 2 s of the fault; after every
# fault nothing may be left running on any node. One line per fault for
# the reliability table.
#   faults.sh TEST_NODES HEAT KIND...
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=$1 heat=$2; shift 2
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_mpirun_env "$tmp/hosts" "$here/agent.sh"
launcher=$NODES_MPIRUN
nodes_up 2
export DCOLL_TIMEOUT=2
now() { date +%s.%N; }
ns2=$(node_ns 2)

# Stamp each line of the job's output with when it came.
start_job() {
    : >"$tmp/out"
    { on 1 timeout -k 5 90 "$launcher" --hostfile "$tmp/hosts" -np 4 \
          --map-by ppr:2:node "$@" 2>&1; echo "exit $?"; } |
        while IFS= read -r line; do
            printf '%s %s\n' "$(now)" "$line"
        done >"$tmp/out" &
    job=$!
}

wait_for() {   # wait_for PATTERN SECONDS
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        grep -q "$1" "$tmp/out" && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

# The same job with no launcher: env://, ranks 0,1 on node 1 and 2,3 on
# node 2, each process's output stamped into one file.
start_env_job() {
    : >"$tmp/out"
    port=$((20000 + $$ % 20000 + 7))
    for r in 0 1 2 3; do
        k=$((r / 2 + 1))
        { RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 \
          MASTER_ADDR=$(node_addr 1) MASTER_PORT=$port \
              on "$k" timeout -k 5 90 "$prog" loop 2>&1; } |
            while IFS= read -r line; do
                printf '%s %s\n' "$(now)" "$line"
            done >>"$tmp/out" &
    done
}

gone_after() {   # wait until nothing runs on the nodes; print how long
    i=0
    while [ "$(left_on_nodes)" != 0 ] && [ "$i" -lt 300 ]; do
        sleep 0.1; i=$((i + 1))
    done
    awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'
}

left_on_nodes() {
    n=0
    for k in 1 2; do
        n=$((n + $(ip netns pids "$(node_ns "$k")" | wc -l)))
    done
    echo "$n"
}

for kind in "$@"; do
    case $kind in
    link|node-env)
        if [ "$kind" = link ]; then
            start_job "$prog" loop
        else
            start_env_job
        fi
        wait_for "looping" 60 ||
            { bad "$kind: the job never got going"; cat "$tmp/out"; continue; }
        t0=$(now)
        if [ "$kind" = link ]; then
            ip netns exec "$ns2" ip link set eth0 down
        else
            # shellcheck disable=SC2046
            kill -KILL $(ip netns pids "$ns2")
        fi
        wait_for "dcoll\[[01]\]: .*did not answer" 30 ||
            { bad "$kind: no report from node 1's ranks"; cut -d' ' -f2- "$tmp/out"; }
        [ "$kind" = link ] && ip netns exec "$ns2" ip link set eth0 up
        report=$(grep -m1 "dcoll\[[01]\]: .*did not answer" "$tmp/out")
        echo "$report" | cut -d' ' -f2-
        said=$(awk -v a="$(echo "$report" | cut -d' ' -f1)" -v b="$t0" \
               'BEGIN { printf "%.2f", a - b }')
        # Node 2's ranks, by node. A node 1 rank still in the collective
        # before may be listed too: the fault can land between the two.
        echo "$report" |
            grep -q "did not answer ([^)]*), on \(.*, \)\{0,1\}$(node_name 2) {2,3}" ||
            bad "$kind: the report does not name node 2's ranks by node"
        awk -v t="$said" 'BEGIN { exit !(t <= 4.0) }' ||
            bad "$kind: the report came $said s after the fault (timeout 2 s)"
        ended=$(gone_after "$t0")
        wait
        left=$(left_on_nodes)
        [ "$left" = 0 ] || bad "$kind: $left process(es) left on the nodes"
        echo "fault $kind: report after $said s, all gone after $ended s, $left left"
        ;;
    node)
        start_job "$prog" loop
        wait_for "looping" 60 ||
            { bad "$kind: the job never got going"; cat "$tmp/out"; continue; }
        t0=$(now)
        # shellcheck disable=SC2046
        kill -KILL $(ip netns pids "$ns2")
        ended=$(gone_after "$t0")
        wait "$job"
        rc=$(sed -n 's/^[0-9.]* exit //p' "$tmp/out")
        left=$(left_on_nodes)
        [ "$rc" != 0 ] || bad "node: mpirun exited 0"
        [ "$left" = 0 ] || bad "node: $left process(es) left on the nodes"
        echo "fault node: mpirun ended the job itself (exit $rc), all gone after $ended s, $left left"
        ;;
    loss)
        if ! ip netns exec "$ns2" tc qdisc add dev eth0 root netem loss 30% \
            2>"$tmp/tc"; then
            echo "fault loss: skipped, this kernel has no netem: $(cat "$tmp/tc")"
            continue
        fi
        t0=$(now)
        on 1 timeout -k 5 280 "$launcher" --hostfile "$tmp/hosts" -np 4 \
            --map-by ppr:2:node "$heat" >"$tmp/out" 2>&1 ||
            bad "loss: heat failed under 30% loss"
        took=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
        grep -q "OK" "$tmp/out" || bad "loss: heat's result is wrong"
        ip netns exec "$ns2" tc qdisc del dev eth0 root
        echo "fault loss: heat right under 30% loss in $took s"
        ;;
    esac
done
exit $fail
