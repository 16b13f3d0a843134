#!/bin/sh
# Instructions per blocking NCCL all_reduce (opts.memory and opts.stream
# set) on the CUDA and NCCL doubles, dcoll against NCCL by hand, counted
# by callgrind on one rank (bench/README.md, "Per-call cost on the
# doubles"). Usage: bench/gpu-overhead.sh [BUILD_DIR]
#   dcoll blocking     the whole call, its wait for the stream included
#   dcoll, no wait     the same less the wait's loop (the part that does
#                      not depend on how long the GPU takes)
#   dcoll ordered      DCOLL_COLL_OPT_STREAM_ORDERED: the whole call
#   NCCL enqueue       ncclAllReduce alone
#   NCCL + sync        ncclAllReduce and cudaStreamSynchronize
# The waits spin while the doubles' stream threads run, so the lines that
# include one vary from run to run; the others do not. The NCCL double's
# launches are done at once (FAKE_NCCL_LAUNCH_US=0): dcoll's nonblocking
# communicators then settle at the first ncclCommGetAsyncError, as the
# raw side's blocking one needs none.
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
exe=$build/test/double/dcoll-gpu-overhead
[ -x "$exe" ] || { echo "gpu-overhead.sh: $exe not built (needs the CUDA headers, nccl.h and valgrind)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "gpu-overhead.sh: valgrind not found" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
DCOLL_CUDA_PLUGIN=$build/test/double/libdcoll_cuda_double.so \
FAKE_CUDA_DELAY_US=0 FAKE_NCCL_DELAY_US=0 FAKE_NCCL_LAUNCH_US=0 \
    "$here/../test/mpirun.sh" 1 900 valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg" "$exe" >"$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; exit 1; }
calls=$(sed -n 's/^calls per loop: //p' "$tmp/log")
echo "# instructions per call ($calls calls per loop, 1 rank, the doubles)"
callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg" |
    awk -v calls="$calls" '
    {
        gsub(",", "", $1)
        v = $1 + 0
        if (match($0, /via_[a-z_]+/) && v > ir[substr($0, RSTART, RLENGTH)])
            ir[substr($0, RSTART, RLENGTH)] = v
        # The wait loop: wait_for (since issue 48), dcoll_nccl_event_wait
        # before it.
        if ($0 ~ /[^_a-z]wait_for[^_a-z]/ || $0 ~ /dcoll_nccl_event_wait/)
            if (v > wait) wait = v
    }
    END {
        b = ir["via_dcoll_blocking"] / calls
        e = ir["via_nccl_enqueue"] / calls
        printf "%-22s %10.1f\n", "dcoll blocking", b
        printf "%-22s %10.1f\n", "dcoll, no wait", b - wait / calls
        if (ir["via_dcoll_ordered"] > 0)
            printf "%-22s %10.1f\n", "dcoll ordered", ir["via_dcoll_ordered"] / calls
        printf "%-22s %10.1f\n", "NCCL enqueue", e
        printf "%-22s %10.1f\n", "NCCL + sync", ir["via_nccl_blocking"] / calls
        printf "%-22s %10.1f\n", "added, no wait", b - wait / calls - e
        if (ir["via_dcoll_ordered"] > 0)
            printf "%-22s %10.1f\n", "added, ordered", ir["via_dcoll_ordered"] / calls - e
    }'
