#!/bin/sh
# meson install step: copy the Fortran module file dcoll.mod (built beside
# libdcollf) into the directory given (<libdir>/fortran/gfortran-mod-N, or
# <compiler>-<major>), where dcoll-fortran.pc and dcollConfig.cmake point;
# with a second argument, that name beside it links to it (dcoll 1.10's).
set -eu
moddir=$1 alias=${2:-}
case $moddir in
    /*) dest=${DESTDIR:-}$moddir ;;
    *) dest=${DESTDIR:-}$MESON_INSTALL_PREFIX/$moddir ;;
esac
mod=$(find "$MESON_BUILD_ROOT" -name dcoll.mod -path '*dcollf*' | head -1)
[ -n "$mod" ] || { echo "install-mod.sh: dcoll.mod not built" >&2; exit 1; }
mkdir -p "$dest"
install -m 644 "$mod" "$dest/dcoll.mod"
echo "Installing $mod to $dest"
if [ -n "$alias" ] && [ ! -e "$(dirname "$dest")/$alias" ]; then
    ln -s "$(basename "$dest")" "$(dirname "$dest")/$alias"
fi
