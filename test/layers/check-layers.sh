#!/bin/sh
# The layers' boundaries, checked at every build (lib/meson.build runs
# this before linking libdcoll). Each layer is compiled with only the
# include folders it may use; what remains to refuse is a path around
# them, and the headers of MPI, CUDA and NCCL above the layers that own
# them. Usage: check-layers.sh SOURCE_ROOT [STAMP]
set -u
root=$1
stamp=${2:-}
bad=0
say() { echo "layers: $*" >&2; bad=1; }

# Quoted includes name a header by itself: no folder, no "..".
for f in $(find "$root/lib" "$root/mpi_layer" "$root/cuda_layer" \
           -name '*.[ch]'); do
    hits=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
           grep -v '"dcoll/[a-z_]*\.h"' | grep '/')
    [ -z "$hits" ] || say "${f#$root/}: $hits: an include by path crosses a layer"
done
# MPI only in mpi_layer/; CUDA and NCCL only in cuda_layer/.
for f in $(find "$root/lib" -name '*.[ch]'); do
    if grep -nE '#[[:space:]]*include[[:space:]]*<(mpi|mpi_f08|cuda[a-z_]*|nccl)\.h>' "$f" >&2; then
        say "${f#$root/}: the layers in lib/ never see MPI, CUDA or NCCL"
    fi
done
for f in $(find "$root/mpi_layer" -name '*.[ch]'); do
    if grep -nE '#[[:space:]]*include[[:space:]]*<(cuda[a-z_]*|nccl)\.h>' "$f" >&2; then
        say "${f#$root/}: the MPI layer never sees CUDA or NCCL"
    fi
done
# The plugin sees its ABI header and the public headers, nothing of the
# core's: its sources may not name the core's records.
if grep -nE 'struct dcoll_(coll|group|work)\b' "$root"/cuda_layer/*.c \
       "$root"/cuda_layer/*.h >&2; then
    say "cuda_layer/ uses a record of the core; use abi/plugin_abi.h"
fi
[ $bad -eq 0 ] || exit 1
[ -z "$stamp" ] || : > "$stamp"
