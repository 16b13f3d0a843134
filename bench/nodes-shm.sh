#!/bin/sh
# The node-aware way (docs/performance.md, Shared memory: across nodes)
# against MPI's own call on two nodes of this machine (network
# namespaces, test/nodes/nodes.sh; needs root), 2 ranks a node, Open MPI
# over TCP between the nodes and vader within each: dcoll-perf -S for
# all_reduce, broadcast and barrier at default settings, with the way
# forced (DCOLL_SHM=always), and with DCOLL_SHM=never (both sides MPI's
# call: the noise floor).
#   bench/nodes-shm.sh BUILD_DIR OUT_DIR
set -u
build=$(cd "$1" && pwd) out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
. "$here/../test/nodes/nodes.sh"
tmp=$NODES_TMP
nodes_mpirun_env "$tmp/hosts" "$here/../test/nodes/agent.sh"
nodes_up 2
for mode in auto always never; do
    on 1 timeout -k 5 900 "$NODES_MPIRUN" --hostfile "$tmp/hosts" -np 4 \
        --map-by ppr:2:node -x DCOLL_SHM="$mode" "$build/bench/dcoll-perf" \
        -b 16 -e 16M -f 4 -S -R 5 -c 0 all_reduce broadcast barrier \
        >"$out/nodes-2x2-$mode.txt" 2>&1 || bad "dcoll-perf ($mode) failed"
done
cat "$out"/nodes-2x2-*.txt
exit $fail
