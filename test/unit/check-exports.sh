#!/bin/sh
# The shared library exports dcoll_* functions and nothing else.
lib=$1
command -v nm >/dev/null || { echo "nm not found: skipping"; exit 77; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}')
bad=$(printf '%s\n' "$syms" | grep -v '^dcoll_' | grep -v '^$')
if [ -n "$bad" ]; then
    echo "exported symbols without the dcoll_ prefix:"; echo "$bad"; exit 1
fi
echo "$(printf '%s\n' "$syms" | wc -l) symbols, all dcoll_*"
