#!/bin/sh
# The timing-sensitive tests under load: ROUNDS rounds in a row of the
# tests test/timing.txt names (nodes, fault, shrink, restart, hang,
# timeout, keeper and the like) of BUILD (default build, made already),
# each round with two busy processes competing for the cores (the tests
# paired as meson pairs them in the suite), as on a
# CI machine running something else. A round that fails keeps its log
# (BUILD/soak/round-N.txt) and names its failed tests; the script fails
# if any round did.
#   scripts/soak.sh ROUNDS [BUILD]
set -u
cd "$(dirname "$0")/.." || exit 1
rounds=${1:-}
build=${2:-build}
case $rounds in
''|*[!0-9]*|0) echo "usage: scripts/soak.sh ROUNDS [BUILD] (ROUNDS >= 1)" >&2
                exit 2 ;;
esac
[ -f "$build/build.ninja" ] ||
    { echo "soak: $build is not a configured build (meson setup $build)" >&2
      exit 2; }
ninja -C "$build" >/dev/null || exit 1
# Which tests: those test/timing.txt names (the ones that run alone), by
# name, from the build's own list.
pattern=$(sed -n 's/^start \(.*\)/^\1/p; s/^has \(.*\)/\1/p' test/timing.txt |
          paste -sd'|')
names=$(meson test -C "$build" --list 2>/dev/null | sed 's|^.* / ||' |
        grep -E "$pattern" | sort -u)
[ -n "$names" ] || { echo "soak: no tests matched in $build" >&2; exit 2; }
echo "soak: $(echo "$names" | wc -l) tests, $rounds round(s), 2 busy processes"
busy=
stop_busy() {
    # shellcheck disable=SC2086
    [ -z "$busy" ] || kill $busy 2>/dev/null
    busy=
}
trap 'stop_busy' EXIT
trap 'stop_busy; exit 130' INT TERM
mkdir -p "$build/soak"
failed=0
r=1
while [ "$r" -le "$rounds" ]; do
    for _ in 1 2; do
        sh -c 'while :; do :; done' &
        busy="$busy $!"
    done
    t0=$(date +%s)
    # shellcheck disable=SC2086
    meson test -C "$build" --no-rebuild --print-errorlogs $names \
        >"$build/soak/round-$r.txt" 2>&1
    rc=$?
    stop_busy
    took=$(($(date +%s) - t0))
    if [ "$rc" = 0 ]; then
        echo "round $r: ok ($took s)"
        rm -f "$build/soak/round-$r.txt"
    else
        echo "round $r: FAILED ($took s): $(grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT)' \
            "$build/soak/round-$r.txt" | sed 's|.* / ||; s/ .*//' | tr '\n' ' ')"
        echo "  log: $build/soak/round-$r.txt"
        failed=$((failed + 1))
    fi
    r=$((r + 1))
done
echo "soak: $((rounds - failed)) of $rounds round(s) passed"
[ "$failed" = 0 ]
