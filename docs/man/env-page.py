#!/usr/bin/env python3
"""env-page.py ENVIRONMENT_MD OUT: dcoll-environment(7) in the
reference's markdown, from docs/environment.md: its prose as it is, each
table row as a definition (a man page is 80 columns; the tables are
wider), so that the page and the guide say the same."""
import re
import sys

src, out = sys.argv[1:3]
lines = open(src).read().split('\n')
page = ['# NAME', '',
        'dcoll-environment - the environment variables dcoll reads', '',
        '# DESCRIPTION', '']
head = None
for line in lines[1:]:   # the guide's title is the NAME line's
    if line.startswith('## '):
        page += ['# ' + line[3:].upper(), '']
        head = None
        continue
    if not line.startswith('|'):
        page.append(line)
        continue
    cells = [c.strip() for c in line.strip('|').split('|')]
    if head is None:
        head = cells
        continue
    if all(re.fullmatch(r'-+', c) for c in cells):
        continue
    name = cells[0].replace('`', '**')
    rest = [f'{h}: {c}' for h, c in zip(head[1:], cells[1:]) if c]
    page += [name, ':   ' + '; '.join(rest), '']
page += ['# SEE ALSO', '', '**dcoll**(3), **dcollrun**(1)', '']
with open(out, 'w') as f:
    f.write('\n'.join(page))
