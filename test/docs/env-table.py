#!/usr/bin/env python3
"""docs/environment.md against the code: every DCOLL_* variable the
library and its tools read (a string literal naming it, as getenv takes)
has a row in the table, and every row is a variable they read.

Usage: env-table.py SOURCE_ROOT"""
import os
import re
import sys

root = sys.argv[1]
read = {}
for top in ('lib', 'mpi_layer', 'cuda_layer', 'tools'):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith(('.c', '.h')):
                path = os.path.join(d, f)
                for v in re.findall(r'"(DCOLL_[A-Z0-9_]+)"', open(path).read()):
                    read.setdefault(v, os.path.relpath(path, root))
table = set(re.findall(r'^\| `(DCOLL_[A-Z0-9_]+)`',
                       open(os.path.join(root, 'docs', 'environment.md')).read(),
                       flags=re.M))
bad = [f'{v} is read in {read[v]} but has no row in docs/environment.md'
       for v in sorted(set(read) - table)]
bad += [f'docs/environment.md has a row for {v}, which nothing reads'
        for v in sorted(table - set(read))]
for b in bad:
    print('env-table:', b)
print(f'env-table: {len(read)} variables read, {len(table)} rows, '
      f'{len(bad)} disagreement(s)')
sys.exit(1 if bad else 0)
