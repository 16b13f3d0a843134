#!/bin/sh
# A fatal signal inside a dcoll call (issue 52, finding 3): each rank
# prints which call it was in and the debug-mode hint, writes its
# recorder file, and still dies by the signal (the launcher says so). The
# same signal in the program's own code gets no dcoll line.
# crash.sh MPIRUN_SH TEST_FAULT NP
mpirun_sh=$1; prog=$2; np=$3
out=$(mktemp); err=$(mktemp); dir=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
DCOLL_FLIGHT_DIR="$dir" "$mpirun_sh" "$np" 60 "$prog" crash >"$out" 2>"$err"
rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" != 0 ] || bad "the job exited 0"
grep "FAIL" "$out" && bad "a rank lived on"
# The launcher's own word that a rank died by signal 11 (or, in the
# sanitizer pass, the sanitizer's handler, which dcoll's passed it to).
grep -qi "signal 11\|Segmentation fault\|EXIT CODE: 139\|AddressSanitizer: SEGV" "$err" ||
    bad "the launcher does not say a rank died by SIGSEGV"
said=$(grep -c "^dcoll\[[0-9]*\]: signal 11 (SIGSEGV, a bad memory access) while this rank was in dcoll_all_reduce on the world ($np ranks) (collective #2, all_reduce int32 SUM count 1024); the process ends by it.*DCOLL_DEBUG=detail checks each call" "$err")
[ "$said" -ge 1 ] || bad "no rank said which call it was in"
files=$(ls "$dir"/dcoll-*.jsonl 2>/dev/null | wc -l)
[ "$files" -ge 1 ] || bad "no recorder file in $dir"
for f in "$dir"/dcoll-*.jsonl; do
    [ -f "$f" ] || continue
    head -n 1 "$f" | grep -q '"reason":"signal 11 (SIGSEGV' ||
        bad "$f does not give the signal as its reason"
    grep -q '"kind":"all_reduce".*"count":1024.*"duration":null' "$f" ||
        bad "$f does not hold the unfinished all_reduce"
done
# In the program's own code: nothing from dcoll.
: >"$err"
"$mpirun_sh" 1 60 "$prog" crash outside >"$out" 2>"$err"
[ "$?" != 0 ] || bad "the outside crash exited 0"
grep -q "^dcoll\[" "$err" && bad "dcoll spoke of a crash outside its calls"
if [ $fail = 1 ]; then echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fi
echo "crash ($np ranks): exit $rc, $said rank(s) said the call, $files file(s)"
grep -m1 "^dcoll\[.*signal 11" "$err"
exit $fail
