#!/bin/sh
# bench/README.md's shared-memory tables from bench/shm.sh's outputs:
# per MPI, rank count and kind, each size's memcpy bound (every rank at
# once, from the default run), MPI's busbw, dcoll's at default settings
# and with the segment forced, dcoll's share of the bound, and the
# ratios to MPI's call (each from its own run's rounds).
#   bench/shm-tables.sh DIR
set -eu
dir=$1
for mpi in openmpi mpich; do
    for np in 2 4; do
        a=$dir/$mpi-np$np-auto.txt f=$dir/$mpi-np$np-always.txt
        [ -f "$a" ] && [ -f "$f" ] || continue
        busy="one a core"
        [ "$np" = 2 ] || busy="two a core: oversubscribed"
        awk -v mpi="$mpi" -v np="$np" -v busy="$busy" '
        FNR == 1 { file++ }
        /^# [a-z_]+ on [0-9]+ rank/ { kind = $2; next }
        /^#/ || NF < 17 { next }
        {
            key = kind SUBSEP $1
            if (file == 1) {
                if (!(kind in seen)) { order[++nk] = kind; seen[kind] = 1 }
                if (!(key in have)) { sizes[kind, ++ns[kind]] = $1; have[key] = 1 }
                mcpy[key] = $15; raw[key] = $12; dflt[key] = $8; rd[key] = $13
            } else {
                forced[key] = $8; rf[key] = $13
            }
        }
        END {
            for (i = 1; i <= nk; i++) {
                k = order[i]
                printf "\n#### %s, %s, %d ranks (%s)\n\n", k, mpi, np, busy
                print "| size | memcpy GB/s | MPI busbw | dcoll busbw | forced busbw | dcoll / memcpy | dcoll / MPI | forced / MPI |"
                print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
                for (j = 1; j <= ns[k]; j++) {
                    s = sizes[k, j]; key = k SUBSEP s
                    b = s + 0
                    if (b >= 1048576) sz = sprintf("%d MiB", b / 1048576)
                    else if (b >= 1024) sz = sprintf("%d KiB", b / 1024)
                    else sz = sprintf("%d B", b)
                    share = mcpy[key] > 0 ? 100 * dflt[key] / mcpy[key] : 0
                    printf "| %s | %.2f | %.3f | %.3f | %.3f | %.0f%% | %.2f | %.2f |\n", sz, mcpy[key], raw[key], dflt[key], forced[key], share, rd[key], rf[key]
                }
            }
        }' "$a" "$f"
    done
done
# bench/shm-heap.sh's outputs: the same calls on malloc'd buffers and on
# dcoll_mem_alloc's (-H), default settings, 2 ranks; and on the heap with
# the segment forced, where that run is there.
for mpi in openmpi mpich; do
    m=$dir/$mpi-np2-malloc.txt h=$dir/$mpi-np2-heap.txt
    a=$dir/$mpi-np2-heap-always.txt sp=$dir/$mpi-np2-spare.txt
    [ -f "$m" ] && [ -f "$h" ] || continue
    [ -f "$a" ] || a=/dev/null
    [ -f "$sp" ] || sp=/dev/null
    awk -v mpi="$mpi" '
    FNR == 1 { file++ }
    /^# [a-z_]+ on [0-9]+ rank/ { kind = $2; next }
    /^#/ || NF < 17 { next }
    {
        key = kind SUBSEP $1
        if (file == 1) {
            if (!(kind in seen)) { order[++nk] = kind; seen[kind] = 1 }
            if (!(key in have)) { sizes[kind, ++ns[kind]] = $1; have[key] = 1 }
            mal[key] = $8; rm[key] = $13
        } else if (file == 2) {
            mcpy[key] = $15; raw[key] = $12; hp[key] = $8; rh[key] = $13
        } else if (FILENAME ~ /always/) {
            hf[key] = $8; rf[key] = $13; forced = 1
        } else {
            rsp[key] = $13; spare = 1
        }
    }
    END {
        for (i = 1; i <= nk; i++) {
            k = order[i]
            printf "\n#### %s, %s, 2 ranks, dcoll_mem_alloc buffers\n\n", k, mpi
            if (forced && spare) {
                print "| size | memcpy GB/s | MPI busbw | dcoll busbw, malloc | dcoll busbw, heap | heap forced | heap / memcpy | malloc / MPI | heap / MPI | heap forced / MPI | malloc, heap group / MPI |"
                print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            } else if (forced) {
                print "| size | memcpy GB/s | MPI busbw | dcoll busbw, malloc | dcoll busbw, heap | heap forced | heap / memcpy | malloc / MPI | heap / MPI | heap forced / MPI |"
                print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            } else {
                print "| size | memcpy GB/s | MPI busbw | dcoll busbw, malloc | dcoll busbw, heap | heap / memcpy | malloc / MPI | heap / MPI |"
                print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            }
            for (j = 1; j <= ns[k]; j++) {
                s = sizes[k, j]; key = k SUBSEP s
                b = s + 0
                if (b >= 1048576) sz = sprintf("%d MiB", b / 1048576)
                else if (b >= 1024) sz = sprintf("%d KiB", b / 1024)
                else sz = sprintf("%d B", b)
                share = mcpy[key] > 0 ? 100 * hp[key] / mcpy[key] : 0
                if (forced && spare)
                    printf "| %s | %.2f | %.3f | %.3f | %.3f | %.3f | %.0f%% | %.2f | %.2f | %.2f | %.2f |\n", sz, mcpy[key], raw[key], mal[key], hp[key], hf[key], share, rm[key], rh[key], rf[key], rsp[key]
                else if (forced)
                    printf "| %s | %.2f | %.3f | %.3f | %.3f | %.3f | %.0f%% | %.2f | %.2f | %.2f |\n", sz, mcpy[key], raw[key], mal[key], hp[key], hf[key], share, rm[key], rh[key], rf[key]
                else
                    printf "| %s | %.2f | %.3f | %.3f | %.3f | %.0f%% | %.2f | %.2f |\n", sz, mcpy[key], raw[key], mal[key], hp[key], share, rm[key], rh[key]
            }
        }
    }' "$m" "$h" "$a" "$sp"
done
