#!/bin/sh
# The held recorder files of bench/results/traces/ and dcoll-trace's
# output on them in docs/trace.md (between the "dcoll-trace
# outputs" markers): a hang (4 ranks, rank 3 never calls the second
# all_reduce: test_fault hang absent), a mismatch (3 ranks under
# DCOLL_DEBUG=detail, rank 0 passing count 5 where the others pass 6:
# test_trace report), a slow rank (4 ranks, rank 3 30 ms late to each of
# 40 all_reduces: test_trace slow).
#   bench/traces.sh [BUILD]
set -eu
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
run=$(pwd)/test/mpirun.sh
held=bench/results/traces
rm -rf "$held"
mkdir -p "$held/hang" "$held/mismatch" "$held/slow"
(cd "$held/hang" && DCOLL_FLIGHT_DIR=. "$run" 4 60 \
    "$build/test/mpi/test_fault" hang absent >/dev/null 2>stderr.txt) || true
(cd "$held/mismatch" && "$run" 3 60 "$build/test/mpi/test_trace" report . \
    >/dev/null 2>&1)
(cd "$held/slow" && "$run" 4 60 "$build/test/mpi/test_trace" slow . \
    >/dev/null 2>&1)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
    echo '```'
    for c in "-q $held/hang" "-q $held/mismatch" "-s -q $held/slow"; do
        echo "\$ dcoll-trace $c"
        # shellcheck disable=SC2086
        "$build/tools/dcoll-trace" $c
    done
    echo '```'
} >"$out"
for doc in docs/trace.md; do
    awk -v file="$out" '
        /^<!-- dcoll-trace outputs/ { print; while ((getline l < file) > 0) print l; skip = 1; next }
        /^<!-- end of dcoll-trace outputs/ { skip = 0 }
        !skip' "$doc" >"$doc.new"
    mv "$doc.new" "$doc"
done
# And the first lines of one file, in docs/trace.md.
{
    echo '```'
    head -n 4 "$(ls "$held"/slow/dcoll-*-0.jsonl)"
    echo '```'
} >"$out"
awk -v file="$out" '
    /^<!-- held file/ { print; while ((getline l < file) > 0) print l; skip = 1; next }
    /^<!-- end of held file/ { skip = 0 }
    !skip' docs/trace.md >docs/trace.md.new
mv docs/trace.md.new docs/trace.md
echo "remade $held and the outputs in docs/trace.md"
