#!/bin/sh
# The vector forms' count arrays at compile time: counts.c compiles as C11
# and C++, and as C11 with an int array passed to a 64-bit form (-DBAD) it
# does not: a compile error, not a warning and a misread.
#   counts.sh CC CXX|- INCLUDE_DIR SRC
cc=$1 cxx=$2 inc=$3 src=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
"$cc" -std=c11 -c -I"$inc" "$src" -o "$out/ok.o" ||
    { echo "FAIL: counts.c does not compile as C11"; fail=1; }
if "$cc" -std=c11 -DBAD -c -I"$inc" "$src" -o "$out/bad.o" 2>"$out/err"; then
    echo "FAIL: an int array to dcoll_all_to_allv compiled"; fail=1
else
    echo "refused as it must be:"; grep -m1 -i "error" "$out/err"
    # The error leads to the fix: the form that takes int arrays.
    grep -q "dcoll_all_to_allv_int" "$out/err" ||
        { echo "FAIL: the error does not name dcoll_all_to_allv_int"; fail=1; }
fi
if [ "$cxx" != - ]; then
    "$cxx" -x c++ -c -I"$inc" "$src" -o "$out/cpp.o" ||
        { echo "FAIL: counts.c does not compile as C++"; fail=1; }
    if "$cxx" -x c++ -DBAD -c -I"$inc" "$src" -o "$out/cppbad.o" 2>/dev/null; then
        echo "FAIL: C++ took a mix of int and int64_t arrays"; fail=1
    fi
fi
exit $fail
