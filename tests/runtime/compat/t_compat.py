# SPDX-License-Identifier: MIT
# t_compat: real test suites give the same results with the default shim (LD_PRELOAD and no
# NDMEM_* variable) as without it: a subset of CPython's own regression tests (regrtest) or of
# numpy's tests (pytest). Every test case and every module is compared, outcome for outcome, and
# so are the files a run leaves in its working directory and its TMPDIR; a case that fails
# without the shim is excluded, and units that differ are run once more to filter out flakes.
# usage: t_compat.py cpython|numpy LIBNDMEM [--python PY] [--jobs N] [--timeout S] [UNIT ...]
# Exit status: 0 same results, 1 differences (each one printed), 77 a prerequisite is missing.
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SKIP = 77

# regrtest modules: threads, fork and multiprocessing, child processes and their fds, mappings,
# signals, the collector and weak references; the longest first, so the pool finishes early
CPYTHON_UNITS = [
    'test_multiprocessing_fork', 'test_signal', 'test_subprocess', 'test_threading', 'test_os',
    'test_weakref', 'test_gc', 'test_mmap']
# test_multiprocessing_fork: its cases with forked processes (144 of 375); the thread and manager
# variants repeat them over threads (test_threading's ground) and a server process, 200 s under
# the shim: name the module as a UNIT for all of them
CPYTHON_EXTRA = {'test_multiprocessing_fork': ['-m', '*WithProcesses*']}
# numpy test files: array creation, copies and views, ufunc buffers, iterators, linear algebra
# (LAPACK work arrays), numpy's own allocator hooks and random generation, all allocating heavily.
NUMPY_UNITS = [
    'numpy.linalg.tests.test_linalg', 'numpy.core.tests.test_multiarray',
    'numpy.random.tests.test_generator_mt19937', 'numpy.core.tests.test_umath',
    'numpy.core.tests.test_nditer', 'numpy.core.tests.test_numeric',
    'numpy.lib.tests.test_function_base', 'numpy.core.tests.test_ufunc',
    'numpy.core.tests.test_mem_policy']
# test_mem_policy's one slow test runs all of numpy.core's tests again under a new policy (2 min)
NUMPY_EXTRA = {'numpy.core.tests.test_mem_policy': ['-m', 'not slow']}
# numpy skips tests needing more memory than this; fixed so that concurrent runs cannot decide it
NUMPY_AVAILABLE_MEM = '4 GB'

BAD = ('failed', 'error')


RUNNING = set()  # sessions of the runs under way


def kill_session(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def on_signal(signum, frame):
    for pid in list(RUNNING):
        kill_session(pid)
    raise SystemExit('t_compat: stopped by signal %d' % signum)


def log(*a):
    print(*a, flush=True)


class Run:
    """One run of one unit (a regrtest module or a pytest file), with or without the shim."""

    def __init__(self, unit, shim, rnd):
        self.unit, self.shim, self.rnd = unit, shim, rnd
        self.cases = {}      # case id -> (outcome, message)
        self.outcome = None  # unit outcome
        self.detail = []     # lines explaining the unit outcome
        self.files = {}      # masked path -> [real paths] left in the cwd / TMPDIR
        self.traces = 0      # ndmem traces in the run directory (the default NDMEM_OUTPUT)
        self.seconds = 0.0
        self.rc = None


def clean_env(lib, tmpdir, extra, shim_env):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('NDMEM_') and k != 'LD_PRELOAD'}
    env['TMPDIR'] = tmpdir
    env.update(extra)
    if lib:
        env['LD_PRELOAD'] = lib
        env.update(shim_env)
    return env


def mask(path):
    return re.sub(r'[0-9]+', 'N', path)


TRACE = re.compile(r'ndmem\.[0-9]+\.trace')


def leftovers(top, label, out, traces=None):
    """Files and empty folders left under top. With `traces` (a list), the traces the default
    NDMEM_OUTPUT writes into the run's own directory (the process started here, and beside it
    its children's) are what the user asked for: collected there, not compared."""
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files) + [d + '/' for d in dirs if not os.listdir(os.path.join(root, d))]:
            rel = os.path.relpath(os.path.join(root, name), top)
            if traces is not None and root == top and TRACE.fullmatch(name):
                traces.append(name)
                continue
            out.setdefault(label + mask(rel), []).append(label + rel)


def first_lines(text, n=4, width=240):
    lines = [ln.rstrip() for ln in (text or '').strip().splitlines() if ln.strip()]
    out = [ln if len(ln) <= width else ln[:width] + ' ...' for ln in lines[:n]]
    if len(lines) > n:
        out.append('... (%d more lines)' % (len(lines) - n))
    return out


def add_case(cases, cid, outcome, message):
    old = cases.get(cid)
    if old is None or (old[0] not in BAD and outcome != 'passed'):
        cases[cid] = (outcome, message)


class Suite:
    name = None

    def __init__(self, args):
        self.args = args
        self.py = args.python

    def run(self, unit, shim, rnd, base):
        r = Run(unit, shim, rnd)
        # short paths: multiprocessing's AF_UNIX sockets live under TMPDIR (at most 107 bytes)
        d = os.path.join(base, '%d%s%d' % (self.args.units.index(unit), 'sw'[not shim], rnd))
        os.mkdir(d)
        with open(os.path.join(d, 'unit'), 'w') as f:
            f.write('%s %s shim, round %d\n' % (unit, 'with' if shim else 'without', rnd))
        cwd, tmp = os.path.join(d, 'cwd'), os.path.join(d, 'tmp')
        os.mkdir(cwd)
        os.mkdir(tmp)
        xml, out = os.path.join(d, 'junit.xml'), os.path.join(d, 'output')
        cmd = self.command(unit, xml, cwd)
        env = clean_env(self.args.lib if shim else None, tmp, self.env(), self.args.shim_env)
        env['PWD'] = cwd  # as a shell sets it for a command started in cwd
        t0 = time.monotonic()
        with open(out, 'wb') as f:
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            RUNNING.add(p.pid)
            try:
                r.rc = p.wait(timeout=self.args.timeout + 60)
            except subprocess.TimeoutExpired:
                r.rc = None
            # the run's own session: whatever it left running (daemon children) goes with it
            kill_session(p.pid)
            p.wait()
            RUNNING.discard(p.pid)
        r.seconds = time.monotonic() - t0
        with open(out, 'rb') as f:
            text = f.read().decode('utf-8', 'replace')
        self.parse_xml(r, xml)
        self.parse_output(r, text)
        traces = []
        leftovers(cwd, 'cwd/', r.files, traces)
        leftovers(tmp, 'TMPDIR/', r.files)
        # under the shim the process started here leaves its trace here (NDMEM_OUTPUT's default)
        r.traces = len(traces)
        if shim and 'ndmem.%d.trace' % p.pid not in traces:
            r.files.setdefault('cwd/(no trace of the process started here)', []).append(
                'cwd/ndmem.%d.trace missing' % p.pid)
        if not self.args.keep:
            shutil.rmtree(d, ignore_errors=True)
        return r

    def parse_xml(self, r, path):
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            return
        for tc in root.iter('testcase'):
            cid = self.case_id(r.unit, tc)
            outcome, message = 'passed', ''
            for child in tc:
                o = self.child_outcome(child)
                if o is None:
                    continue
                outcome = o
                message = child.get('message') or ''
                if not message.strip():
                    message = '\n'.join((child.text or '').strip().splitlines()[-3:])
                if o in BAD:
                    break
            add_case(r.cases, cid, outcome, message)


class CPython(Suite):
    name = 'cpython'
    units = CPYTHON_UNITS
    jobs = 4

    def check(self):
        code = ('import importlib.util, sys, test.libregrtest\n'
                'missing = [m for m in sys.argv[1:] if importlib.util.find_spec("test." + m) is None]\n'
                'print(" ".join(missing)); sys.exit(1 if missing else 0)')
        p = subprocess.run([self.py, '-c', code] + self.args.units, capture_output=True, text=True)
        if p.returncode != 0:
            v = subprocess.run([self.py, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                               capture_output=True, text=True).stdout.strip() or '3.X'
            why = p.stdout.strip() and 'missing: ' + p.stdout.strip() or ' '.join(
                p.stderr.strip().splitlines()[-1:])
            return ("CPython's test suite is not installed for %s (%s); on Debian: "
                    "apt-get install libpython%s-testsuite" % (self.py, why, v))
        return None

    def env(self):
        return {}

    def command(self, unit, xml, cwd):
        # one module per regrtest process, run sequentially in it: its outcome and its files are
        # its own, and the worker protocol of regrtest -j is not in the way
        extra = CPYTHON_EXTRA.get(unit, []) if self.args.units == CPYTHON_UNITS else []
        return [self.py, '-m', 'test', '--junit-xml', xml, '--tempdir', cwd,
                '--timeout', str(self.args.timeout)] + extra + [unit]

    @staticmethod
    def case_id(unit, tc):
        return tc.get('name')

    @staticmethod
    def child_outcome(child):
        return {'failure': 'failed', 'error': 'error', 'skipped': 'skipped',
                'output': 'expected failure', 'outcome': 'unexpected success'}.get(child.tag)

    # the module's outcome, from regrtest's closing summary (libregrtest/main.py, display_result)
    HEADINGS = [(re.compile(r'^(All )?\d+ tests? OK\.$'), 'passed'),
                (re.compile(r'^\d+ tests? failed:$'), 'failed'),
                (re.compile(r'^\d+ tests? altered the execution environment:$'), 'env changed'),
                (re.compile(r'^\d+ tests? skipped:$'), 'skipped'),
                (re.compile(r'^\d+ tests? run no tests:$'), 'run no tests'),
                (re.compile(r'^\d+ tests? omitted:$'), 'omitted')]

    def parse_output(self, r, text):
        lines = text.splitlines()
        try:
            start = max(i for i, ln in enumerate(lines) if ln.startswith('== Tests result: '))
        except ValueError:
            start = None
        found = []
        if start is not None:
            for ln in lines[start:]:
                for rx, outcome in self.HEADINGS:
                    if rx.match(ln.strip()):
                        found.append(outcome)
        for o in ('failed', 'env changed', 'omitted', 'skipped', 'run no tests', 'passed'):
            if o in found:
                r.outcome = o
                break
        else:
            r.outcome = ('timed out' if r.rc is None else
                         'crashed (%s)' % ('signal %d' % -r.rc if r.rc < 0 else 'exit status %d' % r.rc))
        warn = [ln for ln in lines if ln.startswith('Warning -- ') or ln.startswith('test ') and ' failed -- ' in ln
                or ln.startswith('Timeout (')]
        seen = []
        for ln in warn:
            if ln not in seen:
                seen.append(ln)
        r.detail = seen
        if r.outcome.startswith(('crashed', 'timed out')):
            r.detail += [ln for ln in lines if ln.strip()][-8:]


class Numpy(Suite):
    name = 'numpy'
    units = NUMPY_UNITS
    jobs = 2

    def check(self):
        code = ('import importlib.util, sys, numpy, pytest, hypothesis\n'
                'missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]\n'
                'print(" ".join(missing)); sys.exit(1 if missing else 0)')
        p = subprocess.run([self.py, '-c', code] + self.args.units, capture_output=True, text=True)
        if p.returncode != 0:
            why = p.stdout.strip() and 'missing: ' + p.stdout.strip() or ' '.join(
                p.stderr.strip().splitlines()[-1:])
            return ("numpy's tests cannot run with %s (%s); on Debian: apt-get install "
                    "python3-numpy python3-pytest python3-hypothesis" % (self.py, why))
        return None

    def env(self):
        # OpenBLAS threads as in the runtime tier; the memory numpy may assume is fixed
        return {'NPY_AVAILABLE_MEM': NUMPY_AVAILABLE_MEM, 'OPENBLAS_NUM_THREADS': '2',
                'PYTHONDONTWRITEBYTECODE': '1'}

    def command(self, unit, xml, cwd):
        # --rootdir: the folder holding the numpy package, so that test ids are full dotted paths
        site = os.path.dirname(os.path.dirname(self.numpy_dir))
        return [self.py, '-m', 'pytest', '--pyargs', unit, '-p', 'no:cacheprovider', '-q',
                '-rN', '--rootdir', site, '--junitxml', xml,
                '-o', 'faulthandler_timeout=%d' % self.args.timeout] + NUMPY_EXTRA.get(unit, [])

    @property
    def numpy_dir(self):
        if not hasattr(self, '_numpy_dir'):
            self._numpy_dir = subprocess.run(
                [self.py, '-c', 'import numpy, os; print(os.path.dirname(numpy.__file__))'],
                capture_output=True, text=True, check=True).stdout.strip()
        return self._numpy_dir

    @staticmethod
    def case_id(unit, tc):
        return '%s::%s' % (tc.get('classname'), tc.get('name'))

    @staticmethod
    def child_outcome(child):
        if child.tag == 'skipped':
            return 'expected failure' if child.get('type') == 'pytest.xfail' else 'skipped'
        return {'failure': 'failed', 'error': 'error'}.get(child.tag)

    EXIT = {0: 'passed', 1: 'failed', 2: 'interrupted', 3: 'internal error', 4: 'usage error',
            5: 'no tests collected'}

    def parse_output(self, r, text):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if r.rc is None:
            r.outcome = 'timed out'
        elif r.rc < 0:
            r.outcome = 'crashed (signal %d)' % -r.rc
        else:
            r.outcome = self.EXIT.get(r.rc, 'crashed (exit status %d)' % r.rc)
        if r.outcome != 'passed':
            r.detail = lines[-8:]


def counts(runs, suite):
    c = {}
    for r in runs:
        for outcome, _ in r.cases.values():
            c[outcome] = c.get(outcome, 0) + 1
    order = ['passed', 'failed', 'error', 'skipped', 'expected failure', 'unexpected success']
    cases = ', '.join('%d %s' % (c.get(k, 0), k) for k in order
                      if k in c or k in ('passed', 'failed', 'skipped'))
    m = {}
    for r in runs:
        m[r.outcome] = m.get(r.outcome, 0) + 1
    mods = ', '.join('%d %s' % (v, k) for k, v in sorted(m.items(), key=lambda kv: -kv[1]))
    return 'cases: %s; %s: %s' % (cases, 'modules' if suite == 'cpython' else 'files', mods)


def compare(w, s):
    """Differences between the run without (w) and with (s) the shim of one unit: a dict
    key -> (text lines), and the excluded cases."""
    diffs, excluded = {}, []
    unit = w.unit
    base_bad = w.outcome not in ('passed', 'skipped', 'run no tests')
    if w.outcome != s.outcome:
        if base_bad:
            excluded.append('%s: %s without the shim (%s with it); its own outcome is not compared'
                            % (unit, w.outcome, s.outcome))
        else:
            lines = ['%s: %s without the shim, %s with it' % (unit, w.outcome, s.outcome)]
            lines += ['    ' + ln for ln in s.detail[:12]]
            diffs[(unit, 'unit')] = lines
    if not w.cases and s.cases:
        excluded.append('%s: no case results without the shim; its %d cases with the shim are '
                        'not compared' % (unit, len(s.cases)))
    missing = []
    for cid in sorted(set(w.cases) | set(s.cases)):
        wo, wm = w.cases.get(cid, ('absent', ''))
        so, sm = s.cases.get(cid, ('absent', ''))
        if wo in BAD:
            excluded.append('%s: %s without the shim (%s with it)%s' % (
                cid, wo, so, ''.join('\n      ' + ln for ln in first_lines(wm, 2))))
            continue
        if wo == so:
            continue
        if so == 'absent' and not s.cases:
            missing.append(cid)
            continue
        if wo == 'absent' and not w.cases:
            continue  # the unit itself broke without the shim: excluded above
        lines = ['%s: %s without the shim, %s with it' % (cid, wo, so)]
        lines += ['    ' + ln for ln in first_lines(sm if so != 'passed' else wm)]
        diffs[(unit, 'case', cid)] = lines
    if missing:
        diffs[(unit, 'missing')] = ['%s: %d test cases have no result with the shim (%s), e.g. %s'
                                    % (unit, len(missing), s.outcome, missing[0])]
    for key in sorted(set(w.files) | set(s.files)):
        if key in w.files and key in s.files and len(w.files[key]) == len(s.files[key]):
            continue
        only = s.files.get(key, [])
        lines = ['%s: left %s: %d without the shim, %d with it: %s' % (
            unit, key, len(w.files.get(key, [])), len(only),
            ' '.join((only or w.files[key])[:4]) + (' ...' if len(only or w.files[key]) > 4 else ''))]
        diffs[(unit, 'files', key)] = lines
    return diffs, excluded


def run_round(suite, units, rnd, base, jobs):
    t0 = time.monotonic()
    tasks = [(u, shim) for u in units for shim in (False, True)]
    res = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(suite.run, u, shim, rnd, base): (u, shim) for u, shim in tasks}
        for f in concurrent.futures.as_completed(futs):
            r = f.result()
            res[(r.unit, r.shim)] = r
            log('  %-42s %-12s %-22s %6.1f s  %d cases' % (
                r.unit, 'with shim' if r.shim else 'without shim', r.outcome, r.seconds, len(r.cases)))
    return res, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('suite', choices=['cpython', 'numpy'])
    ap.add_argument('lib', help='path of libndmem.so')
    ap.add_argument('units', nargs='*', help='regrtest modules or numpy test modules')
    ap.add_argument('--python', default='/usr/bin/python3')
    ap.add_argument('--jobs', type=int, default=0, help='runs at once (default: 4 cpython, 2 numpy)')
    ap.add_argument('--timeout', type=int, default=300, help='seconds per run')
    ap.add_argument('--no-rerun', action='store_true', help='do not run differing units again')
    ap.add_argument('--keep', action='store_true', help='keep the runs\' folders')
    ap.add_argument('--shim-env', action='append', default=[], metavar='NDMEM_X=V',
                    help='diagnosis only: a setting for the runs with the shim (the tests use none)')
    args = ap.parse_args()
    args.shim_env = dict(kv.split('=', 1) for kv in args.shim_env)
    suite = (CPython if args.suite == 'cpython' else Numpy)(args)
    if not args.units:
        args.units = list(suite.units)
    if not os.access(args.python, os.X_OK):
        print('%s: no such interpreter' % args.python, file=sys.stderr)
        return SKIP
    why = suite.check()
    if why:
        print(why, file=sys.stderr)
        return SKIP
    if not os.path.isfile(args.lib):
        print('%s: no such library' % args.lib, file=sys.stderr)
        return 1
    args.lib = os.path.abspath(args.lib)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    jobs = args.jobs or suite.jobs
    base = tempfile.mkdtemp(prefix='ndc-%s.' % suite.name[:2])
    try:
        log('compat %s: %d %s with %s, without and with LD_PRELOAD=%s%s, %d runs at once'
            % (suite.name, len(args.units), 'modules' if suite.name == 'cpython' else 'test files',
               args.python, args.lib, ''.join(' %s=%s' % kv for kv in args.shim_env.items()), jobs))
        log('round 1:')
        res1, t1 = run_round(suite, args.units, 1, base, jobs)
        log('round 1 took %.1f s' % t1)
        diffs1, excl1 = {}, []
        for u in args.units:
            d, e = compare(res1[(u, False)], res1[(u, True)])
            diffs1.update(d)
            excl1 += e
        differing = [u for u in args.units if any(k[0] == u for k in diffs1)]
        confirmed, flaky, excluded = diffs1, {}, excl1
        t2 = 0.0
        if differing and not args.no_rerun:
            log('round 2: running the %d %s that differed once more, without and with the shim; '
                'a difference counts only when it shows again (flakes are dropped and listed):'
                % (len(differing), 'module(s)' if suite.name == 'cpython' else 'file(s)'))
            res2, t2 = run_round(suite, differing, 2, base, jobs)
            log('round 2 took %.1f s' % t2)
            diffs2, excl2 = {}, []
            for u in differing:
                d, e = compare(res2[(u, False)], res2[(u, True)])
                diffs2.update(d)
                excl2 += e
            confirmed = {k: v for k, v in diffs1.items() if k in diffs2}
            flaky = {k: v for k, v in diffs1.items() if k not in diffs2}
            flaky.update({k: v for k, v in diffs2.items() if k not in diffs1})
            excluded = excl1 + ['(round 2) ' + e for e in excl2 if e not in excl1]
            # a case that failed without the shim in round 2 is excluded as well
            bad2 = {cid for u in differing for cid, (o, _) in res2[(u, False)].cases.items() if o in BAD}
            for k in list(confirmed):
                if k[1] == 'case' and k[2] in bad2:
                    del confirmed[k]
        if excluded:
            log('\nexcluded from the comparison (failing without the shim, so not the shim\'s doing):')
            for e in excluded:
                log('  ' + e)
        if flaky:
            log('\ndifferences that did not show again in round 2 (flaky, not counted):')
            for k in sorted(flaky, key=str):
                for ln in flaky[k]:
                    log('  ' + ln)
        log('')
        log('counts (round 1):')
        log('without shim: ' + counts([res1[(u, False)] for u in args.units], suite.name))
        log('with shim:    ' + counts([res1[(u, True)] for u in args.units], suite.name))
        log('time: round 1 %.1f s, round 2 %.1f s' % (t1, t2))
        if confirmed:
            log('\n%d difference(s) with the shim%s:' % (
                len(confirmed), '' if args.no_rerun or not differing else ', each seen in both rounds'))
            for k in sorted(confirmed, key=str):
                for ln in confirmed[k]:
                    log('  ' + ln)
            units = sorted({k[0] for k in confirmed}, key=args.units.index)
            log('\nFAIL: %d difference(s) with the default shim, in %s' % (len(confirmed), ' '.join(units)))
            return 1
        log('\nsame results with and without the shim')
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            log('runs kept in %s' % base)


if __name__ == '__main__':
    sys.exit(main())
