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
if [ $# -gt 0 ]; then
    meson test -C build --print-errorlogs "$@"
    exit
fi
# With no tests named, every pass, one after another, each saying how
# long it took (pass NAME: ok in N s). Side by side on the 2-core
# machine the main pass took 1,482 s and MPICH's 1,015 s, where alone
# they had taken 1,144 and about 600: the tests are bound by the cores,
# not by their waits, so passes at once save little and stretch every
# limit (HACKING.md, Tests).
. ./scripts/pass.sh
pass main meson test -C build --print-errorlogs
pass mpich ./scripts/mpich.sh
pass sanitize ./scripts/sanitize.sh
pass fuzz ./scripts/fuzz.sh
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
