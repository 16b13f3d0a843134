#!/bin/sh
# The sanitizer pass (scripts/test.sh runs it after the tests): the unit,
# mpi and fortran suites built with AddressSanitizer and
# UndefinedBehaviorSanitizer, and the store's tests (the TCP server and
# its clients, rendezvous, 4,096 clients meeting at once) with
# ThreadSanitizer. Any report fails its test. With --build, only the
# builds (scripts/test.sh makes them while the earlier passes run).
set -eu
cd "$(dirname "$0")/.."
[ -d build-asan ] ||
    meson setup build-asan -Db_sanitize=address,undefined -Dcuda=disabled
ninja -C build-asan
[ -d build-tsan ] ||
    meson setup build-tsan -Db_sanitize=thread -Dcuda=disabled \
        -Dfortran=disabled
ninja -C build-tsan test/unit/unit_store test/unit/unit_store_limits \
    test/unit/unit_rendezvous bench/dcoll-store-bench
[ "${1:-}" != --build ] || exit 0
# OpenMPI keeps memory to the end by design, so leaks are not looked for;
# the installed-consumer test links a program that is not instrumented.
ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-asan --print-errorlogs --suite unit --suite mpi \
    --suite fortran
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    meson test -C build-tsan --print-errorlogs --no-rebuild store store-limits \
    rendezvous store-rendezvous-4096
