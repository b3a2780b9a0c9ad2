#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_py_frames: Python frames in allocation stacks, end to end. A case runs a workload of this
# folder under the shim and checks ndmemreport's JSON against the lines its `# LINE_*` markers
# name (no line number is written here): numpy lines (lines), threads, recursion, generators and
# coroutines (shapes), PyTorch (torch), other CPython versions (versions). Each case's docstring
# says what it asserts; exit 77 when what it needs is absent.
# usage: t_py_frames.py CASE LIBNDMEM NDMEMREPORT FIND_PYTHON SCRIPT
import glob
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# ---- the report's names for what Python frames add (ndmemreport --format json). Every lookup
# of them goes through this block, so a renamed key is a one-line change here.
K_FRAME_IS_PY = "python"       # in a stack frame: true for a Python frame
K_FRAME_FUNCTION = "function"  # the code object's qualified name
K_FRAME_FILE = "file"
K_FRAME_LINE = "line"
K_LINES = "python_lines"       # top level: allocations by the line of their innermost Python frame
K_LINE = {"file": "file", "line": "line", "function": "function", "sites": "sites",
          "allocs": "allocs", "alloc_bytes": "alloc_bytes", "live_bytes": "live_bytes",
          "program": "program"}
K_SUMMARY = "python"           # top level, beside the summary's other parts: the PYTHON record
K_SUMMARY_FIELD = {"version": "version", "state": "state", "stacks": "stacks",
                   "with_python": "with_python", "frames": "frames", "dropped": "dropped"}
OPT_PYTHON_ONLY = "--python-only"
UNSUPPORTED_PREFIX = "ndmem: Python "  # the one stderr line for an interpreter ndmem cannot read
PY_DEPTH = 64  # NDMEM_PY_DEPTH's default: Python frames kept per stack


def py_frame(fr):
    """(function, file, line) of a Python frame of a JSON stack; None for a native frame."""
    if isinstance(fr, dict) and fr.get(K_FRAME_IS_PY) is True:
        return fr.get(K_FRAME_FUNCTION), fr.get(K_FRAME_FILE), fr.get(K_FRAME_LINE)
    return None


def py_lines(doc):
    """The per-line table as a list of dicts with the canonical field names; None if absent."""
    rows = doc.get(K_LINES)
    if rows is None:
        return None
    if isinstance(rows, dict):  # {"count": N, "top": [...]} (--top applies to "top")
        rows = rows.get("top", [])
    return [{k: r.get(v) for k, v in K_LINE.items()} for r in rows]


def py_summary(doc):
    """The summary's Python object with the canonical field names; None if absent."""
    s = doc.get(K_SUMMARY)
    if not isinstance(s, dict):
        return None
    return {k: s.get(v) for k, v in K_SUMMARY_FIELD.items()}


# ---- checks: every result is printed; any failure makes the exit status 1

failures = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what), flush=True)
    if not ok:
        failures.append(what)
    return ok


def skip(why):
    print("skipped: %s" % why, file=sys.stderr)
    sys.exit(77)


def markers(path):
    """{NAME: line} for every `# LINE_NAME` comment that ends a line of path."""
    found = {}
    for i, text in enumerate(open(path, encoding="utf-8"), 1):
        m = re.search(r"#\s*(LINE_[A-Z_]+)\s*$", text)
        if m:
            if m.group(1) in found:
                sys.exit("%s: marker %s twice" % (path, m.group(1)))
            found[m.group(1)] = i
    return found


def child_env(extra=None):
    """The caller's environment without LD_PRELOAD and NDMEM_* (NDMEM_PYTHON there names the
    tests' interpreter, not a shim setting), plus what a run sets."""
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("NDMEM_")}
    env.update(extra or {})
    return env


# A run that takes longer than this is a hang: its threads' stacks are printed (gdb, when there
# is one) before it is killed, so that a failure says where, well within Meson's timeout.
RUN_TIMEOUT = 45


def run_bounded(argv, env, cwd, what):
    """subprocess.run's result for argv; a run past RUN_TIMEOUT is reported with its stacks."""
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        out, err = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        print("FAIL: %s: no end after %d s (%s); its threads:" % (what, RUN_TIMEOUT, " ".join(argv)),
              flush=True)
        try:
            g = subprocess.run(["gdb", "-p", str(p.pid), "-batch", "-ex", "thread apply all bt"],
                               capture_output=True, text=True, timeout=30)
            print(g.stdout[-6000:], flush=True)
        except (OSError, subprocess.TimeoutExpired) as e:
            print("(no stacks: %s)" % e, flush=True)
        p.kill()
        out, err = p.communicate()
        sys.exit(1)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


class Ctx:
    def __init__(self, lib, rep, tmp):
        self.lib, self.rep, self.tmp, self.n = lib, rep, tmp, 0

    def plain(self, argv, env=None):
        return run_bounded(argv, child_env(env), self.tmp, "plain run")

    def shim(self, argv, env=None):
        """Runs argv under the shim; returns (process, trace path)."""
        self.n += 1
        trace = os.path.join(self.tmp, "run%d.trace" % self.n)
        e = {"LD_PRELOAD": self.lib, "NDMEM_OUTPUT": trace, "NDMEM_SUMMARY": "0"}
        e.update(env or {})
        return run_bounded(argv, child_env(e), self.tmp, "run under the shim"), trace

    def report(self, trace, *opts):
        return run_bounded([self.rep] + list(opts) + [trace], None, None, "ndmemreport")

    def json(self, trace, *opts):
        r = self.report(trace, "--format", "json", "--top", "0", *opts)
        if not check(r.returncode == 0, "ndmemreport --format json %s reads the trace"
                     % " ".join(opts)):
            print(r.stderr.strip(), file=sys.stderr)
            return None
        return json.loads(r.stdout)


def same_run(plain, shim, what):
    """The run under the shim ended as the plain run did and printed the same stdout."""
    ok = check(shim.returncode == plain.returncode == 0,
               "%s: exit status 0 plain and under the shim (%d, %d)"
               % (what, plain.returncode, shim.returncode))
    if not ok:
        print("plain stderr:\n%s\nshim stderr:\n%s" % (plain.stderr[-2000:], shim.stderr[-2000:]),
              file=sys.stderr)
    check(shim.stdout == plain.stdout and plain.stdout != "",
          "%s: stdout the same under the shim" % what)
    return ok


def sites(doc):
    return doc["sites"]["by_total"]


def all_stacks(node):
    """Every stack (a "frames" list) anywhere in the report."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "frames" and isinstance(v, list):
                yield v
            else:
                yield from all_stacks(v)
    elif isinstance(node, list):
        for v in node:
            yield from all_stacks(v)


def all_frames(node):
    """Every frame of every stack anywhere in the report."""
    for st in all_stacks(node):
        yield from st


def pyframes(site):
    return [f for f in (py_frame(fr) for fr in site["frames"]) if f]


def native_prefix(site):
    """The native frames inside the innermost Python frame, as (module, offset)."""
    out = []
    for fr in site["frames"]:
        if py_frame(fr):
            break
        out.append((fr.get("module"), fr.get("offset")))
    return out


def same_file(f, script):
    if not isinstance(f, str):
        return False
    if os.path.isabs(f):
        return os.path.realpath(f) == os.path.realpath(script)
    return os.path.basename(f) == os.path.basename(script)


def at(frame, script, line, function=None):
    return (frame is not None and same_file(frame[1], script) and frame[2] == line
            and (function is None or frame[0] == function))


def sites_at(doc, script, line):
    """Sites whose innermost Python frame is script:line."""
    out = []
    for s in sites(doc):
        pf = pyframes(s)
        if pf and at(pf[0], script, line):
            out.append(s)
    return out


def data_site(doc, script, line, name):
    """The heap site with the most bytes among those whose innermost Python frame is
    script:line (the array data; the line's other allocations are small objects)."""
    heap = [s for s in sites_at(doc, script, line) if s["kind"] == "heap"]
    if not check(heap, "a heap site whose innermost Python frame is %s:%d (%s)"
                 % (os.path.basename(script), line, name)):
        return None
    return max(heap, key=lambda s: s["alloc_bytes"])


def show(frames):
    return " <- ".join("%s@%s:%s" % (f[0], os.path.basename(f[1] or "?"), f[2]) for f in frames)


def check_no_python_frames(doc, what):
    n = sum(1 for fr in all_frames(doc) if py_frame(fr))
    check(n == 0, "%s: no Python frame anywhere in the report (%d found)" % (what, n))


def check_summary(doc, py, state, what):
    s = py_summary(doc)
    if not check(s is not None, "%s: the report has a '%s' summary object" % (what, K_SUMMARY)):
        return None
    check(s["state"] == state, "%s: python state %r (want %r)" % (what, s["state"], state))
    want = version_of(py)
    if state != "off":
        check(s["version"] == want, "%s: python version %r (want %r)" % (what, s["version"], want))
    return s


_versions = {}


def version_of(py):
    if py not in _versions:
        _versions[py] = subprocess.run(
            [py, "-c", "import platform; print(platform.python_version())"], env=child_env(),
            capture_output=True, text=True).stdout.strip()
    return _versions[py]


def version_tuple(py):
    return tuple(int(x) for x in version_of(py).split(".")[:2])


def counts(stdout, key):
    """{field: int} of a workload's `key n=.. bytes=..` line."""
    m = re.search(r"^%s ((?:\w+=\d+ ?)+)" % re.escape(key), stdout, re.M)
    if not m:
        sys.exit("no '%s' line in the workload's output:\n%s" % (key, stdout))
    return {k: int(v) for k, v in (w.split("=") for w in m.group(1).split())}


def numpy_python(find_python):
    r = subprocess.run([find_python], capture_output=True, text=True)
    if r.returncode != 0:
        skip(r.stderr.strip() or "no interpreter with numpy")
    py = r.stdout.strip()
    print("interpreter: %s (Python %s)" % (py, version_of(py)))
    return py


# ---- cases

def case_lines(ctx, find_python, script):
    """py_lines.py under the shim, every block tracked (NDMEM_TRACK_MIN=0), then with
    NDMEM_PYTHON=0. Asserts: the same stdout as a plain run; the heap site with the most bytes
    among those whose innermost Python frame is LINE_A has exactly n allocations of numpy's data
    buffer size (n * nbytes bytes, all live at exit: one site although the evaluator runs the
    line unspecialised first and specialised after), LINE_B's n allocations of its size all
    freed, LINE_C's one allocation live; A's and B's sites are different sites with the same
    native frames inside their Python frames (numpy's copy path, _multiarray_umath); A's and C's
    blocks are the leaks of those stacks; the summary's python object (state on, the
    interpreter's version, at least 2n+1 stacks with Python frames); python_lines names A, B and
    C as <module> with the totals of the sites at each line, sorted by alloc_bytes; the text
    report prints `<module> (py_lines.py:A)`; --python-only leaves only Python frames in every stack
    that has one; no ndmem line
    on stderr. With NDMEM_PYTHON=0: the same stdout, no Python frame anywhere, state off with no
    stack read, no python_lines entry, no ndmem line on stderr."""
    py = numpy_python(find_python)
    m = markers(script)
    A, B, C = m["LINE_A"], m["LINE_B"], m["LINE_C"]
    argv = [py, script]
    plain = ctx.plain(argv)
    shim, trace = ctx.shim(argv, {"NDMEM_TRACK_MIN": "0"})
    if not same_run(plain, shim, "py_lines"):
        return
    check(not [ln for ln in shim.stderr.splitlines() if ln.startswith("ndmem")],
          "py_lines: no ndmem line on stderr (a supported interpreter)")
    sz = counts(plain.stdout, "sizes")
    n = sz["n"]
    doc = ctx.json(trace)
    if doc is None:
        return
    sa = data_site(doc, script, A, "LINE_A")
    sb = data_site(doc, script, B, "LINE_B")
    sc = data_site(doc, script, C, "LINE_C")
    if sa:
        check(pyframes(sa)[0][0] == "<module>", "LINE_A's frame is <module> (%s)"
              % show(pyframes(sa)[:1]))
        check((sa["allocs"], sa["alloc_bytes"], sa["frees"], sa["live_bytes"])
              == (n, n * sz["a"], 0, n * sz["a"]),
              "LINE_A: %d allocs of %d B in one site, all live at exit (allocs, bytes, frees, "
              "live = %d, %d, %d, %d)" % (n, sz["a"], sa["allocs"], sa["alloc_bytes"],
                                         sa["frees"], sa["live_bytes"]))
    if sb:
        check((sb["allocs"], sb["alloc_bytes"], sb["frees"], sb["live_bytes"])
              == (n, n * sz["b"], n, 0),
              "LINE_B: %d allocs of %d B in one site, all freed (allocs, bytes, frees, live = "
              "%d, %d, %d, %d)" % (n, sz["b"], sb["allocs"], sb["alloc_bytes"], sb["frees"],
                                   sb["live_bytes"]))
    if sc:
        check((sc["allocs"], sc["alloc_bytes"], sc["live_bytes"]) == (1, sz["c"], sz["c"]),
              "LINE_C: one alloc of %d B, live at exit (allocs, bytes, live = %d, %d, %d)"
              % (sz["c"], sc["allocs"], sc["alloc_bytes"], sc["live_bytes"]))
    if sa and sb:
        check(sa["stack_id"] != sb["stack_id"], "LINE_A and LINE_B are different sites")
        pa, pb = native_prefix(sa), native_prefix(sb)
        check(pa == pb and any("_multiarray_umath" in (mod or "") for mod, _ in pa),
              "LINE_A and LINE_B reach the allocator through the same native frames, numpy's "
              "(%d frames, %s)" % (len(pa), "equal" if pa == pb else "DIFFERENT: %r / %r"
                                   % (pa, pb)))
    groups = {(g["stack_id"], g["kind"]): g for g in doc["leaks"]["groups"]}
    for name, s, blocks, nbytes in (("LINE_A", sa, n, n * sz["a"]), ("LINE_C", sc, 1, sz["c"])):
        if s:
            g = groups.get((s["stack_id"], "heap"))
            check(g is not None and (g["exact_blocks"], g["exact_bytes"]) == (blocks, nbytes),
                  "%s: live at exit in the leaks, %d blocks of %d B in all (%s)" % (
                      name, blocks, nbytes, g and (g["exact_blocks"], g["exact_bytes"])))
    if sb:
        check((sb["stack_id"], "heap") not in groups, "LINE_B: nothing of it in the leaks")
    s = check_summary(doc, py, "on", "py_lines")
    if s:
        ok = (isinstance(s["with_python"], int) and s["with_python"] >= 2 * n + 1
              and s["stacks"] >= s["with_python"] and s["frames"] >= s["with_python"])
        check(ok, "python summary: stacks %r >= with_python %r >= 2n+1 = %d, frames %r >= "
              "with_python" % (s["stacks"], s["with_python"], 2 * n + 1, s["frames"]))
    rows = py_lines(doc)
    if check(rows is not None, "the report has '%s'" % K_LINES):
        # the program's lines first, then the libraries', each by alloc_bytes, largest first
        key = [(not r["program"], -r["alloc_bytes"]) for r in rows]
        check(key == sorted(key), "%s: the program's lines first, each group sorted by "
              "alloc_bytes, largest first" % K_LINES)
        for name, line in (("LINE_A", A), ("LINE_B", B), ("LINE_C", C)):
            row = [r for r in rows if same_file(r["file"], script) and r["line"] == line]
            if not check(len(row) == 1, "%s names %s once (%d rows)" % (K_LINES, name, len(row))):
                continue
            r = row[0]
            at_line = sites_at(doc, script, line)
            want = {"function": "<module>", "sites": len(at_line),
                    "allocs": sum(x["allocs"] for x in at_line),
                    "alloc_bytes": sum(x["alloc_bytes"] for x in at_line),
                    "live_bytes": sum(x["live_bytes"] for x in at_line)}
            got = {k: r[k] for k in want}
            check(got == want, "%s row of %s: the totals of the sites at that line (%r, want %r)"
                  % (K_LINES, name, got, want))
    text = ctx.report(trace, "--top", "0", "--frames", "0")
    flat = " ".join(text.stdout.split())
    check(text.returncode == 0 and re.search(r"<module> \((?:\S*/)?%s:%d\)" % (
        re.escape(os.path.basename(script)), A), flat),
        "the text report prints the frame as `<module> (%s:%d)`" % (os.path.basename(script), A))
    # --python-only: a stack with a Python frame shows nothing else; one without (a block made
    # before the interpreter ran its first line) keeps its native frames rather than showing none.
    only = ctx.json(trace, OPT_PYTHON_ONLY)
    if only is not None:
        stacks = list(all_stacks(only))
        mixed = sum(1 for st in stacks if any(py_frame(f) for f in st)
                    and not all(py_frame(f) for f in st))
        with_py = sum(1 for st in stacks if any(py_frame(f) for f in st))
        check(with_py > 0 and mixed == 0, "%s: %d stacks with Python frames, %d of them with a "
              "native frame left (want 0)" % (OPT_PYTHON_ONLY, with_py, mixed))
        check(sites_at(only, script, A), "%s: LINE_A's site is there" % OPT_PYTHON_ONLY)

    off, trace = ctx.shim(argv, {"NDMEM_TRACK_MIN": "0", "NDMEM_PYTHON": "0"})
    if not same_run(plain, off, "py_lines NDMEM_PYTHON=0"):
        return
    check(not [ln for ln in off.stderr.splitlines() if ln.startswith("ndmem")],
          "NDMEM_PYTHON=0: no ndmem line on stderr (a known setting) (%r)" % off.stderr[-300:])
    doc = ctx.json(trace)
    if doc is None:
        return
    check_no_python_frames(doc, "NDMEM_PYTHON=0")
    s = check_summary(doc, py, "off", "NDMEM_PYTHON=0")
    if s:
        check((s["stacks"], s["with_python"], s["frames"]) == (0, 0, 0),
              "NDMEM_PYTHON=0: no stack read for Python frames (stacks, with_python, frames = "
              "%r, %r, %r)" % (s["stacks"], s["with_python"], s["frames"]))
    check(not py_lines(doc), "NDMEM_PYTHON=0: no %s entry" % K_LINES)


def is_python_module(mod):
    b = os.path.basename(mod or "")
    return b.startswith("python") or b.startswith("libpython")


def case_threads(ctx, find_python, script):
    """py_threads.py with OPENBLAS_NUM_THREADS=2 (OpenBLAS's worker threads run the matmuls)
    and a Python thread. Asserts: the same stdout as a plain run (exit 0); the Python thread's
    copies are one site at LINE_THREAD with exactly CHUNKS allocations of its size, whose Python
    frames are exactly worker, Thread.run, Thread._bootstrap_inner, Thread._bootstrap (that
    thread's own, from threading.py); the main thread's matmul results are one site at
    LINE_MATMUL with exactly 20 allocations of the result's size and Python frames main,
    <module>; every site on an OpenBLAS thread (an openblas frame under start_thread and no
    interpreter frame) has no Python frame; the python state is on."""
    py = numpy_python(find_python)
    m = markers(script)
    env = {"OPENBLAS_NUM_THREADS": "2"}
    plain = ctx.plain([py, script], env)
    shim, trace = ctx.shim([py, script], env)
    if not same_run(plain, shim, "py_threads"):
        return
    doc = ctx.json(trace)
    if doc is None:
        return
    ch = counts(plain.stdout, "chunks")
    mm = counts(plain.stdout, "matmul")
    st = data_site(doc, script, m["LINE_THREAD"], "LINE_THREAD")
    if st:
        pf = pyframes(st)
        check([f[0] for f in pf] == ["worker", "Thread.run", "Thread._bootstrap_inner",
                                     "Thread._bootstrap"]
              and all(os.path.basename(f[1] or "") == "threading.py" for f in pf[1:]),
              "LINE_THREAD: the thread's own Python frames (%s)" % show(pf))
        check((st["allocs"], st["alloc_bytes"]) == (ch["n"], ch["n"] * ch["bytes"]),
              "LINE_THREAD: %d allocs of %d B in one site (%d, %d)" % (
                  ch["n"], ch["bytes"], st["allocs"], st["alloc_bytes"]))
    sm = data_site(doc, script, m["LINE_MATMUL"], "LINE_MATMUL")
    if sm:
        pf = pyframes(sm)
        check([f[0] for f in pf] == ["main", "<module>"],
              "LINE_MATMUL: the main thread's Python frames (%s)" % show(pf))
        check((sm["allocs"], sm["alloc_bytes"]) == (mm["n"], mm["n"] * mm["bytes"]),
              "LINE_MATMUL: %d allocs of %d B in one site (%d, %d)" % (
                  mm["n"], mm["bytes"], sm["allocs"], sm["alloc_bytes"]))
    blas = [s for s in sites(doc)
            if any("openblas" in os.path.basename(fr.get("module") or "") for fr in s["frames"])
            and any(fr.get("function") == "start_thread" for fr in s["frames"])
            and not any(is_python_module(fr.get("module")) for fr in s["frames"]
                        if not py_frame(fr))]
    bad = [s["stack_id"] for s in blas if pyframes(s)]
    check(not bad, "OpenBLAS's threads: %d sites, none with a Python frame (with: %r)"
          % (len(blas), bad))
    check_summary(doc, py, "on", "py_threads")


def qual(py, name):
    """A code object's name as ndmem reads it: 3.10's code objects have no qualified name."""
    return name.rsplit(".", 1)[-1] if version_tuple(py) < (3, 11) else name


def check_shapes(ctx, py, script, label):
    """py_shapes.py under py (a supported interpreter). See case_shapes."""
    m = markers(script)
    plain = ctx.plain([py, script])
    shim, trace = ctx.shim([py, script])
    if not same_run(plain, shim, label):
        return
    check(not [ln for ln in shim.stderr.splitlines() if ln.startswith("ndmem")],
          "%s: no ndmem line on stderr" % label)
    doc = ctx.json(trace)
    if doc is None:
        return
    want = {  # workload output key: (marker of the line, its innermost Python frames)
        "recursion": ("LINE_BOTTOM", [("recurse", "LINE_BOTTOM"), ("recurse", "LINE_RECURSE")]),
        "generator": ("LINE_GEN", [("Feeder.batches", "LINE_GEN"), ("consume", "LINE_GEN_CALLER")]),
        "coroutine": ("LINE_CORO", [("Client.fetch", "LINE_CORO"),
                                    ("gather_all", "LINE_CORO_CALLER")]),
        "top": ("LINE_TOP", [("<module>", "LINE_TOP")]),
    }
    for key, (mark, frames) in want.items():
        c = counts(plain.stdout, key)
        s = data_site(doc, script, m[mark], "%s %s" % (label, mark))
        if not s:
            continue
        pf = pyframes(s)
        frames = [(qual(py, fn), ln) for fn, ln in frames]
        ok = len(pf) >= len(frames) and all(
            at(pf[i], script, m[ln], fn) for i, (fn, ln) in enumerate(frames))
        check(ok, "%s %s: innermost Python frames %s (got %s)" % (
            label, key, ", ".join("%s:%s" % (fn, ln) for fn, ln in frames), show(pf[:4])))
        check((s["allocs"], s["alloc_bytes"]) == (c["n"], c["len"] + c["n"]),
              "%s %s: %d allocs, %d B in one site (bytearray(k) asks k + 1) (%d, %d)" % (
                  label, key, c["n"], c["len"] + c["n"], s["allocs"], s["alloc_bytes"]))
        if key == "recursion":
            outer = list(itertools.takewhile(lambda f: f[0] == "recurse", pf[2:]))
            bad = [f for f in outer if not at(f, script, m["LINE_RECURSE"])]
            check(not bad, "%s recursion: every further recurse frame (%d) at LINE_RECURSE "
                  "(not: %s)" % (label, len(outer), show(bad[:2])))
    s = check_summary(doc, py, "on", label)
    if s:
        check(isinstance(s["dropped"], int) and s["dropped"] >= 500 + 2 - PY_DEPTH,
              "%s: the summary counts the recursion's Python frames past NDMEM_PY_DEPTH (%d) as "
              "left out: %r >= %d" % (label, PY_DEPTH, s["dropped"], 500 + 2 - PY_DEPTH))
    check_cut(ctx, py, script, label)


CUT = "[native frames past NDMEM_DEPTH not recorded]"  # the marker frame's name


def check_cut(ctx, py, script, label):
    """Python frames are kept whatever NDMEM_DEPTH cuts: py_shapes.py with a 20-deep recursion,
    every block tracked (NDMEM_TRACK_MIN=0, PYTHONHASHSEED=0), under NDMEM_DEPTH=2 and 64: with 2,
    the recursion's, the generator's, the coroutine's and module level's sites still hold their
    whole Python stack, to <module>, after the cut marker wherever native frames were left out,
    nothing but Python frames follows the marker, and at most 2 native frames precede it; each
    of those sites has the same Python frames as under 64; and no more Python frames are counted
    as left out (past NDMEM_PY_DEPTH: the interpreter's own start-up imports can be deeper) than
    under 64, within 1% of the frames read (the interpreter's allocations vary a little between
    runs): the native cut loses none."""
    m = markers(script)
    env = {"NDMEM_TRACK_MIN": "0", "PYTHONHASHSEED": "0"}
    full, full_trace = ctx.shim([py, script, "20"], dict(env, NDMEM_DEPTH="64"))
    shim, trace = ctx.shim([py, script, "20"], dict(env, NDMEM_DEPTH="2"))
    check(shim.returncode == full.returncode == 0, "%s NDMEM_DEPTH=2 and 64: exit status 0 (%d, "
          "%d)" % (label, shim.returncode, full.returncode))
    doc, ref = ctx.json(trace), ctx.json(full_trace)
    if doc is None or ref is None:
        return
    for mark in ("LINE_BOTTOM", "LINE_GEN", "LINE_CORO", "LINE_TOP"):
        s = data_site(doc, script, m[mark], "%s NDMEM_DEPTH=2 %s" % (label, mark))
        if not s:
            continue
        pf = pyframes(s)
        names = [f.get("function") for f in s["frames"]]
        cut = names.index(CUT) if CUT in names else len(names)
        check(sum(1 for f in s["frames"][:cut] if not py_frame(f)) <= 2
              and all(py_frame(f) for f in s["frames"][cut + 1:]),
              "%s NDMEM_DEPTH=2 %s: at most 2 native frames, only Python frames after the marker"
              % (label, mark))
        want = 20 + 2 if mark == "LINE_BOTTOM" else None
        check(pf and pf[-1][0] == "<module>" and (want is None or len(pf) == want),
              "%s NDMEM_DEPTH=2 %s: the whole Python stack (%s), to <module>%s (%s)"
              % (label, mark, "%d frames" % want if want else "",
                 " after the marker" if CUT in names else "", show(pf[-3:])))
        rs = data_site(ref, script, m[mark], "%s NDMEM_DEPTH=64 %s" % (label, mark))
        check(rs and pyframes(rs) == pf, "%s %s: the same Python frames under NDMEM_DEPTH=2 as "
              "under 64 (%s; %s)" % (label, mark, show(pf[:3]), rs and show(pyframes(rs)[:3])))
    s, r = py_summary(doc), py_summary(ref)
    slack = r["frames"] // 100
    check(s["dropped"] <= r["dropped"] + slack,
          "%s: NDMEM_DEPTH=2 leaves out no more Python frames than NDMEM_DEPTH=64 (%d vs %d, "
          "of %d and %d read)" % (label, s["dropped"], r["dropped"], s["frames"], r["frames"]))


def case_shapes(ctx, find_python, script):
    """py_shapes.py under the interpreter find-python.sh names (3.10 to 3.14). Asserts: the same
    stdout as a plain run; for each of the recursion's bottom (depth 500), the generator, the
    coroutine (resumed by asyncio after an await) and module level, the heap site with the most
    bytes among those whose innermost Python frame is its marked line has exactly the workload's
    allocations (count, bytes); its innermost Python frames are exactly: recurse@LINE_BOTTOM,
    recurse@LINE_RECURSE (and every further recurse frame at LINE_RECURSE);
    Feeder.batches@LINE_GEN then its caller consume@LINE_GEN_CALLER; Client.fetch@LINE_CORO then
    gather_all@LINE_CORO_CALLER; <module>@LINE_TOP; the summary (state on, version) counts at
    least one stack's frames beyond the depth limit as dropped; no ndmem line on stderr."""
    py = numpy_python(find_python)
    if not (3, 10) <= version_tuple(py) <= (3, 14):
        skip("%s is Python %s; Python frames are read for 3.10 to 3.14"
             % (py, version_of(py)))
    check_shapes(ctx, py, script, "Python %s" % version_of(py))


def torch_python():
    cands = [os.environ.get("NDMEM_TEST_PYTHON"), "/usr/bin/python3"]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cands.append(os.path.join(d, "python3"))
    for c in cands:
        if c and os.access(c, os.X_OK) and subprocess.run(
                [c, "-c", "import torch"], env=child_env(), capture_output=True).returncode == 0:
            print("interpreter: %s (Python %s)" % (c, version_of(c)))
            return c
    skip("no Python interpreter imports torch (Debian: apt-get install python3-torch)")


def case_torch(ctx, find_python, script):
    """py_torch.py (60 steps, one thread) at the default NDMEM_DEPTH, though torch's dispatcher
    puts 17-25 native frames between the allocator and the interpreter. Asserts: the same final
    loss as a plain run; every site whose stack holds c10's CPU allocator (a tensor's storage)
    has Python frames, and every one of those reaches the script's <module> frame (the whole
    Python stack kept past NDMEM_DEPTH); among the 5 sites with the most alloc_bytes (any kind;
    ties by stack id) at least one has main@LINE_FORWARD as a Python frame and at least one
    main@LINE_BACKWARD; in each of those, every Python frame inside the script's is torch's own
    (a file under a torch/ directory); the python state is on and no Python frame was lost."""
    py = torch_python()
    m = markers(script)
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    plain = ctx.plain([py, script], env)
    shim, trace = ctx.shim([py, script], env)
    if not same_run(plain, shim, "py_torch"):
        return
    doc = ctx.json(trace)
    if doc is None:
        return
    tensors = [s for s in sites(doc)
               if any("alloc_cpu" in (fr.get("function") or "") for fr in s["frames"])]
    bare = [s["stack_id"] for s in tensors if not pyframes(s)]
    short = [(s["stack_id"], show(pyframes(s)[-2:])) for s in tensors
             if pyframes(s) and not any(f[0] == "<module>" and same_file(f[1], script)
                                        for f in pyframes(s))]
    check(tensors and not bare and not short,
          "py_torch: all %d tensor sites (c10::alloc_cpu) have Python frames reaching the "
          "script's <module> at the default depth (without: %r; short of <module>: %r)"
          % (len(tensors), bare[:4], short[:4]))
    top = sorted(sites(doc), key=lambda s: (-s["alloc_bytes"], s["stack_id"]))[:5]
    for mark in ("LINE_FORWARD", "LINE_BACKWARD"):
        hits = []
        for s in top:
            pf = pyframes(s)
            i = [k for k, f in enumerate(pf) if at(f, script, m[mark], "main")]
            if i:
                hits.append((s, pf, i[0]))
        check(hits, "%s is a Python frame of one of the 5 largest sites (by alloc_bytes: %s)"
              % (mark, ", ".join("%d B %s" % (s["alloc_bytes"], show(pyframes(s)[:6]))
                                 for s in top)))
        for s, pf, i in hits:
            inner = pf[:i]
            check(all("torch" + os.sep in (f[1] or "") for f in inner),
                  "%s site %d: the Python frames inside the script's are torch's (%s)"
                  % (mark, s["stack_id"], show(inner)))
    check_summary(doc, py, "on", "py_torch")


def interpreters(minor):
    """CPython minor's interpreters here: the newest pyenv one (PYENV_ROOT, else ~/.pyenv), those
    installed under /usr/local or /opt/* (built from source with --prefix), on PATH, and in the
    prefixes Meson's python_prefixes option names (ND_PYTHON_PREFIXES, ':'-separated), a
    free-threaded build's (bin/python3.Mt) included; each once."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = []
    for p in glob.glob(os.path.join(root, "versions", minor + ".*", "bin", "python3")):
        v = os.path.basename(os.path.dirname(os.path.dirname(p)))
        if re.fullmatch(r"\d+\.\d+\.\d+", v) and os.access(p, os.X_OK):
            found.append((tuple(int(x) for x in v.split(".")), p))
    cands = [max(found)[1]] if found else []
    prefixes = ["/usr/local"] + sorted(glob.glob("/opt/*"))
    prefixes += list(filter(None, os.environ.get("ND_PYTHON_PREFIXES", "").split(":")))
    for name in ("python" + minor, "python" + minor + "t"):
        cands += [os.path.join(prefix, "bin", name) for prefix in prefixes]
        cands.append(shutil.which(name))
    out, seen = [], set()
    for p in cands:
        shim = p and os.path.basename(os.path.dirname(p)) == "shims"  # pyenv's: not itself one
        if not p or shim or not os.access(p, os.X_OK):
            continue
        st = os.stat(p)
        if (st.st_dev, st.st_ino) not in seen:  # one file under two names (python3.14t)
            seen.add((st.st_dev, st.st_ino))
            out.append(p)
    return out


def free_threaded(py):
    return subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_config_var("
                           "'Py_GIL_DISABLED'))"], env=child_env(), capture_output=True,
                          text=True).stdout.strip() == "1"


def check_not_read(ctx, py, script, state, words):
    """An interpreter ndmem does not read runs on with native frames. See case_versions."""
    label = "Python %s" % version_of(py)
    plain = ctx.plain([py, script])
    shim, trace = ctx.shim([py, script])
    check(shim.returncode == plain.returncode == 0, "%s: exit status 0 plain and under the "
          "shim (%d, %d)" % (label, plain.returncode, shim.returncode))
    check(shim.stdout == plain.stdout and plain.stdout, "%s: stdout the same" % label)
    lines = shim.stderr.splitlines()
    ours = [ln for ln in lines if ln.startswith(UNSUPPORTED_PREFIX)]
    check(len(ours) == 1 and words in ours[0] and "native frames only" in ours[0],
          "%s: exactly one stderr line '%s... %s ... native frames only' (%r)"
          % (label, UNSUPPORTED_PREFIX, words, ours))
    rest = [ln for ln in lines if not ln.startswith(UNSUPPORTED_PREFIX)]
    check(rest == plain.stderr.splitlines(), "%s: stderr otherwise the plain run's (%r)"
          % (label, rest[:3]))
    doc = ctx.json(trace)
    if doc is None:
        return
    check_no_python_frames(doc, label)
    check_summary(doc, py, state, label)


def case_versions(ctx, find_python, script):
    """py_shapes.py under every CPython 3.10 to 3.14 found (see interpreters()), each asserting
    everything case_shapes does (innermost frames at their marked lines, exact counts and bytes
    per site, frames past NDMEM_PY_DEPTH counted, the whole Python stack kept under
    NDMEM_DEPTH=2). A free-threaded build asserts: exit status and stdout those of a plain run;
    exactly one stderr line 'ndmem: Python ... free-threaded build ... native frames only' and
    stderr otherwise the plain run's; no Python frame anywhere; state free-threaded with the
    interpreter's version. Prints the table of versions checked."""
    table = []
    for minor in ("3.10", "3.11", "3.12", "3.13", "3.14"):
        pys = interpreters(minor)
        if not pys:
            print("skipped: no CPython %s under pyenv or ND_PYTHON_PREFIXES" % minor)
        for py in pys:
            n = len(failures)
            print("interpreter: %s (Python %s)" % (py, version_of(py)))
            if free_threaded(py):
                check_not_read(ctx, py, script, "free-threaded", "free-threaded build")
                what = "free-threaded: detected, not read"
            else:
                check_shapes(ctx, py, script, "Python %s" % version_of(py))
                what = "frames read"
            table.append((version_of(py), py, what, "ok" if len(failures) == n else "FAIL"))
    if not table:
        skip("no CPython 3.10 to 3.14 under pyenv or ND_PYTHON_PREFIXES")
    for row in table:
        print("version %-8s %-45s %-36s %s" % row)


CASES = {"lines": case_lines, "threads": case_threads, "shapes": case_shapes,
         "torch": case_torch, "versions": case_versions}


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in CASES:
        sys.exit("usage: t_py_frames.py %s LIBNDMEM NDMEMREPORT FIND_PYTHON SCRIPT"
                 % "|".join(CASES))
    case, lib, rep, find_python, script = sys.argv[1:]
    lib, rep, find_python, script = (os.path.abspath(p) for p in (lib, rep, find_python, script))
    with tempfile.TemporaryDirectory(prefix="t_py_frames.") as tmp:
        CASES[case](Ctx(lib, rep, tmp), find_python, script)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
