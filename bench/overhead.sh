#!/bin/sh
# Instructions dcoll adds per call above the raw MPI call, counted by
# callgrind on one rank (bench/README.md). Usage:
#   bench/overhead.sh [BUILD_DIR] [RUNS]
# Prints one table per run; the runs must agree for the figure to count.
set -eu
build=${1:-build}
runs=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
exe=$build/bench/dcoll-overhead
[ -x "$exe" ] || { echo "overhead.sh: $exe not built (needs valgrind/callgrind.h)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "overhead.sh: valgrind not found" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
i=1
while [ "$i" -le "$runs" ]; do
    "$here/../test/mpirun.sh" 1 600 valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/cg.$i" "$exe" >"$tmp/log.$i" 2>&1 ||
        { cat "$tmp/log.$i" >&2; exit 1; }
    calls=$(sed -n 's/^calls per loop: //p' "$tmp/log.$i")
    echo "# run $i: instructions per call ($calls calls per loop, 1 rank)"
    callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg.$i" |
        awk -v calls="$calls" '
        {
            gsub(",", "", $1)
            if (match($0, /via_(dcoll|mpi)_[a-z_]+/)) {
                name = substr($0, RSTART, RLENGTH)
                ir[name] = $1
            }
        }
        END {
            printf "%-22s %10s %10s %10s\n", "call", "dcoll", "raw MPI", "added"
            n = split("all_reduce broadcast reduce all_gather reduce_scatter all_to_all barrier all_reduce_async plan_all_reduce plan_all_reduce_async plan_all_gatherv plan_barrier", k, " ")
            for (j = 1; j <= n; j++) {
                d = ir["via_dcoll_" k[j]] / calls
                m = ir["via_mpi_" k[j]] / calls
                printf "%-22s %10.1f %10.1f %10.1f\n", k[j], d, m, d - m
            }
        }'
    i=$((i + 1))
done
