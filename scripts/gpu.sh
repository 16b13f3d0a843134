#!/bin/sh
# One command for a GPU machine: scripts/gpu.sh OUT
#   1. says what is there: driver, GPUs and their compute mode, CUDA,
#      NCCL, MPI, libuv;
#   2. builds with the CUDA plugin and NCCL required (-Dcuda=enabled
#      -Dnccl=enabled) in $DCOLL_GPU_BUILD (default build-gpu);
#   3. runs the gpu suite, where a skipped test counts as a failure;
#   4. runs the GPU probe (pointer kinds, stream order, how long a
#      blocking call waits, pinned bandwidth) and dcoll-perf -m cuda
#      (dcoll against NCCL by hand, and staged against staging by hand);
#   5. runs test_gpu on one rank under compute-sanitizer.
# Everything lands in OUT, in at most 8 files: summary.txt (one PASS or
# FAIL line a step), machine.txt, build.log, tests.log, probe.txt,
# perf.txt, sanitizer.txt. Exits 0 only if every step passed.
# Where there is no GPU it runs the same steps on the CUDA and NCCL
# doubles (test/double/) and says so in every file: the doubles' times
# mean nothing, their verdicts do.
set -u
out=${1:?usage: scripts/gpu.sh OUT}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${DCOLL_GPU_BUILD:-$src/build-gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
failed=0
say() { echo "$*" | tee -a "$summary"; }
verdict() {  # verdict STEP STATUS [DETAIL]
    if [ "$2" = 0 ]; then say "PASS $1${3:+: $3}"; else
        say "FAIL $1${3:+: $3}"; failed=1; fi
}
run_mpi() { "$src/test/mpirun.sh" "$@"; }

# 1. The machine.
gpu=no
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    gpu=yes
fi
cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
{
    echo "# scripts/gpu.sh on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ $gpu = yes ]; then
        nvidia-smi --query-gpu=index,name,driver_version,compute_mode,memory.total,pci.bus_id --format=csv
        nvidia-smi topo -m 2>/dev/null || true
    else
        echo "no GPU (nvidia-smi finds none): the steps run on the CUDA and NCCL doubles"
    fi
    echo "CUDA toolkit at $cuda: $(cat "$cuda/version.json" 2>/dev/null |
        grep -m1 -A1 '"cuda"' | grep -o '"version" *: *"[^"]*"' || echo unknown)"
    "$cuda/bin/nvcc" --version 2>/dev/null | tail -1
    for h in "$cuda/include/nccl.h" /usr/include/nccl.h; do
        [ -f "$h" ] && echo "NCCL header $h: $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH) ' "$h" | awk '{printf "%s ", $3}')"
    done
    ls "$cuda"/lib64/libnccl.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null
    mpirun --version 2>/dev/null | head -1
    echo "libuv $(pkg-config --modversion libuv 2>/dev/null || echo 'not found')"
    command -v compute-sanitizer || ls "$cuda/bin/compute-sanitizer" 2>/dev/null
} >"$out/machine.txt" 2>&1
if [ $gpu = yes ]; then
    mode=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader | head -1)
    say "GPU machine: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), compute mode $mode"
else
    say "no GPU here: every step below runs on the CUDA and NCCL doubles"
fi

# 2. The build.
{
    if [ -d "$build/meson-private" ]; then
        meson setup --reconfigure "$build" "$src" -Dcuda=enabled \
            -Dnccl=enabled -Dcudadir="$cuda"
    else
        meson setup "$build" "$src" -Dcuda=enabled -Dnccl=enabled \
            -Dcudadir="$cuda"
    fi && ninja -C "$build"
} >"$out/build.log" 2>&1
rc=$?
verdict build $rc "-Dcuda=enabled -Dnccl=enabled in $build"
if [ $rc != 0 ]; then
    tail -20 "$out/build.log"
    exit 1
fi

# 3. The tests: the gpu suite, or on the doubles the tests that use them.
if [ $gpu = yes ]; then
    set -- --suite gpu
else
    # shellcheck disable=SC2046
    set -- $(meson test -C "$build" --list 2>/dev/null |
             sed -n 's/^dcoll:[a-z]* \/ //p' |
             grep -E '^(double-|perf-cuda-|plugin-in-tree)')
fi
meson test -C "$build" --no-rebuild --print-errorlogs "$@" >"$out/tests.log" 2>&1
rc=$?
skipped=$(sed -n 's/^Skipped: *//p' "$out/tests.log" | tail -1 | tr -d ' ')
okn=$(sed -n 's/^Ok: *//p' "$out/tests.log" | tail -1 | tr -d ' ')
if [ "${skipped:-0}" != 0 ]; then rc=1; fi
verdict tests $rc "${okn:-0} passed, ${skipped:-0} skipped (a skip fails here)$([ $gpu = no ] && echo ', on the doubles')"

# 4. The probe and dcoll-perf.
if [ $gpu = yes ]; then
    plugin=$build/cuda_layer/libdcoll_cuda.so
    probe=$build/test/gpu/dcoll-gpu-probe
    perf_env=""
    sizes="-b 8 -e 64M -f 4"
else
    plugin=$build/test/double/libdcoll_cuda_double.so
    probe=$build/test/double/dcoll-gpu-probe-double
    perf_env=$build/test/double/libdcoll_cudart_double.so
    sizes="-b 4K -e 256K -f 8 -n 3 -w 1 -R 1"
fi
export DCOLL_CUDA_PLUGIN="$plugin"
rc=0
{
    [ $gpu = no ] && echo "# on the CUDA double: its figures are the double's, not a GPU's"
    echo "## 1 rank"
    run_mpi 1 300 "$probe" || rc=1
    echo "## 2 ranks on one GPU, staged"
    run_mpi 2 300 "$probe" || rc=1
    echo "## 2 ranks on one GPU, NCCL (DCOLL_NCCL_ONE_GPU=1)"
    DCOLL_NCCL_ONE_GPU=1 NCCL_SOCKET_IFNAME=lo run_mpi 2 300 "$probe" || rc=1
} >"$out/probe.txt" 2>&1
verdict probe $rc
colls="all_reduce broadcast reduce all_gather reduce_scatter all_to_all gather scatter"
rc=0
{
    [ $gpu = no ] && echo "# on the CUDA and NCCL doubles: the times mean nothing, #wrong does"
    echo "## 1 rank, NCCL"
    # shellcheck disable=SC2086
    DCOLL_PERF_CUDA=$perf_env run_mpi 1 600 "$build/bench/dcoll-perf" -m cuda $sizes $colls || rc=1
    echo "## 2 ranks on one GPU, NCCL (DCOLL_NCCL_ONE_GPU=1)"
    # shellcheck disable=SC2086
    DCOLL_PERF_CUDA=$perf_env DCOLL_NCCL_ONE_GPU=1 NCCL_SOCKET_IFNAME=lo \
        run_mpi 2 600 "$build/bench/dcoll-perf" -m cuda $sizes $colls || rc=1
    echo "## 2 ranks on one GPU, staged"
    # shellcheck disable=SC2086
    DCOLL_PERF_CUDA=$perf_env FAKE_SHARED_UUID=1 \
        run_mpi 2 600 "$build/bench/dcoll-perf" -m cuda $sizes $colls || rc=1
} >"$out/perf.txt" 2>&1
verdict dcoll-perf $rc "-m cuda, every element checked"

# 5. compute-sanitizer on one rank of test_gpu.
san=$(command -v compute-sanitizer || echo "$cuda/bin/compute-sanitizer")
if [ $gpu = yes ] && [ -x "$san" ]; then
    run_mpi 1 600 "$san" --tool memcheck --error-exitcode 1 \
        "$build/test/gpu/test_gpu" >"$out/sanitizer.txt" 2>&1
    verdict compute-sanitizer $? "memcheck on test_gpu, 1 rank"
elif [ $gpu = yes ]; then
    echo "compute-sanitizer not found under $cuda/bin" >"$out/sanitizer.txt"
    verdict compute-sanitizer 1 "not found"
else
    echo "no GPU: compute-sanitizer needs one; not run" >"$out/sanitizer.txt"
    say "SKIP compute-sanitizer: no GPU"
fi

[ $failed = 0 ] && say "gpu.sh: every step passed" || say "gpu.sh: some step failed"
exit $failed
