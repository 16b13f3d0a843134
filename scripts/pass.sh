# shellcheck shell=sh
# Sourced by scripts/test.sh: pass NAME COMMAND... runs one pass of the
# tests and says how it ended and how long it took.
pass() {
    name=$1
    shift
    t=$(date +%s)
    if "$@"; then
        echo "pass $name: ok in $(($(date +%s) - t)) s"
    else
        echo "pass $name: FAILED after $(($(date +%s) - t)) s"
        return 1
    fi
}
