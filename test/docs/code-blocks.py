#!/usr/bin/env python3
"""Every code block in README.md and docs/ (the guides and the reference
pages) that is a whole program, compiled against this build and run: a C
block with main(), a Fortran block with a program statement. A program
that calls dcoll_spawn starts its own processes and runs alone; any other
runs on 2 ranks under the build's mpirun (test/mpirun.sh).

Usage: code-blocks.py SOURCE_ROOT BUILD_ROOT CC FC MPIRUN_SH"""
import glob
import os
import re
import subprocess
import sys
import tempfile

src, build, cc, fc, mpirun = sys.argv[1:6]
files = [os.path.join(src, 'README.md')] + sorted(
    glob.glob(os.path.join(src, 'docs', '*.md')) +
    glob.glob(os.path.join(src, 'docs', 'man', '*.md')))
lib = os.path.join(build, 'lib')
flib = os.path.join(build, 'lib', 'fortran')
inc = os.path.join(src, 'include')
bad, ran = [], 0
with tempfile.TemporaryDirectory() as tmp:
    for path in files:
        text = open(path).read()
        for n, (lang, body) in enumerate(
                re.findall(r'```(c|fortran)\n(.*?)```', text, flags=re.S)):
            whole = (re.search(r'\bint main\s*\(', body) if lang == 'c' else
                     re.search(r'^\s*program\s+\w+', body, flags=re.M | re.I))
            if not whole:
                continue
            name = f'{os.path.basename(path)}-{n}'
            exe = os.path.join(tmp, name)
            srcf = exe + ('.c' if lang == 'c' else '.f90')
            open(srcf, 'w').write(body)
            if lang == 'c':
                cmd = [cc, srcf, '-I', inc, '-L', lib, '-ldcoll', '-lm',
                       '-Wl,-rpath,' + lib, '-o', exe]
            else:
                if fc == 'none':
                    continue
                cmd = [fc, srcf, '-I', flib, '-L', flib, '-L', lib,
                       '-ldcollf', '-ldcoll', '-Wl,-rpath,' + flib,
                       '-Wl,-rpath,' + lib, '-o', exe]
            c = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            if c.returncode:
                bad.append(f'{name}: does not compile:\n{c.stderr}')
                continue
            run = [exe] if 'dcoll_spawn' in body else [mpirun, '2', '120', exe]
            r = subprocess.run(run, capture_output=True, text=True, cwd=tmp)
            ran += 1
            if r.returncode == 77:
                continue
            if r.returncode:
                bad.append(f'{name}: exits {r.returncode}:\n{r.stdout}'
                           f'{r.stderr}')
            else:
                print(f'code-blocks: {name} ok')
for b in bad:
    print('code-blocks:', b)
print(f'code-blocks: {ran} whole programs run, {len(bad)} failed')
sys.exit(1 if bad or not ran else 0)
