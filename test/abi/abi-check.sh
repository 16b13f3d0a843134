#!/bin/sh
# abi-check.sh DUMPS LIBRARY HEADERS MAJOR MINOR: the built library against
# every ABI dump in DUMPS (libdcoll-MAJOR.N.abi, one for each minor release
# that changed the ABI). Against each: no symbol removed and no type of an
# existing symbol changed, beyond what DUMPS/compatible.suppr allows
# (fields appended to a parameter struct, enumerators appended). Against
# the newest, also no dcoll_* symbol it lacks, and the header's
# DCOLL_API_VERSION MAJOR.MINOR must be that dump's: adding API and
# moving the dump happen in one commit (ninja -C BUILD abi-dump).
set -u
dir=$1 lib=$2 hdrs=$3 major=$4 minor=$5
command -v abidiff >/dev/null || { echo "abidiff not found: skipping"; exit 77; }
here=$(dirname "$0")
# The library's own dump, made as the baseline's are (abi-dump.sh) and
# once, for the member-by-member check of the structs compatible.suppr
# lets through with fields appended (against an older dump only).
now=$(mktemp)
trap 'rm -f "$now"' EXIT
dumped=0
newest= newest_minor=-1
for d in "$dir/libdcoll-$major".*.abi; do
    [ -f "$d" ] || continue
    m=${d##*/libdcoll-"$major".}
    m=${m%.abi}
    case $m in ''|*[!0-9]*) continue ;; esac
    if [ "$m" -gt "$newest_minor" ]; then newest=$d newest_minor=$m; fi
done
if [ -z "$newest" ]; then
    echo "FAIL: no ABI dump of version $major.x in $dir"
    exit 1
fi
fail=0
if [ "$minor" -ne "$newest_minor" ]; then
    echo "FAIL: DCOLL_API_VERSION is $major.$minor (include/dcoll/common.h)," \
         "but the newest ABI dump is $major.$newest_minor ($newest):" \
         "move the baseline in the commit that changes the API" \
         "(ninja -C BUILD abi-dump)"
    fail=1
fi
for d in "$dir/libdcoll-$major".*.abi; do
    [ -f "$d" ] || continue
    # The newest: any change fails, an addition too. An older one:
    # additions and the changes compatible.suppr names pass.
    if [ "$d" = "$newest" ]; then
        set -- --suppressions "$dir/opaque.suppr"
    else
        set -- --suppressions "$dir/opaque.suppr" \
               --suppressions "$dir/compatible.suppr" --no-added-syms
    fi
    out=$(abidiff "$@" --headers-dir2 "$hdrs" "$d" "$lib" 2>&1)
    rc=$?
    if [ $((rc & 15)) -eq 0 ] && [ "$d" != "$newest" ]; then
        if [ $dumped = 0 ]; then
            sh "$here/../../scripts/abi-dump.sh" "$lib" "$hdrs" "$now" \
                >/dev/null || { echo "FAIL: abidw could not read $lib"; exit 1; }
            dumped=1
        fi
        out="$out
$(python3 "$here/abi-prefix.py" "$d" "$now" "$dir/compatible.suppr")" ||
            rc=4
    fi
    echo "== against ${d##*/}"
    echo "$out"
    # abidiff's exit status is a bit field: 1 error, 2 usage, 4 change,
    # 8 incompatible change.
    if [ $((rc & 3)) -ne 0 ]; then
        echo "FAIL: abidiff failed to run ($rc)"
        fail=1
    elif [ $((rc & 12)) -ne 0 ] && [ "$d" = "$newest" ]; then
        echo "FAIL: the library's ABI is not ${d##*/}'s: a symbol added," \
             "removed or changed (above). Added to API $major.$minor:" \
             "move the dump (ninja -C BUILD abi-dump) in the same commit;" \
             "removed or changed: that breaks programs built against it"
        fail=1
    elif [ $((rc & 12)) -ne 0 ]; then
        echo "FAIL: incompatible with ${d##*/}: a program built against" \
             "that version's headers would break (above)"
        fail=1
    else
        echo "compatible with ${d##*/}"
    fi
done
exit $fail
