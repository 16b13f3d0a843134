#!/bin/sh
# dcoll-info on 2 ranks reports MPI, both backends, the GPUs and one line
# per rank, under mpirun and under dcollrun (one world of 2, not two of
# one), and DCOLL_INFO_WANT where set (a pattern):
# dcoll-info.sh MPIRUN_SH DCOLL_INFO DCOLLRUN
for how in mpirun dcollrun; do
    case $how in
        mpirun) out=$("$1" 2 60 "$2" 2>&1) || { echo "$out"; exit 1; } ;;
        dcollrun) out=$(timeout -k 5 60 "$3" -n 2 "$2" 2>&1) ||
                      { echo "$out"; exit 1; } ;;
    esac
    echo "$out"
    for want in '^MPI: ' '^  mpi   available' '^  nccl ' '^GPUs (hwloc):' \
                '^2 rank(s):' 'rank 0: host .*local rank 0 of 2' \
                'rank 1: host .*local rank 1 of 2' \
                "${DCOLL_INFO_WANT:-^MPI: }"; do
        echo "$out" | grep -q -- "$want" || { echo "$how: missing: $want"; exit 1; }
    done
    n=$(echo "$out" | grep -c '^MPI: ')
    [ "$n" = 1 ] || { echo "$how: $n reports, want one"; exit 1; }
done
