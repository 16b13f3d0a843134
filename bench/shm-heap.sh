#!/bin/sh
# Host collectives on buffers from dcoll_mem_alloc (dcoll-perf -H: both
# sides use them, so MPI's call reads the same memory) against the same
# run on malloc'd buffers: all_reduce, all_gather, reduce_scatter,
# broadcast and reduce, 4 KiB to 64 MiB, 2 ranks one a core, at default
# settings and on heap buffers also with the segment forced
# (DCOLL_SHM=always), and malloc'd buffers on a group that has a heap
# (-G: what other memory pays there), each side's calls in blocks of
# their own (-S), with the memcpy bound (-M).
#   bench/shm-heap.sh OUT_DIR [OPENMPI_BUILD [MPICH_BUILD]]
# Writes OUT_DIR/<mpi>-np2-<malloc|heap|heap-always|spare>.txt.
set -eu
out=$1 ompi=${2:-build} mpich=${3:-build-mpich}
mkdir -p "$out"
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
kinds="all_reduce all_gather reduce_scatter broadcast reduce"
args="-b 4K -e 64M -f 4 -S -M -R 5 -c 0"
for mem in malloc heap heap-always spare; do
    h="" shm=auto
    case $mem in heap*) h=-H ;; spare) h=-G ;; esac
    [ "$mem" = heap-always ] && shm=always
    DCOLL_SHM=$shm mpirun.openmpi --allow-run-as-root -np 2 --bind-to core \
        -x DCOLL_SHM "$ompi/bench/dcoll-perf" $args $h $kinds \
        >"$out/openmpi-np2-$mem.txt" 2>&1
    if [ -x "$mpich/bench/dcoll-perf" ]; then
        DCOLL_SHM=$shm mpiexec.mpich -n 2 -bind-to core \
            "$mpich/bench/dcoll-perf" $args $h $kinds \
            >"$out/mpich-np2-$mem.txt" 2>&1
    fi
done
