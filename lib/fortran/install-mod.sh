#!/bin/sh
# meson install step: copy the Fortran module file dcoll.mod (built beside
# libdcollf) into INCLUDEDIR, where pkg-config's -I points.
set -eu
includedir=$1
case $includedir in
    /*) dest=${DESTDIR:-}$includedir ;;
    *) dest=${DESTDIR:-}$MESON_INSTALL_PREFIX/$includedir ;;
esac
mod=$(find "$MESON_BUILD_ROOT" -name dcoll.mod -path '*dcollf*' | head -1)
[ -n "$mod" ] || { echo "install-mod.sh: dcoll.mod not built" >&2; exit 1; }
mkdir -p "$dest"
install -m 644 "$mod" "$dest/dcoll.mod"
echo "Installing $mod to $dest"
