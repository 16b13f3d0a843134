#!/bin/sh
# The slurm suite: start a real SLURM on this machine (munged, slurmctld
# and slurmd, all on 127.0.0.1, in a private directory), run the C and
# Fortran grid examples with `srun -n 4 --mpi=pmix`, init through env://
# from SLURM's variables alone, submit examples/grid.sbatch and check its
# output file, then stop every daemon. Under the MPICH build (no PMIx),
# srun --mpi=pmix must be refused on every task instead, and --mpi=pmi2
# make one world.
#   slurm.sh BUILD_DIR SOURCE_DIR
# Exits 77 (skip) where SLURM or munge is not installed.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
. "$(dirname "$0")/private.sh"
slurm_tools
[ "$(id -u)" = 0 ] || { echo "slurm: the daemons need root here: skipping"; exit 77; }

dir=$(mktemp -d /tmp/dcoll-slurm.XXXXXX)
chmod 755 "$dir"
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    sleep 1
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
fail() { slurm_fail "$dir" "$@"; }

# munge: its own key and socket, so nothing of the system's is touched.
slurm_munge "$dir" || fail "munged did not start"
pids="$pids $(cat "$dir/munge/pid")"

# Ports above the usual ones, picked per run so two runs do not collide,
# and free: a controller that cannot bind dies, and each sinfo then
# waits out its own timeout (the suite's 600 s went so once).
base=$(slurm_free_port $((20000 + $$ % 20000)))
cpus=8
cat > "$dir/slurm.conf" <<CONF
ClusterName=dcolltest
SlurmctldHost=localhost(127.0.0.1)
$(slurm_conf_common "$dir" "$base")
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
mkdir -p "$dir/state" "$dir/spool"
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
sleep 1
kill -0 "$(cat "$dir/slurmctld.pid" 2>/dev/null)" 2>/dev/null ||
    fail "slurmctld ended at its start (port $base)"
pids="$pids $(cat "$dir/slurmctld.pid" 2>/dev/null) $(cat "$dir/slurmd.pid" 2>/dev/null)"
ready=0
for _ in $(seq 1 60); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && { ready=1; break; }
    sleep 1
done
[ "$ready" = 1 ] || fail "the node never became idle: $(sinfo -h 2>&1)"

# MPI stays on loopback, as in every other suite.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_tcp_if_include=lo \
       OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_vader_single_copy_mechanism=none \
       OMPI_MCA_hwloc_base_binding_policy=none PMIX_MCA_gds=hash
cd "$build"
status=0
if [ "${DCOLL_MPI:-openmpi}" = mpich ]; then
    # Debian's MPICH speaks no PMIx: under srun --mpi=pmix each task is a
    # world of its own. Every task must be refused, saying so, not run
    # the job alone and say ok.
    out=$(timeout -k 5 120 srun -n 2 --mpi=pmix test/mpi/test_launch world 2 2>&1)
    rc=$?
    echo "$out"
    [ "$rc" != 0 ] || { echo "slurm: srun --mpi=pmix under MPICH exited 0"; status=1; }
    n=$(echo "$out" | grep -c "srun started 2 tasks (SLURM_STEP_NUM_TASKS=2), but MPI made this one a world of its own")
    [ "$n" = 2 ] || { echo "slurm: $n of 2 tasks refused under MPICH"; status=1; }
    # The plugin the message names for MPICH makes one world.
    out=$(timeout -k 5 120 srun -n 2 --mpi=pmi2 test/mpi/test_launch world 2 2>&1) ||
        { echo "slurm: srun --mpi=pmi2 under MPICH failed"; status=1; }
    echo "$out"
    echo "$out" | grep -q "^world: 2 ranks, all_reduce counted 2" ||
        { echo "slurm: srun --mpi=pmi2 did not make one world of 2"; status=1; }
    [ "$status" = 0 ] || fail "MPICH under srun: refusal or pmi2 failed"
    echo "slurm: MPICH under srun --mpi=pmix refused on every task; --mpi=pmi2 one world"
    exit 0
fi
for prog in examples/grid examples/grid_f; do
    [ -x "$prog" ] || { echo "slurm: $prog not built, skipped"; continue; }
    out=$(timeout -k 5 120 srun -n 4 --mpi=pmix "$prog" 2>&1)
    echo "$out"
    # One world of 4 (2 x 2), not 4 worlds of 1 each saying ok.
    echo "$out" | grep -q ': 2 x 2 ranks.*: ok' || { echo "slurm: srun $prog failed"; status=1; }
done

# env:// with nothing but what srun sets: SLURM_PROCID, SLURM_STEP_NUM_TASKS.
out=$(timeout -k 5 120 srun -n 4 --mpi=pmix test/mpi/test_env slurm 2>&1)
echo "$out"
echo "$out" | grep -q 'env-slurm: 4 rank(s), 0 failure(s): ok' ||
    { echo "slurm: env:// under srun failed"; status=1; }

# sbatch as a user would, here on the one node this test has.
jobout="$dir/job-%j.out"
timeout -k 5 180 sbatch --wait -N 1 --ntasks-per-node=4 -n 4 \
    --output="$jobout" "$src/examples/grid.sbatch" >"$dir/sbatch.txt" 2>&1 ||
    { cat "$dir/sbatch.txt"; status=1; }
job=$(sed -n 's/^Submitted batch job //p' "$dir/sbatch.txt")
file="$dir/job-$job.out"
if [ -f "$file" ]; then
    cat "$file"
    grep -q 'grid: 2 x 2 ranks.*: ok' "$file" || { echo "slurm: the batch job's output lacks 'grid: 2 x 2 ranks ... ok'"; status=1; }
    grep -q '4 tasks' "$file" || { echo "slurm: the batch job did not run 4 tasks"; status=1; }
else
    echo "slurm: no output file from job '$job'"; status=1
fi
[ "$status" = 0 ] || fail "some runs failed"
echo "slurm: srun and sbatch ran the examples"
