#!/usr/bin/env python3
"""Generate the parts of `use dcoll` that repeat the C headers, so they
cannot drift: the constants (dcoll_constants.inc) and, for every public
function with an int64_t count, the wrapper that takes a default-kind
(4-byte) count and forwards to the 8-byte one (dcoll_count_i4.inc).

Usage: gen-fortran.py HEADER_DIR CONSTANTS_OUT WRAPPERS_OUT
"""
import re
import sys

hdr_dir, const_out, wrap_out = sys.argv[1:4]
HEADERS = ['common.h', 'types.h', 'init.h', 'group.h', 'work.h',
           'collectives.h', 'store.h', 'spawn.h', 'backend.h']


def read(name):
    with open(f'{hdr_dir}/{name}') as f:
        text = f.read()
    # Comments go, so that a value is never read out of one.
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def c_value(expr):
    """The value of a constant C expression of literals, or None."""
    e = re.sub(r'UINT64_C\(([^)]*)\)', r'\1', expr)
    e = re.sub(r'(\d+)[uUlL]+\b', r'\1', e)
    if not re.fullmatch(r'[\d\s()+\-*<>|]+', e):
        return None
    return int(eval(e, {'__builtins__': {}}))  # digits and operators only


lines = ['! Generated from the C headers by gen-fortran.py: do not edit.']
seen = set()
for name in HEADERS:
    text = read(name)
    lines.append(f'! dcoll/{name}')
    for m in re.finditer(r'#define\s+(DCOLL_[A-Z0-9_]+)[ \t]+([^\n]+)', text):
        key, expr = m.group(1), m.group(2).strip()
        value = c_value(expr)
        if value is None or key in seen:
            continue
        seen.add(key)
        kind = 'integer(c_int64_t)' if 'UINT64_C' in expr else 'integer'
        lines.append(f'integer, parameter, public :: {key} = {value}'
                     if kind == 'integer' else
                     f'{kind}, parameter, public :: {key} = {value}_c_int64_t')
    for body in re.findall(r'enum\s+\w*\s*\{([^}]*)\}', text):
        for m in re.finditer(r'(DCOLL_[A-Z0-9_]+)\s*=\s*([^,\n]+)', body):
            key, value = m.group(1), c_value(m.group(2).strip())
            if key.endswith('_') or value is None or key in seen:
                continue
            seen.add(key)
            lines.append(f'integer, parameter, public :: {key} = {value}')
with open(const_out, 'w') as f:
    f.write('\n'.join(lines) + '\n')

# The C parameter types, as the Fortran wrappers declare them.
DECL = {
    'dcoll_group_t *': 'type(dcoll_group), intent(in) :: {}',
    # asynchronous, as mpi_f08's nonblocking buffers: with a work handle
    # the call returns while dcoll still reads or writes them.
    'const void *': 'type(*), dimension(..), target, asynchronous, '
                    'intent(in) :: {}',
    'void *': 'type(*), dimension(..), target, asynchronous :: {}',
    'int64_t': 'integer(c_int32_t), intent(in) :: {}',
    'dcoll_dtype_t': 'integer, intent(in) :: {}',
    'dcoll_op_t': 'integer, intent(in) :: {}',
    'int': 'integer, intent(in) :: {}',
    'const dcoll_coll_opts_t *': 'type(dcoll_coll_opts), intent(in), '
                                 'optional :: {}',
    'dcoll_work_t **': 'type(dcoll_work), intent(out), optional :: {}',
    'int *': 'integer, intent(out), optional :: {}',
}


def wrap(args, first, cont='        '):
    """Fortran lines of at most 79 columns: first(args), continued."""
    out, line = [], first
    for i, a in enumerate(args):
        piece = a + (', ' if i + 1 < len(args) else '')
        if len(line) + len(piece) > 76:
            out.append(line.rstrip() + ' &')
            line = cont + '    '
        line += piece
    return out, line


with open(f'{hdr_dir}/collectives.h') as f:
    raw = f.read()
# A buffer the C header says only the root passes is optional in Fortran.
root_only = {}
for doc, fn in re.findall(r'/\*\*((?:(?!\*/).)*)\*/\s*DCOLL_API\s+\w+\s+dcoll_(\w+)',
                         raw, flags=re.S):
    doc = re.sub(r'\s*\*\s*', ' ', doc)
    root_only[fn] = set(re.findall(r'(\w+) must be given on the root', doc))
text = read('collectives.h')
code = ['! Generated from dcoll/collectives.h by gen-fortran.py: do not '
        'edit.', '! Each takes a default-kind count and forwards to the '
        'int64 form.']
for m in re.finditer(r'DCOLL_API\s+dcoll_status_t\s+dcoll_(\w+)\s*\(([^)]*)\)',
                     text):
    name, params = m.group(1), m.group(2)
    parts = [p.strip() for p in params.split(',')]
    typed = []
    for p in parts:
        pm = re.fullmatch(r'(.*?[\s*])(\w+)', p)
        ctype = re.sub(r'\s+', ' ', pm.group(1)).strip()
        ctype = re.sub(r'\s*(\*+)$', r' \1', ctype)
        typed.append((ctype, pm.group(2)))
    # Lists of buffers (the coalesced and multi-buffer forms) have their
    # own hand-written wrappers.
    if ('int64_t', 'count') not in typed or any(c not in DECL
                                               for c, _ in typed):
        continue
    names = [n for _, n in typed]
    lines, tail = wrap(names, f'    function {name}_i4(')
    code += lines
    code.append(tail + ') result(st)')
    code.append('        integer :: st')
    for ctype, n in typed:
        decl = DECL[ctype].format(n)
        if n in root_only.get(name, ()):
            decl = decl.replace(' :: ', ', optional :: ')
        code.append('        ' + decl)
    fwd = [('int(count, c_int64_t)' if n == 'count' else n) for n in names]
    lines, tail = wrap(fwd, f'        st = {name}_i8(')
    code += lines
    code.append(tail + ')')
    code.append('    end function')
    code.append('')
with open(wrap_out, 'w') as f:
    f.write('\n'.join(code))
