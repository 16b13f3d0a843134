#!/bin/sh
# dcoll-perf refuses bad options with status 2 and a message naming the
# value: perf-args.sh MPIRUN_SH DCOLL_PERF
# Each as an MPI singleton (a launch would cost 2 s each); the rank
# check under the launcher too.
mpirun_sh=$1 perf=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
fails=0
launch=""
expect() {
    want=$1; shift
    # shellcheck disable=SC2086
    out=$(timeout 60 $launch "$perf" "$@" 2>&1); rc=$?
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
launch="$mpirun_sh 2 60"
expect "'5' is not a world rank" -g 0,5
[ "$fails" -eq 0 ] && echo "all bad options refused"
exit "$fails"
