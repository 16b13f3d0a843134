#!/bin/sh
# abi-dump.sh LIBRARY HEADERS OUT: write the ABI dump of a built libdcoll
# (abidw, public types from HEADERS) to OUT, the baseline the abi suite
# compares every later build with. Run through meson, in the commit that
# adds API: ninja -C build abi-dump (docs/abi.md).
set -eu
lib=$1 hdrs=$2 out=$3
abidw --headers-dir "$hdrs" --no-corpus-path "$lib" > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
