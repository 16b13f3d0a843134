#!/bin/sh
# The MPICH pass (scripts/test.sh runs it after the tests): dcoll built
# against MPICH beside the OpenMPI build, and its unit, mpi and fortran
# suites run under MPICH's own launcher (the build records it, so the two
# MPIs installed side by side never mix), then its join across nodes and
# its refusal under srun --mpi=pmix.
set -eu
cd "$(dirname "$0")/.."
[ -d build-mpich ] || meson setup build-mpich -Dmpi=mpich -Dcuda=disabled
ninja -C build-mpich
meson test -C build-mpich --print-errorlogs --suite unit --suite mpi \
    --suite fortran
# Across nodes without a launcher and under dcollrun (network namespaces;
# skips without root),
# and srun with a plugin MPICH does not speak, refused (skips without SLURM).
meson test -C build-mpich --print-errorlogs --no-rebuild nodes-rendezvous \
    nodes-dcollrun \
    slurm
