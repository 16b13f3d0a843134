#!/bin/sh
# One command for a GPU machine: scripts/gpu.sh OUT
#   1. says what is there: driver, GPUs and their compute mode, CUDA,
#      NCCL, MPI, libuv;
#   2. builds with the CUDA plugin and NCCL required (-Dcuda=enabled
#      -Dnccl=enabled) in $DCOLL_GPU_BUILD (default build-gpu), or, with
#      DCOLL_GPU_PREBUILT=1, takes that build as it was carried there;
#   3. runs the gpu suite, where a skipped test counts as a failure
#      (meson test, or scripts/run-tests.py where this machine's meson is
#      not the build's); on the doubles, the tests that run test_gpu and
#      dcoll-perf;
#   4. runs the GPU probe (pointer kinds, stream order, how long a
#      blocking call waits, with the memory said and stream-ordered, each
#      item of the call path timed alone, copy bandwidth (pinned,
#      pageable, device to device), overlap with a kernel on another
#      stream);
#   5. dcoll-perf -m cuda: dcoll against NCCL by hand (1 rank, and 2 to 4
#      ranks on one GPU; with the memory said, -K, twice), the IPC
#      transport and staging (DCOLL_IPC=0) against staging by hand (2 and
#      4 ranks sharing it; IPC under MPS too where it starts), the
#      neighbourhood calls against NCCL's grouped sends and receives by
#      hand (1 rank), and every
#      collective's check;
#   6. host collectives with the plugin loaded and without it;
#   7. compute-sanitizer: test_gpu on one rank; the timeout test on
#      three (NCCL's path, a rank absent; the world's communicator made at
#      init, DCOLL_NCCL_EAGER=1, so the group's split fits its timeout),
#      and its "slowinit" form (an init that outlasts the timeout);
#   8. percall: what dcoll adds to NCCL's call on 1 rank, 8 B to 256
#      MiB, all_reduce and broadcast: by default, the memory said (-K),
#      plans (-P) and stream-ordered (-O), in two launches each, and the
#      raw call against itself (-A) for the noise floor; with
#      DCOLL_GPU_PLUGIN_B, -K and -P -K again on that plugin, alternating.
# Everything lands in OUT, one file a step besides summary.txt (one PASS
# or FAIL line a step) and machine.txt: build.log, tests.log, probe.txt,
# perf.txt, host.txt, sanitizer.txt, percall.txt. Exits 0 only if every
# step passed.
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
if [ "${DCOLL_GPU_PREBUILT:-0}" = 1 ]; then
    {
        echo "DCOLL_GPU_PREBUILT=1: the build in $build as it came"
        ls -l "$build/lib/"libdcoll.so* "$build/cuda_layer/libdcoll_cuda.so"
    } >"$out/build.log" 2>&1
else
    {
        if [ -d "$build/meson-private" ]; then
            meson setup --reconfigure "$build" "$src" -Dcuda=enabled \
                -Dnccl=enabled -Dcudadir="$cuda"
        else
            meson setup "$build" "$src" -Dcuda=enabled -Dnccl=enabled \
                -Dcudadir="$cuda"
        fi && ninja -C "$build"
    } >"$out/build.log" 2>&1
fi
rc=$?
verdict build $rc "-Dcuda=enabled -Dnccl=enabled in $build"
if [ $rc != 0 ]; then
    tail -20 "$out/build.log"
    exit 1
fi

# What the steps run, on a GPU or on the doubles.
if [ $gpu = yes ]; then
    plugin=$build/cuda_layer/libdcoll_cuda.so
    probe=$build/test/gpu/dcoll-gpu-probe
    perf_env=""
    table="-b 16 -e 256M -f 4 -R 3"   # 16 B, 64 B, ... 4 MiB, ... 256 MiB
    # Processes sharing one GPU time-slice it, and NCCL's socket transport
    # between them takes milliseconds a call: fewer calls a size there.
    tableone="-b 16 -e 64M -f 4 -n 20 -w 2 -R 2"
    checks="-b 8 -e 4M -f 16 -R 1"
    small="-b 8 -e 32K -f 8 -R 5"
    checksone="-b 8 -e 4M -f 16 -n 2 -w 1 -R 1"
    hostsizes="-b 8 -e 64K -f 8"
    ceiling="-b 4M -e 256M -f 4 -R 3"
    percall="-b 8 -e 256M -f 2 -R 5"
else
    plugin=$build/test/double/libdcoll_cuda_double.so
    probe=$build/test/double/dcoll-gpu-probe-double
    perf_env=$build/test/double/libdcoll_cudart_double.so
    table="-b 4K -e 256K -f 8 -n 3 -w 1 -R 1"
    checks=$table
    small=$table
    checksone=$table
    tableone=$table
    hostsizes="-b 8 -e 64 -f 8 -n 3 -w 1 -R 1"
    ceiling="-b 4K -e 64K -f 16 -n 3 -w 1 -R 1"
    percall=$table
    # The probe's per-item timings mean nothing on the double: a few.
    export DCOLL_PROBE_ITEMS=${DCOLL_PROBE_ITEMS:-20000}
fi
export DCOLL_CUDA_PLUGIN="$plugin"
# The neighbourhood kinds on a ring (NCCL's grouped sends and receives;
# by hand the same group, the w form packed with cudaMemcpy2DAsync).
nbh="neighbor_all_gather neighbor_all_to_allv neighbor_all_to_allw"
colls="all_reduce broadcast reduce all_gather reduce_scatter all_to_all gather scatter $nbh"
one="DCOLL_NCCL_ONE_GPU=1 NCCL_SOCKET_IFNAME=lo"

# 3. The tests: the gpu suite, or on the doubles the tests that use them.
step_tests() {
    if [ $gpu = yes ]; then
        set -- --suite gpu
    else
        # The tests that run test_gpu and dcoll-perf as the gpu suite
        # does; the main pass runs every other double- test already.
        # shellcheck disable=SC2046
        set -- $(meson test -C "$build" --list 2>/dev/null |
                 sed -n 's/^dcoll:[a-z]* \/ //p' |
                 grep -E '^(double-np|double-staged-np|perf-cuda-|plugin-in-tree)')
    fi
    built=$(python3 -c 'import json, sys
    print(json.load(open(sys.argv[1]))["meson_version"]["full"])' \
        "$build/meson-info/meson-info.json" 2>/dev/null)
    if [ $gpu = yes ] && [ "$(meson --version 2>/dev/null)" != "$built" ]; then
        # The build came from elsewhere: its tests as meson would run them.
        python3 "$src/scripts/run-tests.py" "$build" gpu >"$out/tests.log" 2>&1
    else
        meson test -C "$build" --no-rebuild --print-errorlogs "$@" \
            >"$out/tests.log" 2>&1
    fi
    rc=$?
    # One rank per GPU on every GPU there is (the gpu suite runs it on
    # one): distinct GPUs, NCCL's route, a sub-group's timeout.
    ngpus=$( [ $gpu = yes ] && nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 0)
    if [ "${ngpus:-0}" -gt 1 ]; then
        echo "## test_per_rank on $ngpus ranks, one GPU each" >>"$out/tests.log"
        DCOLL_CUDA_PLUGIN="$plugin" run_mpi "$ngpus" 300 \
            "$build/test/gpu/test_per_rank" >>"$out/tests.log" 2>&1 || rc=1
    fi
    skipped=$(sed -n 's/^Skipped: *//p' "$out/tests.log" | tail -1 | tr -d ' ')
    okn=$(sed -n 's/^Ok: *//p' "$out/tests.log" | tail -1 | tr -d ' ')
    if [ "${skipped:-0}" != 0 ]; then rc=1; fi
    verdict tests $rc "${okn:-0} passed, ${skipped:-0} skipped (a skip fails here)$([ $gpu = no ] && echo ', on the doubles')"
}

# 4. The probe.
step_probe() {
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
}

# 5. dcoll-perf -m cuda.
# perf WHAT NP SIZES ENV COLLS...: one dcoll-perf run, under a heading,
# with the settings ENV names ("-" for none).
perf() {
    what=$1; np=$2; sz=$3; set_=$4; shift 4
    [ "$set_" = - ] && set_=
    echo "## $what"
    # shellcheck disable=SC2086
    env $set_ DCOLL_PERF_CUDA="$perf_env" "$src/test/mpirun.sh" "$np" 300 \
        "$build/bench/dcoll-perf" -m cuda $sz "$@" || rc=1
}
step_perf() {
    rc=0
    {
        [ $gpu = no ] && echo "# on the CUDA and NCCL doubles: the times mean nothing, #wrong does"
        # The tables: all_reduce and broadcast, 8 B to 256 MiB.
        perf "1 rank, NCCL" 1 "$table" - all_reduce broadcast
        # What dcoll adds to a small call, again in two more launches: two
        # H100s gave +0.75 and +1.2 us for the same all_reduce.
        for again in 2 3; do
            perf "1 rank, NCCL, small calls, launch $again" 1 "$small" - \
                all_reduce broadcast
        done
        # shellcheck disable=SC2086
        perf "1 rank, NCCL, neighbourhoods" 1 "$small" - $nbh
        # A plan's start, which asks CUDA nothing of its buffers.
        perf "1 rank, NCCL, plans (-P)" 1 "$small -P" - all_reduce broadcast
        # The memory said (opts.memory, -K): no pointer query a call; the
        # target is 0.2 us over NCCL by hand. Twice, in one lease.
        for again in 1 2; do
            perf "1 rank, NCCL, memory said (-K), launch $again" 1 \
                "$small -K" - all_reduce broadcast
        done
        for np in 2 3 4; do
            perf "$np ranks on one GPU, NCCL, memory said (-K)" "$np" \
                "$small -K" "$one" all_reduce broadcast
        done
        for np in 2 3 4; do
            perf "$np ranks on one GPU, NCCL ($one)" "$np" "$tableone" "$one" \
                all_reduce broadcast
        done
        # Ranks sharing one GPU: the IPC transport, and on a GPU staging
        # beside it (DCOLL_IPC=0), in one lease; the probe's
        # device-to-device line is the GPU's own copy bandwidth. (The
        # doubles' staging is the mpi suite's.)
        for np in 2 4; do
            perf "$np ranks sharing one GPU, IPC" "$np" "$table" \
                FAKE_SHARED_UUID=1 all_reduce broadcast
            [ $gpu = yes ] || continue
            # Plans read inputs where they are (zero copy, from 64 KiB);
            # on the doubles the mpi suite's ipc tests check them.
            perf "$np ranks sharing one GPU, IPC, plans (-P)" "$np" \
                "$table -P" FAKE_SHARED_UUID=1 all_reduce broadcast
            perf "$np ranks sharing one GPU, staged (DCOLL_IPC=0)" "$np" \
                "$table" "FAKE_SHARED_UUID=1 DCOLL_IPC=0" all_reduce broadcast
        done
        # The same under MPS, where the machine has it: the processes then
        # run on the GPU at once instead of taking turns.
        if [ $gpu = yes ] && command -v nvidia-cuda-mps-control >/dev/null; then
            mps=$(mktemp -d)
            mkdir -p "$mps/pipe" "$mps/log"
            export CUDA_MPS_PIPE_DIRECTORY="$mps/pipe"
            export CUDA_MPS_LOG_DIRECTORY="$mps/log"
            if nvidia-cuda-mps-control -d; then
                for np in 2 4; do
                    perf "$np ranks sharing one GPU, IPC, MPS" "$np" \
                        "$table" - all_reduce broadcast
                done
                echo quit | nvidia-cuda-mps-control
            else
                echo "## MPS: nvidia-cuda-mps-control -d failed"
            fi
            unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
            rm -rf "$mps"
        fi
        # The staged path's ceiling: MPI's own call on host memory, the same
        # ranks (dcoll-perf's raw column), beside the pinned copy's bandwidth
        # (the probe's).
        for np in 2 4; do
            echo "## host memory, $np ranks: MPI's own all_reduce and broadcast"
            # shellcheck disable=SC2086
            "$src/test/mpirun.sh" "$np" 300 "$build/bench/dcoll-perf" $ceiling \
                all_reduce broadcast || rc=1
        done
        # Every collective, every element checked.
        # shellcheck disable=SC2086
        perf "checks: 1 rank, NCCL" 1 "$checks" - $colls
        # shellcheck disable=SC2086
        perf "checks: 3 ranks on one GPU, NCCL" 3 "$checksone" "$one" $colls
        # shellcheck disable=SC2086
        perf "checks: 3 ranks sharing one GPU, IPC" 3 "$checks" \
            FAKE_SHARED_UUID=1 $colls
        [ $gpu = no ] ||
            perf "checks: 3 ranks sharing one GPU, staged" 3 "$checks" \
                "FAKE_SHARED_UUID=1 DCOLL_IPC=0" $colls
    } >"$out/perf.txt" 2>&1
    grep -q '^# total #wrong: [1-9]' "$out/perf.txt" && rc=1
    verdict dcoll-perf $rc "-m cuda, every element checked"
}

# 6. Host collectives with the plugin loaded, and without (no plugin to
# load: the same library), in launches that alternate, twice each.
step_host() {
    rc=0
    {
        for r in 1 2; do
            for with in yes no; do
                echo "## round $r, plugin $([ $with = yes ] && echo "loaded ($plugin)" || echo "not loaded")"
                if [ $with = yes ]; then
                    DCOLL_CUDA_PLUGIN=$plugin run_mpi 2 300 "$build/bench/dcoll-perf" \
                        $hostsizes all_reduce broadcast || rc=1
                else
                    env -u DCOLL_CUDA_PLUGIN "$src/test/mpirun.sh" 2 300 \
                        "$build/bench/dcoll-perf" $hostsizes all_reduce broadcast || rc=1
                fi
            done
        done
    } >"$out/host.txt" 2>&1
    verdict host-plugin $rc "host all_reduce and broadcast, 2 ranks, plugin loaded and not"
}

# 7. compute-sanitizer: test_gpu on one rank; the timeout test on three.
step_sanitizer() {
    slimit=${DCOLL_SANITIZER_LIMIT:-300}   # seconds a run
    san=$(command -v compute-sanitizer || echo "$cuda/bin/compute-sanitizer")
    if [ $gpu = yes ] && [ -x "$san" ]; then
        {
            # API errors are not counted: NCCL asks cudaFuncGetAttributes of
            # kernels built for other GPUs and expects the refusal (seen with
            # NCCL 2.28.3 on an H100); memory errors are.
            # The group's timeout 10 s, not 1: under memcheck NCCL's init
            # alone outlasted 1 s on an H100 (and so failed the group).
            # The world's communicator is made at init (DCOLL_NCCL_EAGER,
            # within the init's timeout): memcheck loads and instruments
            # NCCL's kernels there, and the group's split then fits its
            # 10 s (run 2: a first init of its own outlasted them).
            echo "## test_gpu_timeout_cuda, 3 ranks, NCCL, the last absent"
            t0=$(date +%s)
            TEST_GPU_TIMEOUT=10 DCOLL_NCCL_ONE_GPU=1 NCCL_SOCKET_IFNAME=lo \
                DCOLL_NCCL_EAGER=1 run_mpi 3 "$slimit" "$san" \
                --tool memcheck --report-api-errors no --error-exitcode 1 \
                "$build/test/gpu/test_gpu_timeout_cuda"
            b=$?
            echo "## ($(( $(date +%s) - t0 )) s)"
            echo "## test_gpu, 1 rank"
            t0=$(date +%s)
            run_mpi 1 "$slimit" "$san" --tool memcheck --report-api-errors no \
                --error-exitcode 1 "$build/test/gpu/test_gpu"
            a=$?
            echo "## ($(( $(date +%s) - t0 )) s)"
            # An NCCL init slower than the group's 2 s: the call times
            # out, the next says the group failed, at once.
            echo "## test_gpu_timeout_cuda slowinit, 3 ranks, NCCL, timeout 2 s"
            t0=$(date +%s)
            TEST_GPU_TIMEOUT=2 DCOLL_NCCL_ONE_GPU=1 NCCL_SOCKET_IFNAME=lo \
                run_mpi 3 "$slimit" "$san" \
                --tool memcheck --report-api-errors no --error-exitcode 1 \
                "$build/test/gpu/test_gpu_timeout_cuda" slowinit
            c=$?
            echo "## ($(( $(date +%s) - t0 )) s)"
            echo "## exits: $a $b $c"
            [ $a = 0 ] && [ $b = 0 ] && [ $c = 0 ]
        } >"$out/sanitizer.txt" 2>&1
        verdict compute-sanitizer $? "memcheck: test_gpu on 1 rank, the NCCL timeout and slow init on 3"
    elif [ $gpu = yes ]; then
        echo "compute-sanitizer not found under $cuda/bin" >"$out/sanitizer.txt"
        verdict compute-sanitizer 1 "not found"
    else
        echo "no GPU: compute-sanitizer needs one; not run" >"$out/sanitizer.txt"
        say "SKIP compute-sanitizer: no GPU"
    fi
}

# 8. What dcoll adds to NCCL's call, 1 rank, in two launches of each way.
step_percall() {
    rc=0
    {
        [ $gpu = no ] && echo "# on the CUDA and NCCL doubles: the times mean nothing, #wrong does"
        # On the doubles one launch of each way: their times mean nothing.
        launches="1 2"
        if [ $gpu = yes ]; then
            perf "1 rank, NCCL, the raw call against itself (-A)" 1 \
                "$percall -A -c 0" - all_reduce broadcast
        else
            launches=1
        fi
        for again in $launches; do
            # The first launch checks every element; the second times.
            sz=$percall
            [ $again = 2 ] && sz="$sz -c 0"
            perf "1 rank, NCCL, by default, launch $again" 1 "$sz" - \
                all_reduce broadcast
            perf "1 rank, NCCL, memory said (-K), launch $again" 1 \
                "$sz -K" - all_reduce broadcast
            perf "1 rank, NCCL, plans (-P -K), launch $again" 1 \
                "$sz -P -K" - all_reduce broadcast
            perf "1 rank, NCCL, stream-ordered (-O -K), launch $again" 1 \
                "$sz -O -K" - all_reduce broadcast
            # DCOLL_GPU_PLUGIN_B: another build's plugin (same plugin
            # ABI), in launches that alternate with this one's: a change
            # to the plugin's hot path measured in one lease.
            if [ -n "${DCOLL_GPU_PLUGIN_B:-}" ]; then
                b="DCOLL_CUDA_PLUGIN=$DCOLL_GPU_PLUGIN_B"
                perf "1 rank, NCCL, plugin B, memory said (-K), launch $again" \
                    1 "$sz -K" "$b" all_reduce broadcast
                perf "1 rank, NCCL, plugin B, plans (-P -K), launch $again" \
                    1 "$sz -P -K" "$b" all_reduce broadcast
            fi
        done
    } >"$out/percall.txt" 2>&1
    grep -q '^# total #wrong: [1-9]' "$out/percall.txt" && rc=1
    verdict percall $rc "1 rank, by default, -K, -P -K, -O -K, launch(es) $launches"
}

# The steps, in the order DCOLL_GPU_STEPS names them (a short lease runs
# what it needs most first); all of them by default.
for st in ${DCOLL_GPU_STEPS:-tests probe perf percall host sanitizer}; do
    case $st in
    tests|probe|perf|percall|host|sanitizer) "step_$st" ;;
    *) say "FAIL DCOLL_GPU_STEPS: no step \"$st\" (tests probe perf percall host sanitizer)"; failed=1 ;;
    esac
done

[ $failed = 0 ] && say "gpu.sh: every step passed" || say "gpu.sh: some step failed"
exit $failed
