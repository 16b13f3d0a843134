#!/bin/sh
# Install what is missing, build, and run the example on 4 ranks.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -d build ] || meson setup build
ninja -C build
exec ./test/mpirun.sh 4 120 ./build/examples/heat
