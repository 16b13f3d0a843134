#!/bin/sh
# Survivors' times (bench/README.md, "Survivors go on"): dcoll-survive-bench
# under dcollrun --on-failure continue, at each rank count given, on
# each build given (an Open MPI build and an MPICH one).
#   bench/survive.sh "4 64" build build-mpich
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
        DCOLL_MPI=$mpi "$here/../test/mpi/nolauncher.sh" 900 \
            "$b/tools/dcollrun" --on-failure continue -n "$n" \
            "$b/bench/dcoll-survive-bench" 2>&1 | grep "^survive:" ||
            echo "no figure ($n ranks)"
    done
done
