#!/usr/bin/env python3
"""tool-page.py OUT NAME SUMMARY TOOL: a section-1 page for an installed
tool, in the reference's markdown, made from what TOOL --help says (so
that the page and the tool cannot drift apart): NAME, SYNOPSIS (its usage
line), OPTIONS (the rest, as the tool prints it), SEE ALSO."""
import subprocess
import sys

out, name, summary, tool = sys.argv[1:5]
r = subprocess.run([tool, '--help'], capture_output=True, text=True,
                   timeout=60)
text = r.stdout.rstrip('\n')
if r.returncode != 0 or not text:
    sys.exit(f'tool-page.py: {tool} --help failed ({r.returncode}): '
             f'{r.stderr.strip()}')
lines = text.split('\n')
usage = lines[0].replace('usage: ', '', 1)
rest = '\n'.join(lines[1:]).strip('\n')
page = f'''# NAME

{name} - {summary}

# SYNOPSIS

`{usage}`

# OPTIONS

What `{name} --help` prints:

```
{rest}
```

# SEE ALSO

**dcoll**(3), **dcoll-environment**(7); the guides in
`share/doc/dcoll` (`launching.md`, `performance.md`, `trace.md`).
'''
with open(out, 'w') as f:
    f.write(page)
