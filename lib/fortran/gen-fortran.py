#!/usr/bin/env python3
"""Generate the parts of `use dcoll` that repeat the C headers, so they
cannot drift:
  - the constants (dcoll_constants.inc);
  - every collective and plan whose parameters are all of the kinds below
    (a group, buffers, counts, arrays of counts, lists of buffers, types,
    ops, ranks and tags, the options, the work or plan handle, an int
    out): its bind(C) interface (dcoll_bind_c.inc), its generic name over
    default-kind (4-byte) and 8-byte counts, or its plain name where it
    has no count (dcoll_generics.inc), and its module procedures
    (dcoll_count_i8.inc, dcoll_count_i4.inc).
The types come from the C declarations; what the types do not say (a
buffer only the root passes, an array with an entry per rank, one that
may be left out, a list's length) comes from FACTS below, stated for each
collective once and used for its plan too: never from the headers'
sentences. What needs thought (strings, callbacks, handles made or
freed) is written by hand in dcoll.F90. Every public C function must be
one or the other, or a C spelling of what a Fortran generic already does
(C_SPELLINGS below): the build stops, naming it, where a function is none
of these.

Usage: gen-fortran.py HEADER_DIR MODULE_F90 CONSTANTS_OUT BIND_C_OUT
                      GENERICS_OUT I8_OUT I4_OUT HEADER...
HEADER...: the public headers' names (include/meson.build's list).
"""
import re
import sys

(hdr_dir, module_f90, const_out, bind_out, generic_out, i8_out,
 wrap_out) = sys.argv[1:8]
# The headers that declare C functions (the umbrella includes them; the
# MPI helpers are inline, in the program).
HEADERS = [h for h in sys.argv[8:] if h not in ('dcoll.h', 'dcoll_mpi.h')]


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

# What the C types do not say, by collective (its plan, NAME_plan, takes
# the same facts):
#   root_only   buffers only the root passes: optional in Fortran
#   required    pointers C refuses as NULL: not optional in Fortran
#   ranks       arrays of counts with an entry per group rank: the
#               module refuses a shorter one, whose length C cannot see
#   root_counts arrays only the root's call reads (NULL elsewhere)
#   packed      arrays that may be left out (NULL: packed in rank order),
#               after the type, op and root in Fortran; checked as ranks
#               where listed there too
#   pair        the packed arrays come both or neither
#   lists       lists of buffers by C address, and the C count of their
#               entries, which Fortran takes from the list's size; where
#               two lists share one count, their sizes must agree
FACTS = {
    'gather': {'root_only': ['recvbuf']},
    'scatter': {'root_only': ['sendbuf']},
    'isend': {'required': ['work']},
    'irecv': {'required': ['work']},
    'all_gatherv': {'ranks': ['recvcounts', 'displs'], 'packed': ['displs']},
    'gatherv': {'root_counts': ['recvcounts'], 'packed': ['displs']},
    'scatterv': {'root_counts': ['sendcounts'], 'packed': ['displs']},
    'all_to_allv': {'ranks': ['sendcounts', 'recvcounts', 'sdispls',
                              'rdispls'],
                    'packed': ['sdispls', 'rdispls'], 'pair': True},
    'reduce_scatterv': {'ranks': ['recvcounts']},
    'neighbor_all_to_allv': {'packed': ['sdispls', 'rdispls'], 'pair': True},
    'broadcast_multi': {'lists': {'nbufs': ['bufs']}},
    'all_reduce_multi': {'lists': {'nbufs': ['bufs']}},
    'reduce_multi': {'lists': {'nbufs': ['bufs']}},
    'all_gather_multi': {'lists': {'nbufs': ['sendbufs', 'recvbufs']}},
    'reduce_scatter_multi': {'lists': {'nbufs': ['sendbufs', 'recvbufs']}},
}
# The collectives whose lists are written by hand (the coalesced forms
# take an explicit n and counts per buffer, as C does).
BY_HAND = {'all_reduce_coalesced', 'all_gather_coalesced'}


def base_of(name):
    """The collective a plan (NAME_plan) makes; the name itself else."""
    return name[:-len('_plan')] if name.endswith('_plan') else name


def facts(name):
    return FACTS.get(base_of(name), {})


# Every function of dcoll_status_t a header declares, as (name, its
# parameters as (C type, name) pairs); "void" is no parameter.
API = re.compile(r'DCOLL_API\s+dcoll_status_t\s+dcoll_(\w+)\s*\(([^)]*)\)')


def declared(text):
    for m in API.finditer(text):
        typed = []
        for part in (q.strip() for q in m.group(2).split(',')):
            if part == 'void':
                continue
            pm = re.fullmatch(r'(.*?[\s*])(\w+)', part)
            ctype = re.sub(r'\s+', ' ', pm.group(1)).strip()
            typed.append((re.sub(r'\s*(\*+)$', r' \1', ctype),
                          pm.group(2)))
        yield m.group(1), typed


# Each C parameter type, by what it is.
KIND = {
    'dcoll_group_t *': 'group',
    'dcoll_neighborhood_t *': 'nbh',
    'const dcoll_layout_t *': 'layout',
    'const void *': 'buf', 'void *': 'buf',
    'int64_t': 'count',
    'const int64_t *': 'counts',
    'void *const *': 'list', 'const void *const *': 'list',
    'dcoll_dtype_t': 'int', 'dcoll_op_t': 'int', 'int': 'int',
    'const dcoll_coll_opts_t *': 'opts',
    'dcoll_work_t **': 'work',
    'dcoll_plan_t **': 'plan',
    'int *': 'out',
}
SMALL = 'integer, intent(in) :: {}'
# A default-kind count is 4 bytes even under -fdefault-integer-8, so that
# the generic's two procedures never look alike.
I4 = 'integer(c_int32_t), intent(in)'
OPTS = 'type(dcoll_coll_opts), intent(in), optional :: {}'
WORK = 'type(dcoll_work), intent(out), optional :: {}'
PLAN = 'type(dcoll_plan), intent(out) :: {}'


class Param:
    def __init__(self, ctype, name, fn):
        self.ctype, self.name = ctype, name
        self.kind = KIND.get(ctype)
        f = facts(fn)
        self.length_of = f.get('lists', {}).get(name)  # nbufs: its lists
        if self.length_of:
            self.kind = 'length'
        self.root_only = name in f.get('root_only', ())
        self.required = name in f.get('required', ())
        self.ranks = name in f.get('ranks', ())
        self.packed = name in f.get('packed', ())

    def decl(self, i8):
        """Its declaration in a module procedure (i8: 8-byte counts)."""
        n, k = self.name, self.kind
        if k == 'group':
            return f'type(dcoll_group), intent(in) :: {n}'
        if k == 'nbh':
            return f'type(dcoll_neighborhood), intent(in) :: {n}'
        if k == 'layout':
            return self.cdecl().replace('(*)', '(:)')
        if k == 'buf':
            # asynchronous, as mpi_f08's nonblocking buffers: with a work
            # handle the call returns while dcoll still reads or writes
            # them.
            d = ('type(*), dimension(..), target, asynchronous' +
                 (', intent(in)' if self.ctype.startswith('const') else ''))
            return d + (', optional' if self.root_only else '') + f' :: {n}'
        if k == 'count':
            return (f'integer(c_int64_t), intent(in) :: {n}' if i8
                    else f'{I4} :: {n}')
        if k == 'counts':
            opt = ', optional' if self.packed else ''
            # contiguous: a strided section of counts reaches C as a
            # copy (C reads the counts as one array, and keeps its own
            # copy where a work or plan needs them later).
            return (f'integer(c_int64_t), intent(in), target, contiguous'
                    f'{opt} :: {n}(:)' if i8 else f'{I4}{opt} :: {n}(:)')
        if k == 'list':
            return f'type(c_ptr), intent(in) :: {n}(:)'
        if k == 'int':
            return SMALL.format(n)
        if k == 'opts':
            return OPTS.format(n)
        if k == 'work':
            return WORK.format(n).replace(
                ', optional', '' if self.required else ', optional')
        if k == 'plan':
            return PLAN.format(n)
        return f'integer, intent(out), optional :: {n}'   # out

    def cdecl(self):
        """Its declaration in the bind(C) interface."""
        n, k = self.name, self.kind
        if k in ('group', 'nbh', 'buf', 'counts'):
            return f'type(c_ptr), value :: {n}'
        if k == 'layout':   # one, or one per neighbour (...layouts)
            return (f'type(dcoll_layout), intent(in) :: {n}' +
                    ('(*)' if n.endswith('layouts') else ''))
        if k == 'count':
            return f'integer(c_int64_t), value :: {n}'
        if k == 'list':
            return f'type(c_ptr), intent(in) :: {n}(*)'
        if k in ('int', 'length'):
            return f'integer(c_int), value :: {n}'
        if k == 'out':
            return f'integer(c_int), intent(out), optional :: {n}'
        return self.decl(True)


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


def call_lines(head, args, indent):
    lines, tail = wrap(args, f'{indent}{head}(', cont=indent)
    return lines + [tail + ')']


def fortran_order(params):
    """The Fortran dummies: the C parameters less lists' lengths, with the
    packed arrays moved to just before the options."""
    ps = [p for p in params if p.kind != 'length']
    packed = [p for p in ps if p.packed]
    rest = [p for p in ps if not p.packed]
    at = next((i for i, p in enumerate(rest) if p.kind in
               ('opts', 'work', 'plan')), len(rest))
    return rest[:at] + packed + rest[at:]


def bind_c(name, params):
    """The bind(C) interface of dcoll_<name>, as c_<name>."""
    lines, tail = wrap([p.name for p in params], f'    function c_{name}(')
    out = lines + [tail + ') &',
                   f"            bind(C, name='dcoll_{name}') result(st)",
                   '        import', '        integer(c_int) :: st']
    out += ['        ' + p.cdecl() for p in params]
    return out + ['    end function', '']


def c_args(params, outs):
    """What the i8 procedure hands to the bind(C) function; outs: whether
    the int-out arguments are passed."""
    args = []
    for p in params:
        n, k = p.name, p.kind
        if k in ('group', 'nbh'):
            args.append(f'{n}%ptr')
        elif k == 'buf':
            args.append(f'p_{n}')
        elif k == 'counts':
            args.append(f'q_{n}' if p.packed else f'opt_loc({n})')
        elif k == 'length':
            args.append(f'int(size({p.length_of[0]}), c_int)')
        elif k == 'count':
            args.append(n)
        elif k == 'int':
            args.append(f'int({n}, c_int)')
        elif k == 'out':
            if outs:
                args.append(f'{n}_c')
        else:
            args.append(n)
    return args


def module_i8(name, params, proc):
    """The 8-byte-count module procedure (named proc): its checks, then
    the C call. A check that fails does not return here: the call goes
    to C with the refusal in its opts (DCOLL_COLL_OPT_REFUSAL), so that
    it takes its number and the group's rules for a refused call apply
    on every rank, as for C's own refusals; and every call bounds its
    buffers by the arrays' sizes (DCOLL_COLL_OPT_BOUNDS)."""
    fparams = fortran_order(params)
    lines, tail = wrap([p.name for p in fparams], f'    function {proc}(')
    out = lines + [tail + ') result(st)', '        integer :: st']
    out += ['        ' + p.decl(True) for p in fparams]
    bufs = [p for p in params if p.kind == 'buf']
    ints = [p.name for p in params if p.kind == 'out']
    opts = next((p.name for p in params if p.kind == 'opts'), None)
    nbh = params[0].kind == 'nbh'
    if bufs:
        out.append('        type(c_ptr) :: ' +
                   ', '.join(f'p_{p.name}' for p in bufs))
    # An optional (contiguous) array absent is never passed on: gfortran
    # reads its descriptor when it is (UBSan: a load of NULL).
    packed = [p.name for p in params if p.kind == 'counts' and p.packed]
    if packed:
        out.append('        type(c_ptr) :: ' +
                   ', '.join(f'q_{n}' for n in packed))
    out += [f'        integer(c_int) :: {n}_c' for n in ints]
    checks = []
    for p in params:
        if p.kind == 'buf':
            check = f"if (ok) ok = addr({p.name}, fn, '{p.name}', p_{p.name})"
            checks += ([f'if (present({p.name})) then', '    ' + check,
                        'end if'] if p.root_only else [check])
        elif nbh and p.kind in ('counts', 'layout') and p.name != 'layout':
            side = 'out' if p.name.startswith('s') else 'in'
            check = (f"if (ok) ok = degree_enough({params[0].name}, "
                     f"size({p.name}), {side == 'out'}, fn, "
                     f"'{p.name}')".replace('True', '.true.')
                     .replace('False', '.false.'))
            checks += ([f'if (present({p.name})) then', '    ' + check,
                        'end if'] if p.packed else [check])
        elif p.kind == 'counts' and p.ranks:
            check = (f"if (ok) ok = long_enough({params[0].name}, "
                     f"{p.name}, fn, '{p.name}')")
            checks += ([f'if (present({p.name})) then', '    ' + check,
                        'end if'] if p.packed else [check])
        elif p.kind == 'length' and len(p.length_of) > 1:
            a, b = p.length_of[0], p.length_of[1]
            checks += [f'if (ok .and. size({b}) /= size({a})) then',
                       f"    f_err = fn // ': {a} and {b} differ in length'",
                       '    ok = .false.', 'end if']
    # The calls on lists of buffers (_multi) have no array to bound.
    bounded = bool(bufs)
    if opts and (bounded or checks):
        opts_local = True
    else:
        opts_local = False
    if opts_local:
        out += ['        type(dcoll_coll_opts), target :: o',
                '        character(kind=c_char), allocatable, target :: '
                'why(:)']
    if checks:
        out.append('        logical :: ok')
        out.append("        character(len=*), parameter :: fn = "
                   f"'dcoll_{name}'")
    out.append('        f_err_on = .false.')
    if checks:
        out += [f'        p_{p.name} = c_null_ptr' for p in bufs]
        out.append('        ok = .true.')
        out += ['        ' + c for c in checks]
    if opts_local:
        out.append(f'        if (present({opts})) o = {opts}')
        if bounded:
            out.append('        o%mask = ior(o%mask, DCOLL_COLL_OPT_BOUNDS)')
        for p in bufs:
            field = 'recvbytes' if p.name == 'recvbuf' else 'sendbytes'
            set_ = f'o%{field} = array_bytes({p.name})'
            out += ([f'        if (present({p.name})) {set_}']
                    if p.root_only else [f'        {set_}'])
        if checks:
            out.append('        if (.not. ok) call refusal(o, why)')
    elif checks:
        out += ['        if (.not. ok) then',
                '            f_err_on = .true.',
                '            st = DCOLL_ERR_INVALID_ARGUMENT',
                '            return', '        end if']
    for n in packed:
        out += [f'        q_{n} = c_null_ptr',
                f'        if (present({n})) q_{n} = opt_loc({n})']
    args = c_args(params, True)
    args_no = c_args(params, False)
    if opts_local:
        args = ['o' if a == opts else a for a in args]
        args_no = ['o' if a == opts else a for a in args_no]
    if ints:
        out.append(f'        if (present({ints[0]})) then')
        out += call_lines(f'st = c_{name}', args, '            ')
        out += [f'            {n} = int({n}_c)' for n in ints]
        out.append('        else')
        out += call_lines(f'st = c_{name}', args_no, '            ')
        out.append('        end if')
    else:
        out += call_lines(f'st = c_{name}', args, '        ')
    return out + ['    end function', '']


def module_i4(name, params, proc, to):
    """The default-kind module procedure (proc): its counts to 8 bytes,
    then the i8 procedure (to), with the packed arrays it was given (one
    branch for each set of them present)."""
    fparams = fortran_order(params)
    lines, tail = wrap([p.name for p in fparams], f'    function {proc}(')
    out = lines + [tail + ') result(st)', '        integer :: st']
    out += ['        ' + p.decl(False) for p in fparams]
    packed = [p for p in fparams if p.packed]

    def fwd(given):
        args, keyword = [], False
        for p in fparams:
            keyword = keyword or p.packed
            if p.packed and p.name not in given:
                continue
            v = (f'int({p.name}, c_int64_t)' if p.kind in ('count', 'counts')
                 else p.name)
            args.append(f'{p.name}={v}' if keyword else v)
        return args
    if not packed:
        return out + call_lines(f'st = {to}', fwd(()), '        ') + [
            '    end function', '']
    sets = []
    for mask in range((1 << len(packed)) - 1, -1, -1):
        sets.append([p.name for i, p in enumerate(packed)
                     if mask & (1 << i)])
    for i, given in enumerate(sets):
        if given:
            cond = ' .and. '.join(
                f'present({p.name})' if p.name in given
                else f'.not. present({p.name})' for p in packed)
            out.append(f"        {'if' if i == 0 else 'else if'} ({cond}) "
                       "then")
        else:
            out.append('        else')
        out += call_lines(f'st = {to}', fwd(given), '            ')
    out.append('        end if')
    return out + ['    end function', '']


def module_plain(name, params):
    """A collective with no count: its one module procedure, dcoll_<name>."""
    return [l.replace(f'function {name}_i8(', f'function dcoll_{name}(')
            for l in module_i8(name, params, f'{name}_i8')]


HEAD = '! Generated from dcoll/collectives.h, plan.h and neighbor.h by ' \
       'gen-fortran.py: do not edit.'
bind_code = [HEAD, '! The bind(C) interfaces of the generated module '
             'procedures.']
generic_code = [HEAD, '! Each name takes default-kind or 8-byte counts.']
i8_code = [HEAD, '! Each takes 8-byte counts and calls the C function.']
i4_code = [HEAD, '! Each takes default-kind counts and forwards to the '
           '8-byte form.']
generated = set()
text = read('collectives.h') + read('plan.h') + read('neighbor.h')
for name, typed in declared(text):
    params = [Param(ctype, n, name) for ctype, n in typed]
    # A collective: a group first, and every parameter of a known kind.
    if (base_of(name) in BY_HAND or params[0].kind not in ('group', 'nbh') or
            any(p.kind is None for p in params)):
        continue
    generated.add(f'dcoll_{name}')
    bind_code += bind_c(name, params)
    if not any(p.kind in ('count', 'counts') for p in params):
        i8_code += module_plain(name, params)
        generic_code += [f'    public :: dcoll_{name}', '']
        continue
    i8_code += module_i8(name, params, f'{name}_i8')
    i4_code += module_i4(name, params, f'{name}_i4', f'{name}_i8')
    generic_code += [f'    interface dcoll_{name}',
                     f'        module procedure {name}_i4, {name}_i8',
                     '    end interface', f'    public :: dcoll_{name}', '']
# Questions and plain calls on handles: a handle or ints in, ints out
# (required in Fortran, set where the call succeeds). Named here, as the
# rest of dcoll/init.h, group.h, work.h and plan.h needs thought.
QUERIES = {'finalize', 'dump', 'device', 'group_rank', 'group_size',
           'group_global_rank', 'group_group_rank', 'work_wait',
           'work_source', 'plan_start'}
HANDLES = {'const dcoll_group_t *': 'dcoll_group', 'dcoll_work_t *':
           'dcoll_work', 'dcoll_plan_t *': 'dcoll_plan'}


def query(name, typed):
    """dcoll_<name>'s bind(C) interface and module procedure."""
    names = [n for _, n in typed]
    c, f = [], []
    for ctype, n in typed:
        if ctype in HANDLES:
            c.append(f'type(c_ptr), value :: {n}')
            f.append(f'type({HANDLES[ctype]}), intent(in) :: {n}')
        elif ctype == 'int':
            c.append(f'integer(c_int), value :: {n}')
            f.append(f'integer, intent(in) :: {n}')
        elif ctype == 'int *':
            c.append(f'integer(c_int), intent(out) :: {n}')
            f.append(f'integer, intent(out) :: {n}')
        else:   # the work a plan's start makes
            c.append(WORK.format(n))
            f.append(WORK.format(n))
    lines, tail = wrap(names, f'    function c_{name}(')
    bind = lines + [tail + ') &',
                    f"            bind(C, name='dcoll_{name}') result(st)",
                    '        import', '        integer(c_int) :: st']
    bind += ['        ' + d for d in c] + ['    end function', '']
    lines, tail = wrap(names, f'    function dcoll_{name}(')
    mod = lines + [tail + ') result(st)', '        integer :: st']
    mod += ['        ' + d for d in f]
    outs = [n for t, n in typed if t == 'int *']
    mod += [f'        integer(c_int) :: {n}_c' for n in outs]
    mod.append('        f_err_on = .false.')
    args = [f'{n}%ptr' if t in HANDLES else f'int({n}, c_int)' if t == 'int'
            else f'{n}_c' if t == 'int *' else n for t, n in typed]
    mod += call_lines(f'st = c_{name}', args, '        ')
    mod += [f'        if (st == DCOLL_SUCCESS) {n} = int({n}_c)' for n in outs]
    return bind, mod + ['    end function', '']


for hdr in ('init.h', 'group.h', 'work.h', 'plan.h'):
    for name, typed in declared(read(hdr)):
        if name not in QUERIES:
            continue
        bind, mod = query(name, typed)
        bind_code += bind
        i8_code += mod
        generic_code += [f'    public :: dcoll_{name}', '']
        generated.add(f'dcoll_{name}')
missing_q = QUERIES - {g[len('dcoll_'):] for g in generated}
if missing_q:
    sys.exit(f'gen-fortran.py: QUERIES names {sorted(missing_q)}, which '
             'no header declares')

for path, lines in ((bind_out, bind_code), (generic_out, generic_code),
                    (i8_out, i8_code), (wrap_out, i4_code)):
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
    if generic in generated or f'interface {generic}\n' in module:
        by_hand.add(c_name)
missing, twice = [], sorted(generated & by_hand)
for name in HEADERS:
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
