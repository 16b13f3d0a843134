#!/bin/sh
# `use dcoll` from an installed dcoll, built as a Makefile does: the
# objects first, then `pkg-config --libs dcoll-fortran` (Debian links with
# --as-needed, so the other order fails), and only an -Wl,-rpath to the
# install. The program, and the installed dcollrun, run with no
# LD_LIBRARY_PATH. The module's source is installed too: built again from
# it, the module works the same.
#   install.sh BUILD_DIR SOURCE_DIR MPIRUN_SH
set -eu
build=$1 src=$2 mpirun_sh=$3
# The Fortran wrapper of the MPI this build uses (both may be installed;
# the plain name is the system default's).
case ${DCOLL_MPI:-openmpi} in
    mpich) fc=mpifort.mpich ;;
    *) fc=mpifort.openmpi ;;
esac
command -v "$fc" >/dev/null || fc=mpifort
command -v "$fc" >/dev/null || { echo "$fc not found: skipping"; exit 77; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM
unset LD_LIBRARY_PATH
cd "$root"
meson install -C "$build" --no-rebuild --destdir "$root" >"$root/install.log" 2>&1 ||
    { cat "$root/install.log"; exit 1; }
pc=$(find "$root" -name dcoll-fortran.pc | head -1)
[ -n "$pc" ] || { echo "dcoll-fortran.pc not installed"; exit 1; }
mod=$(find "$root" -name dcoll.mod | head -1)
case $mod in
    */fortran/gfortran-mod-[0-9]*/dcoll.mod) echo "dcoll.mod: ${mod#"$root"}" ;;
    *) echo "dcoll.mod not in its module format's directory: '$mod'"; exit 1 ;;
esac
# dcoll 1.10's directory, by compiler release, still finds it.
old=$(dirname "$(dirname "$mod")")/gfortran-$(gfortran -dumpversion | cut -d. -f1)
[ -f "$old/dcoll.mod" ] && [ -L "$old" ] ||
    { echo "no link $old to $(dirname "$mod")"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
cflags=$(pkg-config --cflags dcoll-fortran)
libs=$(pkg-config --libs dcoll-fortran)
libdir=$(dirname "$(find "$root" -name 'libdcollf.so' | head -1)")
echo "pkg-config: $cflags | $libs"
# shellcheck disable=SC2086
"$fc" $cflags -c "$src/examples/grid/grid.f90" -o grid.o
# shellcheck disable=SC2086
"$fc" grid.o $libs -Wl,-rpath,"$libdir" -o grid_f
"$mpirun_sh" 2 60 ./grid_f

# The installed dcollrun finds libdcoll by its own RUNPATH; plain
# dcoll_init under it makes one world of 2 (not two worlds of one).
dcollrun=$(find "$root" -path '*/bin/dcollrun' | head -1)
"$dcollrun" -n 2 ./grid_f >dcollrun.log 2>&1 || { cat dcollrun.log; exit 1; }
grep -q "1 x 2 ranks.*: ok" dcollrun.log ||
    { echo "grid_f under dcollrun -n 2:"; cat dcollrun.log; exit 1; }
echo "installed dcollrun: $(head -1 dcollrun.log)"

# The module from its installed source, compiled here as a user of
# another compiler would (then linked against the C library alone).
share=$(dirname "$(find "$root" -name dcoll.F90 | head -1)")
mkdir modsrc
"$fc" -cpp -DDCOLL_HAVE_MPI_F08 -I"$share" -Jmodsrc -c "$share/dcoll.F90" \
    -o modsrc/dcoll.o
# extent.c with the C compiler that goes with it (its array descriptor).
cc -c "$share/extent.c" -o modsrc/extent.o
"$fc" -Imodsrc -c "$src/examples/grid/grid.f90" -o grid2.o
"$fc" grid2.o modsrc/dcoll.o modsrc/extent.o -L"$libdir" -ldcoll \
    -Wl,-rpath,"$libdir" -o grid_own
"$mpirun_sh" 2 60 ./grid_own
