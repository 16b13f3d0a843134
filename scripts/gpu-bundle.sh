#!/bin/sh
# scripts/gpu-bundle.sh DIR: what a GPU machine with CUDA and NCCL but no
# MPI (a lent or cloud image, no package registry) needs to run
# scripts/gpu.sh on a build made here: this machine's Open MPI, libuv and
# hwloc runtime, taken from its installed Debian packages (their files,
# not their docs), into DIR/root. There, scripts/gpu-run.sh DIR copies
# them in without replacing a file, and runs gpu.sh on the carried
# build (DCOLL_GPU_PREBUILT=1). Leaves out what every image has (libc,
# libstdc++, ...) and hwloc's X11, OpenCL and XML plugins.
set -eu
dir=${1:?usage: scripts/gpu-bundle.sh DIR}
skip='^(libc6|libgcc-s1|libstdc\+\+6|zlib1g|libzstd1|liblzma5|libbz2-1\.0|libsystemd0|libudev1|libcap2|libgcrypt20|libgpg-error0|liblz4-1|libssl3|libcrypt1|libselinux1|libpcre2-8-0|libmd0|libbsd0|libtinfo6|libgmp10|libffi8|libexpat1|gcc-12-base|libhwloc-plugins|libicu72|libxml2|libx11-6|libx11-data|libxau6|libxcb1|libxdmcp6|libxext6|ocl-icd-libopencl1|libxnvctrl0|debconf|dpkg|perl-base|perl|tar|coreutils|bash|util-linux|mount|passwd|adduser|lsb-base|sensible-utils|init-system-helpers|openssh-client|.*-common-dev)$'
# The installed packages these need, transitively (Depends, Pre-Depends).
todo="openmpi-bin libopenmpi3 openmpi-common libuv1 libhwloc15"
seen=" "
while [ -n "$todo" ]; do
    set -- $todo; p=$1; shift; todo="$*"
    case "$seen" in *" $p "*) continue ;; esac
    echo "$p" | grep -Eq "$skip" && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
        continue
    seen="$seen$p "
    deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" |
        tr ',' '\n' | sed 's/^ *//; s/|.*//; s/[ (:].*//' | grep -v '^$' || true)
    todo="$todo $deps"
done
echo "packages:$seen"
rm -rf "$dir/root"
mkdir -p "$dir/root"
# Their files and links, with merged /usr's paths, docs left out.
for p in $seen; do dpkg -L "$p"; done | sort -u |
    grep -Ev '^/usr/share/(doc|man|lintian|locale|bug)/' |
    while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done |
    sed 's#^/lib/#usr/lib/#; s#^/bin/#usr/bin/#; s#^/sbin/#usr/sbin/#; s#^/##' |
    sort -u >"$dir/files.txt"
(cd / && tar -cf - --no-recursion -T "$dir/files.txt" 2>/dev/null) |
    tar -xf - -C "$dir/root"
rm -f "$dir/files.txt"
du -sh "$dir/root"
