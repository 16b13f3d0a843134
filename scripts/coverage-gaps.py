#!/usr/bin/env python3
"""The largest runs of lines no test reached, from gcovr's JSON report.

A run is a stretch of one file's instrumented lines that all have count
0, allowing lines gcov does not instrument (blank lines, comments,
braces) between them. Printed largest first, with the function the run
starts in where gcovr names it.

    coverage-gaps.py COVERAGE.json [N]
"""
import json
import sys


def runs(report):
    for f in report["files"]:
        lines = sorted((ln["line_number"], ln["count"]) for ln in f["lines"]
                       if not ln.get("gcovr/noncode"))
        start = last = None
        n = 0
        for number, count in lines:
            if count == 0:
                if start is None:
                    start, n = number, 0
                last = number
                n += 1
            elif start is not None:
                yield n, f["file"], start, last
                start = None
        if start is not None:
            yield n, f["file"], start, last


def functions(report):
    by_file = {}
    for f in report["files"]:
        by_file[f["file"]] = sorted(
            (fn["lineno"], fn["name"]) for fn in f.get("functions", []))
    return by_file


def owner(fns, line):
    name = "?"
    for lineno, fn in fns:
        if lineno > line:
            break
        name = fn
    return name


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        report = json.load(f)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    fns = functions(report)
    gaps = sorted(runs(report), key=lambda r: -r[0])[:top]
    print(f"the {len(gaps)} largest runs of lines no test reached:")
    for n, path, a, b in gaps:
        print(f"  {n:4d} lines  {path}:{a}-{b}  "
              f"({owner(fns.get(path, []), a)})")


if __name__ == "__main__":
    main()
