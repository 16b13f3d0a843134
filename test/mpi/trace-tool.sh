#!/bin/sh
# dcoll-trace on the files of a mismatch and of a slow rank (test_trace
# report and slow), with a rank's file missing, and on bad input.
# trace-tool.sh MPIRUN_SH TEST_TRACE DCOLL_TRACE
mpirun_sh=$1; prog=$2; tool=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { "$mpirun_sh" 3 60 "$prog" "$1" "$dir/$1" >"$dir/$1.out" 2>&1; }

run report; rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { bad "test_trace report exited $rc"; cat "$dir/report.out"; }
out=$("$tool" "$dir/report")
echo "$out"
echo "$out" | grep -q "^job [^ ]*: 3 rank(s), files from 3$" || bad "mismatch: no job line"
echo "$out" | grep -q "^  the world (3 ranks), call #1:$" || bad "mismatch: not at call #1"
echo "$out" | grep -q "^    ranks 1-2: all_reduce float32 count 6 SUM, blocking$" ||
    bad "mismatch: ranks 1-2's count not named"
echo "$out" | grep -q "^    rank 0: all_reduce float32 count 5 SUM, blocking$" ||
    bad "mismatch: rank 0's count not named"

# A file laid out otherwise (no signatures): read whole, the same answer.
mkdir "$dir/nosig"
for f in "$dir"/report/*.jsonl; do
    sed 's/"sig":"[0-9a-f]*",//' "$f" >"$dir/nosig/$(basename "$f")"
done
[ "$("$tool" -q "$dir/nosig" | tail -n 4)" = "$(echo "$out" | tail -n 4)" ] ||
    bad "files without signatures read otherwise: $("$tool" -q "$dir/nosig")"

run slow; rc=$?
[ "$rc" = 0 ] || { bad "test_trace slow exited $rc"; cat "$dir/slow.out"; }
out=$("$tool" -s -j 1 "$dir/slow")
echo "$out"
echo "$out" | grep -q "^    ranks 0-2 ([^)]*): at all_reduce #40 (blocking), idle$" ||
    bad "slow: the ranks' place"
echo "$out" | grep -q "none: every call recorded on more than one rank was recorded alike" ||
    bad "slow: a disagreement where there is none"
row=$(echo "$out" | grep "^ *0 all_reduce")
echo "$row" | awk '{ exit !($4 == 120 && $NF == 2) }' ||
    bad "slow: rank 2 is not the one that waited least: $row"
# A rank's file gone: said, and the rest still read.
rm -f "$dir"/slow/dcoll-*-1.jsonl
"$tool" "$dir/slow" | grep -q "files from 2; none from rank 1 " ||
    bad "a missing file is not named"

# Bad input: each refused with a message and a status.
printf 'not a trace\n' >"$dir/dcoll-x-0.jsonl"
"$tool" "$dir/dcoll-x-0.jsonl" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 1 ] && grep -q "not a dcoll-trace version 1 file" "$dir/err" ||
    bad "a file that is not a trace: exit $rc, $(cat "$dir/err")"
mkdir "$dir/empty"
"$tool" "$dir/empty" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 2 ] && grep -q "no recorder files" "$dir/err" ||
    bad "no files: exit $rc, $(cat "$dir/err")"
"$tool" "$dir/nowhere" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 2 ] && grep -q "nowhere: No such file" "$dir/err" ||
    bad "a missing path: exit $rc, $(cat "$dir/err")"
# A FIFO named like a recorder file: refused, not waited on.
mkfifo "$dir/slow/dcoll-x-7.jsonl"
timeout 20 "$tool" "$dir/slow" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 0 ] && grep -q "dcoll-x-7.jsonl: not a regular file" "$dir/err" ||
    bad "a FIFO: exit $rc, $(cat "$dir/err")"
rm -f "$dir/slow/dcoll-x-7.jsonl"
# A header that claims 300,000,000 ranks costs no memory for them.
mkdir "$dir/huge"
sed '1s/"size":[0-9]*/"size":300000000/' "$dir"/slow/dcoll-*-0.jsonl \
    >"$dir/huge/dcoll-x-0.jsonl"
# (Under AddressSanitizer, whose shadow needs the address space, without
# the limit.)
asan=$(ldd "$tool" 2>/dev/null | grep -c libasan)
out=$([ "$asan" != 0 ] || ulimit -v 262144; "$tool" -j 1 "$dir/huge" 2>&1)
echo "$out" | grep -q "none from ranks 1-299999999 " ||
    bad "a header claiming 300000000 ranks: $out"
"$tool" -j 0 "$dir/slow" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 2 ] && grep -q "\-j takes a number of threads from 1 to 256, not '0'" "$dir/err" ||
    bad "-j 0: exit $rc, $(cat "$dir/err")"
"$tool" -x "$dir/slow" >/dev/null 2>"$dir/err"; rc=$?
[ "$rc" = 2 ] && grep -q "unknown option '-x'" "$dir/err" ||
    bad "-x: exit $rc, $(cat "$dir/err")"
exit $fail
