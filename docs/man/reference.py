#!/usr/bin/env python3
"""The reference pages (docs/man/*.3.md) held against what they describe.

  reference.py check INCLUDE_DIR MAN_DIR FORTRAN_DIR GENERATED_DIR [LIB]
      Every public function, type and constant of the headers has a page
      (a function or type is named in a page's NAME line, a constant is
      mentioned in a page); every page names only what exists; each C
      synopsis is the header's declaration, word for word once comments
      and spacing are set aside; each Fortran synopsis gives the module's
      argument names in order, the optional ones in brackets; with LIB,
      every dcoll_* symbol the shared library exports has a page. Prints
      each disagreement and exits 1 on any.
  reference.py render PAGE.3...
      Each rendered page, read by groff as man(1) reads it, gives no
      warning, and man -l reads it.
  reference.py fortran FORTRAN_DIR GENERATED_DIR NAME...
      The Fortran synopsis line the check expects for each NAME.
  reference.py names MAN_DIR PAGE
      The names a page's NAME line gives, one per line (the build makes
      an alias page for each but the first).
"""
import concurrent.futures
import os
import re
import subprocess
import sys


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def norm(decl):
    """One spelling of a C declaration: single spaces, none inside
    brackets or before punctuation, '*' bound to the name."""
    d = strip_comments(decl).replace('DCOLL_API', ' ')
    d = re.sub(r'\s+', ' ', d).strip()
    d = re.sub(r'\s*([(),;{}\[\]])\s*', r'\1', d)
    d = re.sub(r'\s*\*\s*', ' *', d)
    d = re.sub(r'\* \*', '**', d)
    return d.replace('( *', '(*').strip()


def header_api(inc):
    """functions {name: decl}, types {name: decl or None}, constants."""
    funcs, types, consts = {}, {}, set()
    for fn in sorted(os.listdir(inc)):
        if not fn.endswith('.h'):
            continue
        raw = open(os.path.join(inc, fn)).read()
        # C++ overloads and the C11 count checks repeat the C functions.
        raw = re.sub(r'#ifdef __cplusplus\n}\n.*?#endif\n', '', raw,
                     flags=re.S)
        text = strip_comments(raw)
        for m in re.finditer(r'DCOLL_API\s+[^;{]*?\b(dcoll_\w+)\s*\([^;]*\);',
                             text):
            funcs[m.group(1)] = norm(m.group(0))
        for m in re.finditer(r'static inline\s+[^;{]*?\b(dcoll_\w+)\s*'
                             r'\([^)]*\)', text):
            funcs[m.group(1)] = norm(m.group(0) + ';')
        for m in re.finditer(r'typedef\s+(?:struct|enum)\s+\w+\s*\{[^}]*\}\s*'
                             r'(\w+)\s*;', text):
            types[m.group(1)] = norm(m.group(0))
        for m in re.finditer(r'typedef\s+struct\s+\w+\s+(\w+)\s*;', text):
            types[m.group(1)] = norm(m.group(0))
        for m in re.finditer(r'typedef[^;]*\(\s*\*\s*(\w+)\s*\)[^;]*;', text):
            types[m.group(1)] = norm(m.group(0))
        for m in re.finditer(r'#define\s+(DCOLL_[A-Z0-9_]+)\b(?!\()', text):
            consts.add(m.group(1))
        for body in re.findall(r'enum\s+\w*\s*\{([^}]*)\}', text):
            consts.update(re.findall(r'\b(DCOLL_[A-Z0-9_]+)\s*=', body))
    consts = {c for c in consts
              if not c.endswith('_H') and not c.endswith('_') and
              c not in ('DCOLL_API', 'DCOLL_DCOLL_MPI_H')}
    return funcs, types, consts


def pages(man):
    out = {}
    for fn in sorted(os.listdir(man)):
        if not fn.endswith('.3.md'):
            continue
        text = open(os.path.join(man, fn)).read()
        m = re.search(r'^# NAME\n\n(.*?)\n\n', text, flags=re.S | re.M)
        names = []
        if m:
            head = m.group(1).split(' - ')[0]
            names = [n.strip().replace('\\_', '_')
                     for n in head.split(',') if n.strip()]
        blocks = re.findall(r'```(\w+)\n(.*?)```', text, flags=re.S)
        syn = re.search(r'^# SYNOPSIS\n(.*?)^# ', text, flags=re.S | re.M)
        syn_blocks = re.findall(r'```(\w+)\n(.*?)```', syn.group(1),
                                flags=re.S) if syn else []
        out[fn[:-len('.3.md')]] = {'names': names, 'text': text,
                                   'blocks': blocks, 'synopsis': syn_blocks}
    return out


def fortran_api(fdir, gdir):
    """{public name: [(dummy, optional)]}: a function's own dummies, or a
    generic's first module procedure's."""
    text = ''
    for path in (os.path.join(fdir, 'dcoll.F90'),
                 os.path.join(gdir, 'dcoll_count_i4.inc'),
                 os.path.join(gdir, 'dcoll_generics.inc')):
        if os.path.exists(path):
            text += open(path).read() + '\n'
    text = re.sub(r'&\s*\n\s*', '', text)
    procs = {}
    for m in re.finditer(r'^\s*function (\w+)\(([^)]*)\)[^\n]*\n(.*?)'
                         r'^\s*end function', text, flags=re.S | re.M):
        name, args, body = m.group(1), m.group(2), m.group(3)
        dummies = [a.strip() for a in args.split(',') if a.strip()]
        optional = set()
        for decl in re.findall(r'^\s*[^!\n]*\boptional\b[^\n]*::([^\n]*)',
                               body, flags=re.M):
            for d in decl.split(','):
                optional.add(re.sub(r'\(.*', '', d).strip())
        procs[name] = [(d, d in optional) for d in dummies]
    api = {n: p for n, p in procs.items() if n.startswith('dcoll_')}
    for name, body in re.findall(r'^\s*interface (dcoll_\w+)\s*\n(.*?)'
                                 r'end interface', text, flags=re.S | re.M):
        first = re.search(r'module procedure (\w+)', body)
        if first and first.group(1) in procs:
            api[name] = procs[first.group(1)]
    return api


def fortran_line(name, dummies):
    s = name + '('
    for i, (d, opt) in enumerate(dummies):
        sep = ', ' if i else ''
        s += f' [{sep}{d}]' if opt else f'{sep}{d}'
    return re.sub(r'\( \[, ', '([', s.replace('( [', '([')) + ')'


def fortran_args(line):
    """[(name, optional)] from a synopsis call 'f(a, b [, c])'."""
    out, depth = [], 0
    for tok in re.findall(r'\[|\]|\w+', line):
        if tok == '[':
            depth += 1
        elif tok == ']':
            depth -= 1
        else:
            out.append((tok, depth > 0))
    return out


def exported(lib):
    nm = subprocess.run(['nm', '-D', '--defined-only', lib],
                        capture_output=True, text=True, check=True).stdout
    return {l.split()[-1] for l in nm.splitlines()
            if l.split() and l.split()[-1].startswith('dcoll_')}


def same_as_header(bad, page, what, name, found, header):
    """A synopsis's C text (a match, or None) against the header's."""
    if not found:
        bad.append(f'{page}.3.md: no C {what} of {name} in its SYNOPSIS')
    elif norm(found.group(0)) != header:
        bad.append(f'{page}.3.md: the synopsis has\n    '
                   f'{norm(found.group(0))}\n  the header\n    {header}')


def check(inc, man, fdir, gdir, lib=None):
    funcs, types, consts = header_api(inc)
    pg = pages(man)
    fapi = fortran_api(fdir, gdir)
    bad = []
    named = {}
    for page, p in pg.items():
        if not p['names'] or p['names'][0] != page:
            bad.append(f'{page}.3.md: its NAME line must start with {page}')
        for n in p['names']:
            if n in named:
                bad.append(f'{n} is named by {named[n]}.3.md and '
                           f'{page}.3.md')
            named[n] = page
            if n not in funcs and n not in types and n != 'dcoll':
                bad.append(f'{page}.3.md names {n}, which no public '
                           'header declares')
    for n in sorted(funcs) + sorted(types):
        if n not in named:
            bad.append(f'{n} has no reference page (docs/man/{n}.3.md, or '
                       'a page whose NAME line names it)')
    every = ''.join(p['text'] for p in pg.values())
    for c in sorted(consts):
        if not re.search(r'\b' + c + r'\b', every):
            bad.append(f'the constant {c} is on no reference page')
    if lib:
        for s in sorted(exported(lib) - set(named)):
            bad.append(f'{lib} exports {s}, which has no reference page')
    for page, p in pg.items():
        c = ''.join(b for lang, b in p['synopsis'] if lang == 'c')
        c = strip_comments(re.sub(r'^#.*$', '', c, flags=re.M))
        f = ''.join(b for lang, b in p['synopsis'] if lang == 'fortran')
        for n in p['names']:
            if n in funcs:
                m = re.search(r'[^;{}]*?\b' + n + r'\s*\([^;]*\);', c)
                same_as_header(bad, page, 'declaration', n, m, funcs[n])
            if n in types:
                m = (re.search(r'typedef\s+(?:struct|enum)\s+\w+\s*\{[^}]*\}'
                               r'\s*' + n + r'\s*;', c) or
                     re.search(r'typedef\s+struct\s+\w+\s+' + n + r'\s*;', c) or
                     re.search(r'typedef[^;{}]*\(\s*\*\s*' + n + r'\s*\)[^;]*;',
                               c))
                same_as_header(bad, page, 'typedef', n, m, types[n])
            if n in fapi:
                m = re.search(r'\b' + n + r'\s*\(([^)]*)\)', f)
                want = fortran_line(n, fapi[n])
                if not m:
                    bad.append(f'{page}.3.md: no Fortran synopsis of {n}; '
                               f'the module has\n    {want}')
                elif fortran_args(m.group(1)) != fapi[n]:
                    bad.append(f'{page}.3.md: the Fortran synopsis says\n'
                               f'    {m.group(0)}\n  the module has\n'
                               f'    {want}')
    # dcoll(3)'s index names every page (so every exported name, through
    # the pages' NAME lines), and the version it describes is the build's.
    index = pg['dcoll']['text'] if 'dcoll' in pg else ''
    at = index.find('# THE PAGES')
    index = index[at:index.find('\n# ', at + 1)] if at >= 0 else ''
    if not index:
        bad.append('dcoll.3.md has no THE PAGES section')
    for page in sorted(set(pg) - {'dcoll'}):
        if index and f'**{page}**(3)' not in index:
            bad.append(f'dcoll.3.md\'s THE PAGES does not list **{page}**(3)')
    for n in sorted(set(re.findall(r'\*\*(dcoll_\w+)\*\*\(3\)', index)) -
                    set(pg)):
        bad.append(f'dcoll.3.md\'s THE PAGES lists {n}, which has no page')
    if '@VERSION@' not in pg.get('dcoll', {}).get('text', ''):
        bad.append('dcoll.3.md must say the version it describes as '
                   '@VERSION@, which the build fills in')
    listed = meson_pages(man)
    for page, p in pg.items():
        if listed.get(page) != p['names'][1:]:
            bad.append(f'docs/man/meson.build must list {page!r}: '
                       f'{p["names"][1:]}, as its NAME line has it')
    for page in set(listed) - set(pg):
        bad.append(f'docs/man/meson.build lists {page}, which has no page')
    for b in bad:
        print('reference:', b)
    print(f'reference: {len(pg)} pages, {len(funcs)} functions, '
          f'{len(types)} types, {len(consts)} constants, '
          f'{len(bad)} disagreement(s)')
    return 1 if bad else 0


def meson_pages(man):
    """{page: [aliases]} as docs/man/meson.build lists them."""
    text = open(os.path.join(man, 'meson.build')).read()
    return {p: re.findall(r"'(\w+)'", a) for p, a in
            re.findall(r"^\s*'(\w+)': \[([^\]]*)\],", text, flags=re.M)}


def render_one(path):
    """What is wrong with one rendered page, or ''."""
    g = subprocess.run(['groff', '-t', '-man', '-Tutf8', '-ww', '-z', path],
                       capture_output=True, text=True)
    m = subprocess.run(['man', '-l', path], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH='80', MANPAGER='cat',
                                PAGER='cat'))
    if g.returncode or g.stderr or m.returncode or not m.stdout:
        return f'{path} does not render cleanly:\n{g.stderr}{m.stderr}'
    return ''


def render(paths):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        bad = [b for b in pool.map(render_one, paths) if b]
    for b in bad:
        print('reference:', b)
    print(f'reference: {len(paths)} rendered pages, {len(bad)} with a '
          'warning')
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 5 and argv[1] == 'check':
        return check(*argv[2:7])
    if len(argv) >= 3 and argv[1] == 'render':
        return render(argv[2:])
    if len(argv) >= 5 and argv[1] == 'fortran':
        api = fortran_api(argv[2], argv[3])
        for n in argv[4:]:
            print(fortran_line(n, api[n]) if n in api else f'{n}: none')
        return 0
    if len(argv) == 4 and argv[1] == 'names':
        print('\n'.join(pages(argv[2])[argv[3]]['names']))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
