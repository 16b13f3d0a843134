#!/bin/sh
# Two nodes (test/nodes/nodes.sh) of two ranks each under mpirun, started
# on node 1 with OpenMPI's launch agent pointed at agent.sh instead of
# ssh; MPI between the nodes over TCP on their private network. The C and
# Fortran examples run, test_nodes checks the world and each node's local
# ranks, dcoll-info reports each rank's own host, and nothing is left
# running on any node.
#   nodes-mpirun.sh HEAT GRID_F TEST_NODES DCOLL_INFO TEST_SHM DCOLL_TUNE
# test_shm nodes runs the node-aware way (each node's shared segment,
# MPI among the nodes' first ranks), forced, on the world, a group whose
# timeouts return and a group of 3. dcoll-tune measures that way for
# all_reduce and broadcast, and for no other kind.
set -u
here=$(cd "$(dirname "$0")" && pwd)
heat=$1 grid_f=$2 prog=$3 info=$4 shm=$5 tune=$6
. "$here/nodes.sh"
tmp=$NODES_TMP
nodes_mpirun_env "$tmp/hosts" "$here/agent.sh"
launcher=$NODES_MPIRUN
nodes_up 2
job() {
    on 1 timeout -k 5 90 "$launcher" --hostfile "$tmp/hosts" -np 4 \
        --map-by ppr:2:node "$@" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ "$rc" = 0 ] || bad "$* exited $rc"
    # Nothing of the job stays on any node.
    sleep 0.5
    for k in 1 2; do
        left=$(ip netns pids "$(node_ns "$k")" | wc -l)
        [ "$left" = 0 ] || bad "$left process(es) left on node $k after $1"
    done
}
job "$prog"
for r in 0 1 2 3; do
    k=$((r / 2 + 1)) l=$((r % 2))
    grep -q "^rank $r of 4 on $(node_name $k): local rank $l of 2, 2 nodes: ok" \
        "$tmp/out" || bad "rank $r is not local rank $l of 2 on $(node_name $k)"
done
job "$heat"
grep -q "OK" "$tmp/out" || bad "heat did not say OK"
job -x DCOLL_SHM=always "$shm" nodes
grep -q "shm nodes: ok" "$tmp/out" || bad "test_shm nodes did not say ok"
job "$tune" -b 4K -e 4K -n 5 -w 1 -R 1 all_reduce broadcast reduce
for k in all_reduce broadcast; do
    grep -A1 "^# group 4 2 $k: " "$tmp/out" | grep -q ' shm  *pick, gain$' ||
        bad "dcoll-tune across nodes: $k has no shm column"
    grep -qE "^$k +4 +2 +4096 +4096 +[a-z+_]+$" "$tmp/out" ||
        bad "dcoll-tune across nodes: no $k row"
done
grep -A1 "^# group 4 2 reduce: " "$tmp/out" | grep -q ' shm ' &&
    bad "dcoll-tune across nodes: reduce has a shm column"
# "-": this build has no Fortran, or no hwloc (so no dcoll-info).
if [ "$grid_f" != - ]; then
    job "$grid_f"
    grep -q "ranks.*: ok" "$tmp/out" || bad "grid_f did not say ok"
fi
if [ "$info" != - ]; then
    job "$info"
    for r in 0 1 2 3; do
        k=$((r / 2 + 1)) l=$((r % 2))
        grep -q "rank $r: host $(node_name $k), local rank $l of 2" \
            "$tmp/out" ||
            bad "dcoll-info: rank $r is not on $(node_name $k) as local rank $l"
    done
fi
exit $fail
