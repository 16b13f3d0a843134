#!/usr/bin/env python3
"""Run one suite of a meson build's tests from meson-info/intro-tests.json,
for a build made on another machine and carried to one whose meson is
another version (or absent), as scripts/gpu.sh does on a lent GPU machine.

    run-tests.py BUILD SUITE [NAME-FILTER]

DCOLL_TEST_LIMIT=S caps each test's timeout at S seconds (a short lease).
A test that runs out is killed with every process it started.

Each test runs as meson would run it: its command, its environment over
this one (LD_LIBRARY_PATH prepended), its working directory and timeout;
exit 0 passes, 77 skips. Prints meson's summary lines (Ok:, Fail:,
Skipped:, Timeout:) so that gpu.sh reads either runner's log alike.
Exits 1 if any test failed or timed out."""
import json
import signal
import os
import subprocess
import sys
import time


def main():
    build, suite = sys.argv[1], sys.argv[2]
    only = sys.argv[3] if len(sys.argv) > 3 else ''
    with open(os.path.join(build, 'meson-info', 'intro-tests.json')) as f:
        tests = json.load(f)
    counts = {'Ok': 0, 'Fail': 0, 'Skipped': 0, 'Timeout': 0}
    for t in tests:
        if not any(s.split(':')[-1] == suite for s in t['suite']):
            continue
        if only and only not in t['name']:
            continue
        env = dict(os.environ)
        for k, v in t['env'].items():
            if k == 'LD_LIBRARY_PATH' and env.get(k):
                v = v + ':' + env[k]
            env[k] = v
        limit = t['timeout'] or None
        cap = int(os.environ.get('DCOLL_TEST_LIMIT', '0') or 0)
        if cap > 0:
            limit = min(limit or cap, cap)
        start = time.time()
        print('=== %s: %s' % (t['name'], ' '.join(t['cmd'])), flush=True)
        p = subprocess.Popen(t['cmd'], env=env, cwd=t['workdir'] or build,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            out = p.communicate(timeout=limit)[0]
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, rc = p.communicate()[0], None
        out = out.decode(errors='replace')
        took = time.time() - start
        verdict = ('Timeout' if rc is None else 'Ok' if rc == 0 else
                   'Skipped' if rc == 77 else 'Fail')
        counts[verdict] += 1
        print(out, end='' if out.endswith('\n') or not out else '\n')
        print('=== %s: %s (exit %s) in %.1f s\n' %
              (t['name'], verdict.upper(), rc, took), flush=True)
    for k in ('Ok', 'Fail', 'Skipped', 'Timeout'):
        print('%-12s %d' % (k + ':', counts[k]))
    return 1 if counts['Fail'] or counts['Timeout'] else 0


if __name__ == '__main__':
    sys.exit(main())
