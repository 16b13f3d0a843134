#!/bin/sh
# The layer check must refuse what it exists to refuse: a call up (a diag
# archive with a planted call into the core), an include by path across a
# layer, and MPI's header in lib/; and pass the tree as it is.
# Usage: selftest.sh CHECK SOURCE_ROOT PLANTED_ARCHIVE LAYER=ARCHIVE...
set -u
check=$1; root=$2; planted=$3; shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

sh "$check" "$root" "" "$@" 2> "$tmp/tree.err" ||
    { cat "$tmp/tree.err"; bad "the check refuses the tree as it is"; }

# The same archives, diag with the planted call beside its own.
set -- $(for a in "$@"; do
    case $a in diag=*) echo "$a,$planted" ;; *) echo "$a" ;; esac
done)
if sh "$check" "$root" "" "$@" 2> "$tmp/up.err"; then
    bad "a call from diag into the core passed"
elif ! grep -q "the diag layer calls dcoll_group_resolve, which the core layer defines" "$tmp/up.err"; then
    cat "$tmp/up.err"; bad "the call up was refused without naming it"
fi

# Planted sources: an include by path, and mpi.h in lib/.
mkdir -p "$tmp/src/lib/diag" "$tmp/src/mpi_layer" "$tmp/src/cuda_layer"
printf '#include "../core/core.h"\n' > "$tmp/src/lib/diag/planted.c"
if sh "$check" "$tmp/src" "" 2> "$tmp/inc.err"; then
    bad "an include by path across a layer passed"
elif ! grep -q "lib/diag/planted.c: .*an include by path crosses a layer" "$tmp/inc.err"; then
    cat "$tmp/inc.err"; bad "the include was refused without naming it"
fi
printf '#include <mpi.h>\n' > "$tmp/src/lib/diag/planted.c"
if sh "$check" "$tmp/src" "" 2> "$tmp/mpi.err"; then
    bad "mpi.h in lib/ passed"
fi

[ $fail -eq 0 ] && echo "layer check: refuses a call up, an include by path and mpi.h in lib/; passes the tree"
exit $fail
