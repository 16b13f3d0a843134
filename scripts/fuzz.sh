#!/bin/sh
# The fuzz pass (scripts/test.sh runs it after the tests): the layers the
# fuzz targets exercise built with clang 14, libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer, then the fuzz suite (test/fuzz/). With
# --build, only the build.
set -eu
cd "$(dirname "$0")/.."
cc=$(command -v clang-14 || true)
if [ -z "$cc" ]; then
    echo "fuzz: clang-14 not found (package clang-14): skipping"; exit 0
fi
[ -d build-fuzz ] ||
    CC=$cc meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dcuda=disabled -Dfortran=disabled -Dhwloc=disabled \
        -Dabi_check=disabled
ninja -C build-fuzz test/fuzz/fuzz_url test/fuzz/fuzz_store \
    test/fuzz/fuzz_store_seq
[ "${1:-}" != --build ] || exit 0
ASAN_OPTIONS=detect_leaks=1 \
    meson test -C build-fuzz --print-errorlogs --no-rebuild --suite fuzz
