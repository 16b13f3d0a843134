#!/usr/bin/env python3
"""The Markdown tables of bench/README.md, from dcoll-perf's text outputs
in bench/results/ (made by bench/readme-runs.sh):
    bench/tables.py full RESULT CALIBRATION   per-size table of a 4-rank run
    bench/tables.py small NP2 NP1             small calls, 2 ranks and 1
    bench/tables.py modes RESULT...           every collective, ratio (+us)
    bench/tables.py plans RESULT              -P: best / blocking, per size
    bench/tables.py tune TABLE NP APART       dcoll-tune's picks beside
                                              dcoll-perf -S with the table
    bench/tables.py floor RESULT...           per run: rows below 0.95,
                                              below 4 KiB and from it
    bench/tables.py percall RESULT...         scripts/gpu.sh's percall.txt:
                                              µs added, the median of each
                                              launch to 64 KiB and to the end
"""
import sys


def parse(path):
    """{collective: {size: row}}, in the file's order."""
    coll, out = None, {}
    for line in open(path):
        f = line.split()
        if line.startswith('#') and ' on ' in line and 'rank(s)' in line:
            coll = f[1]
        elif (len(f) >= 14 and not line.startswith('#') and coll and
              f[0].isdigit()):
            out.setdefault(coll, {})[int(f[0])] = {
                'us': float(f[5]), 'busbw': float(f[7]), 'raw': float(f[9]),
                'raw_busbw': float(f[11]), 'ratio': float(f[12]),
                'add': float(f[13])}
    return out



def plans(path):
    """A -P run (bench/plans.sh): per kind and size, the faster raw call
    over the plan's time, then MPI's blocking call over the plan's."""
    coll, rows, sizes = None, {}, []
    for line in open(path):
        f = line.split()
        if line.startswith('#') and ' on ' in line and 'rank(s)' in line:
            coll = f[1]
        elif f and not line.startswith('#') and coll and f[0].isdigit():
            size = int(f[0])
            if coll == 'barrier':
                size = 8   # moves nothing: under the first column
            elif int(f[1]) == 0:
                continue   # 8 B do not make a block a rank: nothing moved
            if size not in sizes:
                sizes.append(size)
            rows.setdefault(coll, {})[size] = '%.2f / %.2f' % (
                float(f[11]), float(f[9]))
    sizes.sort()
    print('| kind | ' + ' | '.join(size_name(b) for b in sizes) + ' |')
    print('| --- |' + ' ---: |' * len(sizes))
    for coll, r in rows.items():
        print('| %s | ' % coll + ' | '.join(r.get(b, '') for b in sizes)
              + ' |')

def tune_table(path, np):
    """dcoll-tune's figures for NP ranks: {kind: {size: (pick, gain)}}."""
    out, kind = {}, None
    for line in open(path):
        f = line.split()
        if line.startswith('# group '):
            kind = f[4].rstrip(':') if int(f[2]) == np else None
        elif kind and line.startswith('#   ') and f[1] == kind:
            out.setdefault(kind, {})[int(f[2])] = (f[-2], float(f[-1][:-1]))
    return out


def tune(table, np, apart):
    """Per kind: the sizes where the table takes a way, with dcoll-tune's
    gain and dcoll-perf's ratio (raw / dcoll, each side's calls apart) in
    a later run with the table; then the lowest ratio of the sizes where
    MPI's own call runs."""
    picks, a = tune_table(table, np), parse(apart)
    print('| kind | size | way | dcoll-tune gain | dcoll-perf: raw / dcoll '
          '| ratio / gain |')
    print('| --- | ---: | --- | ---: | ---: | ---: |')
    rest = []
    for kind in ('all_reduce', 'reduce_scatter', 'broadcast', 'reduce',
                 'all_gather'):
        for size, (way, gain) in sorted(picks.get(kind, {}).items()):
            ra = a.get(kind, {}).get(size, {}).get('ratio')
            if ra is None:
                continue
            if way == 'mpi':
                rest.append((ra, kind, size))
                continue
            print('| %s | %s | %s | %.2f | %.2f | %.2f |' % (
                kind, size_name(size), way, gain, ra, ra / gain))
    def lows(xs):
        return ', '.join('%.2f (%s, %s)' % (r, k, size_name(z))
                         for r, k, z in sorted(xs)[:3])
    small = [x for x in rest if x[2] < 4096]
    big = [x for x in rest if x[2] >= 4096]
    print('\nThe %d sizes where MPI\'s own call runs: below 4 KiB, %d of %d '
          'under 0.95, the lowest %s; from 4 KiB, %d of %d under 0.95, the '
          'lowest %s.' % (len(rest), sum(1 for x in small if x[0] < 0.95),
                          len(small), lows(small),
                          sum(1 for x in big if x[0] < 0.95), len(big),
                          lows(big)))


PLAIN = ('all_reduce broadcast reduce all_gather gather scatter '
         'reduce_scatter all_to_all send_recv all_gatherv gatherv scatterv '
         'all_to_allv reduce_scatterv').split()


def floor(paths):
    """Per run of every collective (the plain and vector kinds): how many rows fall below 0.95 of raw,
    below 4 KiB (the start's cost on sub-microsecond calls) and from it,
    and the lowest of each."""
    print('| run | rows | below 4 KiB: < 0.95, lowest | from 4 KiB: < 0.95, '
          'lowest |')
    print('| --- | ---: | ---: | ---: |')
    for path in paths:
        rows = [(r['ratio'], c, z) for c, d in parse(path).items()
                for z, r in d.items() if c in PLAIN and z]
        small = [x for x in rows if x[2] < 4096]
        big = [x for x in rows if x[2] >= 4096]
        def cell(xs):
            if not xs:
                return ''
            lo = min(xs)
            return '%d, %.2f (%s %s)' % (sum(1 for x in xs if x[0] < 0.95),
                                         lo[0], lo[1], size_name(lo[2]))
        print('| `%s` | %d | %s | %s |' % (path.split('/')[-1], len(rows),
                                           cell(small), cell(big)))


def size_name(b):
    for unit, n in (('MiB', 1 << 20), ('KiB', 1 << 10)):
        if b >= n and b % n == 0:
            return '%d %s' % (b // n, unit)
    return '%d B' % b


def full(result, calib):
    d, a = parse(result), parse(calib)
    for coll, rows in d.items():
        print('#### %s, float32, 4 ranks\n' % coll)
        print('| size | dcoll µs | raw µs | dcoll busbw GB/s | raw busbw GB/s '
              '| ratio | added µs | A/A ratio | A/A µs |')
        print('| ---: |' + ' ---: |' * 8)
        for s, r in rows.items():
            c = a.get(coll, {}).get(s)
            miss_q = s >= 65536 and r['ratio'] < 0.98
            miss_a = s < 65536 and r['add'] > 0.3
            print('| %s | %.3f | %.3f | %.3f | %.3f | %.3f%s | %+.3f%s | %s | %s |'
                  % (size_name(s), r['us'], r['raw'], r['busbw'],
                     r['raw_busbw'], r['ratio'], ' ✗' if miss_q else '',
                     r['add'], ' ✗' if miss_a else '',
                     '%.3f' % c['ratio'] if c else '',
                     '%+.3f' % c['add'] if c else ''))
        print()


def small(np2, np1):
    for title, path in (('2 ranks (one per core, no oversubscription)', np2),
                        ('1 rank', np1)):
        d = parse(path)
        print('#### %s\n' % title)
        colls = list(d)
        print('| size | ' + ' | '.join('%s dcoll µs | raw µs | added µs' % c
                                       for c in colls) + ' |')
        print('| ---: |' + ' ---: | ---: | ---: |' * len(colls))
        for s in d[colls[0]]:
            cells = []
            for c in colls:
                r = d[c][s]
                cells += ['%.3f' % r['us'], '%.3f' % r['raw'],
                          '%+.3f' % r['add']]
            print('| %s | %s |' % (size_name(s), ' | '.join(cells)))
        print()


def modes(paths):
    for path in paths:
        d = parse(path)
        sizes = sorted({s for r in d.values() for s in r if s})
        print('`results/%s`\n' % path.split('/')[-1])
        print('| collective | ' + ' | '.join(size_name(s) for s in sizes)
              + ' |')
        print('| --- |' + ' ---: |' * len(sizes))
        for coll, r in d.items():
            if coll == 'barrier':
                print('| barrier | %.2f (%+.3f) |' % (r[0]['ratio'],
                                                     r[0]['add'])
                      + ' |' * (len(sizes) - 1))
                continue
            cells = ['%.2f (%+.2f)' % (r[s]['ratio'], r[s]['add'])
                     if s in r else '' for s in sizes]
            print('| %s | %s |' % (coll, ' | '.join(cells)))
        print()


def percall(paths):
    """Each '## ' launch of a file and its collectives: the median µs
    dcoll added (+us, or plan - raw under -P) over 8 B to 64 KiB and over
    every size."""
    import re
    import statistics
    for path in paths:
        launch, coll, rows = None, None, {}
        for line in open(path):
            if line.startswith('## '):
                launch = line[3:].strip()
                continue
            m = re.match(r'# (\w+) on ', line)
            if m:
                coll = m.group(1)
                continue
            f = line.split()
            if line.startswith('#') or not f or not f[0].isdigit():
                continue
            if len(f) == 12:    # -P: plan, #wrong, raw, ...
                added = float(f[5]) - float(f[7])
            elif len(f) == 14:  # time ... ratio +us
                added = float(f[13])
            else:
                continue
            rows.setdefault((launch, coll), []).append((int(f[0]), added))
        print(f'{path}:')
        for (launch, coll), v in rows.items():
            small = [a for b, a in v if b <= 65536]
            print(f'  {launch}, {coll}: '
                  f'{statistics.median(small):+.3f} to 64 KiB, '
                  f'{statistics.median([a for _, a in v]):+.3f} to '
                  f'{size_name(max(b for b, _ in v))}')


if __name__ == '__main__':
    what = sys.argv[1] if len(sys.argv) > 1 else ''
    if what == 'full' and len(sys.argv) == 4:
        full(sys.argv[2], sys.argv[3])
    elif what == 'small' and len(sys.argv) == 4:
        small(sys.argv[2], sys.argv[3])
    elif what == 'modes' and len(sys.argv) > 2:
        modes(sys.argv[2:])
    elif what == 'plans' and len(sys.argv) == 3:
        plans(sys.argv[2])
    elif what == 'floor' and len(sys.argv) > 2:
        floor(sys.argv[2:])
    elif what == 'percall' and len(sys.argv) > 2:
        percall(sys.argv[2:])
    elif what == 'tune' and len(sys.argv) == 5:
        tune(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)
