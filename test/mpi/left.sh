# shellcheck shell=sh
# Sourced by the scripts that check no process of their job is left:
# they count their own test's processes only, however many tests (or
# passes of other builds) run beside them. left_mark marks everything
# the script starts after it (the mark rides in the environment, which
# the launchers hand their ranks); left_pids PROGRAM lists the marked
# processes of PROGRAM (a path; its command, /proc/PID/comm, is the
# file's name cut to 15 characters) still running, zombies aside;
# left_none PROGRAM fails (status 1) where any is, naming each.
left_mark() {
    DCOLL_TEST_MARK="$$.$(date +%s%N)"
    export DCOLL_TEST_MARK
}
left_pids() {
    comm=$(basename "$1" | cut -c1-15)
    for d in /proc/[0-9]*; do
        [ "$(cat "$d/comm" 2>/dev/null)" = "$comm" ] || continue
        tr '\0' '\n' 2>/dev/null <"$d/environ" |
            grep -qxF "DCOLL_TEST_MARK=$DCOLL_TEST_MARK" || continue
        case $(cut -d' ' -f3 "$d/stat" 2>/dev/null) in Z|'') continue ;; esac
        echo "${d#/proc/}"
    done
}
left_none() {
    left=$(left_pids "$1")
    [ -z "$left" ] && return 0
    echo "FAIL: processes left:"
    for p in $left; do ps -o pid=,stat=,args= -p "$p"; done
    return 1
}
