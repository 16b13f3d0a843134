#!/bin/sh
# Survivors across nodes under mpirun, told by dcoll's keeper (issue 50),
# test/nodes/nodes.sh: 2 nodes x 2 ranks, Open MPI's recovery settings,
# DCOLL_ON_FAILURE=continue, DCOLL_FENCE=3, return mode. Every rank loops
# on all_reduce; node 2's link goes down. Node 2's ranks cannot reach the
# keeper (rank 0's child, on node 1) and end themselves after 1.5 s (exit
# code 4); the keeper takes them as dead once their lease has lapsed for
# 3 s, and node 1's ranks get DCOLL_ERR_RANK_DIED, shrink the world to the
# two of them and sum right. The link then comes back; the job must end
# and nothing may be left on either node.
#   keeper.sh TEST_SHRINK
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=$(readlink -f "$1")
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_mpirun_env "$tmp/hosts" "$here/agent.sh"
nodes_up 2
now() { date +%s.%N; }
ns2=$(node_ns 2)
: >"$tmp/out"
{ on 1 timeout -k 5 120 "$NODES_MPIRUN" --hostfile "$tmp/hosts" -np 4 \
      --map-by ppr:2:node --mca orte_enable_recovery 1 \
      --mca orte_abort_on_non_zero_status 0 -x DCOLL_ON_FAILURE=continue \
      -x DCOLL_FENCE=3 -x DCOLL_ON_TIMEOUT=return -x DCOLL_TIMEOUT=60 \
      "$prog" link 2>&1; echo "exit $?"; } |
    while IFS= read -r line; do
        printf '%s %s\n' "$(now)" "$line"
    done >"$tmp/out" &
job=$!
wait_for() {   # wait_for PATTERN SECONDS
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        [ "$(grep -c "$1" "$tmp/out")" -ge "${3:-1}" ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
wait_for " looping$" 60 4 || bad "the job never got going"
sleep 0.5
t0=$(now)
ip netns exec "$ns2" ip link set eth0 down
wait_for " link: rank [01] ok$" 30 2 || bad "node 1's ranks did not go on"
seen=$(grep -m1 "dcoll keeper: rank 2 died" "$tmp/out" | cut -d' ' -f1)
ip netns exec "$ns2" ip link set eth0 up
wait "$job"
cut -d' ' -f2- "$tmp/out"
grep -q "dcoll keeper: rank 2 died (it sent dcoll's keeper no heartbeat for [0-9]* s" "$tmp/out" ||
    bad "the keeper did not take rank 2 as dead by its lease"
grep -q "dcoll keeper: rank 3 died (it sent dcoll's keeper no heartbeat" "$tmp/out" ||
    bad "the keeper did not take rank 3 as dead by its lease"
grep -q "^[0-9.]* FAIL" "$tmp/out" && bad "a rank failed a check"
said=$(awk -v a="${seen:-0}" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
# The fence runs from the last beat the keeper saw, up to one beat
# (3/8 s) before the link went down.
awk -v t="$said" 'BEGIN { exit !(t >= 2.6 && t <= 6.0) }' ||
    bad "the keeper said rank 2 died $said s after the link went down (fence 3 s)"
sleep 0.5
for k in 1 2; do
    left=$(ip netns pids "$(node_ns "$k")" | wc -l)
    [ "$left" = 0 ] || bad "$left process(es) left on node $k"
done
echo "link down: the keeper took node 2's ranks as dead after $said s; node 1's went on"
exit $fail
