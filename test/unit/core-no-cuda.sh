#!/bin/sh
# The core library has no link-time CUDA or NCCL dependency: neither in
# its needed libraries nor as an undefined symbol. core-no-cuda.sh LIB
lib=$1
bad=$(ldd "$lib" | grep -iE 'cuda|nccl')
[ -z "$bad" ] || { echo "libdcoll needs: $bad"; exit 1; }
und=$(nm -D --undefined-only "$lib" | grep -E ' (cuda|cu|nccl)[A-Z]')
[ -z "$und" ] || { echo "libdcoll refers to: $und"; exit 1; }
echo "no CUDA or NCCL in $(basename "$lib")'s dependencies"
