#!/bin/sh
# How fast dcoll-trace reads a job's recorder files: one rank's file of
# CALLS calls (dcoll-trace-bench: half on the world, half on a group),
# copied to each of RANKS ranks with its own header, then dcoll-trace
# (where the ranks stand, first disagreement) and dcoll-trace -s (time by
# kind and size too), each from a cold page cache where this runs as root
# (else warm), then once warm. Needs RANKS x about 190 bytes x CALLS of
# disk; the files are removed at the end.
#   bench/trace-read.sh BUILD DIR CALLS "RANKS..."
set -eu
build=$1 dir=$2 calls=$3 sizes=$4
mkdir -p "$dir/one"
rm -f "$dir"/one/*.jsonl
DCOLL_FLIGHT_DIR="$dir/one" "$build/bench/dcoll-trace-bench" "$calls"
one=$(ls "$dir"/one/dcoll-*-0.jsonl)
head -n 1 "$one" >"$dir/head"
tail -n +2 "$one" >"$dir/body"
echo "one file: $(wc -l <"$one") lines, $(wc -c <"$one") bytes"
cold() { sync; [ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches || true; }
timed() {   # timed LABEL ARGS...
    label=$1; shift
    t0=$(date +%s.%N)
    "$build/tools/dcoll-trace" "$@" "$dir/job" >"$dir/out.txt"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v l="$label" 'BEGIN { printf "  %s: %.2f s\n", l, b - a }'
}
for n in $sizes; do
    rm -rf "$dir/job"
    mkdir "$dir/job"
    r=0
    while [ "$r" -lt "$n" ]; do
        sed "s/\"rank\":0,\"size\":1,/\"rank\":$r,\"size\":$n,/" "$dir/head" \
            >"$dir/job/dcoll-bench-$r.jsonl"
        cat "$dir/body" >>"$dir/job/dcoll-bench-$r.jsonl"
        r=$((r + 1))
    done
    echo "$n ranks x $calls calls: $(du -sh "$dir/job" | cut -f1)"
    cold; timed "dcoll-trace, cold" 
    cold; timed "dcoll-trace -s, cold" -s
    timed "dcoll-trace -s, warm" -s
    head -n 8 "$dir/out.txt" | sed 's/^/    /'
done
rm -rf "$dir/job" "$dir/one" "$dir/head" "$dir/body" "$dir/out.txt"
