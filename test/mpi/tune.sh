#!/bin/sh
# dcoll-tune writes a table that dcoll_init takes, merges the tables of
# several group sizes into one file, and refuses what it must not
# overwrite or cannot do: tune.sh MPIRUN_SH DCOLL_TUNE DCOLL_PERF DCOLLRUN TOUR
mpirun_sh=$1 tune=$2 perf=$3 dcollrun=$4 tour=$5
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# Short: the smallest sizes, few calls, two rounds.
quick="-b 8 -e 1K -f 4 -n 5 -w 1 -R 2"

# Status and output of a run: run NP ARGS...
run() {
    np=$1; shift
    out=$("$mpirun_sh" "$np" 120 "$tune" "$@" 2>&1); rc=$?
}

t=$dir/table
run 2 $quick -o "$t"
[ "$rc" -eq 0 ] || fail "2 ranks: rc $rc: $out"
head -1 "$t" | grep -qx 'dcoll-tuning 1' || fail "first line: $(head -1 "$t")"
grep -q '^# group 2 [0-9]* all_reduce: ' "$t" || fail "no group 2 section"
tail -1 "$t" | grep -qx 'end' || fail "last line: $(tail -1 "$t")"
grep -q '^#   all_reduce  *8 ' "$t" || fail "no all_reduce 8 B figures"
grep -q '^#   reduce_scatter ' "$t" || fail "no reduce_scatter figures"
printf '%s\n' "$out" | grep -q "wrote $t" || fail "no 'wrote': $out"
# Two ranks on one node: the shared segment's way is measured for every
# kind, and where it is, every size has a row (MPI's call included), so
# that dcoll's rules decide nothing the run measured.
for k in all_reduce reduce_scatter broadcast reduce all_gather; do
    grep -A1 "^# group 2 [0-9]* $k: " "$t" | grep -q ' shm  *pick, gain$' ||
        fail "$k: no shm column"
    first=$(grep -E "^$k +2 " "$t" | head -1 | awk '{print $4}')
    [ "$first" = 8 ] || [ "$first" = 4 ] ||
        fail "$k: the first row starts at '$first', not the first size"
done

# A row of a group this run does not touch is kept as it is.
sed -i '$d' "$t"
echo 'all_reduce 5 5 64 128 reduce+broadcast' >> "$t"
echo 'end' >> "$t"
run 3 $quick -o "$t" all_reduce
[ "$rc" -eq 0 ] || fail "3 ranks: rc $rc: $out"
grep -q '^# group 2 [0-9]* reduce_scatter: ' "$t" ||
    fail "group 2 lost by the 3-rank run"
grep -q '^# group 3 [0-9]* all_reduce: ' "$t" || fail "no group 3 section"
grep -q '^all_reduce 5 5 64 128 reduce+broadcast$' "$t" ||
    fail "group 5's row lost"
[ "$(grep -c '^# group 2 ' "$t")" -eq 5 ] || fail "group 2: not one section per kind"
grep -q '^#   reduce_scatter ' "$t" || fail "group 2's figures lost"

# Remade, not added: one section per group.
run 2 $quick -o "$t"
[ "$rc" -eq 0 ] || fail "2 ranks again: rc $rc: $out"
[ "$(grep -c '^# group 2 ' "$t")" -eq 5 ] || fail "group 2: not one section per kind"
grep -q '^# group 3 ' "$t" || fail "group 3 lost by the 2-rank run"

# dcoll_init takes the table (a malformed one fails init, and dcoll-perf).
out=$(DCOLL_TUNING=$t "$mpirun_sh" 2 60 -x DCOLL_TUNING "$perf" -b 64 \
      -e 64 -n 2 -w 1 -R 1 all_reduce reduce_scatter 2>&1) ||
    fail "dcoll-perf with the table: $out"

# -k keeps a way only where the file had it: here the file has none for
# 3 ranks' reduce_scatter, so none is kept.
run 3 $quick -m 0 -k -o "$t" reduce_scatter
[ "$rc" -eq 0 ] || fail "-k: rc $rc: $out"
grep -E '^reduce_scatter +3 ' "$t" | grep -qv ' mpi$' &&
    fail "-k kept a way the file lacked: $(grep '^reduce_scatter  *3 ' "$t")"
grep -qE '^reduce_scatter +3 +[0-9]+ +[0-9]+ +[0-9-]+ +mpi$' "$t" ||
    fail "-k: no row keeps MPI's call where shm was measured"
printf '%s\n' "$out" | grep -q "the table for 3 ranks, [0-9]* a node is empty of other ways.*its rows keep MPI's call" ||
    fail "-k kept nothing, but dcoll-tune did not say the table is empty: $out"
# -H: every way timed on buffers from dcoll_mem_alloc, and the table
# says so.
run 2 $quick -H -o "$dir/heap" broadcast reduce
[ "$rc" -eq 0 ] || fail "-H: rc $rc: $out"
grep -q '^# group 2 2 broadcast: .*dcoll-tune -H (buffers from dcoll_mem_alloc), ' \
    "$dir/heap" || fail "-H: the table does not say so: $(grep '^# group' "$dir/heap")"
grep -qE '^reduce +2 +2 +8 ' "$dir/heap" || fail "-H: no reduce row from 8 B"
# One rank: no segment to measure, no column for it.
run 1 $quick all_reduce
[ "$rc" -eq 0 ] || fail "1 rank: rc $rc: $out"
printf '%s\n' "$out" | grep -q ' shm  *pick' && fail "1 rank: a shm column: $out"
grep -q '^# group 3 [0-9]* all_reduce: ' "$t" ||
    fail "a reduce_scatter run lost group 3's all_reduce"

# Refusals, the file left as it was.
expect() {
    want=$1 np=$2; shift 2
    run "$np" "$@"
    if [ "$rc" -eq 0 ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
        echo "FAIL: dcoll-tune $* -> rc $rc, want failure and '$want'; got:"
        printf '%s\n' "$out" | head -5
        fails=$((fails + 1))
    fi
}
echo 'not a table' > "$dir/other"
expect "is not a dcoll tuning table" 1 $quick -o "$dir/other"
[ "$(cat "$dir/other")" = 'not a table' ] || fail "a non-table overwritten"
sed '2s/.*/mpi Some Other MPI 9.9/' "$t" > "$dir/foreign"
expect "was made with another MPI" 1 $quick -o "$dir/foreign"
grep -q '^mpi Some Other MPI 9.9$' "$dir/foreign" || fail "foreign overwritten"
sed '$d' "$t" > "$dir/cut"
expect "no 'end' line" 1 $quick -o "$dir/cut"
expect "-k needs -o" 1 -k
expect "does not exist" 1 $quick -k -o "$dir/none"
expect "-R: '0' is out of range" 1 -R 0
expect "-b 2048 is above -e 1024" 1 -b 2K -e 1K
expect "'allreduce' is not a kind a table covers (all_reduce, reduce_scatter, broadcast, reduce, all_gather)" 1 allreduce
# Under dcollrun MPI joins none of the processes: refused, not N tunings
# of one rank each writing the same file.
out=$("$dcollrun" -n 2 --timeout 60 "$tune" $quick -o "$dir/dr" 2>&1); rc=$?
[ "$rc" -ne 0 ] || fail "under dcollrun: exit 0"
printf '%s\n' "$out" | grep -q "Start it with mpirun or srun (mpirun -n 2" ||
    fail "under dcollrun, no refusal naming mpirun: $out"
[ ! -e "$dir/dr" ] || fail "under dcollrun, a table was written"
# A table for 2 ranks, 2 a node, made under mpirun, is used under dcollrun
# on the same node (whose joined processes MPI's shared-memory split sees
# as a node each: dcoll counts by host name).
{ head -2 "$t"; echo 'all_reduce 2 2 1 1000000000 reduce+broadcast'; echo end; } \
    > "$dir/two"
out=$(DCOLL_TUNING=$dir/two DCOLL_DEBUG=detail "$dcollrun" -n 2 --timeout 60 \
      "$tour" 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "tour under dcollrun with the table: rc $rc: $out"
printf '%s\n' "$out" | grep -q "by reduce+broadcast, as the tuning table says" ||
    fail "under dcollrun the 2-a-node table was not used: $out"
[ "$fails" -eq 0 ] && echo "dcoll-tune: tables written, merged and refused"
exit "$fails"
