#!/bin/sh
# Host collectives through the shared segment (docs/performance.md,
# Shared memory) against each MPI's own call, with the memcpy bound of
# the same run (dcoll-perf -M), each side's calls in blocks of their own
# (-S): all_reduce, broadcast, reduce_scatter, all_gather and reduce,
# 16 B to 64 MiB, at default settings (DCOLL_SHM=auto) and with the
# segment forced (always); 2 ranks one a core, 4 two a core.
#   bench/shm.sh OUT_DIR [OPENMPI_BUILD [MPICH_BUILD]]
# Writes OUT_DIR/<mpi>-np<n>-<mode>.txt, then prints bench/README.md's
# tables from them (bench/shm-tables.sh).
set -eu
out=$1 ompi=${2:-build} mpich=${3:-build-mpich}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
kinds="all_reduce broadcast reduce_scatter all_gather reduce"
args="-b 16 -e 64M -f 4 -S -M -R 5 -c 0"
for mode in auto always; do
    for np in 2 4; do
        bind="--bind-to core"
        [ "$np" = 2 ] || bind="--oversubscribe --bind-to none"
        DCOLL_SHM=$mode mpirun.openmpi --allow-run-as-root -np "$np" $bind \
            -x DCOLL_SHM "$ompi/bench/dcoll-perf" $args $kinds \
            >"$out/openmpi-np$np-$mode.txt" 2>&1
        if [ -x "$mpich/bench/dcoll-perf" ]; then
            # Two a core: MPICH's waits spin unless told to yield, as the
            # tests have it (test/mpich_yield.c).
            pre=""
            [ "$np" = 2 ] || pre=$mpich/test/libmpich_yield.so
            DCOLL_SHM=$mode mpiexec.mpich -n "$np" \
                $( [ "$np" = 2 ] && echo "-bind-to core" ) \
                -genv DCOLL_SHM "$mode" -genv LD_PRELOAD "$pre" \
                "$mpich/bench/dcoll-perf" $args $kinds \
                >"$out/mpich-np$np-$mode.txt" 2>&1
        fi
    done
done
"$here/shm-tables.sh" "$out"
