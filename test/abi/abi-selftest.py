#!/usr/bin/env python3
"""abi-selftest.py CHECK DUMPS LIBRARY BROKEN HEADERS MAJOR MINOR: the ABI
check (abi-check.sh) must fail, naming what changed, on each way an ABI
drifts, and pass the tree as it is. The library is compared with copies
of the newest dump edited to say what an older build would have had:

  a field's type  dcoll_layout_t.count an int (a 1.11 struct; the library
                  has int64_t);
  a middle field  dcoll_coll_opts_t.stream a double (a parameter struct,
                  whose appended fields alone are allowed), in the newest
                  dump and in an older one (1.10), where appended fields
                  pass;
  a parameter     dcoll_plan_start with one parameter (the library: two);
  an addition     no dcoll_exscan_plan (the library exports it: a
                  function added without moving the dump);
and BROKEN, the library less dcoll_barrier, is a symbol removed; a header
one minor version past the newest dump must fail too."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

check, dumps, lib, broken, hdrs, major, minor = sys.argv[1:8]
if not shutil.which('abidiff'):
    print('abidiff not found: skipping')
    sys.exit(77)
newest = f'libdcoll-{major}.{minor}.abi'
with open(os.path.join(dumps, newest)) as f:
    dump = f.read()
failures = 0


def run(dump_dir, library, api_minor):
    r = subprocess.run(['sh', check, dump_dir, library, hdrs, major,
                        api_minor], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def member_type(text, struct, member, type_name):
    """text with struct's member given the type named type_name."""
    tid = re.search(r"<type-decl name='%s' size-in-bits='\d+' id='([^']+)'"
                    % type_name, text).group(1)
    start = text.index("<class-decl name='%s'" % struct)
    end = text.index('</class-decl>', start)
    body = re.sub(r"(<var-decl name='%s' type-id=')[^']+'" % member,
                  r"\g<1>%s'" % tid, text[start:end], count=1)
    return text[:start] + body + text[end:]


def one_parameter(text, fn):
    start = text.index("<function-decl name='%s'" % fn)
    end = text.index('</function-decl>', start)
    body = text[start:end]
    params = [m.start() for m in re.finditer('<parameter ', body)]
    cut = body[params[-1]:body.index('\n', params[-1]) + 1]
    return text[:start] + body.replace(cut, '', 1) + text[end:]


def without(text, fn):
    text = re.sub(r"\s*<elf-symbol name='%s' [^>]*/>" % fn, '', text, count=1)
    start = text.index("<function-decl name='%s'" % fn)
    end = text.index('</function-decl>', start) + len('</function-decl>')
    return text[:start] + text[end:]


def expect(what, text, library, api_minor, names, older=None):
    """The check on text as the newest dump (None: the dumps as they
    are), and older as 1.10's where given, must fail naming names."""
    global failures
    with tempfile.TemporaryDirectory() as d:
        for f in os.listdir(dumps):
            if f.endswith('.suppr') or text is None:
                shutil.copy(os.path.join(dumps, f), d)
        if text is not None:
            with open(os.path.join(d, newest), 'w') as f:
                f.write(text)
        if older is not None:
            with open(os.path.join(d, f'libdcoll-{major}.10.abi'), 'w') as f:
                f.write(older)
        rc, out = run(d, library, api_minor)
    missing = [n for n in names if n not in out]
    if rc == 0 or missing:
        failures += 1
        print(f'FAIL: {what}: the check exited {rc}' +
              (f', its report lacks {missing}' if missing else '') +
              '\n' + out)
    else:
        print(f'ok: {what}: refused, naming {", ".join(names)}')


rc, out = run(dumps, lib, minor)
if rc != 0:
    failures += 1
    print('FAIL: the tree as it is fails the check\n' + out)
else:
    print('ok: the library passes against every dump')
expect('a field of dcoll_layout_t an int',
       member_type(dump, 'dcoll_layout', 'count', 'int'), lib, minor,
       ['dcoll_layout', 'count'])
opts = member_type(dump, 'dcoll_coll_opts', 'stream', 'double')
expect('a middle field of dcoll_coll_opts_t a double', opts, lib, minor,
       ['dcoll_coll_opts', 'stream'])
expect('the same in an older dump', dump, lib, minor,
       ['libdcoll-%s.10.abi' % major, 'struct dcoll_coll_opts: member stream'],
       older=opts)
expect('dcoll_plan_start with a parameter more',
       one_parameter(dump, 'dcoll_plan_start'), lib, minor,
       ['dcoll_plan_start'])
expect('dcoll_exscan_plan added without moving the dump',
       without(dump, 'dcoll_exscan_plan'), lib, minor,
       ['dcoll_exscan_plan', 'abi-dump'])
expect('dcoll_barrier removed', None, broken, minor, ['dcoll_barrier'])
ahead = str(int(minor) + 1)
expect(f'API {major}.{ahead} with the newest dump {major}.{minor}', None,
       lib, ahead, [f'{major}.{ahead}', 'abi-dump'])
print(f'abi-selftest: {failures} failure(s)')
sys.exit(1 if failures else 0)
