#!/bin/sh
# A hang at default settings (DCOLL_ON_TIMEOUT=abort) ends the job: the
# lowest rank that found it prints the report naming the missing rank (or,
# for mixed, the ranks' forms) within the 2-s timeout + 2 s of calling, a
# rank that never reached the call says where it stands in one line, every
# surviving rank writes its flight recorder file, the job exits non-zero,
# and no rank is left running.
# dcoll-trace, given, merges the files and names the rank behind.
# With FAULT_HANG_BY=NAME, the recorders say transport NAME ran the call.
# fault-hang.sh MPIRUN_SH TEST_FAULT HOW NP [DCOLL_TRACE]
mpirun_sh=$1; prog=$2; how=$3; np=$4; tool=${5:-}
. "$(dirname "$0")/left.sh"
left_mark
out=$(mktemp); err=$(mktemp); dir=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$dir"' EXIT
export DCOLL_FLIGHT_DIR="$dir"
# Each stderr line stamped with when it came, to time the reports.
rcf=$(mktemp)
{ "$mpirun_sh" "$np" 60 "$prog" hang "$how" 2>&1 >"$out"; echo $? >"$rcf"; } |
    while IFS= read -r line; do
        printf '%s %s\n' "$(date +%s.%N)" "$line"
    done >"$err"
rc=$(cat "$rcf"); rm -f "$rcf"
end=$(date +%s.%N)
[ "$rc" = 77 ] && exit 77
fail=0
bad() { echo "FAIL: $*"; fail=1; }
last=$((np - 1))
# OpenMPI 4 with orte_enable_recovery (which the killed case needs, or
# mpirun ends the job itself at the death) exits 0 after MPI_Abort once
# a rank has died: its exit code is lost there, not here.
[ "$rc" != 0 ] || [ "$how" = killed ] || bad "mpirun exited 0"
[ "$rc" != 124 ] && [ "$rc" != 137 ] || bad "the job ran into the test's time limit"
grep "FAIL" "$out" && bad "a hung call returned"
# Init says nothing of the thread level where the world keeps the
# built-in timeout (quiet.sh checks when it does speak); below
# MPI_THREAD_MULTIPLE the hang's report says why it could not ask (below).
said=$(grep -c "dcoll\[0\]: MPI runs below MPI_THREAD_MULTIPLE" "$err")
[ "$said" = 0 ] || bad "init said $said time(s) that MPI runs below MPI_THREAD_MULTIPLE"
case $how in
    killed) alive=$last ;;   # ranks 0..last-1 survive
    mixed|planmixed|planforms|wrongkind|p2p) alive=$np ;;
    *) alive=$last ;;
esac
# The report: from the lowest rank that found the hang (two that found it
# at the same instant may both print it); without MPI_THREAD_MULTIPLE,
# from every stuck rank, as none can tell the others.
reports=$(grep -c "^[0-9.]* dcoll\[[0-9]*\]: .*timed out after 2 s" "$err")
first=$(grep -m1 "^[0-9.]* dcoll\[[0-9]*\]: .*timed out after 2 s" "$err" |
    sed 's/^[0-9.]* dcoll\[\([0-9]*\)\].*/\1/')
[ "$reports" -ge 1 ] || bad "no rank printed the report"
# DCOLL_REPORT=all: every rank prints it whole, as before 1.10.
whole=${DCOLL_REPORT:-brief}
if [ "$how" = nothreads ]; then
    [ "$reports" = "$last" ] || bad "$reports report(s) from $last stuck rank(s)"
elif [ "$whole" = all ]; then
    [ "$reports" -ge "$alive" ] || bad "$reports whole report(s) from $alive ranks"
else
    [ "$reports" -le 2 ] || bad "$reports ranks printed the whole report"
fi
# A rank that never reached the call says so in one line (not the
# killed one, nor one that refused the call and so took its number).
case $how in absent|busy|plan|newgroup|split)
    grep -q "^[0-9.]* dcoll\[$last\]: rank $last on .*timed out on rank .*never reached it" "$err" ||
        grep -q "^[0-9.]* dcoll\[$last\]: .*This rank never reached it" "$err" ||
        bad "rank $last did not say where it stands" ;;
esac
r=0
while [ "$r" -lt "$alive" ]; do
    called=$(sed -n "s/^rank $r calls at //p" "$out")
    [ -n "$called" ] || bad "rank $r never called"
    # The report, as the first rank that printed it did (each its own,
    # with DCOLL_REPORT=all).
    who=$first
    [ "$whole" = all ] && who=$r
    lines=$(grep "^[0-9.]* dcoll\[$who\]: .*timed out after 2 s" "$err")
    [ -n "$lines" ] || bad "rank $r printed no report"
    case $how in
        mixed)
            echo "$lines" | grep -q "called it blocking and .* async" ||
                bad "rank $r's report does not name the forms" ;;
        planmixed)
            echo "$lines" | grep -q "rank 1 (world 1) called it blocking, ranks 0,2 (world 0,2) started a plan of it blocking; MPI never matches" ||
                bad "rank $r's report does not name the plan's start" ;;
        planforms)
            echo "$lines" | grep -q "ranks 0,2 (world 0,2) started the plan blocking and rank 1 (world 1) with a work handle (async)" ||
                bad "rank $r's report does not name the two forms of the plan's starts" ;;
        wrongkind)
            echo "$lines" | grep -q "rank $last (world $last) is in barrier #[0-9]* instead" ||
                bad "rank $r's report does not name rank $last's barrier" ;;
        plan)
            echo "$lines" | grep -q "persistent start" ||
                bad "rank $r's report does not name a persistent start"
            echo "$lines" | grep -q "rank $last (world $last) did not arrive\|ranks .*$last.* did not arrive" ||
                bad "rank $r's report does not name rank $last" ;;
        refused)
            echo "$lines" | grep -q "rank $last (world $last) refused all_reduce #[0-9]*: count -1 is negative" ||
                bad "rank $r's report does not name rank $last's refusal" ;;
        nothreads)
            echo "$lines" | grep -q "could not be asked" ||
                bad "rank $r's report does not say why it could not ask" ;;
        p2p)
            echo "$lines" | grep -q "dcoll_recv on group 1 (world ranks {[0-9,]*}) timed out after 2 s (recv from rank 1 (world 1), tag 7, blocking): the peer, rank 1 (world 1), is not waiting in a call on the group; its latest is all_reduce #1 (blocking)" ||
                bad "rank $r's report does not name the peer, the tag and where the peer is" ;;
        newgroup)
            echo "$lines" | grep -q "dcoll_new_group on the world .*rank $last did not arrive" ||
                bad "rank $r's report does not name rank $last" ;;
        killed)
            echo "$lines" | grep -q "rank $last (world $last) did not answer\|ranks .*$last.* did not answer" ||
                bad "rank $r's report does not name rank $last" ;;
        *)
            echo "$lines" | grep -q "rank $last (world $last) did not arrive\|ranks .*$last.* did not arrive" ||
                bad "rank $r's report does not name rank $last" ;;
    esac
    [ "$how" = nothreads ] || echo "$lines" | grep -q "ends the job" ||
        bad "rank $r's report does not say the job ends"
    # Its recorder, in its file: the job's id, its rank, group 1's calls.
    file=$(ls "$dir"/dcoll-*-"$r".jsonl 2>/dev/null | head -n 1)
    if [ -z "$file" ]; then
        bad "rank $r wrote no flight recorder file in $dir"
    else
        head -n 1 "$file" | grep -q "^{\"schema\":\"dcoll-trace\",\"version\":1,\"job\":\"[^\"]*\",\"rank\":$r," ||
            bad "rank $r's file does not start with its header: $(head -c 300 "$file")"
        grep -q "^{\"call\":[0-9]*,\"entry\":[0-9]*,\"group\":1,\"sig\":\"[0-9a-f]*\",\"kind\":\"all_reduce\"" "$file" ||
            bad "rank $r's file holds no all_reduce on group 1"
        [ -z "${FAULT_HANG_BY:-}" ] ||
            grep -q "\"kind\":\"all_reduce\".*\"by\":\"$FAULT_HANG_BY\"" "$file" ||
            bad "rank $r's file has no all_reduce by $FAULT_HANG_BY"
    fi
    at=$(echo "$lines" | head -n 1 | cut -d' ' -f1)
    said=$(awk -v a="${at:-0}" -v b="$called" 'BEGIN { printf "%.2f", a - b }')
    took=$(awk -v a="$end" -v b="$called" 'BEGIN { printf "%.2f", a - b }')
    echo "rank $r: report $said s after it called, job ended after $took s"
    awk -v t="$said" 'BEGIN { exit !(t <= 4.0) }' ||
        bad "rank $r's report came $said s after it called (timeout 2 s)"
    # Open MPI's mpirun sometimes takes 7-8 s more to end the job after
    # MPI_Abort (its show_help "Data unpack would read past end of
    # buffer" on a loaded 2-core runner, with or without dcoll's
    # changes): 15 s tells that apart from a job that does not end.
    awk -v t="$took" 'BEGIN { exit !(t <= 15.0) }' ||
        bad "rank $r's job ended $took s after it called"
    r=$((r + 1))
done
# The files merged: the ranks that arrived in the call, the one behind.
if [ -n "$tool" ] && [ "$how" = absent ]; then
    merged=$("$tool" -q "$dir")
    echo "$merged"
    arrived=$([ "$last" = 1 ] && echo "rank 0" || echo "ranks 0-$((last - 1))")
    echo "$merged" | grep -q "^    $arrived ([^)]*): in all_reduce #2 (blocking), waiting for " ||
        bad "dcoll-trace does not put $arrived in all_reduce #2"
    echo "$merged" | grep -q "^    rank $last ([^)]*): behind, at all_reduce #1 (blocking), idle$" ||
        bad "dcoll-trace does not name rank $last as behind"
fi
# A rank in an unfinished receive is in it, not idle at its latest
# collective.
if [ -n "$tool" ] && [ "$how" = p2p ]; then
    merged=$("$tool" -q "$dir")
    echo "$merged"
    echo "$merged" | grep -q "^    rank 0 ([^)]*): in recv from rank 1 (unfinished, posted [0-9.]* s before the writing); latest collective all_reduce #1 (blocking)$" ||
        bad "dcoll-trace does not put rank 0 in its receive"
fi
sleep 1
left=$(left_pids "$prog" | wc -l)
[ "$left" = 0 ] || bad "$left rank(s) still running"
lines=$(wc -l <"$err")
if [ $fail = 1 ]; then echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fi
echo "$reports whole report(s), $lines line(s) of stderr"
echo "hang ($how, $np ranks): exit $rc, $left left"
grep -m1 "timed out after" "$err" | cut -d' ' -f2-
exit $fail
