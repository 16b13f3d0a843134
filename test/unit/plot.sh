#!/bin/sh
# bench/plot.sh turns a committed dcoll-perf CSV into PNGs.
plot=$1 csv=$2
command -v gnuplot >/dev/null || { echo "gnuplot not found: skipping"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$plot" "$csv" "$tmp/p" || exit 1
n=0
for f in "$tmp"/p-*.png; do
    [ -f "$f" ] || continue
    head -c 8 "$f" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' ||
        { echo "$f is not a PNG"; exit 1; }
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no PNG made"; exit 1; }
echo "$n PNG(s) made"
