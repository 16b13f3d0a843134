#!/bin/sh
# Run an MPI test: mpirun.sh NPROCS SECONDS PROGRAM [ARGS...]
# With the build's own launcher (DCOLL_MPIRUN, DCOLL_MPI: openmpi or mpich,
# set by the test setup; else whatever mpirun is on the PATH). Loopback
# only, root allowed, oversubscription allowed (2-core runners), and a
# hard time limit after which the launcher and its ranks are killed.
n=$1; limit=$2; shift 2
launcher=${DCOLL_MPIRUN:-}
[ -n "$launcher" ] || launcher=$(command -v mpirun) || {
    echo "mpirun not found: skipping"; exit 77; }
case ${DCOLL_MPI:-openmpi} in
mpich)
    # hydra forks the ranks here and hands them its environment whole, so
    # OpenMPI's `-x VAR` is dropped. UCX stays on shared memory and lo.
    export HYDRA_IFACE=lo HYDRA_LAUNCHER=fork
    export UCX_NET_DEVICES=lo UCX_TLS=self,sm,tcp
    export UCX_WARN_UNUSED_ENV_VARS=n
    # Its ranks yield when a poll finds nothing (test/mpich_yield.c), as
    # Open MPI's do below: tests share the cores, and most oversubscribe.
    if [ -n "${DCOLL_MPICH_YIELD:-}" ] && [ -f "$DCOLL_MPICH_YIELD" ]; then
        export LD_PRELOAD="$DCOLL_MPICH_YIELD${LD_PRELOAD:+:$LD_PRELOAD}"
    fi
    for a in "$@"; do
        shift
        if [ "$a" = -x ]; then skip=1; continue; fi
        if [ "${skip:-0}" = 1 ]; then skip=0; continue; fi
        set -- "$@" "$a"
    done
    # OpenMPI's recovery switch (the survivors of a killed rank live on)
    # is hydra's -disable-auto-cleanup.
    if [ "${OMPI_MCA_orte_enable_recovery:-0}" = 1 ]; then
        set -- -disable-auto-cleanup "$@"
    fi
    exec timeout -k 10 "$limit" "$launcher" -n "$n" "$@"
    ;;
esac
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none
export PMIX_MCA_gds=hash
# Two tests share the cores (test/meson.build): a rank waiting for a peer
# gives its core up instead of spinning out its time slice.
export OMPI_MCA_mpi_yield_when_idle=1
# Once a rank has failed, mpirun signals the others and waits this long
# before SIGKILL, even for ranks already gone: a second per failing test
# (dcoll's ranks do nothing on SIGTERM).
export OMPI_MCA_odls_base_sigkill_timeout=0
exec timeout -k 10 "$limit" "$launcher" -n "$n" "$@"
