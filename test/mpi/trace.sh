#!/bin/sh
# DCOLL_DUMP_SIGNAL through the launcher: the ranks keep calling, this
# script sends SIGUSR1 to mpirun or dcollrun (which hand it to every rank,
# as Open MPI's and MPICH's launchers do), and each rank finds its
# recorder file written by its watchdog while the job goes on. Then every
# file's every line is checked to be one JSON object.
# trace.sh MPIRUN_SH|DCOLLRUN TEST_TRACE NP
launch=$1; prog=$2; np=$3
dir=$(mktemp -d); out=$(mktemp)
trap 'rm -rf "$dir" "$out"' EXIT
export DCOLL_DUMP_SIGNAL=USR1
case $launch in
*dcollrun)
    timeout -k 10 60 "$launch" -n "$np" "$prog" signal "$dir" >"$out" 2>&1 & ;;
*)
    "$launch" "$np" 60 "$prog" signal "$dir" >"$out" 2>&1 & ;;
esac
job=$!
fail=0
bad() { echo "FAIL: $*"; fail=1; }
i=0
until grep -q "^ready" "$out" || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "^ready" "$out" || bad "the ranks never became ready"
# The launcher runs under timeout(1), which does not pass SIGUSR1 on:
# send it to the launcher itself.
launcher=$(pgrep -P "$job" | head -n 1)
[ -n "$launcher" ] && kill -USR1 "$launcher" || bad "no launcher to signal"
wait "$job"; rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || bad "the job exited $rc"
n=$(ls "$dir" | grep -c "^dcoll-.*-[0-9]*\.jsonl$")
[ "$n" = "$np" ] || bad "$n recorder file(s) for $np ranks: $(ls "$dir")"
grep -q "dcoll\[0\]: dump asked by signal 10 (User defined signal 1): each rank wrote its flight recorder to $dir/dcoll-" "$out" ||
    bad "rank 0 did not say where the files went"
[ "$(grep -c "dump asked" "$out")" = 1 ] || bad "more than one rank spoke of the dump"
if command -v python3 >/dev/null; then
    python3 - "$dir" <<'PY' || bad "a line is not one JSON object"
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/*.jsonl"):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                obj = json.loads(line)
            except ValueError as e:
                sys.exit("%s:%d: %s" % (path, n, e))
            if n == 1 and (obj.get("schema") != "dcoll-trace" or
                           obj.get("version") != 1):
                sys.exit("%s: header %r" % (path, obj))
PY
fi
[ $fail = 1 ] && cat "$out"
echo "signal dump on $np rank(s): exit $rc, $n file(s)"
exit $fail
