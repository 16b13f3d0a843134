#!/usr/bin/env python3
"""Generate the parts of `use dcoll` that repeat the C headers, so they
cannot drift:
  - the constants (dcoll_constants.inc);
  - for every collective whose parameters are all of the kinds below (a
    group, buffers, one int64_t count, types, ops, ranks and tags, the
    options, the work handle, an int out): its bind(C) interface
    (dcoll_bind_c.inc), its generic name over a default-kind (4-byte) and
    an 8-byte count (dcoll_generics.inc), and the two module procedures
    (dcoll_count_i8.inc, dcoll_count_i4.inc);
  - the vector forms' plans (dcoll_all_gatherv_plan, ...): the module's
    hand-written vector wrappers, with the plan in place of the work.
What needs thought (lists of buffers, strings, callbacks, handles made or
freed) is written by hand in dcoll.F90. Every public C function must be
one or the other, or a C spelling of what a Fortran generic already does
(C_SPELLINGS below): the build stops, naming it, where a function is none
of these.

Usage: gen-fortran.py HEADER_DIR MODULE_F90 CONSTANTS_OUT BIND_C_OUT
                      GENERICS_OUT I8_OUT I4_OUT
"""
import re
import sys

(hdr_dir, module_f90, const_out, bind_out, generic_out, i8_out,
 wrap_out) = sys.argv[1:8]
HEADERS = ['common.h', 'types.h', 'init.h', 'group.h', 'work.h',
           'collectives.h', 'plan.h', 'store.h', 'spawn.h', 'backend.h']


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
    'dcoll_plan_t **': 'type(dcoll_plan), intent(out) :: {}',
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


# The same parameters as the bind(C) interface declares them.
CDECL = {
    'dcoll_group_t *': 'type(c_ptr), value :: {}',
    'const void *': 'type(c_ptr), value :: {}',
    'void *': 'type(c_ptr), value :: {}',
    'int64_t': 'integer(c_int64_t), value :: {}',
    'dcoll_dtype_t': 'integer(c_int), value :: {}',
    'dcoll_op_t': 'integer(c_int), value :: {}',
    'int': 'integer(c_int), value :: {}',
    'const dcoll_coll_opts_t *': 'type(dcoll_coll_opts), intent(in), '
                                 'optional :: {}',
    'dcoll_work_t **': 'type(dcoll_work), intent(out), optional :: {}',
    'dcoll_plan_t **': 'type(dcoll_plan), intent(out) :: {}',
    'int *': 'integer(c_int), intent(out), optional :: {}',
}
BUFFERS = ('const void *', 'void *')
SMALL_INTS = ('dcoll_dtype_t', 'dcoll_op_t', 'int')

with open(f'{hdr_dir}/collectives.h') as f:
    raw = f.read()
with open(f'{hdr_dir}/plan.h') as f:
    raw += f.read()
# A buffer the C header says only the root passes is optional in Fortran;
# a pointer it says must not be NULL is required.
root_only, required = {}, {}
for doc, fn in re.findall(r'/\*\*((?:(?!\*/).)*)\*/\s*DCOLL_API\s+\w+\s+dcoll_(\w+)',
                         raw, flags=re.S):
    doc = re.sub(r'\s*\*\s*', ' ', doc)
    root_only[fn] = set(re.findall(r'(\w+) must be given on the root', doc))
    required[fn] = set(re.findall(r'(\w+) must not be NULL', doc))

def dummy(decls, name, ctype, n):
    """A dummy's declaration: optional where only the root passes it (in
    the module procedure; C gets a null address), not optional where the
    header requires it."""
    decl = decls[ctype].format(n)
    if n in root_only.get(name, ()) and decls is DECL:
        decl = decl.replace(' :: ', ', optional :: ')
    if n in required.get(name, ()):
        decl = decl.replace(', optional', '')
    return decl


def c_call(name, typed, outs):
    """The arguments the module procedure hands to the bind(C) function;
    outs: whether the int-out arguments are passed."""
    args = []
    for ctype, n in typed:
        if ctype == 'dcoll_group_t *':
            args.append(f'{n}%ptr')
        elif ctype in BUFFERS:
            args.append(f'p_{n}')
        elif ctype == 'int64_t':
            args.append(f'int({n}, c_int64_t)')
        elif ctype in SMALL_INTS:
            args.append(f'int({n}, c_int)')
        elif ctype == 'int *':
            if outs:
                args.append(f'{n}_c')
        else:
            args.append(n)
    return args


def bind_c(name, typed):
    """The bind(C) interface of dcoll_<name>, as c_<name>."""
    names = [n for _, n in typed]
    lines, tail = wrap(names, f'    function c_{name}(')
    out = lines + [tail + ') &',
                   f"            bind(C, name='dcoll_{name}') result(st)",
                   '        import', '        integer(c_int) :: st']
    out += ['        ' + dummy(CDECL, name, c, n) for c, n in typed]
    return out + ['    end function', '']


def module_i8(name, typed):
    """The 8-byte-count module procedure: buffers to addresses (refused
    with a message where Fortran cannot give one), then the C call."""
    names = [n for _, n in typed]
    lines, tail = wrap(names, f'    function {name}_i8(')
    out = lines + [tail + ') result(st)', '        integer :: st']
    for ctype, n in typed:
        decl = dummy(DECL, name, ctype, n)
        if ctype == 'int64_t':
            decl = f'integer(c_int64_t), intent(in) :: {n}'
        out.append('        ' + decl)
    bufs = [n for c, n in typed if c in BUFFERS]
    ints = [n for c, n in typed if c == 'int *']
    if bufs:
        out.append('        type(c_ptr) :: ' + ', '.join(f'p_{n}' for n in bufs))
    for n in ints:
        out.append(f'        integer(c_int) :: {n}_c')
    out.append('        f_err_on = .false.')
    for n in bufs:
        check = [f"        if (.not. addr({n}, 'dcoll_{name}', '{n}', "
                 f"p_{n})) then",
                 '            st = DCOLL_ERR_INVALID_ARGUMENT',
                 '            return', '        end if']
        if n in root_only.get(name, ()):
            out.append(f'        p_{n} = c_null_ptr')
            out.append(f'        if (present({n})) then')
            out += ['    ' + c for c in check]
            out.append('        end if')
        else:
            out += check
    def call(outs, indent):
        lines, tail = wrap(c_call(name, typed, outs),
                           f'{indent}st = c_{name}(', cont=indent)
        return lines + [tail + ')']
    if ints:
        out.append(f'        if (present({ints[0]})) then')
        out += call(True, '            ')
        out += [f'            {n} = int({n}_c)' for n in ints]
        out.append('        else')
        out += call(False, '            ')
        out.append('        end if')
    else:
        out += call(True, '        ')
    return out + ['    end function', '']


text = read('collectives.h') + read('plan.h')
bind_code = ['! Generated from dcoll/collectives.h by gen-fortran.py: do not '
             'edit.', '! The bind(C) interfaces of the generated module '
             'procedures.']
generic_code = ['! Generated from dcoll/collectives.h by gen-fortran.py: do '
                'not edit.', '! Each name takes a default-kind or an 8-byte '
                'count.']
i8_code = ['! Generated from dcoll/collectives.h by gen-fortran.py: do not '
           'edit.', '! Each takes an 8-byte count and calls the C function.']
generated = set()
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
    generated.add(f'dcoll_{name}')
    bind_code += bind_c(name, typed)
    i8_code += module_i8(name, typed)
    generic_code += [f'    interface dcoll_{name}',
                     f'        module procedure {name}_i4, {name}_i8',
                     '    end interface', f'    public :: dcoll_{name}', '']
    names = [n for _, n in typed]
    lines, tail = wrap(names, f'    function {name}_i4(')
    code += lines
    code.append(tail + ') result(st)')
    code.append('        integer :: st')
    for ctype, n in typed:
        code.append('        ' + dummy(DECL, name, ctype, n))
    fwd = [('int(count, c_int64_t)' if n == 'count' else n) for n in names]
    lines, tail = wrap(fwd, f'        st = {name}_i8(')
    code += lines
    code.append(tail + ')')
    code.append('    end function')
    code.append('')
# The vector forms' plans: the hand-written vector wrappers of the module
# (their bind(C) interfaces and module procedures), with the work handle
# replaced by the plan, as dcoll_NAME_plan replaces it in C.
VECTOR = ['all_gatherv', 'gatherv', 'scatterv', 'all_to_allv',
          'reduce_scatterv']
with open(module_f90) as f:
    module_text = f.read()


def planned(text, n):
    t = text.replace(f"c_{n}(", f"c_{n}_plan(")
    t = t.replace(f"'dcoll_{n}'", f"'dcoll_{n}_plan'")
    t = t.replace(f"'dcoll_{n}: ", f"'dcoll_{n}_plan: ")
    t = re.sub(rf"\b{n}_i(8|4)\(", rf"{n}_plan_i\1(", t)
    t = t.replace('type(dcoll_work), intent(out), optional :: work',
                  'type(dcoll_plan), intent(out) :: plan')
    t = t.replace('work=work', 'plan=plan')
    t = re.sub(r'\bwork\)', 'plan)', t)
    return re.sub(r'opts, work\b', 'opts, plan', t)


for n in VECTOR:
    def grab(pattern):
        m = re.search(pattern, module_text, flags=re.S)
        if not m:
            sys.exit(f'gen-fortran.py: no {pattern} in {module_f90}')
        return m.group(0)
    bind_code.append(planned(grab(rf'    function c_{n}\(.*?end function\n'), n))
    i8_code.append(planned(grab(rf'    function {n}_i8\(.*?end function\n'), n))
    code.append(planned(grab(rf'    function {n}_i4\(.*?end function\n'), n))
    generic_code += [f'    interface dcoll_{n}_plan',
                     f'        module procedure {n}_plan_i4, {n}_plan_i8',
                     '    end interface', f'    public :: dcoll_{n}_plan', '']
    generated.add(f'dcoll_{n}_plan')
with open(wrap_out, 'w') as f:
    f.write('\n'.join(code))
for path, lines in ((bind_out, bind_code), (generic_out, generic_code),
                    (i8_out, i8_code)):
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')

# Every public function reaches Fortran: generated above, or bound by hand
# in the module (a bind(C) interface naming it), or, for C's spellings of
# what a Fortran generic already does, named here with that generic.
C_SPELLINGS = {
    # C's int-array vector forms: the Fortran generics take default
    # integer arrays (their _i4 procedures).
    'dcoll_all_gatherv_int': 'dcoll_all_gatherv',
    'dcoll_gatherv_int': 'dcoll_gatherv',
    'dcoll_scatterv_int': 'dcoll_scatterv',
    'dcoll_all_to_allv_int': 'dcoll_all_to_allv',
    'dcoll_reduce_scatterv_int': 'dcoll_reduce_scatterv',
}
with open(module_f90) as f:
    module = f.read()
by_hand = set(re.findall(r"bind\(C,\s*name='(dcoll_\w+)'\)", module))
for c_name, generic in C_SPELLINGS.items():
    if f'interface {generic}\n' in module:
        by_hand.add(c_name)
missing, twice = [], sorted(generated & by_hand)
for name in HEADERS + ['rendezvous.h']:
    for fn in re.findall(r'DCOLL_API[^;{]*?\b(dcoll_\w+)\s*\(', read(name)):
        if fn not in generated and fn not in by_hand:
            missing.append(f'{fn} (dcoll/{name})')
if missing or twice:
    for m in missing:
        print(f'gen-fortran.py: {m} has no Fortran binding: its parameters '
              'are not all of the kinds the generator maps, so bind it by '
              'hand in lib/fortran/dcoll.F90', file=sys.stderr)
    for t in twice:
        print(f'gen-fortran.py: {t} is bound twice: generated, and by hand '
              'in lib/fortran/dcoll.F90 (remove the hand binding)',
              file=sys.stderr)
    sys.exit(1)
