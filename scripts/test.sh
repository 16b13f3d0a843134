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
# With no tests named, every pass. The MPICH, sanitizer and fuzz passes
# (each a build and a meson of its own, one after another) run beside the
# main pass: most of a test's time is a launch or a wait, and the tests
# that time something hold under two busy processes (scripts/soak.sh).
# Their output comes after the main pass's; each pass says its time.
. ./scripts/pass.sh
mkdir -p build/passes
setsid sh -c '. ./scripts/pass.sh; pass mpich ./scripts/mpich.sh &&
    pass sanitize ./scripts/sanitize.sh && pass fuzz ./scripts/fuzz.sh' \
    >build/passes/side.txt 2>&1 &
side=$!
trap 'kill -- -$side 2>/dev/null' INT TERM
rc=0
pass main meson test -C build --print-errorlogs || rc=1
wait "$side" || rc=1
trap - INT TERM
echo "--- the MPICH, sanitizer and fuzz passes (run beside the main pass)"
cat build/passes/side.txt
[ "$rc" = 0 ] || { grep "^pass " build/passes/side.txt; exit 1; }
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
