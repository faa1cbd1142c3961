#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How strong are the tests?  Plant one small bug (a mutant) at a time in
src/*.c and see whether the test programs notice.

    python3 scripts/mutants.py [-n COUNT] [--seed S] [--file tree.c]
                               [--skip earlier.jsonl]

Works in a scratch git worktree of HEAD (the checkout is never touched),
builds the test programs there (make's test binaries, with fuzz-replay) and
runs each quick (IDR_TEST_QUICK=1, as under valgrind), two at a time, 60 s
at most.  A mutant is KILLED when a program fails or times out.  Each
result is one JSON line on stdout; a summary goes to stderr at the end.

The mutants: a comparison or logical operator swapped for its neighbour
(< and <=, == and !=, && and ||), a + 1 or - 1 turned round, ++ into --, a
return true/false flipped, a ! dropped, a literal 0 made 1, a statement
that is a lone call deleted.  Expect survivors that are no bug: the same
result by another road (the fast path's answer taken by the slow path),
performance heuristics (hints, prefetches, the lookup directory's sizing),
what only IDR_DEBUG, the sanitizers, TSan or tests/hooks.sh can see
(make check runs those; this does not, for speed), and races no
deterministic test reaches.  Each survivor is worth a look: the rest are
gaps (docs/guarantees.md, "How strong the tests are").
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile

OPS = [
    (r'(?<![<>=!-])<=(?!=)', '<'), (r'(?<![<>=-])<(?![<=])', '<='),
    (r'(?<![<>=!-])>=', '>'), (r'(?<![<>=-])>(?![>=])', '>='),
    (r'==', '!='), (r'!=', '=='), (r'&&', '||'), (r'\|\|', '&&'),
    (r' \+ 1\b', ' - 1'), (r' - 1\b', ' + 1'), (r'\+\+', '--'),
    (r'return true;', 'return false;'), (r'return false;', 'return true;'),
    (r'!(?=[A-Za-z_(])', ''), (r'\b0\b', '1'),
]
LONE_CALL = re.compile(r'^\s*[a-z_]+\(.*\);\s*$')


def code_lines(text):
    """(line number, code) for each line outside comments and directives."""
    in_comment = False
    for i, line in enumerate(text.split('\n')):
        s = line.strip()
        if in_comment:
            in_comment = '*/' not in s
            continue
        if s.startswith('/*'):
            in_comment = '*/' not in s
            continue
        if not s or s.startswith(('*', '#', '//')):
            continue
        yield i, re.sub(r'"[^"]*"', lambda m: '"' + ' ' * (len(m.group()) - 2) + '"',
                        re.sub(r'/\*.*?\*/', lambda m: ' ' * len(m.group()), line))


def candidates(src, files):
    for f in files:
        for i, code in code_lines(open(os.path.join(src, f)).read()):
            for pat, rep in OPS:
                for m in re.finditer(pat, code):
                    if '->' in code[max(m.start() - 1, 0):m.end() + 1]:
                        continue
                    yield (f, i, m.start(), m.end(), rep)
            if LONE_CALL.match(code) and 'return' not in code:
                yield (f, i, 0, len(code), None)


def run(cmd, cwd, timeout):
    return subprocess.run(cmd, shell=True, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-n', type=int, default=50, help='mutants to run (default 50)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--file', action='append', help='only this file of src/ (repeatable)')
    ap.add_argument('--skip', action='append', default=[],
                    help="an earlier run's output: its mutants are not run again (repeatable)")
    args = ap.parse_args()
    # A kill still removes the scratch worktree (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    top = run('git rev-parse --show-toplevel', '.', 30).stdout.strip()
    tree = tempfile.mkdtemp(prefix='idr-mutants.')
    run(f'git worktree add -q --detach {tree} HEAD', top, 120)
    try:
        files = args.file or sorted(f for f in os.listdir(os.path.join(tree, 'src'))
                                    if f.endswith('.c'))
        progs = sorted(f[:-2] for f in os.listdir(os.path.join(tree, 'tests'))
                       if f.endswith('.c') and f != 'testutil.c') + ['fuzz-replay']
        bins = ' '.join(f'build/tests/{p}' for p in progs)
        if run(f'make -s -j2 {bins}', tree, 900).returncode:
            sys.exit('the unmutated tree does not build')
        cands = list(candidates(os.path.join(tree, 'src'), files))
        random.Random(args.seed).shuffle(cands)
        seen = set()
        for name in args.skip:
            for line in open(name):
                r = json.loads(line)
                seen.add((r['file'], r['line'], r['new']))
        tally = {'KILLED': 0, 'SURVIVED': 0}
        for f, i, a, b, rep in cands:
            if sum(tally.values()) >= args.n:
                break
            path = os.path.join(tree, 'src', f)
            orig = open(path).read()
            lines = orig.split('\n')
            old = lines[i]
            lines[i] = '' if rep is None else old[:a] + rep + old[b:]
            if (f, i + 1, lines[i].strip()) in seen:
                continue
            open(path, 'w').write('\n'.join(lines))
            try:
                if run(f'make -s -j2 {bins}', tree, 900).returncode:
                    continue  # not a program: no verdict
                try:
                    # A failing program exits 255, which stops xargs from
                    # starting more: one failure is verdict enough.
                    out = run(f"printf '%s\\n' {bins} | xargs -P2 -I@ sh -c "
                              f"'IDR_TEST_QUICK=1 timeout 60 @ >/dev/null 2>&1 || "
                              f"{{ echo @; exit 255; }}'", tree, 900).stdout.split()
                except subprocess.TimeoutExpired:
                    out = ['timeout']
                status = 'KILLED' if out else 'SURVIVED'
                tally[status] += 1
                print(json.dumps({'file': f, 'line': i + 1, 'old': old.strip(),
                                  'new': lines[i].strip(), 'status': status,
                                  'by': [os.path.basename(o) for o in out]}), flush=True)
            finally:
                open(path, 'w').write(orig)
        print(f"{tally['KILLED']} killed, {tally['SURVIVED']} survived", file=sys.stderr)
    finally:
        run(f'git worktree remove --force {tree}', top, 120)


if __name__ == '__main__':
    main()
