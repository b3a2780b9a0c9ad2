#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_doc_commands: the README's commands run as written, against a built tree, and still print
# what the README shows. A block of commands is marked `<!-- doc-test: NAME exit=S[,S...]
# [needs=numpy,torch,fakecuda] [part=last] -->` and the block that shows its output
# `<!-- doc-output: NAME -->`. Each marked block runs in one bash, as a user pastes it, in a
# scratch folder where `build`, `examples` and `tests` lead to the build and source trees, with
# the build's ndmem and ndmemreport first on PATH. Each command must exit with its status (one
# status for all, or one per command), and each line of the output block must be found in the
# output (stdout and stderr together, whitespace and line breaks collapsed): a line "..." stands
# for lines left out, "..." inside a line for any text, and a number for any number (a line
# number after "file.py:" must match; a 16-digit stack key, which hashes paths, for any key).
# `part=last` runs the last `&&` part of the block's first
# line (the quick start's report step). The quick start's second line must be the test command
# .ci/run runs. Exit 1 on any difference, 77 when a block cannot run here (said why).
# usage: t_doc_commands.py README BUILD_DIR SOURCE_DIR [--show DIR]
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r'^<!-- doc-(test|output): (\S+)(.*?)-->\s*$')


def blocks(readme):
    """{name: {'cmd': [lines], 'exit': [..], 'needs': [..], 'part': str, 'out': [lines]}}"""
    lines = open(readme, encoding='utf-8').read().split('\n')
    found, order = {}, []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        i += 1
        if not m:
            continue
        kind, name, opts = m.group(1), m.group(2), dict(
            o.split('=', 1) for o in m.group(3).split() if '=' in o)
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or not lines[i].startswith('```'):
            sys.exit('%s: doc-%s %s: no fenced block after the marker' % (readme, kind, name))
        j = i + 1
        while j < len(lines) and not lines[j].startswith('```'):
            j += 1
        body = lines[i + 1:j]
        i = j + 1
        b = found.setdefault(name, {})
        if kind == 'test':
            if name in order:
                sys.exit('%s: doc-test %s twice' % (readme, name))
            order.append(name)
            b['cmd'] = body
            b['exit'] = [int(s) for s in opts.get('exit', '0').split(',')]
            b['needs'] = [n for n in opts.get('needs', '').split(',') if n]
            b['part'] = opts.get('part', '')
        else:
            b['out'] = body
    for name, b in found.items():
        if 'cmd' not in b:
            sys.exit('%s: doc-output %s has no doc-test' % (readme, name))
    return [(n, found[n]) for n in order]


def statements(text):
    """The block's top-level commands, each as bash parses it (a quoted string may span lines)."""
    out, cur = [], []
    for line in text.split('\n'):
        cur.append(line)
        src = '\n'.join(cur)
        if not src.strip() or src.rstrip().endswith('\\'):
            continue
        if subprocess.run(['bash', '-n', '-c', src], stderr=subprocess.DEVNULL).returncode == 0:
            out.append(src)
            cur = []
    if '\n'.join(cur).strip():
        out.append('\n'.join(cur))  # incomplete: bash reports it when it runs
    return out


def pattern(line):
    """A regex for one expected line, against output whose whitespace is collapsed."""
    parts = []
    for k, piece in enumerate(line.strip().split('...')):
        if k:
            parts.append('.*?')
        pos = 0
        for m in re.finditer(r'\b[0-9a-f]{16}\b|~?\d+(?:\.\d+)?(?: (?:B|KiB|MiB|GiB|TiB)\b)?|\s+',
                             piece):
            parts.append(re.escape(piece[pos:m.start()]))
            tok = m.group(0)
            if tok.isspace():
                parts.append(r'\s+')
            elif re.fullmatch(r'[0-9a-f]{16}', tok):
                parts.append(r'[0-9a-f]{16}')  # a stable stack key: it hashes the file paths
            elif re.search(r'\.(py|c|cc|cu|h):$', piece[:m.start()]):
                parts.append(re.escape(tok))  # a source line number: exact
            else:
                unit = tok.endswith('B')
                parts.append(r'~?\d+(?:\.\d+)?' + (r' [KMGT]?i?B\b' if unit else ''))
            pos = m.end()
        parts.append(re.escape(piece[pos:]))
    return re.compile(''.join(parts))


def need_ok(need, build):
    if need in ('numpy', 'torch'):
        r = subprocess.run(['/usr/bin/python3', '-c', 'import ' + need],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return r.returncode == 0, '/usr/bin/python3 cannot import ' + need
    if need == 'fakecuda':
        lib = os.path.join(build, 'tests', 'gpu', 'fakecuda', 'libcuda.so.1')
        return os.path.exists(lib), 'the CUDA driver double is not built (%s)' % lib
    return False, 'unknown need ' + need


def main():
    args = sys.argv[1:]
    show = None
    if '--show' in args:
        k = args.index('--show')
        show = args[k + 1]
        del args[k:k + 2]
    readme, build, src = (os.path.abspath(a) for a in args)
    docs = blocks(readme)
    fail, skipped = [], []
    names = [n for n, _ in docs]
    for want in ('quick-start', 'leak', 'limit', 'gpu', 'follow', 'diff'):
        if want not in names:
            fail.append('README.md has no doc-test %s' % want)
    # the quick start's test command is what .ci/run runs
    qs = dict(docs).get('quick-start')
    if qs and len(qs['cmd']) >= 2:
        ci = open(os.path.join(src, '.ci', 'run'), encoding='utf-8').read()
        if not re.search(r'^' + re.escape(qs['cmd'][1].strip()) + r'(\s|$)', ci, re.M):
            fail.append(".ci/run does not run the quick start's test command '%s'" % qs['cmd'][1])
    work = tempfile.mkdtemp(prefix='ndmem-doc-')
    try:
        for link, target in (('build', build), ('examples', os.path.join(src, 'examples')),
                             ('tests', os.path.join(src, 'tests'))):
            os.symlink(target, os.path.join(work, link))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('NDMEM_') and k not in ('LD_PRELOAD', 'PYTORCH_CUDA_ALLOC_CONF')}
        env['PATH'] = '%s/build/tools:%s/build/report:%s' % (work, work, env.get('PATH', '/usr/bin:/bin'))
        for name, b in docs:
            unmet = [why for ok, why in (need_ok(n, build) for n in b['needs']) if not ok]
            if unmet:
                skipped.append('%s: not run: %s' % (name, '; '.join(unmet)))
                continue
            text = '\n'.join(b['cmd'])
            if b['part'] == 'last':
                text = b['cmd'][0].split(' && ')[-1]
            cmds = statements(text)
            want = b['exit'] * len(cmds) if len(b['exit']) == 1 else b['exit']
            if len(want) != len(cmds):
                fail.append('%s: %d commands but %d exit statuses' % (name, len(cmds), len(want)))
                continue
            script = os.path.join(work, '.%s.sh' % name)
            with open(script, 'w') as f:
                for c in cmds:
                    f.write(c + '\necho $? >&9\n')
                f.write('wait\n')
            rcfile = os.path.join(work, '.%s.rc' % name)
            outfile = os.path.join(work, '.%s.out' % name)
            with open(outfile, 'wb') as out:
                try:
                    subprocess.run(['bash', '-c', 'exec 9>"$1"; . "$2"', 'doc', rcfile, script],
                                   cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=600)
                except subprocess.TimeoutExpired:
                    fail.append('%s: still running after 600 s' % name)
                    continue
            output = open(outfile, encoding='utf-8', errors='replace').read()
            if show:
                shutil.copy(outfile, os.path.join(show, name + '.out'))
            got = [int(s) for s in open(rcfile).read().split()]
            for c, w, g in zip(cmds, want, got + [None] * len(cmds)):
                if g != w:
                    fail.append('%s: `%s` exited %s, the README says %d' % (name, c.split('\n')[0], g, w))
            flat = ' '.join(output.split())
            missing = [l for l in b.get('out', []) if l.strip() and l.strip() != '...'
                       and not pattern(l).search(flat)]
            for l in missing:
                fail.append('%s: the output has no line like: %s' % (name, l.strip()))
            if missing:
                sys.stderr.write('---- %s: its output\n%s\n----\n' % (name, output[-6000:]))
            print('%s: %d commands run%s' % (name, len(cmds), ', output differs' if missing else ''))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for s in skipped:
        print(s)
    for f in fail:
        print('FAIL: ' + f)
    if fail:
        return 1
    return 77 if skipped else 0


if __name__ == '__main__':
    sys.exit(main())
