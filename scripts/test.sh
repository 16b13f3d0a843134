#!/bin/sh
# Install what is missing, build, and run every test suite.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -d build ] || meson setup build
ninja -C build
# The MPICH build (scripts/mpich.sh tests it below) made first, so that
# the one-binary test links against it instead of building it again.
if [ $# -eq 0 ]; then
    [ -d build-mpich ] || meson setup build-mpich -Dmpi=mpich -Dcuda=disabled
    ninja -C build-mpich
    export DCOLL_OTHER_BUILD="$PWD/build-mpich"
fi
meson test -C build --print-errorlogs "$@"
# With no tests named, the MPICH, sanitizer and fuzz passes too.
[ $# -gt 0 ] || ./scripts/mpich.sh
[ $# -gt 0 ] || ./scripts/sanitize.sh
[ $# -gt 0 ] || ./scripts/fuzz.sh
# And the GPU machine's one command, here on the CUDA and NCCL doubles
# (where the toolkit's headers are), so it is tested before a GPU runs it.
if [ $# -eq 0 ] && [ -f "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" ]; then
    ./scripts/gpu.sh build-gpu/out
fi
