#!/usr/bin/env python3
"""mod-format.py FC...: the directory name for the module files FC writes,
by their format as Debian names it (gfortran-mod-15: every gfortran that
reads the format reads them); the compiler and its major version for
another compiler, or where the format cannot be read."""
import gzip
import os
import re
import subprocess
import sys
import tempfile

fc = sys.argv[1:]
name = ''
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, 'probe.f90')
    with open(src, 'w') as f:
        f.write('module dcoll_probe\nend module\n')
    r = subprocess.run(fc + ['-c', src, '-J', d, '-o',
                             os.path.join(d, 'probe.o')],
                       capture_output=True, text=True)
    mod = os.path.join(d, 'dcoll_probe.mod')
    if r.returncode == 0 and os.path.exists(mod):
        try:
            head = gzip.open(mod).read(64).decode('ascii', 'replace')
        except OSError:
            head = ''
        m = re.match(r"GFORTRAN module version '(\d+)'", head)
        if m:
            name = 'gfortran-mod-' + m.group(1)
print(name)
