#!/bin/sh
# What dcollrun costs against mpirun across two nodes of this machine
# (network namespaces, test/nodes/nodes.sh; needs root): the time from the
# launch until every rank is back from dcoll_init, and a 1 MiB float
# all_reduce through dcoll and through MPI_Allreduce on the same world
# (dcoll-launch-bench). 2 nodes x 2 ranks, OpenMPI over TCP between the
# nodes; each launcher RUNS times, alternating, so that neither gets the
# machine's quiet moments alone.
#   bench/nodes-launch.sh BUILD_DIR [RUNS [ITERS]]  (default 5 runs, 30
# calls per timed round, best of 5 rounds each)
set -u
build=$(cd "$1" && pwd) runs=${2:-5} iters=${3:-30}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/nodes/nodes.sh"
tmp=$NODES_TMP
nodes_mpirun_env "$tmp/hosts" "$here/../test/nodes/agent.sh"
nodes_up 2
export UCX_NET_DEVICES=eth0,lo UCX_TLS=self,sm,tcp UCX_WARN_UNUSED_ENV_VARS=n
prog=$build/bench/dcoll-launch-bench dcollrun=$build/tools/dcollrun
master=$(node_addr 1)
port=$((20000 + $$ % 20000))

# init_time START FILE: the last rank's return from dcoll_init, in s
# after START.
init_time() {
    awk -v s="$1" '/^(\[[0-9]+\] )?ready / { t = $NF; if (t > m) m = t }
                   END { printf "%.3f", m - s }' "$2"
}
ratio_of() { sed -n 's/.*dcoll \([0-9.]*\) us, MPI \([0-9.]*\) us.*/\1 \2/p' "$1"; }

printf '%-9s %-4s %9s %14s %12s %9s\n' launcher run init_s dcoll_1MiB_us MPI_1MiB_us raw/dcoll
for i in $(seq 1 "$runs"); do
    for how in dcollrun mpirun; do
        port=$((port + 1))
        start=$(date +%s.%N)
        if [ "$how" = mpirun ]; then
            on 1 timeout -k 5 120 "$NODES_MPIRUN" --hostfile "$tmp/hosts" \
                -np 4 --map-by ppr:2:node "$prog" "$iters" >"$tmp/out" 2>&1 ||
                { cat "$tmp/out"; exit 1; }
        else
            on 2 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 1 \
                -n 2 --rdzv-endpoint "$master:$port" "$prog" "$iters" \
                >"$tmp/out2" 2>&1 &
            on 1 timeout -k 5 120 "$dcollrun" --nnodes 2 --node-rank 0 \
                -n 2 --rdzv-endpoint "$master:$port" "$prog" "$iters" \
                >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
            wait $! || { cat "$tmp/out2"; exit 1; }
            cat "$tmp/out2" >>"$tmp/out"
        fi
        set -- $(ratio_of "$tmp/out")
        printf '%-9s %-4s %9s %14s %12s %9s\n' "$how" "$i" \
            "$(init_time "$start" "$tmp/out")" "$1" "$2" \
            "$(awk "BEGIN { printf \"%.3f\", $2 / $1 }")"
    done
done
