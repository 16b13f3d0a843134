#!/bin/sh
# Issue 34's figures at scale, on one machine, oversubscribed (Open MPI
# under test/mpirun.sh): for each size, in one run,
#   - MPI_Init_thread alone, and dcoll_init (with DCOLL_INIT_TIMES=1, its
#     steps), new_group and split_group, for each build given;
#   - a hang (test_fault hang absent: the last rank never calls an
#     all_reduce, 2-s group timeout) under each build: when the report
#     came and the job ended after the last rank called, lines of stderr,
#     recorder files written.
#   bench/scale.sh OUT SIZES BUILD...   e.g. bench/scale.sh out "64 128 256" build /tmp/base/build
# Each launch runs alone; sizes from small to large.
set -u
out=$1 sizes=$2; shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mpirun_sh=$here/test/mpirun.sh
mkdir -p "$out"
now() { date +%s.%N; }
for n in $sizes; do
    "$mpirun_sh" "$n" 600 "$1/bench/dcoll-init-bench" mpi >>"$out/init.txt" 2>&1
    for b in "$@"; do
        echo "build $b:" >>"$out/init.txt"
        DCOLL_INIT_TIMES=1 "$mpirun_sh" "$n" 600 -x DCOLL_INIT_TIMES \
            "$b/bench/dcoll-init-bench" dcoll >>"$out/init.txt" 2>&1
    done
    "$mpirun_sh" "$n" 600 "$1/bench/dcoll-init-bench" mpi >>"$out/init.txt" 2>&1
    for b in "$@"; do
        tag=$(echo "$b" | tr '/' '_')
        dir="$out/traces-$n$tag"
        rm -rf "$dir"; mkdir -p "$dir"
        { DCOLL_FLIGHT_DIR=$dir "$mpirun_sh" "$n" 600 -x DCOLL_FLIGHT_DIR \
            "$b/test/mpi/test_fault" hang absent 2>&1 >"$out/hang.out"; } |
            while IFS= read -r line; do
                printf '%s %s\n' "$(now)" "$line"
            done >"$out/hang-$n$tag.err"
        end=$(now)
        called=$(sed -n 's/^rank [0-9]* calls at //p' "$out/hang.out" | sort -n | tail -n 1)
        first=$(grep -m1 "timed out after" "$out/hang-$n$tag.err" | cut -d' ' -f1)
        reports=$(grep -c "timed out after 2 s" "$out/hang-$n$tag.err")
        named=$(grep -c "rank $((n - 1)) (world $((n - 1))) did not arrive" "$out/hang-$n$tag.err")
        awk -v n="$n" -v b="$b" -v c="$called" -v f="${first:-0}" -v e="$end" \
            -v l="$(wc -l <"$out/hang-$n$tag.err")" -v r="$reports" -v m="$named" \
            -v files="$(ls "$dir" | wc -l)" \
            'BEGIN { printf "hang %d ranks, %s: report %.2f s, job over %.2f s after the last call; %d lines of stderr, %d whole report(s), %d naming the missing rank, %d recorder file(s)\n", n, b, f - c, e - c, l, r, m, files }' \
            >>"$out/hang.txt"
    done
done
cat "$out/init.txt" "$out/hang.txt"
