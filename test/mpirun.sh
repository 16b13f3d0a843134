#!/bin/sh
# Run an MPI test: mpirun.sh NPROCS SECONDS PROGRAM [ARGS...]
# Loopback only, root allowed, oversubscription allowed (2-core runners),
# and a hard time limit after which mpirun and its ranks are killed.
n=$1; limit=$2; shift 2
if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpirun not found: skipping"; exit 77
fi
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none
export PMIX_MCA_gds=hash
exec timeout -k 10 "$limit" mpirun -n "$n" "$@"
