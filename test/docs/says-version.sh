#!/bin/sh
# says-version.sh TOOL VERSION: TOOL --version exits 0 and names VERSION,
# the project's (meson.build), as dcoll_version() does.
out=$("$1" --version 2>&1) || { echo "$1 --version: exit $?: $out"; exit 1; }
case " $out" in
*[!0-9.]"$2"|*[!0-9.]"$2"[!0-9.]*) echo "$out" ;;
*) echo "$1 --version says '$out', not the project's $2"; exit 1 ;;
esac
