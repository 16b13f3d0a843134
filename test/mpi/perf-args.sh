#!/bin/sh
# dcoll-perf refuses bad options with status 2 and a message naming the
# value: perf-args.sh MPIRUN_SH DCOLL_PERF
mpirun_sh=$1 perf=$2
fails=0
expect() {
    want=$1; shift
    out=$("$mpirun_sh" 1 60 "$perf" "$@" 2>&1); rc=$?
    if [ "$rc" -ne 2 ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
        echo "FAIL: dcoll-perf $* -> rc $rc, want 2 and '$want'; got:"
        printf '%s\n' "$out" | head -5
        fails=$((fails + 1))
    fi
}
expect "bad value 'float99'" -d float99
expect "bad value 'mean'" -p mean
expect "bad value '0'" -R 0
expect "bad value '12Q'" -e 12Q
expect "never end" -b 1M -e 1K
expect "never end" -b 1K -e 2K -f 1
# No GPU here (or no CUDA headers at build time): refused, saying why.
if ! nvidia-smi -L >/dev/null 2>&1; then
    expect "dcoll-perf: -m cuda: " -m cuda
fi
expect "-m 'disk'" -m disk
expect "unknown collective 'allreduce'" allreduce
expect "'5' is not a world rank" -g 0,5
expect "must end in .json or .csv" -e 8 -o out.txt
expect "-r 3" -r 3 broadcast
[ "$fails" -eq 0 ] && echo "all bad options refused"
exit "$fails"
