#!/usr/bin/env python3
"""abi-prefix.py OLD NEW SUPPR: each struct of the ABI dump OLD that the
suppressions SUPPR let through with fields appended (a name_regexp beside
has_data_member_inserted_at) must be the first members of NEW's, member
by member: the same name, offset and type. abidiff cannot say exactly
that (such a suppression lets the struct through whatever else changed
in it), so abi-check.sh asks this too."""
import re
import sys
import xml.etree.ElementTree as ET


def appended_only(path):
    """The name_regexps of SUPPR's sections that allow appended fields."""
    pats = []
    for section in open(path).read().split('[suppress_type]')[1:]:
        keys = dict(re.findall(r'^\s*(\w+)\s*=\s*(.*?)\s*$', section, re.M))
        if 'has_data_member_inserted_at' in keys and 'name_regexp' in keys:
            pats.append(re.compile(keys['name_regexp']))
    return pats


def types(path):
    root = ET.parse(path).getroot()
    return {e.get('id'): e for e in root.iter() if e.get('id')}


def spell(ids, tid, depth=0):
    e = ids.get(tid)
    if e is None or depth > 8:
        return '?'
    tag, name = e.tag, e.get('name')
    if tag in ('type-decl', 'typedef-decl'):
        return name
    if tag == 'class-decl':
        return 'struct ' + (name or '?')
    if tag == 'union-decl':
        return 'union ' + (name or '?')
    if tag == 'enum-decl':
        return 'enum ' + (name or '?')
    if tag == 'pointer-type-def':
        return spell(ids, e.get('type-id'), depth + 1) + '*'
    if tag == 'qualified-type-def':
        q = ' '.join(k for k in ('const', 'volatile') if e.get(k) == 'yes')
        return q + ' ' + spell(ids, e.get('type-id'), depth + 1)
    if tag == 'array-type-def':
        return spell(ids, e.get('type-id'), depth + 1) + '[%s]' % \
            e.get('size-in-bits')
    return tag


def structs(ids):
    return sorted({e.get('name') for e in ids.values()
                   if e.tag == 'class-decl' and e.get('name')})


def members(ids, name):
    for e in ids.values():
        if e.tag == 'class-decl' and e.get('name') == name and \
                e.get('is-declaration-only') != 'yes':
            return [(m.find('var-decl').get('name'),
                     m.get('layout-offset-in-bits'),
                     spell(ids, m.find('var-decl').get('type-id')))
                    for m in e.findall('data-member')]
    return None


old, new = types(sys.argv[1]), types(sys.argv[2])
pats = appended_only(sys.argv[3])
bad = 0
for s in [n for n in structs(old) if any(p.match(n) for p in pats)]:
    a, b = members(old, s), members(new, s)
    if a is None:
        continue   # not in the older version
    if b is None:
        print(f'struct {s}: in {sys.argv[1]} but not in the library')
        bad += 1
        continue
    for i, m in enumerate(a):
        n = b[i] if i < len(b) else None
        if n != m:
            print(f'struct {s}: member {m[0]} (offset {m[1]}, {m[2]}) is '
                  + (f'{n[0]} (offset {n[1]}, {n[2]})' if n else 'gone')
                  + ' in the library: only fields appended are compatible')
            bad += 1
            break
sys.exit(1 if bad else 0)
