#!/bin/sh
# Build the fuzz targets with clang 14's libFuzzer and AddressSanitizer,
# and run each for a bounded time: run.sh SRCDIR BUILDDIR [SECONDS].
# A crash, leak or sanitizer report fails the test.
set -eu
src=$1; out=$2/fuzz; secs=${3:-20}
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ]; then echo "clang-14 not found: skipping"; exit 77; fi
mkdir -p "$out"
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
     "$cc" -fsanitize=fuzzer -x c - -o "$out/probe" 2>/dev/null; then
    echo "libFuzzer not found (libclang-rt-14-dev): skipping"; exit 77
fi
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I$src/include -I$src/lib/base -I$src/lib/store -I$src/lib/launch
       -D_GNU_SOURCE"
# shellcheck disable=SC2086
"$cc" $flags "$src/test/fuzz/fuzz_url.c" "$src/lib/launch/url.c" -o "$out/fuzz_url"
st=$src/lib/store
for t in store store_seq; do
    # shellcheck disable=SC2086
    "$cc" $flags "$src/test/fuzz/fuzz_$t.c" "$st/store.c" \
        "$st/store_server.c" "$st/store_table.c" "$st/store_tcp.c" \
        "$st/store_file.c" "$st/store_wire.c" "$src/lib/base/errors.c" \
        "$src/lib/base/clock.c" -luv -lpthread -o "$out/fuzz_$t"
done
status=0
for t in url store store_seq; do
    corpus="$out/corpus_$t"
    mkdir -p "$corpus"
    cp "$src/test/fuzz/seeds_$t"/* "$corpus"/ 2>/dev/null || true
    echo "== fuzz_$t for ${secs}s"
    if ! "$out/fuzz_$t" -max_total_time="$secs" -max_len=4096 \
           -print_final_stats=1 "$corpus" > "$out/fuzz_$t.log" 2>&1; then
        tail -40 "$out/fuzz_$t.log"; status=1
    else
        grep -E "stat::number_of_executed_units|Done" "$out/fuzz_$t.log" |
            tail -2
    fi
done
exit $status
