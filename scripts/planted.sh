#!/bin/sh
# The CUDA and NCCL doubles (test/double/) exist to make GPU bugs fail
# tests on a machine without a GPU. This plants three such bugs, one at a
# time, in a copy of the work tree, and checks that a double test fails on
# each and passes without it:
#   sync    the staged path reads its pinned copy without waiting for the
#           stream's copy into it (lib/gpu/staged.c);
#   wait    an NCCL work counts as done before its event is (the result
#           read before it is there; cuda_layer/nccl.c);
#   abort   an aborted communicator stays in the plugin's record, so the
#           next call and the group's free touch the freed handle.
# Usage: scripts/planted.sh [SCRATCH]   (default: a new temporary folder)
# Not part of the test suites: it builds a tree of its own (minutes).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/dcoll-planted.XXXXXX)}
tree=$work/tree
build=$work/build
mkdir -p "$tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 tar -cf - ) | tar -xf - -C "$tree"
meson setup "$build" "$tree" -Dfortran=disabled >"$work/setup.log" 2>&1 || {
    tail -20 "$work/setup.log"; exit 1; }

run() {  # run TEST...: 0 when every test passes
    ninja -C "$build" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
    meson test -C "$build" --no-rebuild "$@" >"$work/test.log" 2>&1
}

# plant NAME FILE FROM TO TEST...
plant() {
    name=$1 file=$tree/$2 from=$3 to=$4
    shift 4
    cp "$file" "$file.orig"
    python3 - "$file" "$from" "$to" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if text.count(old) != 1:
    sys.exit("planted.sh: %r is not in %s exactly once" % (old, path))
open(path, "w").write(text.replace(old, new))
EOF
    if run "$@"; then
        echo "planted $name: NOT caught by $*"
        bad=1
    else
        echo "planted $name: caught by $* ($(grep -c ' FAIL ' "$work/test.log") failed)"
    fi
    mv "$file.orig" "$file"
}

bad=0
if ! run double-staged-np2 double-rules-np2 double-abort-np3; then
    echo "planted.sh: the tests fail with no bug planted:"
    tail -30 "$work/test.log"
    exit 1
fi
echo "no bug planted: double-staged-np2 double-rules-np2 double-abort-np3 pass"
plant sync lib/gpu/staged.c \
    "         cu->sync(device, stream))) {" "         0)) {" \
    double-staged-np2
plant wait cuda_layer/nccl.c \
    "    *done = r == cudaSuccess;" "    *done = 1;" \
    double-rules-np2
plant abort cuda_layer/nccl.c \
    "    c->nc = NULL;
    snprintf(c->why" "    snprintf(c->why" \
    double-abort-np3
echo "logs in $work"
exit $bad
