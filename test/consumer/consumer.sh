#!/bin/sh
# A program built against an installed dcoll, the way the README shows:
#   consumer.sh BUILD SOURCE MPIRUN_SH WAY...
#   cmake   find_package(dcoll 1.3), the C and Fortran targets
#   meson   dependency('dcoll') from the install (pkg-config)
#   wrap    the same project with dcoll as its subproject
#   examples every installed example (share/dcoll/examples), built with
#           its own CMakeLists.txt and with its own meson.build; the
#           first run, the second checked to find its libraries
# Installs into a prefix of its own (setup --prefix, as a user would, not
# DESTDIR), builds, and runs the program on 2 ranks with no
# LD_LIBRARY_PATH: the install's RUNPATHs must be enough.
set -eu
build=$1 src=$2 mpirun_sh=$3
shift 3
here=$src/test/consumer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
unset LD_LIBRARY_PATH
# Not from the calling build directory: a meson setup run inside another
# build directory deletes that one's Fortran module files (meson 1.0).
cd "$tmp"
prefix=$tmp/prefix
installed=
install_dcoll() {
    [ -z "$installed" ] || return 0
    installed=yes
    # A build of its own, configured for this prefix, sharing nothing.
    # Unoptimized: what is installed, and where, is the same; it builds
    # in two thirds of the time.
    meson setup "$tmp/dcoll-build" "$src" --prefix "$prefix" -Dtests=false \
        -Doptimization=0 -Ddebug=false \
        -Dcuda=disabled -Dmpi="$(meson introspect --buildoptions "$build" |
        python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="mpi"][0])')" \
        >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; exit 1; }
    ninja -C "$tmp/dcoll-build" install >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log"; exit 1; }
}
# Build the installed example NAME with CMake and with meson; run the
# CMake build's programs, and check the meson build's find their
# libraries. Writes how many programs it built to $tmp/ex-NAME.n.
example() {
    name=$1
    pc=$(dirname "$(find "$prefix" -name dcoll.pc | head -1)")
    cp -r "$prefix/share/dcoll/examples/$name" "$tmp/ex-$name"
    log=$tmp/ex-$name.log
    cmake -S "$tmp/ex-$name" -B "$tmp/ex-$name/cb" \
        -DCMAKE_PREFIX_PATH="$prefix" >"$log" 2>&1 &&
        cmake --build "$tmp/ex-$name/cb" >>"$log" 2>&1 ||
        { echo "$name: the CMake build failed"; cat "$log"; return 1; }
    PKG_CONFIG_PATH=$pc meson setup "$tmp/ex-$name/mb" "$tmp/ex-$name" \
        >>"$log" 2>&1 && ninja -C "$tmp/ex-$name/mb" >>"$log" 2>&1 ||
        { echo "$name: the meson build failed"; cat "$log"; return 1; }
    # The CMake build's programs run; the meson build's, the same
    # sources, must find every library they link (a launch costs 2 s).
    built=0
    for b in cb mb; do
        for prog in $(find "$tmp/ex-$name/$b" -maxdepth 1 -type f \
                      -perm -u+x); do
            if [ $b = mb ]; then
                ! ldd "$prog" | grep "not found" ||
                    { echo "$prog: a library not found"; return 1; }
            else
                case $name in
                env) "$prefix/bin/dcollrun" -n 2 --timeout 60 "$prog" ;;
                # No rank fails without arguments; restart writes its
                # checkpoints where it runs.
                survive) (cd "$tmp/ex-$name" &&
                          "$prefix/bin/dcollrun" -n 2 --timeout 60 \
                              "$prog") ;;
                *) "$mpirun_sh" 2 60 "$prog" ;;
                esac || { echo "$prog: exit $?"; return 1; }
            fi
            built=$((built + 1))
        done
    done
    echo "$built" >"$tmp/ex-$name.n"
}
for how in "$@"; do
echo "== $how"
case $how in
cmake)
    command -v cmake >/dev/null || { echo "cmake not found: skipping"; exit 77; }
    install_dcoll
    cmake -S "$here/cmake" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log"; exit 1; }
    cmake --build "$tmp/b" >>"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log"; exit 1; }
    "$mpirun_sh" 2 60 "$tmp/b/hello_c"
    "$mpirun_sh" 2 60 "$tmp/b/hello_f"
    ;;
meson)
    install_dcoll
    cp -r "$here/meson" "$tmp/p"
    cp "$here/hello.c" "$tmp/p/"
    pc=$(dirname "$(find "$prefix" -name dcoll.pc | head -1)")
    PKG_CONFIG_PATH=$pc meson setup "$tmp/b" "$tmp/p" --wrap-mode=nofallback \
        >"$tmp/p.log" 2>&1 || { cat "$tmp/p.log"; exit 1; }
    ninja -C "$tmp/b" >>"$tmp/p.log" 2>&1 || { cat "$tmp/p.log"; exit 1; }
    grep -q "Run-time dependency dcoll found: YES" "$tmp/p.log" ||
        { echo "dcoll was not found through pkg-config"; cat "$tmp/p.log"; exit 1; }
    "$mpirun_sh" 2 60 "$tmp/b/hello_c"
    ;;
wrap)
    cp -r "$here/meson" "$tmp/w"
    cp "$here/hello.c" "$tmp/w/"
    mkdir "$tmp/w/subprojects"
    # The wrap a user writes for a checkout of dcoll (here: this one).
    ln -s "$src" "$tmp/w/subprojects/dcoll"
    printf '[wrap-file]\ndirectory = dcoll\n\n[provide]\ndcoll = dcoll_dep\n' \
        >"$tmp/w/subprojects/dcoll.wrap"
    # Unoptimized, as the install above: the subproject is built whole.
    PKG_CONFIG_PATH=/nonexistent meson setup "$tmp/wb" "$tmp/w" \
        --wrap-mode=forcefallback -Doptimization=0 -Ddebug=false \
        >"$tmp/w.log" 2>&1 ||
        { cat "$tmp/w.log"; exit 1; }
    ninja -C "$tmp/wb" >>"$tmp/w.log" 2>&1 || { cat "$tmp/w.log"; exit 1; }
    grep -q "subproject dcoll" "$tmp/w.log" ||
        { echo "dcoll was not built as a subproject"; cat "$tmp/w.log"; exit 1; }
    "$mpirun_sh" 2 60 "$tmp/wb/hello_c"
    ;;
examples)
    command -v cmake >/dev/null || { echo "cmake not found: skipping"; exit 77; }
    install_dcoll
    # The reference is installed where man finds it, aliases included.
    if command -v lowdown >/dev/null && command -v man >/dev/null; then
        for page in dcoll dcoll_all_reduce dcoll_isend dcoll_gatherv_int \
                    dcollrun dcoll-tune dcoll-trace dcoll-environment; do
            MANPATH="$prefix/share/man" man -w "$page" >/dev/null ||
                { echo "man $page: not installed"; exit 1; }
        done
        MANPATH="$prefix/share/man" MANWIDTH=80 man dcoll_isend 2>/dev/null |
            grep -q "dcoll_send, dcoll_isend - send a buffer" ||
            { echo "man dcoll_isend does not show dcoll_send's page"; exit 1; }
    fi
    pc=$(dirname "$(find "$prefix" -name dcoll.pc | head -1)")
    # Two examples at a time (configuring is mostly one process waiting
    # on another): each says how many programs it built and ran.
    set --
    for ex in "$prefix"/share/dcoll/examples/*/; do
        set -- "$@" "$(basename "$ex")"
    done
    while [ $# -gt 0 ]; do
        a=$1; shift
        example "$a" >"$tmp/ex-$a.out" 2>&1 &
        pa=$!
        if [ $# -gt 0 ]; then
            b=$1; shift
            example "$b" >"$tmp/ex-$b.out" 2>&1 &
            pb=$!
            wait $pb || { cat "$tmp/ex-$b.out"; exit 1; }
            cat "$tmp/ex-$b.out"
        fi
        wait $pa || { cat "$tmp/ex-$a.out"; exit 1; }
        cat "$tmp/ex-$a.out"
    done
    n=$(cat "$tmp"/ex-*.n | awk '{s += $1} END {print s + 0}')
    # Ten examples, twelve programs (grid and survive have two), each
    # built both ways.
    [ "$n" = 24 ] || { echo "built $n example programs, not 24"; exit 1; }
    ;;
*)
    echo "consumer.sh: unknown way $how" >&2; exit 2 ;;
esac
done
