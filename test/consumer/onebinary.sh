#!/bin/sh
# One application binary, two MPIs: examples/heat/heat.c and grid/grid.c compiled
# once with plain cc against dcoll's headers (which carry no MPI type),
# then run unchanged against libdcoll.so.1 built with OpenMPI and against
# one built with MPICH, each under its own launcher. Their outputs must
# be the same. The build for the other MPI is made here (tests off).
#   onebinary.sh BUILD SOURCE MPIRUN_SH THIS_MPI
set -eu
build=$1 src=$2 mpirun_sh=$3 this=$4
case $this in openmpi) other=mpich ;; *) other=openmpi ;; esac
pc=$([ $other = mpich ] && echo mpich || echo ompi-c)
pkg-config --exists "$pc" ||
    { echo "no $other here (pkg-config $pc): skipping"; exit 77; }
launcher_of() {
    case $1 in
    openmpi) command -v mpirun.openmpi ;;
    mpich) command -v mpiexec.mpich || command -v mpiexec.hydra ;;
    esac
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp"    # not inside a build directory: see consumer.sh
# A build with the other MPI that the caller already has (scripts/test.sh
# makes build-mpich first) is used as it is: building it again took
# a minute and a half of CI.
if [ -n "${DCOLL_OTHER_BUILD:-}" ] && [ -f "$DCOLL_OTHER_BUILD/lib/libdcoll.so" ] &&
   grep -q "\"name\": \"mpi\", \"value\": \"$other\"" \
       "$DCOLL_OTHER_BUILD/meson-info/intro-buildoptions.json" 2>/dev/null; then
    ln -s "$DCOLL_OTHER_BUILD" other
else
    meson setup other "$src" -Dmpi=$other -Dtests=false -Dcuda=disabled \
        -Dfortran=disabled >setup.log 2>&1 || { cat setup.log; exit 1; }
    ninja -C other >build.log 2>&1 || { cat build.log; exit 1; }
fi
for prog in heat grid; do
    cc -std=c11 -I"$src/include" "$src/examples/$prog/$prog.c" \
        -L"$build/lib" -ldcoll -lm -o "$prog"
done
# Linked against libdcoll alone, not against either MPI.
ldd heat | grep -q libmpi && { echo "heat links an MPI itself"; exit 1; }
echo "built once, linked to no MPI; run with $this, then with $other"
for mpi in $this $other; do
    lib=$build/lib
    [ $mpi = $this ] || lib=$tmp/other/lib
    for prog in heat grid; do
        LD_LIBRARY_PATH=$lib DCOLL_MPI=$mpi DCOLL_MPIRUN=$(launcher_of $mpi) \
            "$mpirun_sh" 3 120 -x LD_LIBRARY_PATH "./$prog" >"$prog.$mpi" 2>&1 ||
            { echo "$prog under $mpi failed:"; cat "$prog.$mpi"; exit 1; }
    done
done
for prog in heat grid; do
    echo "== $prog, with $this and with $other"
    cat "$prog.$this"
    diff "$prog.$this" "$prog.$other" ||
        { echo "$prog: the two MPIs gave different output"; exit 1; }
done
