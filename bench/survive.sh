#!/bin/sh
# Survivors' times (bench/README.md, "Survivors go on"): dcoll-survive-bench
# under dcollrun --on-failure continue, at each rank count given, on
# each build given (an Open MPI build and an MPICH one); with
# LAUNCHER=mpirun, under Open MPI's mpirun with its recovery settings and
# DCOLL_ON_FAILURE=continue (dcoll's keeper says who died).
#   bench/survive.sh "4 64" build build-mpich
#   LAUNCHER=mpirun bench/survive.sh "4 64" build
set -u
counts=${1:-4 64}; shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
for b in "$@"; do
    b=$(cd "$here/.." && cd "$b" && pwd)
    mpi=openmpi
    grep -q "mpi=mpich" "$b/meson-logs/meson-log.txt" 2>/dev/null && mpi=mpich
    for n in $counts; do
        printf '%s: ' "$mpi"
        if [ "${LAUNCHER:-dcollrun}" = mpirun ]; then
            printf 'mpirun, keeper: '
            OMPI_MCA_orte_enable_recovery=1 \
            OMPI_MCA_orte_abort_on_non_zero_status=0 \
            DCOLL_ON_FAILURE=continue DCOLL_MPI=$mpi \
                "$here/../test/mpirun.sh" "$n" 900 -x DCOLL_ON_FAILURE \
                "$b/bench/dcoll-survive-bench" 2>&1 | grep "^survive:" ||
                echo "no figure ($n ranks)"
            continue
        fi
        DCOLL_MPI=$mpi "$here/../test/mpi/nolauncher.sh" 900 \
            "$b/tools/dcollrun" --on-failure continue -n "$n" \
            "$b/bench/dcoll-survive-bench" 2>&1 | grep "^survive:" ||
            echo "no figure ($n ranks)"
    done
done
