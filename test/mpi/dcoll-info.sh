#!/bin/sh
# dcoll-info on 2 ranks reports MPI, both backends, the GPUs and one line
# per rank: dcoll-info.sh MPIRUN_SH DCOLL_INFO
out=$("$1" 2 60 "$2" 2>&1) || { echo "$out"; exit 1; }
echo "$out"
for want in '^MPI: ' '^  mpi   available' '^  nccl ' '^GPUs (hwloc):' \
            'rank 0: host .*local rank 0 of 2' 'rank 1: host .*local rank 1 of 2'; do
    echo "$out" | grep -q -- "$want" || { echo "missing: $want"; exit 1; }
done
