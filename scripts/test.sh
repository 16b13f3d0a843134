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
# limit (HACKING.md, Tests). The sanitizer and fuzz builds are another
# matter: made meanwhile at the idle scheduling class (SCHED_IDLE), they
# take only the core time the main and MPICH passes leave unused (the
# deadlines the timing tests wait out, the scripts that run alone), and
# any test process that wakes takes its core back at once.
. ./scripts/pass.sh
later=
stop_later() {
    [ -z "$later" ] || kill -TERM -- "-$later" 2>/dev/null || true
}
trap stop_later EXIT
trap 'stop_later; exit 130' INT TERM
setsid ionice -c 3 chrt --idle 0 sh -c \
    './scripts/sanitize.sh --build && ./scripts/fuzz.sh --build' \
    >build/later-builds.log 2>&1 &
later=$!
pass main meson test -C build --print-errorlogs
pass mpich ./scripts/mpich.sh
t=$(date +%s)
if wait "$later"; then
    echo "sanitizer and fuzz builds: ready, $(($(date +%s) - t)) s waited"
else
    echo "sanitizer and fuzz builds: failed (build/later-builds.log);" \
         "their passes build again"
fi
later=
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
