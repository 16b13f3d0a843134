#!/bin/sh
# SLURM on two nodes (test/nodes/nodes.sh): slurmctld and a slurmd on node
# 1, a slurmd on node 2, munged beside them. examples/grid.sbatch runs
# exactly as written (2 nodes x 4 tasks) through `sbatch --wait`, and
# `srun -N 2` gives each node's tasks local ranks of their own;
# examples/dcollrun.sbatch runs dcollrun as one task per node, from
# SLURM's variables alone.
#   slurm.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../slurm/private.sh"
slurm_tools
. "$here/nodes.sh"
dir=$(mktemp -d /tmp/dcoll-slurm2.XXXXXX)
chmod 755 "$dir"
NODES_CLEAN='[ -f "$dir/munge/pid" ] && kill "$(cat "$dir/munge/pid")" 2>/dev/null; rm -rf "$dir"; rm -f "$build"/dcoll-grid-*.out "$build"/dcoll-dcollrun-*.out'
nodes_up 2
fail() { slurm_fail "$dir" "$@"; }
slurm_munge "$dir" || fail "munged did not start"
port=$((20000 + $$ % 20000))
n1=$(node_name 1) n2=$(node_name 2)
cat > "$dir/slurm.conf" <<CONF
ClusterName=dcolltwo
SlurmctldHost=$n1($(node_addr 1))
$(slurm_conf_common "$dir" "$port")
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/slurmd-%n.log
NodeName=$n1 NodeAddr=$(node_addr 1) CPUs=8 State=UNKNOWN
NodeName=$n2 NodeAddr=$(node_addr 2) CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$n1,$n2 Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
mkdir -p "$dir/state" "$dir/spool/$n1" "$dir/spool/$n2"
export SLURM_CONF="$dir/slurm.conf"
# The nodes share /tmp here, where real ones would not: each slurmd reads
# the same slurm.conf from a directory of its own, beside an mpi.conf
# that gives PMIx's per-step directories a place of that node's.
for k in 1 2; do
    mkdir -p "$dir/node$k/tmp"
    cp "$dir/slurm.conf" "$dir/node$k/slurm.conf"
    echo "PMIxCliTmpDirBase=$dir/node$k/tmp" >"$dir/node$k/mpi.conf"
done
on 1 slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not start"
on 1 slurmd -f "$dir/node1/slurm.conf" -N "$n1" ||
    fail "slurmd on $n1 did not start"
on 2 slurmd -f "$dir/node2/slurm.conf" -N "$n2" ||
    fail "slurmd on $n2 did not start"
ready=0
for _ in $(seq 1 60); do
    idle=$(on 1 sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$')
    [ "$idle" = 2 ] && { ready=1; break; }
    sleep 1
done
[ "$ready" = 1 ] || fail "the nodes never became idle: $(on 1 sinfo -h -N 2>&1)"

# MPI between the nodes over their private network.
nodes_mpi_env
cd "$build"
status=0
out=$(on 1 timeout -k 5 120 srun -N 2 -n 4 --ntasks-per-node=2 --mpi=pmix \
      test/nodes/test_nodes 2>&1)
echo "$out"
for r in 0 1 2 3; do
    k=$((r / 2 + 1)) l=$((r % 2))
    echo "$out" | grep -q "^rank $r of 4 on $(node_name $k): local rank $l of 2, 2 nodes: ok" ||
        { echo "slurm: rank $r is not local rank $l on $(node_name $k)"; status=1; }
done
# batch SCRIPT NAME: submit examples/SCRIPT as written and wait; its
# output file (dcoll-NAME-JOB.out, in the build directory) goes to $file,
# or status=1 where there is none.
batch() {
    on 1 timeout -k 5 240 sbatch --wait "$src/examples/$1" \
        >"$dir/sbatch.txt" 2>&1 || { cat "$dir/sbatch.txt"; status=1; }
    job=$(sed -n 's/^Submitted batch job //p' "$dir/sbatch.txt")
    file="$build/dcoll-$2-$job.out"
    [ -f "$file" ] && cat "$file" && return 0
    echo "slurm: no output file from job '$job' ($1)"; status=1; return 1
}
# need FILE PATTERN WHAT: FILE holds PATTERN, or WHAT failed.
need() {
    grep -q "$2" "$1" || { echo "slurm: $3: no '$2'"; status=1; }
}
# The batch script exactly as written: 2 nodes x 4 tasks, one world of 8
# (2 x 4), not 8 worlds of 1 each saying ok.
if batch grid.sbatch grid; then
    need "$file" '8 tasks on 2 node(s)' "grid.sbatch"
    need "$file" 'grid: 2 x 4 ranks.*: ok' "grid.sbatch"
fi
# dcollrun as one task per node, from SLURM's variables alone.
if batch dcollrun.sbatch dcollrun; then
    need "$file" '^\[0\] grid: 2 x 2 ranks.*: ok' "dcollrun.sbatch"
fi
[ "$status" = 0 ] || fail "some runs failed"
echo "slurm: two nodes ran test_nodes, grid.sbatch and dcollrun.sbatch as written"
