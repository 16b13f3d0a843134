#!/bin/sh
# The ABI check must fail on a real break. BROKEN is the library built from
# the same sources with dcoll_barrier left out of its exports: the check
# must report it and exit non-zero.
check=$1 base=$2 broken=$3 hdrs=$4
command -v abidiff >/dev/null || { echo "abidiff not found: skipping"; exit 77; }
out=$(sh "$check" "$base" "$broken" "$hdrs" 2>&1)
rc=$?
echo "$out"
if [ $rc -eq 0 ]; then echo "the ABI check passed a library that lost dcoll_barrier"; exit 1; fi
echo "$out" | grep -q "dcoll_barrier" || { echo "the report does not name dcoll_barrier"; exit 1; }
echo "the ABI check caught the deliberate break (exit $rc)"
