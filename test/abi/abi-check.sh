#!/bin/sh
# abi-check.sh BASELINE LIBRARY HEADERS: compare a built library with the
# committed ABI baseline. Fails on any change abidiff calls incompatible
# (or on a change at all when STRICT=1); additions pass, reported.
base=$1 lib=$2 hdrs=$3
command -v abidiff >/dev/null || { echo "abidiff not found: skipping"; exit 77; }
out=$(abidiff --headers-dir2 "$hdrs" --no-added-syms "$base" "$lib" 2>&1)
rc=$?
echo "$out"
# abidiff's exit status is a bit field: 1 error, 2 usage, 4 change,
# 8 incompatible change.
if [ $((rc & 3)) -ne 0 ]; then echo "abidiff failed to run ($rc)"; exit 1; fi
if [ $((rc & 8)) -ne 0 ]; then echo "ABI BREAK against $base"; exit 1; fi
if [ "${STRICT:-0}" = 1 ] && [ $((rc & 4)) -ne 0 ]; then
    echo "ABI changed against $base"; exit 1
fi
echo "ABI compatible with $base"
