#!/bin/sh
# Install what is missing, build, and run every test suite.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
# Where the CUDA toolkit's headers are (the doubles need no GPU), the main
# build requires the CUDA layer with NCCL, as the GPU machine's build
# does, so that the last step runs on this build instead of one of its own.
cuda=${CUDA_HOME:-/usr/local/cuda}
gpu=
if [ $# -eq 0 ] && [ -f "$cuda/include/nccl.h" ]; then
    gpu="-Dcuda=enabled -Dnccl=enabled -Dcudadir=$cuda"
fi
# shellcheck disable=SC2086
[ -d build ] || meson setup build $gpu
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
if [ -n "$gpu" ]; then
    if meson introspect --buildoptions build | python3 -c 'import json, sys
sys.exit(0 if {o["name"]: o["value"] for o in json.load(sys.stdin)}["nccl"]
         == "enabled" else 1)'; then
        DCOLL_GPU_BUILD="$PWD/build" DCOLL_GPU_PREBUILT=1 \
            ./scripts/gpu.sh build/gpu-out
    else
        ./scripts/gpu.sh build-gpu/out   # a build dir configured before
    fi
fi
