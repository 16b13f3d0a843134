#!/bin/sh
# The layers' boundaries, checked at every build (lib/meson.build runs
# this before linking libdcoll). Each layer is compiled with only the
# include folders it may use; what remains to refuse is a path around
# them, the headers of MPI, CUDA and NCCL above the layers that own them,
# and a call up: every symbol a layer's static library leaves undefined
# must be defined in that layer, in one below it, or outside dcoll (MPI,
# CUDA, libuv, libc).
# Usage: check-layers.sh SOURCE_ROOT [STAMP [LAYER=ARCHIVE[,ARCHIVE]...]]
set -u
root=$1
stamp=${2:-}
[ $# -ge 2 ] && shift 2 || shift $#
bad=0
say() { echo "layers: $*" >&2; bad=1; }

# What each layer may call, besides itself: the arrows of HACKING.md's
# "Layout", by layer.
below() {
    case $1 in
    base) echo "" ;;
    mpi|store|diag|gpu) echo "base" ;;
    launch) echo "store base" ;;
    core) echo "diag launch gpu store mpi base" ;;
    *) echo "?" ;;
    esac
}

if [ $# -gt 0 ]; then
    command -v nm >/dev/null ||
        { echo "layers: nm not found (binutils): cannot read the layers' calls" >&2; exit 1; }
    syms=$(mktemp -d)
    trap 'rm -rf "$syms"' EXIT
    layers=""
    for spec in "$@"; do
        l=${spec%%=*}
        [ "$(below "$l")" != "?" ] || { say "no such layer '$l'"; continue; }
        layers="$layers $l"
        : > "$syms/$l.def"
        : > "$syms/$l.und"
        for a in $(echo "${spec#*=}" | tr ',' ' '); do
            nm -g --defined-only "$a" > "$syms/nm" 2>/dev/null ||
                { say "nm could not read $a"; continue; }
            awk 'NF == 3 { print $3 }' "$syms/nm" >> "$syms/$l.def"
            nm -u "$a" | awk 'NF == 2 { print $2 }' >> "$syms/$l.und"
        done
        sort -u -o "$syms/$l.def" "$syms/$l.def"
        sort -u -o "$syms/$l.und" "$syms/$l.und"
    done
    # Each symbol a layer needs and does not define, against the layer
    # that defines it; outside dcoll (no layer defines it) is allowed.
    for l in $layers; do
        for m in $layers; do
            comm -12 "$syms/$l.und" "$syms/$m.def" | sed "s/^/$l $m /"
        done
    done > "$syms/uses"
    while read -r l m s; do
        [ "$l" = "$m" ] && continue
        can=$(below "$l")
        case " $can " in
        *" $m "*) ;;
        *) say "the $l layer calls $s, which the $m layer defines: calls run down only ($l may call: ${can:-no other layer})" ;;
        esac
    done < "$syms/uses"
fi

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
