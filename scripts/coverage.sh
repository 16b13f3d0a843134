#!/bin/sh
# Line and branch coverage of lib/, mpi_layer/ and cuda_layer/ by the
# unit, mpi, fortran, nodes and slurm suites (the mpi suite holds the GPU
# doubles' tests where the CUDA toolkit's headers are; nodes and slurm
# skip without root, SLURM and munge): a build with gcov
# (build-cov), the suites, then gcovr's totals and the ten largest runs of
# lines no test reached. Not part of scripts/test.sh; it takes about as
# long as the main pass.
#   scripts/coverage.sh [BUILD_DIR]   (default build-cov)
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-cov}
./scripts/deps.sh
cuda=${CUDA_HOME:-/usr/local/cuda}
gpu=
[ -f "$cuda/include/nccl.h" ] &&
    gpu="-Dcuda=enabled -Dnccl=enabled -Dcudadir=$cuda"
# shellcheck disable=SC2086
[ -d "$dir" ] || meson setup "$dir" -Db_coverage=true $gpu
ninja -C "$dir"
find "$dir" -name '*.gcda' -delete
# A failed test still counts what it ran; its failure is the main pass's
# to report.
meson test -C "$dir" --no-rebuild --suite unit --suite mpi --suite fortran \
    --suite nodes --suite slurm \
    >"$dir/coverage-tests.txt" 2>&1 ||
    echo "coverage: some tests failed (see $dir/coverage-tests.txt)"
filters="--filter lib/ --filter mpi_layer/ --filter cuda_layer/"
# shellcheck disable=SC2086
gcovr -r . --object-directory "$dir" $filters --exclude-unreachable-branches \
    --exclude-throw-branches --json "$dir/coverage.json" \
    --print-summary | tail -3
python3 scripts/coverage-gaps.py "$dir/coverage.json" 10
