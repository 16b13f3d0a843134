#!/bin/sh
# The core library has no link-time CUDA or NCCL dependency: neither in
# its needed libraries nor as an undefined symbol. core-no-cuda.sh LIB
lib=$1
for t in ldd nm; do
    command -v "$t" >/dev/null ||
        { echo "$t not found (binutils, libc-bin): cannot read $lib; skipping"; exit 77; }
done
needed=$(ldd "$lib") || { echo "ldd could not read $lib"; exit 1; }
bad=$(echo "$needed" | grep -iE 'cuda|nccl')
[ -z "$bad" ] || { echo "libdcoll needs: $bad"; exit 1; }
syms=$(nm -D --undefined-only "$lib") || { echo "nm could not read $lib"; exit 1; }
[ -n "$syms" ] || { echo "nm listed no undefined symbol in $lib (not even libc's)"; exit 1; }
und=$(echo "$syms" | grep -E ' (cuda|cu|nccl)[A-Z]')
[ -z "$und" ] || { echo "libdcoll refers to: $und"; exit 1; }
echo "no CUDA or NCCL in $(basename "$lib")'s dependencies"
