#!/bin/sh
# Plot dcoll-perf results (a CSV from -o): for each collective, one PNG
# with bus bandwidth and time per call against size, dcoll and the raw MPI
# call side by side. Needs gnuplot (Debian: gnuplot-nox).
#   bench/plot.sh results.csv [OUT_PREFIX]   ->  OUT_PREFIX-<collective>.png
set -eu
csv=${1:?usage: plot.sh results.csv [out-prefix]}
prefix=${2:-${csv%.csv}}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
head -1 "$csv" | grep -q '^coll,ranks,size,' || { echo "plot.sh: $csv is not a dcoll-perf CSV" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# One data file per collective and type: size time busbw raw_time raw_busbw
awk -F, -v dir="$tmp" 'NR > 1 && $3 > 0 {
    key = $1 "." $5
    print $3, $8, $10, $12, $14 > (dir "/" key ".dat")
    ranks[key] = $2
} END { for (k in ranks) print k, ranks[k] > (dir "/index") }' "$csv"
[ -s "$tmp/index" ] || { echo "plot.sh: no rows with a size above 0 in $csv" >&2; exit 2; }
while read -r key ranks; do
    coll=${key%.*} type=${key#*.}
    out="$prefix-$coll-$type.png"
    gnuplot <<GP
set terminal pngcairo size 1200,480 font ",10"
set output "$out"
set multiplot layout 1,2 title "$coll, $type, $ranks ranks: dcoll and the raw MPI call" noenhanced
set logscale x 2
set format x "%.0b%B"
set xlabel "size (bytes)"
set grid
set key top left
set ylabel "bus bandwidth (GB/s)"
plot "$tmp/$key.dat" using 1:3 with linespoints title "dcoll", \
     "" using 1:5 with linespoints title "raw MPI"
set logscale y 10
set ylabel "time per call (us)"
plot "$tmp/$key.dat" using 1:2 with linespoints title "dcoll", \
     "" using 1:4 with linespoints title "raw MPI"
unset multiplot
GP
    echo "$out"
done < "$tmp/index"
