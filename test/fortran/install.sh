#!/bin/sh
# `use dcoll` from an installed dcoll, found through pkg-config, as a user
# builds it: install into a scratch root, compile examples/grid.f90 with
# `mpifort $(pkg-config --cflags --libs dcoll-fortran)`, run it.
#   install.sh BUILD_DIR SOURCE_DIR MPIRUN_SH
set -eu
build=$1 src=$2 mpirun_sh=$3
command -v mpifort >/dev/null || { echo "mpifort not found: skipping"; exit 77; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM
meson install -C "$build" --no-rebuild --destdir "$root" >"$root/install.log" 2>&1 ||
    { cat "$root/install.log"; exit 1; }
pc=$(find "$root" -name dcoll-fortran.pc | head -1)
[ -n "$pc" ] || { echo "dcoll-fortran.pc not installed"; exit 1; }
find "$root" -name dcoll.mod | grep -q . || { echo "dcoll.mod not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs dcoll-fortran)
echo "pkg-config --cflags --libs dcoll-fortran: $flags"
# shellcheck disable=SC2086
mpifort "$src/examples/grid.f90" $flags -o "$root/grid_f"
libdir=$(dirname "$(find "$root" -name 'libdcollf.so' | head -1)")
LD_LIBRARY_PATH=$libdir "$mpirun_sh" 2 60 -x LD_LIBRARY_PATH "$root/grid_f"
