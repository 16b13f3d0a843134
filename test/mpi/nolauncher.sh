#!/bin/sh
# Run a test whose processes no MPI launcher starts (dcoll_spawn, dcollrun):
# nolauncher.sh SECONDS PROGRAM [ARGS...]. Loopback only, root allowed, TCP
# between processes of different singleton jobs, and a hard time limit.
limit=$1; shift
# No launcher: nothing of an outer mpirun may leak in.
unset OMPI_COMM_WORLD_SIZE PMIX_RANK PMI_RANK PMI_SIZE PMI_PORT PMI_FD
if [ "${DCOLL_MPI:-openmpi}" = mpich ]; then
    # MPICH's processes meet through the PMI server dcoll starts; UCX on
    # shared memory and lo.
    export UCX_NET_DEVICES=lo UCX_TLS=self,sm,tcp UCX_WARN_UNUSED_ENV_VARS=n
    exec timeout -k 10 "$limit" "$@"
fi
if ! command -v ompi-server >/dev/null 2>&1; then
    echo "ompi-server not found: skipping"; exit 77
fi
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_hwloc_base_binding_policy=none
export PMIX_MCA_gds=hash
exec timeout -k 10 "$limit" "$@"
