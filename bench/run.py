#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark driver for ndmem: allocator churn and a numpy training loop, with and without the shim.

    python3 bench/run.py --build build [--reps 5] [--quick] [--report] [--workspace] [--limits] [--stress]
                         [--exact | --exact-only] [--python | --python-only]

--report adds the ndmemreport benchmark: a synthetic trace of 1 GiB (and one a quarter of that
size) is written to a temporary directory, read by ndmemreport in text and JSON, and deleted.
--workspace adds the workspace benchmark: tensor_loop (a training-loop-shaped program) under
glibc, jemalloc, mimalloc and ndmem with workspaces off, on and on with cycle marks, against the
same schedule with its buffers allocated once; and churn and numpy with workspaces on and off.
--limits adds the cost of the limit checks: churn and numpy under ndmem with no limit, with
NDMEM_MAX_BYTES (far above use: every allocation checked, none refused) and with
NDMEM_MAX_PHYSICAL_BYTES and NDMEM_WARN_AT (resident memory read by step and by a thread).
--stress adds threads that come and go: stress and larson (blocks of 8 B-8 MiB freed by other
threads) under glibc, ndmem with workspaces on and off, jemalloc, ndmem+jemalloc and mimalloc,
each run under ndmem also checking that ndmem's counters equal the program's calls, with every
run's peak RSS (see rss_run).
--exact adds exact mode against heaptrack: churn, numpy and a PyTorch CPU loop (whole process,
import torch included: wall time, peak RSS and the size of each tool's file) under glibc, ndmem,
ndmem with every block tracked (NDMEM_TRACK_MIN=0) and heaptrack --raw (record only);
--exact-only runs just that.
--python adds the cost of Python frames: the numpy loop and a PyTorch CPU loop under ndmem with
NDMEM_PYTHON=0 and with the default (Python frames read); --python-only runs just that.

Standard library only; any python3 runs it. Configurations are interleaved within every
repetition (the machine may be noisy) and results are medians over the repetitions; ratios are
medians of the per-repetition ratios of runs made back to back. It exits non-zero only when the
setup is broken (shim or churn missing, the shim not loaded, a run crashing or computing a
different result), never because of a ratio. See bench/README.md.
"""
import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRAIN = REPO / "examples" / "train_numpy.py"

CHURN_OPS = 10_000_000   # per thread; about 0.9 s with glibc on a 2-core Debian 12 VM
TRAIN_STEPS = 300        # train_numpy.py's default; about 3 s a run
QUICK_OPS = 500_000
QUICK_STEPS = 30
QUICK_REPS = 2
THREADS = (1, 2)
NOISY = 10.0             # +-% spread above which the report warns that the machine was busy
CHURN_TARGET = 1.5       # ndmem / glibc, default settings
TRAIN_TARGET = 1.05      # ndmem / plain, whole-process wall time
REPORT_SIZE = 1 << 30    # bytes of synthetic trace for --report (and a quarter of it)
REPORT_FORMATS = ["text", "json", "html", "collapsed"]  # every --format, each timed
REPORT_COMMANDS = ["diff", "merge"]  # and the commands that read two traces, on two large ones
REPORT_RSS_MIB = 500     # the memory target for any format on a 1 GB trace
QUICK_REPORT_SIZE = 1 << 28
REPORT_TARGET = 10.0     # ndmemreport seconds per GB (10^9 bytes) of trace

WS_ITERS_QUICK = 8       # tensor_loop --iters with --quick (its own default otherwise: 12)
TENSOR_BUFFERS = 14      # tensor_loop's buffers per iteration
WS_TIME_TARGET = 1.1     # ndmem ws=1 time per iteration / ideal
WS_FAULT_TARGET = 1.0    # ndmem ws=1 minor faults per steady-state iteration: below 1 (ideal: 0)
WS_RSS_TARGET = 1.1      # ndmem ws=1 (peak RSS - C) / cycle peak live; C: see report_tensor
WS_ONOFF_TARGET = 1.02   # churn and numpy, workspaces on / off: no slower, 2% allowed for noise

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
            "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib"]


class SetupError(Exception):
    """The benchmark cannot give meaningful numbers: a missing file, a crash, a wrong result."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def quote_join(argv):
    return " ".join(shlex.quote(a) for a in argv)


def command_line():
    """The command as typed (interpreter by its base name; wrappers like pyenv expand it)."""
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
    argv[0] = os.path.basename(argv[0]) or "python3"
    return quote_join(argv)


_TRACE_DIR = None


def trace_dir():
    """A private folder for the traces of the runs under ndmem (tracing stays on, as by
    default), removed at exit so benchmarks leave nothing in the working directory."""
    global _TRACE_DIR
    if _TRACE_DIR is None:
        import atexit
        import shutil
        import tempfile
        _TRACE_DIR = tempfile.mkdtemp(prefix="ndmem-bench-")
        atexit.register(shutil.rmtree, _TRACE_DIR, True)
    return _TRACE_DIR


def base_env():
    """The caller's environment without anything that would change what is measured."""
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("NDMEM_")
           and k != "MALLOC_CONF" and not k.startswith("MIMALLOC_")}
    env["NDMEM_OUTPUT"] = os.path.join(trace_dir(), "ndmem.%p.trace")
    return env


def find_lib(explicit, soname):
    """Path of an allocator to preload: --jemalloc/--mimalloc if given ('' skips), else search."""
    if explicit is not None:
        if explicit in ("", "none"):
            return None
        if not os.path.isfile(explicit):
            raise SetupError("%s not found at %s" % (soname, explicit))
        return os.path.abspath(explicit)
    for d in LIB_DIRS:
        p = os.path.join(d, soname)
        if os.path.isfile(p):
            return p
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        m = re.match(r"\s*%s\s.*=>\s*(\S+)" % re.escape(soname), line)
        if m and os.path.isfile(m.group(1)):
            return m.group(1)
    return None


def run(cmd, env, what, timeout):
    """Run one process to completion; a crash, a non-zero exit or a failed preload is an error."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SetupError("%s: timed out after %d s: %s" % (what, timeout, quote_join(cmd)))
    except OSError as e:
        raise SetupError("%s: cannot run %s: %s" % (what, cmd[0], e))
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        how = ("killed by signal %d" % -p.returncode if p.returncode < 0
               else "exit status %d" % p.returncode)
        tail = "\n".join((p.stderr or "").splitlines()[-15:])
        raise SetupError("%s: %s (LD_PRELOAD=%r)\n  command: %s\n  stderr tail:\n%s"
                         % (what, how, env.get("LD_PRELOAD", env.get(RSS_PRELOAD, "")),
                            quote_join(cmd), tail))
    if "cannot be preloaded" in p.stderr:
        raise SetupError("%s: the dynamic loader ignored LD_PRELOAD=%r:\n%s"
                         % (what, env.get("LD_PRELOAD", env.get(RSS_PRELOAD, "")),
                            p.stderr.strip()))
    return p, wall


# Peak RSS of one program. wait4's ru_maxrss of a child counts what the child's memory held
# before its exec as well: the parent's pages a fork copied, or, for a vfork (subprocess's
# posix_spawn), the parent's whole high-water mark, which is this driver's and grows with what
# it read (a JSON report, a raw heaptrack file). So the program runs as the child of a small
# helper, this interpreter with -I -S, which forks, execs the program with the environment it
# was given (LD_PRELOAD handed over in RSS_PRELOAD, so the helper itself runs without the shim),
# waits for it with wait4 and prints its ru_maxrss and wall time as its last stderr line. What
# the child carries into the exec is the helper's few MiB (rss_floor measures it by running
# `true`): a figure above that floor is the program's own peak (the largest process of its tree:
# a wrapper's children are waited for by it and count too).
RSS_PRELOAD = "BENCH_RSS_PRELOAD"
RSS_HELPER = r"""import os, sys, time
env = dict(os.environ)
pre = env.pop("BENCH_RSS_PRELOAD", None)
if pre:
    env["LD_PRELOAD"] = pre
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvpe(sys.argv[1], sys.argv[1:], env)
    except OSError as e:
        os.write(2, ("bench-rss: cannot run %s: %s\n" % (sys.argv[1], e)).encode())
    os._exit(127)
_, st, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
code = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
line = "\nbench-rss: maxrss_kib=%d wall_s=%.6f status=%d\n" % (ru.ru_maxrss, wall, code)
os.write(2, line.encode())
os._exit(code)
"""
_RSS_HELPER_PATH = None
_RSS_FLOOR = None


def rss_run(cmd, env, what, timeout):
    """run() through the RSS helper: (completed process without the helper's line, wall
    seconds of the program from fork to wait4, its peak RSS in bytes)."""
    global _RSS_HELPER_PATH
    if _RSS_HELPER_PATH is None:
        _RSS_HELPER_PATH = os.path.join(trace_dir(), "bench-rss.py")
        with open(_RSS_HELPER_PATH, "w") as f:
            f.write(RSS_HELPER)
    env = dict(env)
    pre = env.pop("LD_PRELOAD", None)
    if pre:
        env[RSS_PRELOAD] = pre
    p, _ = run([sys.executable, "-I", "-S", _RSS_HELPER_PATH] + list(cmd), env, what, timeout)
    m = None
    for m in re.finditer(r"\n?bench-rss: maxrss_kib=(\d+) wall_s=([0-9.]+) status=\d+\n",
                         p.stderr):
        pass
    if m is None:
        raise SetupError("%s: the RSS helper printed no 'bench-rss:' line:\n%s"
                         % (what, p.stderr.strip()[-2000:]))
    p.stderr = p.stderr[:m.start()] + p.stderr[m.end():]
    return p, float(m.group(2)), int(m.group(1)) * 1024


def rss_floor():
    """Peak RSS the helper's child reports for `true`: what the helper itself carries into every
    child's exec, below which a figure is not the program's (measured once)."""
    global _RSS_FLOOR
    if _RSS_FLOOR is None:
        true = shutil.which("true") or "/bin/true"
        _RSS_FLOOR = rss_run([true], base_env(), "RSS helper (true)", 60)[2]
    return _RSS_FLOOR


def ndmem_lines(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("ndmem[")]


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    """Half the min-max range as a percentage of the median: a rough noise figure."""
    if len(xs) < 2:
        return 0.0
    return 50.0 * (max(xs) - min(xs)) / median(xs)


def paired(a, b, op):
    return median([op(x, y) for x, y in zip(a, b)])


def ratio(a, b):
    return paired(a, b, lambda x, y: x / y)


def verdict(value, target):
    return "met" if value <= target else "NOT met"


# ------------------------------------------------------------------------------------ churn

class Config:
    def __init__(self, name, preload, ideal=False, check=None):
        self.name, self.preload, self.ideal, self.check = name, preload, ideal, check

    def env(self, summary=False):
        env = base_env()
        if self.preload:
            env["LD_PRELOAD"] = " ".join(self.preload)
        env["NDMEM_SUMMARY"] = "1" if summary else "0"
        return env

    @property
    def has_ndmem(self):
        return self.name.startswith("ndmem")


def churn_cmd(churn, cfg, threads, ops):
    cmd = list(getattr(cfg, "wrap", ())) + [str(churn), "--threads", str(threads), "--ops", str(ops)]
    return cmd + ["--ideal"] if cfg.ideal else cmd


def parse_churn(out, what):
    m = re.search(r"ns_per_op=([0-9.]+).*checksum=(\d+)", out)
    if not m:
        raise SetupError("%s: unexpected output: %r" % (what, out.strip()))
    return float(m.group(1)), int(m.group(2))


def verify_churn_config(churn, cfg):
    """One short run that proves the preloads are live: ndmem's summary line must appear and
    count churn's allocations; jemalloc and mimalloc must show their own diagnostics."""
    ops = 20000
    env = cfg.env(summary=cfg.has_ndmem)
    if cfg.check == "jemalloc":
        env["MALLOC_CONF"] = "stats_print:true"
    elif cfg.check == "mimalloc":
        env["MIMALLOC_VERBOSE"] = "1"
    what = "churn/%s (preload check)" % cfg.name
    p, _ = run(churn_cmd(churn, cfg, 1, ops), env, what, 120)
    if cfg.has_ndmem:
        lines = ndmem_lines(p.stderr)
        if not lines:
            raise SetupError("%s: no line starting with 'ndmem[' on stderr with NDMEM_SUMMARY=1 "
                             "and LD_PRELOAD=%r: the shim is not loaded or not intercepting.\n"
                             "stderr was:\n%s" % (what, env["LD_PRELOAD"], p.stderr.strip()))
        m = re.search(r"heap:.*?(\d+) allocated", lines[0])
        if not m or int(m.group(1)) < ops:
            raise SetupError("%s: the shim loaded but did not see churn's %d mallocs:\n%s"
                             % (what, ops, "\n".join(lines)))
    verify_allocator(cfg, p, what)


def verify_allocator(cfg, p, what):
    """The preloaded allocator is the one named: it printed its statistics when asked to."""
    if cfg.check == "jemalloc" and "jemalloc statistics" not in p.stderr:
        raise SetupError("%s: jemalloc did not print its statistics with MALLOC_CONF="
                         "stats_print:true; is %s really jemalloc?" % (what, cfg.preload[-1]))
    if cfg.check == "mimalloc" and "mimalloc:" not in p.stderr:
        raise SetupError("%s: mimalloc printed nothing with MIMALLOC_VERBOSE=1; is %s really "
                         "mimalloc?" % (what, cfg.preload[-1]))


def bench_churn(churn, configs, ops, reps):
    for cfg in configs:
        verify_churn_config(churn, cfg)
    log("churn: preloads verified (%s)" % ", ".join(c.name for c in configs))
    for cfg in configs:  # warm-up: page cache, CPU frequency
        for t in THREADS:
            run(churn_cmd(churn, cfg, t, max(ops // 10, 1000)), cfg.env(), "churn warm-up", 300)

    ns = {(c.name, t): [] for c in configs for t in THREADS}
    sums = {t: {} for t in THREADS}
    jobs = [(c, t) for t in THREADS for c in configs]
    for rep in range(reps):
        k = rep % len(jobs)  # rotate the order: no configuration always runs first or last
        t0 = time.perf_counter()
        for cfg, t in jobs[k:] + jobs[:k]:
            what = "churn/%s --threads %d" % (cfg.name, t)
            p, _ = run(churn_cmd(churn, cfg, t, ops), cfg.env(), what, 600)
            v, s = parse_churn(p.stdout, what)
            ns[(cfg.name, t)].append(v)
            sums[t][cfg.name] = s
        log("churn: repetition %d/%d done (%.1f s)" % (rep + 1, reps, time.perf_counter() - t0))
    for t in THREADS:  # every configuration did the same ops on the same sizes
        if len(set(sums[t].values())) != 1:
            raise SetupError("churn --threads %d: checksums differ between configurations: %r"
                             % (t, sums[t]))
    return ns


def report_churn(configs, ns, ops, reps):
    names = [c.name for c in configs]
    out = []
    out.append("churn: %d ops/thread, random sizes 1-4096 B, %d repetitions; "
               "median ns/op per thread (+-half range)" % (ops, reps))
    hdr = "  %-16s" % "config" + "".join("%18s" % ("%d thread%s" % (t, "s" if t > 1 else ""))
                                          for t in THREADS)
    hdr += "".join("%12s" % ("%dT / ideal" % t) for t in THREADS)
    out.append(hdr)
    for n in names:
        row = "  %-16s" % n
        for t in THREADS:
            xs = ns[(n, t)]
            row += "%18s" % ("%.2f (+-%.0f%%)" % (median(xs), spread(xs)))
        for t in THREADS:
            row += "%12s" % ("%.2fx" % ratio(ns[(n, t)], ns[("ideal", t)]) if n != "ideal" else "-")
        out.append(row)
    noisy = [n for n in names if n != "ideal"
             and any(spread(ns[(n, t)]) > NOISY for t in THREADS)]
    if noisy:
        out.append("  note: spread above +-%.0f%% for %s: the machine was busy; the paired ratios "
                   "below are more robust than the medians, but a rerun or more --reps helps"
                   % (NOISY, ", ".join(noisy)))
    out.append("")
    out.append("  ratios (median of per-repetition ratios; extra = median added ns/op)")
    pairs = [("ndmem", "glibc")]
    if "jemalloc" in names:
        pairs.append(("ndmem+jemalloc", "jemalloc"))
    if "mimalloc" in names:
        pairs.append(("ndmem+mimalloc", "mimalloc"))
    rat = {}
    for a, b in pairs:
        row = "  %-28s" % ("%s / %s" % (a, b))
        for t in THREADS:
            r = ratio(ns[(a, t)], ns[(b, t)])
            d = paired(ns[(a, t)], ns[(b, t)], lambda x, y: x - y)
            rat[(a, b, t)] = r
            row += "  %dT %5.2fx %-13s" % (t, r, "(%+.1f ns)" % d)
        if (a, b) == ("ndmem", "glibc"):
            worst = max(rat[(a, b, t)] for t in THREADS)
            row += " target <= %.1fx: %s" % (CHURN_TARGET, verdict(worst, CHURN_TARGET))
        out.append(row.rstrip())
    return out, rat, pairs


# ------------------------------------------------------------------------------------ numpy

def find_python_with(module, script, explicit_only=True):
    """(interpreter, MODULE's version, None) or (None, None, why not): the first of
    $NDMEM_TEST_PYTHON (alone when set and explicit_only), /usr/bin/python3, this interpreter and
    python3 on PATH that can import MODULE, to run SCRIPT."""
    if not script.is_file():
        return None, None, "%s not found" % script
    explicit = os.environ.get("NDMEM_TEST_PYTHON")
    cands = [explicit] if explicit else []
    if not (explicit and explicit_only):
        for c in ["/usr/bin/python3", sys.executable, shutil.which("python3")]:
            if c and c not in cands:
                cands.append(c)
    probe = ["-c", "import %s; print(%s.__version__)" % (module, module)]
    tried = []
    for c in cands:
        try:
            p = subprocess.run([c] + probe, env=base_env(), capture_output=True, text=True,
                               timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append("%s: %s" % (c, e))
            continue
        if p.returncode == 0:
            return c, p.stdout.strip(), None
        last = (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]
        tried.append("%s: %s" % (c, last))
    src = "NDMEM_TEST_PYTHON" if explicit and explicit_only else "candidates"
    return None, None, "no interpreter can import %s (%s tried: %s)" % (module, src,
                                                                        "; ".join(tried))


def find_numpy_python():
    """(interpreter, numpy version, None) or (None, None, why not): what runs TRAIN."""
    return find_python_with("numpy", TRAIN)


def train_once(py, shim, steps, with_ndmem, summary=False, extra_env=None, label=None):
    env = base_env()
    if with_ndmem:
        env["LD_PRELOAD"] = str(shim)
        env["NDMEM_SUMMARY"] = "1" if summary else "0"
    env.update(extra_env or {})
    what = "train_numpy.py (%s)" % (label or ("ndmem" if with_ndmem else "plain"))
    p, wall = run([py, str(TRAIN), "--steps", str(steps)], env, what, 900)
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not loss:
        raise SetupError("%s: missing 'time ... s' on stderr or 'final loss' on stdout" % what)
    return wall, float(m.group(1)), loss[-1], p.stderr


def bench_numpy(py, shim, steps, reps):
    _, _, _, err = train_once(py, shim, 3, True, summary=True)
    if not ndmem_lines(err):
        raise SetupError("train_numpy.py under LD_PRELOAD=%s with NDMEM_SUMMARY=1 printed no "
                         "'ndmem[' line: the shim is not loaded.\nstderr was:\n%s"
                         % (shim, err.strip()))
    train_once(py, shim, 3, False)  # warm-up (imports, page cache)
    log("numpy: shim verified, %d steps x %d repetitions with %s" % (steps, reps, py))
    res = {False: {"wall": [], "loop": [], "loss": []}, True: {"wall": [], "loop": [], "loss": []}}
    for rep in range(reps):
        for nd in ((False, True) if rep % 2 == 0 else (True, False)):
            wall, loop, loss, _ = train_once(py, shim, steps, nd)
            res[nd]["wall"].append(wall)
            res[nd]["loop"].append(loop)
            res[nd]["loss"].append(loss)
        log("numpy: repetition %d/%d done" % (rep + 1, reps))
    return res


def report_numpy(res, py, npver, steps, reps):
    plain, nd = res[False], res[True]
    out = ["numpy: examples/train_numpy.py --steps %d, %s (numpy %s), %d repetitions"
           % (steps, py, npver, reps)]
    out.append("  %-22s%16s%16s%10s" % ("median seconds", "plain", "ndmem", "ratio"))
    r = {}
    for key, label in (("wall", "whole process (wall)"), ("loop", "training loop")):
        r[key] = ratio(nd[key], plain[key])
        out.append("  %-22s%16s%16s%10s" % (
            label, "%.3f (+-%.0f%%)" % (median(plain[key]), spread(plain[key])),
            "%.3f (+-%.0f%%)" % (median(nd[key]), spread(nd[key])), "%.3fx" % r[key]))
    if any(spread(res[k][key]) > NOISY for k in (False, True) for key in ("wall", "loop")):
        out.append("  note: spread above +-%.0f%%: the machine was busy (OpenBLAS threads are "
                   "sensitive to other load); rerun or raise --reps" % NOISY)
    out.append("  per run (wall s, plain|ndmem): " + "  ".join(
        "%.2f|%.2f" % (a, b) for a, b in zip(plain["wall"], nd["wall"])))
    out.append("  ndmem / plain (wall): %.3fx   target <= %.2fx: %s"
               % (r["wall"], TRAIN_TARGET, verdict(r["wall"], TRAIN_TARGET)))
    lp, ln = set(plain["loss"]), set(nd["loss"])
    if len(lp) == 1 and lp == ln:
        loss_msg = "final loss identical in all %d runs, plain and ndmem: %s" % (
            2 * reps, next(iter(lp))[len("final loss "):])
        loss_ok = True
    elif len(lp) > 1:
        loss_msg = ("final loss varies even without ndmem (%d distinct values): not comparable"
                    % len(lp))
        loss_ok = True
    else:
        loss_msg = "final loss DIFFERS under ndmem: plain %s, ndmem %s" % (sorted(lp), sorted(ln))
        loss_ok = False
    out.append("  " + loss_msg)
    return out, r, loss_msg, loss_ok


# ------------------------------------------------------------------------------------ report

def measured(cmd, what, timeout):
    """Run cmd with its stdout discarded; return (wall seconds, peak RSS bytes) of that process."""
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        raise SetupError("%s: cannot run %s: %s" % (what, cmd[0], e))
    try:
        _, status, usage = os.wait4(p.pid, 0)
    except KeyboardInterrupt:
        p.kill()
        raise
    wall = time.perf_counter() - t0
    p.returncode = (os.WEXITSTATUS(status) if os.WIFEXITED(status)
                    else -os.WTERMSIG(status))
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if p.returncode != 0 or err:
        raise SetupError("%s: exit status %d, stderr: %s" % (what, p.returncode, err.strip()))
    if wall > timeout:
        raise SetupError("%s: took %.0f s (limit %d s)" % (what, wall, timeout))
    return wall, usage.ru_maxrss * 1024  # kilobytes on Linux


def check_report_json(report, path, facts):
    """ndmemreport must read the whole generated trace and agree with what gen_trace wrote."""
    p, _ = run([str(report), "--format", "json", "--top", "3", path], base_env(),
               "ndmemreport --format json (check)", 600)
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        raise SetupError("ndmemreport --format json: output is not JSON: %s" % e)
    got = {"bytes": doc["trace"]["bytes"], "records": doc["trace"]["records"],
           "sites": doc["sites"]["count"]}
    want = {k: int(facts[k]) for k in got}
    # The BLOCK records' weights sum to gen_trace's leak_bytes; the report caps each sampled
    # estimate at what its site's counters prove, so it says no more than that, and not nothing.
    leak, written = doc["leaks"]["bytes"], int(facts["leak_bytes"])
    got["leak_bytes <= written"] = want["leak_bytes <= written"] = 0 < leak <= written
    if not doc["trace"]["complete"] or not doc["process"]["exited_normally"] or got != want:
        raise SetupError("ndmemreport disagrees with gen_trace on %s: report %r, written %r"
                         % (path, got, want))


def bench_report(build, size, reps, tmpdir):
    """Times every --format on a trace of size/4 and of size bytes, and on the large one also
    `diff A B` and `merge A B` against a second trace of the same size (another seed: other
    stacks), whose seconds per GB count the bytes of both traces."""
    gen = build / "bench" / "gen_trace"
    report = build / "report" / "ndmemreport"
    for exe in (gen, report):
        if not os.access(exe, os.X_OK):
            raise SetupError("%s not found (ninja -C %s)" % (exe, build))
    res = []
    for sz in (size // 4, size):
        paths = []
        try:
            for seed in ((1, 2) if sz == size else (1,)):
                fd, path = tempfile.mkstemp(prefix="ndmem-bench-", suffix=".trace", dir=tmpdir)
                os.close(fd)
                paths.append(path)
                p, gen_wall = run([str(gen), path, "--size", str(sz), "--seed", str(seed)],
                                  base_env(), "gen_trace", 1800)
                f = dict(kv.split("=", 1) for kv in p.stdout.split())
                log("report: wrote %s (%s bytes, %s records) in %.1f s"
                    % (path, f["bytes"], f["records"], gen_wall))
                check_report_json(report, path, f)
                if seed == 1:
                    facts, nbytes = f, int(f["bytes"])
                else:
                    nbytes2 = int(f["bytes"])
            cmds = {fmt: ([str(report), "--format", fmt, paths[0]], nbytes)
                    for fmt in REPORT_FORMATS}
            if len(paths) == 2:
                for sub in REPORT_COMMANDS:
                    cmds[sub] = ([str(report), sub, paths[0], paths[1]], nbytes + nbytes2)
            names = list(cmds)
            times = {n: [] for n in names}
            rss = {n: 0 for n in names}
            for rep in range(reps):
                k = rep % len(names)
                for n in names[k:] + names[:k]:
                    wall, peak = measured(cmds[n][0], "ndmemreport %s" % n, 1800)
                    times[n].append(wall)
                    rss[n] = max(rss[n], peak)
                log("report: %d bytes, repetition %d/%d done" % (nbytes, rep + 1, reps))
            res.append((nbytes, facts, times, rss, {n: cmds[n][1] for n in names}))
        finally:
            for path in paths:
                os.unlink(path)
    return res


def report_report(res, reps):
    nbytes, facts, _, _, _ = res[-1]
    out = ["report: ndmemreport on synthetic traces (gen_trace: %s stacks of depth 20-40, %s "
           "SITE updates, %s live blocks at exit in the large one), %d repetitions, page cache "
           "warm; median seconds; diff and merge read the large trace and another of its size "
           "(other stacks), s/GB of both" % (facts["stacks"], facts["site_records"],
                                              facts["blocks"], reps)]
    out.append("  %-14s%9s%10s%14s%12s%14s" % ("trace bytes", "stacks", "command", "seconds",
                                               "s/GB", "peak RSS"))
    worst = 0.0
    for nb, f, times, rss, read in res:
        for n in times:
            sec = median(times[n])
            per_gb = sec / (read[n] / 1e9)
            if nb == nbytes:
                worst = max(worst, per_gb)
            out.append("  %-14d%9s%10s%14s%12.2f%11.1f MiB" % (
                read[n], f["stacks"], n, "%.2f (+-%.0f%%)" % (sec, spread(times[n])), per_gb,
                rss[n] / 1048576))
    small = max(res[0][3].values())
    large = max(res[-1][3].values())
    out.append("  seconds per GB (10^9 B) on %d bytes: %.2f   target <= %.0f s/GB: %s"
               % (nbytes, worst, REPORT_TARGET, verdict(worst, REPORT_TARGET)))
    out.append("  peak RSS %.1f MiB at %d bytes (%s stacks), %.1f MiB at %d bytes (%s stacks): "
               "memory follows distinct stacks and sites, not file size" % (
                   small / 1048576, res[0][0], res[0][1]["stacks"], large / 1048576, nbytes,
                   facts["stacks"]))
    last = res[-1]
    per = ", ".join("%.2f s/GB %s" % (median(last[2][n]) / (last[4][n] / 1e9), n)
                    for n in last[2])
    summary = ("ndmemreport (%d-byte trace): %s (target <= %.0f: %s); peak RSS %.1f MiB "
               "(%.1f MiB at a quarter of the size; target <= %d MiB: %s)" % (
                   nbytes, per, REPORT_TARGET, verdict(worst, REPORT_TARGET), large / 1048576,
                   small / 1048576, REPORT_RSS_MIB, verdict(large / 1048576, REPORT_RSS_MIB)))
    return out, summary


# ------------------------------------------------------------------------------------ workspace

class EnvConfig(Config):
    """A configuration with extra environment variables and extra program arguments."""

    def __init__(self, name, preload, extra_env=None, args=(), check=None):
        Config.__init__(self, name, preload, check=check)
        self.extra_env, self.args = dict(extra_env or {}), list(args)

    def env(self, summary=False):
        env = Config.env(self, summary)
        env.update(self.extra_env)
        return env


def tensor_cmd(tl, cfg, iters=None, warmup=None):
    cmd = [str(tl)] + cfg.args
    if iters:
        cmd += ["--iters", str(iters)]
    if warmup is not None:
        cmd += ["--warmup", str(warmup)]
    return cmd


def parse_tensor(out, what):
    """tensor_loop's result line (key=value) and, under a shim with ndmem_ws_stats, its ws line."""
    lines = out.splitlines()
    main = [ln for ln in lines if ln.startswith("tensor_loop ")]
    ws = [ln for ln in lines if ln.startswith("ws ")]
    try:
        kv = dict(w.split("=", 1) for w in main[-1].split()[1:])
        r = {"iters": int(kv["iters"].split("(")[0]), "warmup": int(kv["warmup"]),
             "marks": kv["marks"], "total": float(kv["total_s"]),
             "iter": float(kv["median_iter_s"]), "minflt": float(kv["minflt_per_iter"]),
             "majflt": float(kv["majflt_per_iter"]), "rss": int(kv["peak_rss_kib"]) * 1024,
             "peak": int(kv["cycle_peak_bytes"]), "sum": int(kv["cycle_sum_bytes"]),
             "checksum": kv["checksum"]}
        r["ws"] = ({k: int(v) for k, v in (w.split("=", 1) for w in ws[-1].split()[1:])}
                   if ws else None)
    except (IndexError, KeyError, ValueError):
        raise SetupError("%s: unexpected output: %r" % (what, out.strip()))
    return r


def verify_tensor_config(tl, cfg):
    """A 2-iteration run that proves the preloads are live (as for churn) and warms the caches."""
    env = cfg.env(summary=cfg.has_ndmem)
    if cfg.check == "jemalloc":
        env["MALLOC_CONF"] = "stats_print:true"
    elif cfg.check == "mimalloc":
        env["MIMALLOC_VERBOSE"] = "1"
    what = "tensor_loop/%s (preload check)" % cfg.name
    p, _ = run(tensor_cmd(tl, cfg, 2, 1), env, what, 600)
    r = parse_tensor(p.stdout, what)
    if cfg.has_ndmem:
        lines = ndmem_lines(p.stderr)
        if not lines:
            raise SetupError("%s: no line starting with 'ndmem[' on stderr with NDMEM_SUMMARY=1 "
                             "and LD_PRELOAD=%r: the shim is not loaded or not intercepting.\n"
                             "stderr was:\n%s" % (what, env["LD_PRELOAD"], p.stderr.strip()))
        m = re.search(r"calls: malloc (\d+)", "\n".join(lines))
        if m and int(m.group(1)) < 2 * TENSOR_BUFFERS:
            raise SetupError("%s: the shim loaded but did not see tensor_loop's %d mallocs:\n%s"
                             % (what, 2 * TENSOR_BUFFERS, "\n".join(lines)))
    verify_allocator(cfg, p, what)
    return r


def tensor_configs(shim, je, mi):
    ws = lambda on: {"NDMEM_WORKSPACES": "1" if on else "0"}
    configs = [EnvConfig("glibc", [])]
    if je:
        configs.append(EnvConfig("jemalloc", [je], check="jemalloc"))
    if mi:
        configs.append(EnvConfig("mimalloc", [mi], check="mimalloc"))
    configs += [EnvConfig("ndmem ws=0", [str(shim)], ws(False)),
                EnvConfig("ndmem ws=1", [str(shim)], ws(True)),
                EnvConfig("ndmem ws=1 --marks", [str(shim)], ws(True), ["--marks"]),
                EnvConfig("ideal", [], args=["--mode", "ideal"])]
    return configs


def bench_tensor(tl, configs, iters, warmup, reps):
    for cfg in configs:
        verify_tensor_config(tl, cfg)
    log("workspace: tensor_loop preloads verified (%s)" % ", ".join(c.name for c in configs))
    res = {c.name: [] for c in configs}
    for rep in range(reps):
        k = rep % len(configs)
        t0 = time.perf_counter()
        for cfg in configs[k:] + configs[:k]:
            what = "tensor_loop/%s" % cfg.name
            p, _ = run(tensor_cmd(tl, cfg, iters, warmup), cfg.env(), what, 1800)
            res[cfg.name].append(parse_tensor(p.stdout, what))
        log("workspace: tensor_loop repetition %d/%d done (%.1f s)"
            % (rep + 1, reps, time.perf_counter() - t0))
    sums = {n: sorted(set(r["checksum"] for r in rs)) for n, rs in res.items()}
    if len(set(c for cs in sums.values() for c in cs)) != 1:
        raise SetupError("tensor_loop: checksums differ between runs (the same schedule computed "
                         "different data): %r" % sums)
    return res


def mib(nbytes):
    return nbytes / 1048576.0


def report_tensor(configs, res, reps):
    """The tensor_loop table. C, the constant of the RSS target, is the ideal run's peak RSS
    minus its live bytes: it allocates every buffer once, so its live bytes are the sum of sizes,
    and what remains is the program's own baseline (text, libc, stack)."""
    names = [c.name for c in configs]
    r0 = res[names[0]][0]
    peak, total, iters, warmup = r0["peak"], r0["sum"], r0["iters"], r0["warmup"]
    ideal_iter = [r["iter"] for r in res["ideal"]]
    const = max(median([r["rss"] for r in res["ideal"]]) - total, 0)
    out = ["workspace: tensor_loop, %d buffers of 512 B-64 MiB per iteration (cycle peak live "
           "%.1f MiB, sum of sizes %.1f MiB), %d iterations of which %d warm-up, %d "
           "repetitions; medians" % (TENSOR_BUFFERS, mib(peak), mib(total), iters, warmup, reps)]
    out.append("  %-20s%18s%10s%13s%8s%14s%10s%14s" % (
        "config", "ms/iteration", "/ ideal", "minflt/iter", "majflt", "peak RSS", "RSS/peak",
        "(RSS-C)/peak"))
    fig = {}
    for n in names:
        it = [r["iter"] * 1e3 for r in res[n]]
        rss = median([r["rss"] for r in res[n]])
        f = {"ms": median(it), "minflt": median([r["minflt"] for r in res[n]]),
             "majflt": median([r["majflt"] for r in res[n]]), "rss": rss,
             "ideal": ratio([r["iter"] for r in res[n]], ideal_iter), "rss_peak": rss / peak,
             "rss_c_peak": (rss - const) / peak}
        fig[n] = f
        out.append("  %-20s%18s%10s%13.1f%8.1f%10.1f MiB%10.2f%14.2f" % (
            n, "%.3f (+-%.0f%%)" % (f["ms"], spread(it)),
            "%.2fx" % f["ideal"] if n != "ideal" else "-", f["minflt"], f["majflt"],
            mib(rss), f["rss_peak"], f["rss_c_peak"]))
    noisy = [n for n in names if spread([r["iter"] for r in res[n]]) > NOISY]
    if noisy:
        out.append("  note: spread above +-%.0f%% for %s: the machine was busy; rerun or raise "
                   "--reps" % (NOISY, ", ".join(noisy)))
    out.append("  C = %.2f MiB: the ideal run's peak RSS minus its live bytes (it holds every "
               "buffer at once, so they are the sum of sizes)" % mib(const))
    wsn = [n for n in names if n.startswith("ndmem ws=1")]
    verdicts = {}
    for n in wsn:
        f = fig[n]
        verdicts[n] = (verdict(f["ideal"], WS_TIME_TARGET),
                       "met" if f["minflt"] < WS_FAULT_TARGET else "NOT met",
                       verdict(f["rss_c_peak"], WS_RSS_TARGET))
        out.append("  %-20s time %.2fx ideal (target <= %.1fx: %s); %.1f minor faults/iteration "
                   "(target 0, i.e. < %.0f: %s); (RSS-C)/peak %.2f (target <= %.2f: %s)" % (
                       n, f["ideal"], WS_TIME_TARGET, verdicts[n][0], f["minflt"],
                       WS_FAULT_TARGET, verdicts[n][1], f["rss_c_peak"], WS_RSS_TARGET,
                       verdicts[n][2]))
    nd = [n for n in names if n.startswith("ndmem")]
    last = {n: res[n][-1]["ws"] for n in nd}
    if all(v is None for v in last.values()):
        out.append("  workspace stats: n/a (this libndmem.so exports no ndmem_ws_stats)")
    else:
        out.append("  workspace stats of the main thread (ndmem_ws_stats, last repetition):")
        out.append("    %-20s%6s%8s%8s%8s%12s%12s%15s%9s" % (
            "config", "count", "cycles", "hits", "spills", "spill MiB", "arena MiB",
            "plan peak MiB", "escapes"))
        for n in nd:
            w = last[n]
            if w is None:
                out.append("    %-20s  n/a" % n)
                continue
            out.append("    %-20s%6d%8d%8d%8d%12.1f%12.1f%15.1f%9d" % (
                n, w.get("workspaces", 0), w.get("cycles", 0), w.get("hits", 0),
                w.get("spills", 0), mib(w.get("spill_bytes", 0)), mib(w.get("arena_bytes", 0)),
                mib(w.get("plan_peak_bytes", 0)), w.get("escapes", 0)))
    unrouted = [n for n in wsn if (last[n] or {}).get("hits", 0) == 0]
    if unrouted:
        out.append("  note: %s served no allocation from a workspace arena (%s): there ws=1 "
                   "measures what ws=0 does" % (" and ".join(unrouted), "no ndmem_ws_stats: "
                   "this shim does not route yet" if all(v is None for v in last.values())
                   else "0 hits"))
    if any(r["marks"] == "unresolved" for n in names for r in res[n]):
        out.append("  note: ndmem_cycle_begin/ndmem_cycle_end are not exported by this "
                   "libndmem.so: the --marks row ran without marks")
    nruns = sum(len(rs) for rs in res.values())
    out.append("  checksum identical in all %d runs: %s" % (nruns, r0["checksum"]))
    summary = ["workspace tensor_loop (%d iterations, %d warm-up; peak live %.1f MiB, sum %.1f "
               "MiB; C %.2f MiB), median ms/iteration, x ideal, minflt/iteration, peak RSS MiB:"
               % (iters, warmup, mib(peak), mib(total), mib(const))]
    summary.append("  " + ", ".join("%s %.3f ms %s %.0f flt %.0f MiB" % (
        n, fig[n]["ms"], "%.2fx" % fig[n]["ideal"] if n != "ideal" else "1x", fig[n]["minflt"],
        mib(fig[n]["rss"])) for n in names))
    for n in wsn:
        summary.append("  %s: time <= %.1fx ideal %s; faults 0 %s; (RSS-C)/peak <= %.2f %s%s" % (
            n, WS_TIME_TARGET, verdicts[n][0], verdicts[n][1], WS_RSS_TARGET, verdicts[n][2],
            " (no arena hits: ws=1 = ws=0)" if n in unrouted else ""))
    summary.append("  checksum identical in all %d runs" % nruns)
    return out, summary


def onoff_verdict(on, off):
    """met / NOT met for on / off (median of per-repetition ratios), and when not met but the
    per-repetition ratios straddle 1, say so: the difference is then within the noise."""
    rs = [a / b for a, b in zip(on, off)]
    r = median(rs)
    v = verdict(r, WS_ONOFF_TARGET)
    if r > WS_ONOFF_TARGET and min(rs) <= 1.0:
        v += " (per-repetition ratios %.3f-%.3f straddle 1: within noise)" % (min(rs), max(rs))
    return r, v


def report_ws_churn(ns, ops, reps):
    out = ["workspace on/off: churn, %d ops/thread, %d repetitions; median ns/op per thread "
           "(+-half range)" % (ops, reps)]
    out.append("  %-10s%20s%20s%14s" % ("threads", "NDMEM_WORKSPACES=0", "NDMEM_WORKSPACES=1",
                                        "on / off"))
    worst, wv = 0.0, ""
    rs = []
    for t in THREADS:
        off, on = ns[("ndmem ws=0", t)], ns[("ndmem ws=1", t)]
        r, v = onoff_verdict(on, off)
        if r >= worst:
            worst, wv = r, v
        rs.append(r)
        out.append("  %-10d%20s%20s%14s" % (t, "%.2f (+-%.0f%%)" % (median(off), spread(off)),
                                           "%.2f (+-%.0f%%)" % (median(on), spread(on)),
                                           "%.3fx" % r))
    out.append("  on / off (worst): %.3fx   target <= %.2fx (no slower, 2%% for noise): %s"
               % (worst, WS_ONOFF_TARGET, wv))
    summary = "workspace on/off churn 1T/2T: %s (target <= %.2fx: %s)" % (
        "/".join("%.3fx" % r for r in rs), WS_ONOFF_TARGET, wv)
    return out, summary


def bench_numpy_envs(py, shim, steps, reps, configs, what):
    """train_numpy.py under ndmem once per (name, extra environment) in configs, each repetition
    in a rotated order; first a short run of each proves the shim is live (and warms up).
    Returns {name: {"wall": [...], "loop": [...], "loss": [...]}}."""
    for n, e in configs:
        _, _, _, err = train_once(py, shim, 3, True, summary=True, extra_env=e, label=n)
        if not ndmem_lines(err):
            raise SetupError("train_numpy.py (%s) under LD_PRELOAD=%s with %r printed no 'ndmem[' "
                             "line with NDMEM_SUMMARY=1: the shim is not loaded.\nstderr was:\n%s"
                             % (n, shim, e, err.strip()))
    return interleaved(configs, reps,
                       lambda n, e: train_once(py, shim, steps, True, extra_env=e, label=n)[:3],
                       "%s: numpy repetition %%d/%%d done" % what)


def interleaved(configs, reps, run_one, done):
    """Runs every (name, env) configuration once per repetition, in an order that rotates from
    one repetition to the next; run_one(name, env) gives (wall, loop, loss). Returns
    {name: {"wall": [...], "loop": [...], "loss": [...]}}; `done` % (rep, reps) is logged."""
    res = {n: {"wall": [], "loop": [], "loss": []} for n, _ in configs}
    for rep in range(reps):
        k = rep % len(configs)
        for n, e in configs[k:] + configs[:k]:
            wall, loop, loss = run_one(n, e)
            res[n]["wall"].append(wall)
            res[n]["loop"].append(loop)
            res[n]["loss"].append(loss)
        log(done % (rep + 1, reps))
    return res


def bench_ws_numpy(py, shim, steps, reps):
    res = bench_numpy_envs(py, shim, steps, reps, [
        ("ndmem ws=%s" % w, {"NDMEM_WORKSPACES": w}) for w in "01"], "workspace on/off")
    return {w: res["ndmem ws=%s" % w] for w in "01"}


def report_ws_numpy(res, steps, reps):
    off, on = res["0"], res["1"]
    out = ["workspace on/off: numpy, examples/train_numpy.py --steps %d under ndmem, %d "
           "repetitions" % (steps, reps)]
    out.append("  %-22s%20s%20s%10s" % ("median seconds", "NDMEM_WORKSPACES=0",
                                        "NDMEM_WORKSPACES=1", "on / off"))
    r = {}
    for key, label in (("wall", "whole process (wall)"), ("loop", "training loop")):
        r[key] = ratio(on[key], off[key])
        out.append("  %-22s%20s%20s%10s" % (
            label, "%.3f (+-%.0f%%)" % (median(off[key]), spread(off[key])),
            "%.3f (+-%.0f%%)" % (median(on[key]), spread(on[key])), "%.3fx" % r[key]))
    _, v = onoff_verdict(on["loop"], off["loop"])
    out.append("  per run (loop s, off|on): " + "  ".join(
        "%.3f|%.3f" % (a, b) for a, b in zip(off["loop"], on["loop"])))
    out.append("  on / off (training loop): %.3fx   target <= %.2fx (no slower, 2%% for noise): %s"
               % (r["loop"], WS_ONOFF_TARGET, v))
    loff, lon = set(off["loss"]), set(on["loss"])
    ok = True
    if len(loff) == 1 and loff == lon:
        msg = "final loss identical in all %d runs, workspaces on and off" % (2 * reps)
    elif len(loff) > 1:
        msg = "final loss varies even with workspaces off (%d values): not comparable" % len(loff)
    else:
        msg = "final loss DIFFERS with workspaces on: off %s, on %s" % (sorted(loff), sorted(lon))
        ok = False
    out.append("  " + msg)
    summary = ("workspace on/off numpy (%d steps): loop %.3fx, wall %.3fx (target <= %.2fx: %s); %s"
               % (steps, r["loop"], r["wall"], WS_ONOFF_TARGET,
                  v, msg))
    return out, summary, ok


def bench_workspace(args, build, shim, churn, ops, steps, reps):
    """The --workspace section: tensor_loop under every allocator and ndmem with workspaces off,
    on and on with marks; then churn and numpy with workspaces on against off."""
    tl = build / "bench" / "tensor_loop"
    if not os.access(tl, os.X_OK):
        raise SetupError("tensor_loop not found: %s (ninja -C %s)" % (tl, args.build))
    iters = args.ws_iters or (WS_ITERS_QUICK if args.quick else None)
    if iters is None and args.ws_warmup is not None:  # keep tensor_loop's 7 measured iterations
        iters = args.ws_warmup + 7
    elif args.ws_iters is None and args.ws_warmup is not None and iters <= args.ws_warmup:
        iters = args.ws_warmup + 3
    je = find_lib(args.jemalloc, "libjemalloc.so.2")
    mi = find_lib(args.mimalloc, "libmimalloc.so.2")
    configs = tensor_configs(shim, je, mi)
    res = bench_tensor(tl, configs, iters, args.ws_warmup, reps)
    lines, summary = report_tensor(configs, res, reps)
    if not je:
        lines.append("  jemalloc: libjemalloc.so.2 not found, its row is skipped")
    if not mi:
        lines.append("  mimalloc: libmimalloc.so.2 not found, its row is skipped")
    report = lines + [""]
    ok = True
    if not args.no_churn:
        ws = [EnvConfig("ndmem ws=%s" % w, [str(shim)], {"NDMEM_WORKSPACES": w}) for w in "01"]
        ns = bench_churn(churn, ws, ops, reps)
        lines, line = report_ws_churn(ns, ops, reps)
        report += lines + [""]
        summary.append(line)
    if not args.no_numpy:
        py, _, why = find_numpy_python()
        if py is None:
            msg = "workspace on/off: numpy skipped: %s" % why
            report += [msg, ""]
            summary.append(msg)
        else:
            lines, line, ok = report_ws_numpy(bench_ws_numpy(py, shim, steps, reps), steps, reps)
            report += lines + [""]
            summary.append(line)
    return report, summary, ok


# ------------------------------------------------------------------------------------ limits

LIMIT_TARGET = 1.05  # ndmem with limits set / ndmem without: the checks cost at most 5 %

LIMIT_ENVS = [
    ("ndmem", {}),
    ("ndmem maxBytes", {"NDMEM_MAX_BYTES": "1t"}),
    ("ndmem physical", {"NDMEM_MAX_PHYSICAL_BYTES": "1t", "NDMEM_WARN_AT": "512g"}),
]


def bench_limits(args, shim, churn, ops, steps, reps):
    """The --limits section: churn (1 and 2 threads) and the numpy loop under ndmem without a
    limit, with maxBytes and with a physical limit and watermark, all far above use (so every
    allocation pays the checks and none is refused); ratios against glibc and plain ndmem."""
    report, summary, ok = [], [], True
    names = [n for n, _ in LIMIT_ENVS]
    if not args.no_churn:
        configs = [Config("glibc", [])] + [EnvConfig(n, [str(shim)], e) for n, e in LIMIT_ENVS]
        ns = bench_churn(churn, configs, ops, reps)
        out = ["limits: churn, %d ops/thread, %d repetitions; median ns/op per thread (+-half "
               "range) and ratios (median of per-repetition ratios)" % (ops, reps)]
        out.append("  %-16s%18s%18s%16s%16s" % ("config", "1 thread", "2 threads",
                                                 "/ glibc 1T/2T", "/ ndmem 1T/2T"))
        worst = 0.0
        for c in configs:
            row = "  %-16s" % c.name + "".join("%18s" % ("%.2f (+-%.0f%%)" % (
                median(ns[(c.name, t)]), spread(ns[(c.name, t)]))) for t in THREADS)
            row += "%16s" % "/".join("%.2fx" % ratio(ns[(c.name, t)], ns[("glibc", t)])
                                     for t in THREADS)
            if c.name.startswith("ndmem "):
                rs = [ratio(ns[(c.name, t)], ns[("ndmem", t)]) for t in THREADS]
                worst = max(worst, *rs)
                row += "%16s" % "/".join("%.3fx" % r for r in rs)
            out.append(row)
        out.append("  limits set / not set (worst): %.3fx   target <= %.2fx: %s"
                   % (worst, LIMIT_TARGET, verdict(worst, LIMIT_TARGET)))
        report += out + [""]
        summary.append("limits churn 1T/2T, / ndmem: " + ", ".join(
            "%s %s" % (n, "/".join("%.3fx" % ratio(ns[(n, t)], ns[("ndmem", t)]) for t in THREADS))
            for n in names[1:]) + " (target <= %.2fx: %s)" % (LIMIT_TARGET,
                                                           verdict(worst, LIMIT_TARGET)))
    if not args.no_numpy:
        py, _, why = find_numpy_python()
        if py is None:
            msg = "limits: numpy skipped: %s" % why
            return report + [msg, ""], summary + [msg], ok
        res = bench_numpy_envs(py, shim, steps, reps, LIMIT_ENVS, "limits")
        out = ["limits: numpy, examples/train_numpy.py --steps %d under ndmem, %d repetitions"
               % (steps, reps)]
        out.append("  %-16s%18s%18s%12s" % ("config", "loop s", "wall s", "/ ndmem"))
        rs = {}
        for n in names:
            rs[n] = ratio(res[n]["loop"], res["ndmem"]["loop"])
            out.append("  %-16s%18s%18s%12s" % (
                n, "%.3f (+-%.0f%%)" % (median(res[n]["loop"]), spread(res[n]["loop"])),
                "%.3f (+-%.0f%%)" % (median(res[n]["wall"]), spread(res[n]["wall"])),
                "%.3fx" % rs[n] if n != "ndmem" else "-"))
        losses = set(l for n in names for l in res[n]["loss"])
        ok = len(losses) == 1
        msg = ("final loss identical in all %d runs" % (3 * reps) if ok
               else "final loss DIFFERS between the limit settings: %s" % sorted(losses))
        out.append("  " + msg)
        report += out + [""]
        worst = max(rs[n] for n in names[1:])
        summary.append("limits numpy (%d steps), loop / ndmem: %s (target <= %.2fx: %s); %s" % (
            steps, ", ".join("%s %.3fx" % (n, rs[n]) for n in names[1:]), LIMIT_TARGET,
            verdict(worst, LIMIT_TARGET), msg))
    return report, summary, ok


# ------------------------------------------------------------------------------------ stress

STRESS_ONOFF_TARGET = 1.05  # ndmem with workspaces on / off: threads that come and go pay nothing
STRESS_TARGET = 1.1  # ndmem (default settings) / glibc, each workload's own seconds

# (name, program in <build>/bench, arguments): about 0.3-0.7 s each with glibc on a 2-core VM.
STRESS_WORKLOADS = [
    ("stress", "stress", ["--threads", "8", "--rounds", "10", "--iters", "10000"]),
    ("larson", "larson", ["--ops", "50000"]),
    ("larson-large", "larson", ["--max", "73728", "--slots", "200", "--ops", "5000",
                                "--epochs", "10"]),
]
QUICK_STRESS_WORKLOADS = [
    ("stress", "stress", ["--threads", "8", "--rounds", "4", "--iters", "5000"]),
    ("larson", "larson", ["--ops", "10000", "--epochs", "10"]),
    ("larson-large", "larson", ["--max", "73728", "--slots", "200", "--ops", "2000",
                                "--epochs", "5"]),
]
# The preload check: a few threads and rounds of each program.
STRESS_PROBE = {"stress": ["--threads", "2", "--rounds", "2", "--iters", "500"],
                "larson": ["--threads", "2", "--ops", "500", "--epochs", "2"]}


def stress_configs(shim, je, mi):
    configs = [EnvConfig("glibc", []),
               EnvConfig("ndmem", [str(shim)]),
               EnvConfig("ndmem ws=0", [str(shim)], {"NDMEM_WORKSPACES": "0"})]
    if je:
        configs += [EnvConfig("jemalloc", [je], check="jemalloc"),
                    EnvConfig("ndmem+jemalloc", [str(shim), je], check="jemalloc")]
    if mi:
        configs.append(EnvConfig("mimalloc", [mi], check="mimalloc"))
    return configs


def parse_stress(p, cfg, what):
    """The program's result line (elapsed_s, checksum); under ndmem, its --check lines must all
    say exact (a mismatch already made it exit 1)."""
    m = re.search(r"elapsed_s=([0-9.]+).*checksum=([0-9a-f]+)", p.stdout)
    if not m:
        raise SetupError("%s: unexpected output: %r" % (what, p.stdout.strip()))
    checks = [ln for ln in p.stdout.splitlines() if ln.startswith("check: ")]
    if cfg.has_ndmem and (len(checks) != 4 or not all(ln.endswith("exact") for ln in checks)):
        raise SetupError("%s: --check did not compare ndmem's counters exactly:\n%s"
                         % (what, "\n".join(checks) or p.stdout.strip()))
    return float(m.group(1)), m.group(2), checks


def verify_stress_config(build, cfg):
    """Short runs that prove the preloads are live, as for churn."""
    for prog, args in STRESS_PROBE.items():
        env = cfg.env(summary=cfg.has_ndmem)
        if cfg.check == "jemalloc":
            env["MALLOC_CONF"] = "stats_print:true"
        elif cfg.check == "mimalloc":
            env["MIMALLOC_VERBOSE"] = "1"
        what = "%s/%s (preload check)" % (prog, cfg.name)
        p, _ = run([str(build / "bench" / prog)] + args + ["--check"], env, what, 300)
        parse_stress(p, cfg, what)
        if cfg.has_ndmem and not ndmem_lines(p.stderr):
            raise SetupError("%s: no line starting with 'ndmem[' on stderr with NDMEM_SUMMARY=1 "
                             "and LD_PRELOAD=%r: the shim is not loaded.\nstderr was:\n%s"
                             % (what, env["LD_PRELOAD"], p.stderr.strip()))
        verify_allocator(cfg, p, what)


def bench_stress(args, build, reps, shim):
    """The --stress section: stress and larson under every configuration, interleaved and
    rotated per repetition, every run with --check; medians and paired ratios."""
    for prog in STRESS_PROBE:
        if not os.access(build / "bench" / prog, os.X_OK):
            raise SetupError("%s not found: %s (ninja -C %s)" % (prog, build / "bench" / prog,
                                                                 args.build))
    je = find_lib(args.jemalloc, "libjemalloc.so.2")
    mi = find_lib(args.mimalloc, "libmimalloc.so.2")
    configs = stress_configs(shim, je, mi)
    workloads = QUICK_STRESS_WORKLOADS if args.quick else STRESS_WORKLOADS
    for cfg in configs:
        verify_stress_config(build, cfg)
    log("stress: preloads verified (%s)" % ", ".join(c.name for c in configs))
    floor = rss_floor()
    secs = {(c.name, w[0]): [] for c in configs for w in workloads}
    rss = {(c.name, w[0]): [] for c in configs for w in workloads}
    sums = {w[0]: {} for w in workloads}
    checked = 0
    jobs = [(c, w) for w in workloads for c in configs]
    for rep in range(reps):
        k = rep % len(jobs)
        t0 = time.perf_counter()
        for cfg, (name, prog, wargs) in jobs[k:] + jobs[:k]:
            what = "%s/%s" % (name, cfg.name)
            p, _, peak = rss_run([str(build / "bench" / prog)] + wargs + ["--check"], cfg.env(),
                                 what, 600)
            sec, checksum, _ = parse_stress(p, cfg, what)
            secs[(cfg.name, name)].append(sec)
            rss[(cfg.name, name)].append(peak)
            sums[name].setdefault(checksum, []).append(cfg.name)
            checked += cfg.has_ndmem
        log("stress: repetition %d/%d done (%.1f s)" % (rep + 1, reps, time.perf_counter() - t0))
    for name, by in sums.items():  # the same sizes were asked for under every allocator
        if len(by) != 1:
            raise SetupError("%s: checksums differ between configurations: %r" % (name, by))
    return report_stress(configs, workloads, secs, rss, floor, reps, checked, je, mi)


def stress_verdicts(rat, wl):
    """The verdict of ndmem / glibc against STRESS_TARGET: the worst workload's, and which
    workloads miss it."""
    miss = [w for w in wl if rat[("ndmem", "glibc", w)] > STRESS_TARGET]
    return "met" if not miss else "NOT met (%s)" % ", ".join(miss)


def stress_headline(secs, rss, wl, indent):
    """Threads that come and go under ndmem's default settings against plain glibc: per
    workload, the time ratio with its target and verdict, and the peak RSS of both."""
    out = ["%sthreads that come and go: ndmem (default settings) / glibc, workload seconds "
           "(target <= %.2fx), and peak RSS of both" % (indent, STRESS_TARGET)]
    for w in wl:
        r = ratio(secs[("ndmem", w)], secs[("glibc", w)])
        out.append("%s  %-13s time %.2fx %-8s peak RSS glibc %.1f MiB, ndmem %.1f MiB (%.2fx)" % (
            indent, w, r, verdict(r, STRESS_TARGET), mib(median(rss[("glibc", w)])),
            mib(median(rss[("ndmem", w)])), ratio(rss[("ndmem", w)], rss[("glibc", w)])))
    return out


def report_stress(configs, workloads, secs, rss, floor, reps, checked, je, mi):
    names = [c.name for c in configs]
    wl = [w[0] for w in workloads]
    out = ["stress: threads that come and go, %d repetitions; median seconds of the workload "
           "(+-half range) and / glibc (median of per-repetition ratios)" % reps]
    for name, prog, wargs in workloads:
        out.append("  %-13s bench/%s %s" % (name, prog, " ".join(wargs)))
    out.append("  %-16s" % "config" + "".join("%26s" % w for w in wl))
    for n in names:
        row = "  %-16s" % n
        for w in wl:
            xs = secs[(n, w)]
            cell = "%.3f (+-%.0f%%)" % (median(xs), spread(xs))
            if n != "glibc":
                cell += " %6.2fx" % ratio(xs, secs[("glibc", w)])
            else:
                cell += " %7s" % "-"
            row += "%26s" % cell
        out.append(row)
    noisy = [n for n in names if any(spread(secs[(n, w)]) > NOISY for w in wl)]
    if noisy:
        out.append("  note: spread above +-%.0f%% for %s: the machine was busy; the paired ratios "
                   "are more robust than the medians" % (NOISY, ", ".join(noisy)))
    pairs = [("ndmem", "glibc"), ("ndmem", "ndmem ws=0"), ("ndmem ws=0", "glibc")]
    if "jemalloc" in names:
        pairs.append(("ndmem+jemalloc", "jemalloc"))
    out.append("")
    out.append("  ratios (median of per-repetition ratios)")
    rat = {}
    for a, b in pairs:
        row = "  %-28s" % ("%s / %s" % (a, b))
        for w in wl:
            rat[(a, b, w)] = ratio(secs[(a, w)], secs[(b, w)])
            row += "  %s %.2fx" % (w, rat[(a, b, w)])
        if (a, b) == ("ndmem", "ndmem ws=0"):
            worst = max(rat[(a, b, w)] for w in wl)
            row += "   workspaces on/off, goal <= %.2fx: %s" % (STRESS_ONOFF_TARGET,
                                                              verdict(worst, STRESS_ONOFF_TARGET))
        elif (a, b) == ("ndmem", "glibc"):
            row += "   target <= %.2fx: %s" % (STRESS_TARGET, stress_verdicts(rat, wl))
        out.append(row)
    # Peak RSS: every timed run went through the RSS helper (see rss_run).
    out.append("")
    out.append("  peak RSS of the whole process, MiB (median over repetitions; wait4 ru_maxrss of "
               "the program run by a small fork+exec helper, whose floor is %.1f MiB) and "
               "/ glibc (median of per-repetition ratios)" % mib(floor))
    out.append("  %-16s" % "config" + "".join("%26s" % w for w in wl))
    for n in names:
        row = "  %-16s" % n
        for w in wl:
            xs = rss[(n, w)]
            cell = "%.1f (+-%.0f%%)" % (mib(median(xs)), spread(xs))
            cell += (" %6.2fx" % ratio(xs, rss[("glibc", w)])) if n != "glibc" else " %7s" % "-"
            row += "%26s" % cell
        out.append(row)
    low = ["%s/%s" % (n, w) for n in names for w in wl if median(rss[(n, w)]) <= floor * 1.05]
    if low:
        out.append("  note: at the helper's floor for %s: that figure is the helper's, not the "
                   "program's" % ", ".join(low))
    out += stress_headline(secs, rss, wl, "  ")
    out.append("  --check: in all %d runs under ndmem, heap allocs, frees and live count over the "
               "workload equal the program's calls (and each thread's shard its own)" % checked)
    out.append("  checksum of the requested sizes identical under every configuration")
    if not je:
        out.append("  jemalloc: libjemalloc.so.2 not found, its rows are skipped")
    if not mi:
        out.append("  mimalloc: libmimalloc.so.2 not found, its row is skipped")
    worst = max(rat[("ndmem", "ndmem ws=0", w)] for w in wl)
    summary = ["stress (median s %s): %s" % ("/".join(wl), ", ".join(
        "%s %s" % (n, "/".join("%.3f" % median(secs[(n, w)]) for w in wl)) for n in names))]
    summary += stress_headline(secs, rss, wl, "  ")
    summary.append("  peak RSS MiB %s (helper floor %.1f MiB): %s" % (
        "/".join(wl), mib(floor), ", ".join(
            "%s %s" % (n, "/".join("%.1f" % mib(median(rss[(n, w)])) for w in wl))
            for n in names)))
    for a, b in pairs:
        tail = ""
        if (a, b) == ("ndmem", "ndmem ws=0"):
            tail = " (workspaces on/off, goal <= %.2fx: %s)" % (
                STRESS_ONOFF_TARGET, verdict(worst, STRESS_ONOFF_TARGET))
        elif (a, b) == ("ndmem", "glibc"):
            tail = " (target <= %.2fx: %s)" % (STRESS_TARGET, stress_verdicts(rat, wl))
        summary.append("  %s / %s %s: %s%s" % (a, b, "/".join(wl), "/".join(
            "%.2fx" % rat[(a, b, w)] for w in wl), tail))
    if "mimalloc" in names:
        summary.append("  mimalloc / glibc %s: %s" % ("/".join(wl), "/".join(
            "%.2fx" % ratio(secs[("mimalloc", w)], secs[("glibc", w)]) for w in wl)))
    summary.append("  --check exact in all %d runs under ndmem; checksums identical" % checked)
    return out + [""], summary


# ------------------------------------------------------------------------------------ exact

EXACT_TARGET = 0.5  # churn, ndmem exact / heaptrack: "well below heaptrack", read as at most half
# churn by its own clock, every thread count: the shim's cost with every block tracked, and with
# the default settings, against plain glibc
EXACT_CHURN_TARGETS = {("ndmem exact", "glibc"): 1.5, ("ndmem", "glibc"): 1.15,
                       ("ndmem exact", "heaptrack"): EXACT_TARGET}


class WrapConfig(EnvConfig):
    """A configuration whose command runs under a wrapper program (heaptrack CMD)."""

    def __init__(self, name, wrap, extra_env=None, check=None):
        EnvConfig.__init__(self, name, [], extra_env, check=check)
        self.wrap = list(wrap)


def heaptrack_out():
    """heaptrack's -o argument: one file in the private trace folder, rewritten by every run."""
    return os.path.join(trace_dir(), "heaptrack")


def heaptrack_version(ht):
    try:
        p = subprocess.run([ht, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (p.stdout.strip().splitlines() or ["?"])[-1]


def heaptrack_events(what):
    """Allocations (`+` lines) in the raw file heaptrack --raw wrote: proof that it recorded."""
    return heaptrack_raw(what)[0]


def heaptrack_raw(what):
    """(allocations, bytes) of the compressed raw file heaptrack --raw wrote, then removed."""
    files = [f for f in os.listdir(trace_dir()) if f.startswith("heaptrack.raw.")]
    if len(files) != 1:
        raise SetupError("%s: heaptrack wrote no raw file in %s (found %r)"
                         % (what, trace_dir(), files))
    path = os.path.join(trace_dir(), files[0])
    tool = {"zst": "zstd", "gz": "gzip"}.get(path.rsplit(".", 1)[-1])
    if not tool or not shutil.which(tool):
        raise SetupError("%s: cannot read %s (%s not found)" % (what, path, tool or "format"))
    size = os.path.getsize(path)
    p = subprocess.Popen([tool, "-dc", path], stdout=subprocess.PIPE)
    n = sum(1 for line in p.stdout if line.startswith(b"+ "))
    if p.wait() != 0:
        raise SetupError("%s: %s -dc %s failed" % (what, tool, path))
    os.unlink(path)
    return n, size


def exact_trace_check(build, env, cmd, what, min_allocs):
    """One run under ndmem exact whose trace must show every heap allocation tracked: the
    exact sites' allocations equal the counters', and at least min_allocs of them."""
    env = dict(env, NDMEM_OUTPUT=os.path.join(trace_dir(), "exact-check.%p.trace"))
    run(cmd, env, what, 600)
    traces = [f for f in os.listdir(trace_dir()) if f.startswith("exact-check.")]
    if len(traces) != 1:
        raise SetupError("%s: expected one trace, found %r" % (what, traces))
    path = os.path.join(trace_dir(), traces[0])
    p, _ = run([str(build / "report" / "ndmemreport"), "--format", "json", "--top", "1000000",
                path], base_env(), "ndmemreport (%s)" % what, 600)
    os.unlink(path)
    doc = json.loads(p.stdout)
    heap = [k for k in doc["counters"]["kinds"] if k["kind"] == "heap"][0]
    sites = [s for s in doc["sites"]["by_peak"] if s["kind"] == "heap"]
    tracked = sum(s["allocs"] for s in sites if not s["sampled"])
    if (doc["tracking"]["track_min"] != 0 or any(s["sampled"] for s in sites)
            or tracked != heap["allocs"] or tracked < min_allocs):
        raise SetupError("%s: not every allocation was tracked exactly: track_min %r, %d exact "
                         "site allocations, %d counted (want equal and >= %d)" % (
                             what, doc["tracking"]["track_min"], tracked, heap["allocs"],
                             min_allocs))
    return tracked


def exact_configs(shim, ht):
    configs = [EnvConfig("glibc", []), EnvConfig("ndmem", [str(shim)]),
               EnvConfig("ndmem exact", [str(shim)], {"NDMEM_TRACK_MIN": "0"})]
    if ht:
        configs.append(WrapConfig("heaptrack", [ht, "--raw", "-o", heaptrack_out()],
                                  check="heaptrack"))
    return configs


def children_cpu():
    """User + system seconds of this process's children that ended and were waited for (a
    wrapper's own children included: heaptrack's compressor)."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bench_exact_churn(build, churn, configs, ops, reps):
    """churn under every configuration (and --ideal), interleaved and rotated per repetition.
    Returns churn's own ns/op (wall, per thread) and the CPU time of the whole run per op (all
    threads and processes: heaptrack --raw hands its events to a zstd process)."""
    configs = configs + [Config("ideal", [], ideal=True)]
    for cfg in configs:
        what = "churn/%s (check)" % cfg.name
        if cfg.check == "heaptrack":
            run(churn_cmd(churn, cfg, 1, 20000), cfg.env(), what, 300)
            n = heaptrack_events(what)
            if n < 20000:
                raise SetupError("%s: heaptrack recorded %d allocations, churn made at least "
                                 "20000" % (what, n))
        elif cfg.name == "ndmem exact":
            verify_churn_config(churn, cfg)
            exact_trace_check(build, cfg.env(), churn_cmd(churn, cfg, 1, 20000), what, 20000)
        else:
            verify_churn_config(churn, cfg)
    log("exact: churn configurations verified (%s)" % ", ".join(c.name for c in configs))
    ns = {(c.name, t): [] for c in configs for t in THREADS}
    cpu = {(c.name, t): [] for c in configs for t in THREADS}
    sums = {t: {} for t in THREADS}
    jobs = [(c, t) for t in THREADS for c in configs]
    for rep in range(reps):
        k = rep % len(jobs)
        t0 = time.perf_counter()
        for cfg, t in jobs[k:] + jobs[:k]:
            what = "churn/%s --threads %d" % (cfg.name, t)
            c0 = children_cpu()
            p, _ = run(churn_cmd(churn, cfg, t, ops), cfg.env(), what, 900)
            cpu[(cfg.name, t)].append((children_cpu() - c0) * 1e9 / (ops * t))
            v, s = parse_churn(p.stdout, what)
            ns[(cfg.name, t)].append(v)
            sums[t][cfg.name] = s
            if cfg.check == "heaptrack":
                heaptrack_events(what)  # proves it recorded, and removes the file
        log("exact: churn repetition %d/%d done (%.1f s)" % (rep + 1, reps,
                                                            time.perf_counter() - t0))
    for t in THREADS:
        if len(set(sums[t].values())) != 1:
            raise SetupError("churn --threads %d: checksums differ between configurations: %r"
                             % (t, sums[t]))
    return configs, ns, cpu


EXACT_PAIRS = [("ndmem exact", "glibc"), ("heaptrack", "glibc"), ("ndmem exact", "heaptrack"),
               ("ndmem exact", "ndmem"), ("ndmem", "glibc")]


def churn_target(rat, a, b):
    """'target <= T: met' for a / b over every thread count (the worst decides), naming the
    thread counts that miss it."""
    target = EXACT_CHURN_TARGETS[(a, b)]
    miss = ["%dT" % t for t in THREADS if rat[(a, b, t)] > target]
    return "target <= %.2fx: %s" % (target, "met" if not miss else
                                   "NOT met (%s)" % ", ".join(miss))


def report_exact_churn(configs, ns, cpu, ops, reps, htver):
    names = [c.name for c in configs]
    out = ["exact: churn, %d ops/thread, %d repetitions; ndmem exact = NDMEM_TRACK_MIN=0 (every "
           "block tracked with its stack), heaptrack = %s --raw (record only); median ns/op per "
           "thread (+-half range) by churn's clock, and CPU ns/op of the whole run (all threads "
           "and processes)" % (ops, reps, htver if "heaptrack" in names else "not found")]
    out.append("  %-16s" % "config" + "".join("%18s" % ("%d thread%s" % (t, "s" if t > 1 else ""))
                                               for t in THREADS)
               + "".join("%12s" % ("%dT / glibc" % t) for t in THREADS)
               + "".join("%11s" % ("%dT CPU" % t) for t in THREADS))
    for n in names:
        row = "  %-16s" % n + "".join("%18s" % ("%.2f (+-%.0f%%)" % (
            median(ns[(n, t)]), spread(ns[(n, t)]))) for t in THREADS)
        row += "".join("%12s" % ("%.2fx" % ratio(ns[(n, t)], ns[("glibc", t)])
                                 if n != "glibc" else "-") for t in THREADS)
        row += "".join("%11.1f" % median(cpu[(n, t)]) for t in THREADS)
        out.append(row)
    noisy = [n for n in names if n != "ideal" and any(spread(ns[(n, t)]) > NOISY for t in THREADS)]
    if noisy:
        out.append("  note: spread above +-%.0f%% for %s: the machine was busy; the paired ratios "
                   "are more robust than the medians" % (NOISY, ", ".join(noisy)))
    out.append("")
    out.append("  ratios (median of per-repetition ratios; extra = median added ns/op)")
    rat = {}
    for a, b in [pr for pr in EXACT_PAIRS if pr[0] in names and pr[1] in names]:
        row = "  %-28s" % ("%s / %s" % (a, b))
        for t in THREADS:
            rat[(a, b, t)] = ratio(ns[(a, t)], ns[(b, t)])
            d = paired(ns[(a, t)], ns[(b, t)], lambda x, y: x - y)
            row += "  %dT %5.2fx %-14s" % (t, rat[(a, b, t)], "(%+.1f ns)" % d)
        if (a, b) in EXACT_CHURN_TARGETS:
            row += " " + churn_target(rat, a, b)
        out.append(row.rstrip())
    if ("ndmem exact", "heaptrack") in [(a, b) for a, b, _ in rat]:
        row = "  %-28s" % "ndmem exact / heaptrack, CPU"
        rs = [ratio(cpu[("ndmem exact", t)], cpu[("heaptrack", t)]) for t in THREADS]
        for t, r in zip(THREADS, rs):
            row += "  %dT %5.2fx %-14s" % (t, r, "")
        row += " target <= %.1fx: %s" % (EXACT_TARGET, verdict(max(rs), EXACT_TARGET))
        out.append(row.rstrip())
    if "heaptrack" not in names:
        out.append("  heaptrack: not found (apt-get install heaptrack, or --heaptrack PATH); its "
                   "rows are skipped")
    summary = ["exact churn (%d ops/thread, median ns/op 1T/2T): %s" % (ops, ", ".join(
        "%s %s" % (n, "/".join("%.1f" % median(ns[(n, t)]) for t in THREADS)) for n in names))]
    for a, b in [pr for pr in EXACT_PAIRS if (pr[0], pr[1], THREADS[0]) in rat]:
        tail = ""
        if (a, b) in EXACT_CHURN_TARGETS:
            tail = " (%s)" % churn_target(rat, a, b)
        summary.append("  %s / %s 1T/2T: %s%s" % (a, b, "/".join(
            "%.2fx" % rat[(a, b, t)] for t in THREADS), tail))
    if "heaptrack" in names:
        rs = [ratio(cpu[("ndmem exact", t)], cpu[("heaptrack", t)]) for t in THREADS]
        summary.append("  CPU ns/op 1T/2T (whole run): %s; ndmem exact / heaptrack %s (target "
                       "<= %.1fx: %s)" % (
                           ", ".join("%s %s" % (n, "/".join("%.1f" % median(cpu[(n, t)])
                                                            for t in THREADS))
                                     for n in names if n != "ideal"),
                           "/".join("%.2fx" % r for r in rs), EXACT_TARGET,
                           verdict(max(rs), EXACT_TARGET)))
    return out, summary


def exact_numpy_once(py, cfg, steps, what, env=None):
    cmd = list(getattr(cfg, "wrap", ())) + [py, str(TRAIN), "--steps", str(steps)]
    p, wall = run(cmd, env or cfg.env(), what, 1800)
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not loss:
        raise SetupError("%s: missing 'time ... s' on stderr or 'final loss' on stdout" % what)
    return wall, float(m.group(1)), loss[-1]


def bench_exact_numpy(build, py, configs, steps, reps):
    for cfg in configs:
        what = "train_numpy.py (%s, check)" % cfg.name
        if cfg.check == "heaptrack":
            exact_numpy_once(py, cfg, 3, what)
            if heaptrack_events(what) < 1000:
                raise SetupError("%s: heaptrack recorded fewer than 1000 allocations" % what)
        elif cfg.name == "ndmem exact":
            cmd = [py, str(TRAIN), "--steps", "3"]
            exact_trace_check(build, cfg.env(), cmd, what, 1000)
        elif cfg.has_ndmem:
            p, _ = run([py, str(TRAIN), "--steps", "3"], cfg.env(summary=True), what, 900)
            if not ndmem_lines(p.stderr):
                raise SetupError("%s: no 'ndmem[' line with NDMEM_SUMMARY=1: the shim is not "
                                 "loaded" % what)
        else:
            exact_numpy_once(py, cfg, 3, what)  # warm-up
    log("exact: numpy configurations verified (%s)" % ", ".join(c.name for c in configs))
    res = {c.name: {"wall": [], "loop": [], "loss": []} for c in configs}
    for rep in range(reps):
        k = rep % len(configs)
        for cfg in configs[k:] + configs[:k]:
            what = "train_numpy.py (%s)" % cfg.name
            wall, loop, loss = exact_numpy_once(py, cfg, steps, what)
            res[cfg.name]["wall"].append(wall)
            res[cfg.name]["loop"].append(loop)
            res[cfg.name]["loss"].append(loss)
            if cfg.check == "heaptrack":
                heaptrack_events(what)
        log("exact: numpy repetition %d/%d done" % (rep + 1, reps))
    return res


def exact_trace_stats(build, py, shim, steps):
    """One more exact run of the loop, its trace read by ndmemreport: size, sites, blocks, and
    what reading it costs (the trace of a run where every block is tracked)."""
    env = base_env()
    env.update({"LD_PRELOAD": str(shim), "NDMEM_TRACK_MIN": "0", "NDMEM_SUMMARY": "0",
                "NDMEM_OUTPUT": os.path.join(trace_dir(), "exact-stats.%p.trace")})
    exact_numpy_once(py, None, steps, "train_numpy.py (ndmem exact, trace)", env)
    traces = [f for f in os.listdir(trace_dir()) if f.startswith("exact-stats.")]
    if len(traces) != 1:
        raise SetupError("exact: expected one trace of the numpy run, found %r" % traces)
    path = os.path.join(trace_dir(), traces[0])
    report = build / "report" / "ndmemreport"
    # Seconds only: wait4's peak RSS of a child counts this driver's own high-water too (the
    # exec of a vfork'ed child carries its parent's), which the JSON of the checks above raised
    # (rss_run is the way around it).
    secs = {fmt: measured([str(report), "--format", fmt, path], "ndmemreport (exact trace)", 600)[0]
            for fmt in ("text", "json")}
    p, _ = run([str(report), "--format", "json", path], base_env(), "ndmemreport (exact trace)",
               600)
    doc = json.loads(p.stdout)
    st = {"bytes": os.path.getsize(path), "records": doc["trace"]["records"],
          "sites": doc["sites"]["count"], "leak_blocks": doc["leaks"]["blocks"],
          "leak_stacks": doc["leaks"]["stacks"], "complete": doc["trace"]["complete"],
          "text": secs["text"], "json": secs["json"]}
    os.unlink(path)
    return st


def report_exact_numpy(res, names, py, npver, steps, reps, st):
    out = ["exact: numpy, examples/train_numpy.py --steps %d, %s (numpy %s), %d repetitions; "
           "median seconds (+-half range), / glibc (median of per-repetition ratios)"
           % (steps, py, npver, reps)]
    out.append("  %-16s%18s%10s%18s%10s" % ("config", "training loop", "/ glibc",
                                            "whole process", "/ glibc"))
    for n in names:
        row = "  %-16s" % n
        for key in ("loop", "wall"):
            xs = res[n][key]
            row += "%18s%10s" % ("%.3f (+-%.0f%%)" % (median(xs), spread(xs)),
                                 "%.3fx" % ratio(xs, res["glibc"][key]) if n != "glibc" else "-")
        out.append(row)
    if any(spread(res[n][k]) > NOISY for n in names for k in ("loop", "wall")):
        out.append("  note: spread above +-%.0f%%: the machine was busy (OpenBLAS threads are "
                   "sensitive to other load); rerun or raise --reps" % NOISY)
    out.append("  ratios (median of per-repetition ratios), loop / whole process:")
    rat = {}
    for a, b in [pr for pr in EXACT_PAIRS if pr[0] in names and pr[1] in names]:
        rat[(a, b)] = tuple(ratio(res[a][k], res[b][k]) for k in ("loop", "wall"))
        out.append("  %-28s  %.3fx / %.3fx" % ("%s / %s" % (a, b), rat[(a, b)][0], rat[(a, b)][1]))
    losses = set(l for n in names for l in res[n]["loss"])
    ok = len(losses) == 1
    msg = ("final loss identical in all %d runs" % (len(names) * reps) if ok
           else "final loss DIFFERS between configurations: %s" % sorted(losses))
    out.append("  " + msg)
    trace = ("exact trace of one %d-step run: %.1f MiB, %d records, %d sites, %d blocks live at "
             "exit (%d stacks)%s; ndmemreport reads it in %.2f s (text), %.2f s (json)"
             % (steps, st["bytes"] / 1048576, st["records"], st["sites"], st["leak_blocks"],
                st["leak_stacks"], "" if st["complete"] else " INCOMPLETE", st["text"],
                st["json"]))
    out.append("  " + trace)
    summary = ["exact numpy (%d steps), median loop/wall s: %s" % (steps, ", ".join(
        "%s %.3f/%.3f" % (n, median(res[n]["loop"]), median(res[n]["wall"])) for n in names))]
    summary.append("  " + ", ".join("%s / %s %.3fx/%.3fx" % (a, b, r[0], r[1])
                                    for (a, b), r in rat.items()) + " (loop/wall); " + msg)
    summary.append("  " + trace)
    return out, summary, ok


# The PyTorch run of --exact: tests/runtime/py_torch.py, the whole process (import torch included)
EXACT_TORCH_STEPS = 40
EXACT_TORCH_WALL_TARGET = 1.15  # ndmem exact / glibc, wall time: the loop, and the whole process
EXACT_TORCH_RSS_TARGET = 1.2    # ndmem exact / glibc, peak RSS
EXACT_TORCH_SIZE_TARGET = 1.0   # ndmem exact trace / heaptrack's compressed file, same run
TORCH_MIN_ALLOCS = 100000       # import torch alone makes about a million heap allocations


def torch_env(cfg, tag, summary=False):
    """cfg's environment with the trace (when the shim runs) at a name of its own, TAG.<pid>."""
    env = cfg.env(summary)
    env["NDMEM_OUTPUT"] = os.path.join(trace_dir(), "%s.%%p.trace" % tag)
    return env


def take_trace(tag, what):
    """The path of the one trace TAG.<pid>.trace in the private folder."""
    files = [f for f in os.listdir(trace_dir()) if f.startswith(tag + ".")]
    if len(files) != 1:
        raise SetupError("%s: expected one trace %s.*, found %r" % (what, tag, files))
    return os.path.join(trace_dir(), files[0])


def torch_once(py, cfg, steps, env, what):
    """One py_torch.py run through the RSS helper: (wall s, peak RSS bytes, (loop s, median step
    s), final loss line, stderr)."""
    cmd = list(getattr(cfg, "wrap", ())) + [py, str(TORCH_SCRIPT), "--steps", str(steps)]
    p, wall, peak = rss_run(cmd, env, what, 1800)
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    st = re.search(r"^step ([0-9.]+) ms median", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not st or not loss:
        raise SetupError("%s: missing 'time ... s' or 'step ... ms median' on stderr or 'final "
                         "loss' on stdout" % what)
    return wall, peak, (float(m.group(1)), float(st.group(1)) / 1000), loss[-1], p.stderr


def torch_trace_summary(build, path, what):
    """(ndmemreport's JSON, its heap counters) for a torch trace: one site, no symbols (the full
    site list of an exact torch import runs to gigabytes of JSON)."""
    p, _ = run([str(build / "report" / "ndmemreport"), "--format", "json", "--top", "1",
                "--no-symbols", path], base_env(), "ndmemreport (%s)" % what, 900)
    doc = json.loads(p.stdout)
    return doc, [k for k in doc["counters"]["kinds"] if k["kind"] == "heap"][0]


def torch_trace_facts(build, path, what):
    """The exact run's trace: it must say every block was tracked (track_min 0), be complete,
    and hold at least TORCH_MIN_ALLOCS heap allocations. Returns its size and counts."""
    doc, heap = torch_trace_summary(build, path, what)
    f = {"bytes": os.path.getsize(path), "records": doc["trace"]["records"],
         "sites": doc["sites"]["count"], "allocs": heap["allocs"],
         "track_min": doc["tracking"]["track_min"], "complete": doc["trace"]["complete"]}
    if f["track_min"] != 0 or not f["complete"] or f["allocs"] < TORCH_MIN_ALLOCS:
        raise SetupError("%s: not an exact, complete trace: track_min %r, complete %r, %d heap "
                         "allocations (want 0, true, >= %d)" % (what, f["track_min"],
                                                                 f["complete"], f["allocs"],
                                                                 TORCH_MIN_ALLOCS))
    return f


def zstd_size(path):
    """Bytes of PATH compressed by zstd at its default level, or None without zstd."""
    if not shutil.which("zstd"):
        return None
    p = subprocess.Popen(["zstd", "-q", "-c", path], stdout=subprocess.PIPE)
    n = 0
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        n += len(b)
    return n if p.wait() == 0 else None


def torch_default_check(build, path, what):
    """The default-settings run's trace: the shim was loaded, wrote a complete trace and counted
    at least import torch's TORCH_MIN_ALLOCS heap allocations."""
    doc, heap = torch_trace_summary(build, path, what)
    if not doc["trace"]["complete"] or heap["allocs"] < TORCH_MIN_ALLOCS:
        raise SetupError("%s: the shim's trace is incomplete or counted %d heap allocations "
                         "(want >= %d)" % (what, heap["allocs"], TORCH_MIN_ALLOCS))


def bench_exact_torch(build, py, configs, steps, reps, ht, quick):
    """py_torch.py --steps N under every --exact configuration, the whole process timed and its
    peak RSS taken through the RSS helper, interleaved and rotated per repetition after one
    plain 3-step warm-up (torch's libraries are large: the page cache). Every timed run is
    checked: under the shim its trace must exist (the preload was live; the first one of each
    is read by ndmemreport: exact = track_min 0 and complete, and both counted import torch's
    allocations), under heaptrack its raw file must hold them. The trace sizes come from these
    runs; without --quick one more run under heaptrack without --raw writes its interpreted,
    compressed file, whose size is the target's reference."""
    glibc = [c for c in configs if c.name == "glibc"][0]
    torch_once(py, glibc, 3, glibc.env(), "py_torch.py (glibc, warm-up)")
    res = {c.name: {"wall": [], "rss": [], "loop": [], "step": [], "loss": [], "size": []}
           for c in configs}
    facts = None
    checked = set()
    for rep in range(reps):
        k = rep % len(configs)
        t0 = time.perf_counter()
        for cfg in configs[k:] + configs[:k]:
            what = "py_torch.py (%s)" % cfg.name
            wall, peak, loop, loss, _ = torch_once(py, cfg, steps, torch_env(cfg, "torch"), what)
            r = res[cfg.name]
            r["wall"].append(wall)
            r["rss"].append(peak)
            r["loop"].append(loop[0])
            r["step"].append(loop[1])
            r["loss"].append(loss)
            if cfg.check == "heaptrack":
                n, size = heaptrack_raw(what)
                if n < TORCH_MIN_ALLOCS:
                    raise SetupError("%s: heaptrack recorded %d allocations (want >= %d)"
                                     % (what, n, TORCH_MIN_ALLOCS))
                r["size"].append(size)
            elif cfg.has_ndmem:
                path = take_trace("torch", what)  # none: the preload was not live
                r["size"].append(os.path.getsize(path))
                if cfg.name == "ndmem exact" and facts is None:
                    facts = torch_trace_facts(build, path, what)
                    facts["zstd"] = zstd_size(path)
                elif cfg.name not in checked:
                    torch_default_check(build, path, what)
                checked.add(cfg.name)
                os.unlink(path)
        log("exact: torch repetition %d/%d done (%.1f s)" % (rep + 1, reps,
                                                            time.perf_counter() - t0))
    full = None
    if ht and not quick:
        what = "py_torch.py (heaptrack, interpreted file)"
        out = os.path.join(trace_dir(), "heaptrack-full")
        cfg = WrapConfig("heaptrack", [ht, "-o", out])
        wall, peak, _, loss, _ = torch_once(py, cfg, steps, cfg.env(), what)
        files = [f for f in os.listdir(trace_dir()) if f.startswith("heaptrack-full.")]
        if len(files) != 1:
            raise SetupError("%s: expected one file heaptrack-full.*, found %r" % (what, files))
        path = os.path.join(trace_dir(), files[0])
        full = {"bytes": os.path.getsize(path), "name": files[0].replace("heaptrack-full", "*"),
                "wall": wall, "rss": peak, "loss": loss}
        os.unlink(path)
    return {"res": res, "facts": facts, "full": full, "floor": rss_floor()}


def report_exact_torch(bt, names, py, tver, steps, reps):
    res, facts, full, floor = bt["res"], bt["facts"], bt["full"], bt["floor"]
    out = ["exact: torch, tests/runtime/py_torch.py --steps %d, %s (torch %s), %d repetition%s; "
           "the whole process (import torch included): median wall seconds and peak RSS "
           "(+-half range), / glibc = median of per-repetition ratios; peak RSS is wait4's "
           "ru_maxrss of the program run by a small fork+exec helper (its floor: %.1f MiB), for "
           "heaptrack the largest process of its tree" % (steps, py, tver, reps,
                                                       "s" if reps != 1 else "", mib(floor))]
    out.append("  %-16s%18s%10s%20s%10s%16s" % ("config", "wall s", "/ glibc", "peak RSS MiB",
                                                "/ glibc", "loop s"))
    for n in names:
        r = res[n]
        out.append("  %-16s%18s%10s%20s%10s%16s" % (
            n, "%.3f (+-%.0f%%)" % (median(r["wall"]), spread(r["wall"])),
            "%.3fx" % ratio(r["wall"], res["glibc"]["wall"]) if n != "glibc" else "-",
            "%.1f (+-%.0f%%)" % (mib(median(r["rss"])), spread(r["rss"])),
            "%.3fx" % ratio(r["rss"], res["glibc"]["rss"]) if n != "glibc" else "-",
            "%.3f (+-%.0f%%)" % (median(r["loop"]), spread(r["loop"]))))
    if any(spread(res[n]["wall"]) > NOISY for n in names):
        out.append("  note: spread above +-%.0f%%: the machine was busy; rerun or raise --reps"
                   % NOISY)
    def per_run(label, key, fmt, scale=1):
        return "  per run (%s): %s" % (label, "; ".join(
            "%s %s" % (n, " ".join(fmt % (scale * x) for x in res[n][key])) for n in names))
    out.append(per_run("wall s", "wall", "%.2f"))
    out.append("  ratios (median of per-repetition ratios), wall / peak RSS:")
    rat = {}
    for a, b in [pr for pr in EXACT_PAIRS if pr[0] in names and pr[1] in names]:
        rat[(a, b)] = (ratio(res[a]["wall"], res[b]["wall"]), ratio(res[a]["rss"], res[b]["rss"]))
        row = "  %-28s  %.3fx / %.3fx" % ("%s / %s" % (a, b), rat[(a, b)][0], rat[(a, b)][1])
        if (a, b) == ("ndmem exact", "glibc"):
            row += "   targets wall <= %.2fx: %s, peak RSS <= %.2fx: %s" % (
                EXACT_TORCH_WALL_TARGET, verdict(rat[(a, b)][0], EXACT_TORCH_WALL_TARGET),
                EXACT_TORCH_RSS_TARGET, verdict(rat[(a, b)][1], EXACT_TORCH_RSS_TARGET))
        out.append(row)
    # The training loop alone, by py_torch.py's own clock: what each step of a long job pays,
    # apart from the one-time cost of import torch that dominates a 40-step process. A 40-step
    # loop lasts ~40 ms, so its total swings with one slow step; each run's median step does not.
    loop = {n: ratio(res[n]["step"], res["glibc"]["step"]) for n in names if n != "glibc"}
    loop_line = ("the training loop alone (py_torch.py's median step; glibc %.3f ms), / glibc: %s"
                 "   ndmem exact target <= %.2fx: %s" % (
                     1000 * median(res["glibc"]["step"]),
                     ", ".join("%s %.3fx" % (n, r) for n, r in loop.items()),
                     EXACT_TORCH_WALL_TARGET,
                     verdict(loop["ndmem exact"], EXACT_TORCH_WALL_TARGET)))
    out.append("  " + loop_line)
    out.append(per_run("median step ms", "step", "%.3f", 1000))
    # trace sizes
    ex = res["ndmem exact"]["size"]
    size_line = ["ndmem exact trace %.1f MiB (%d B; %d records, %d sites, %d heap allocations, "
                 "track_min 0%s)" % (mib(facts["bytes"]), facts["bytes"], facts["records"],
                                     facts["sites"], facts["allocs"],
                                     "; zstd'ed %.1f MiB" % mib(facts["zstd"])
                                     if facts["zstd"] else "")]
    size_line.append("ndmem (default) trace %.2f MiB" % mib(median(res["ndmem"]["size"])))
    verdict_line = None
    if "heaptrack" in names:
        raw = median(res["heaptrack"]["size"])
        size_line.append("heaptrack --raw %.1f MiB (heaptrack.raw.zst, median of the timed runs)"
                         % mib(raw))
        if full:
            size_line.append("heaptrack %.1f MiB (heaptrack.%s: interpreted, its own file; that "
                             "run %.2f s, peak RSS %.1f MiB with heaptrack_interpret)"
                             % (mib(full["bytes"]), full["name"], full["wall"], mib(full["rss"])))
            ref, refname = full["bytes"], "heaptrack's file (interpreted .zst)"
        else:
            ref, refname = raw, "heaptrack's raw .zst (no interpreted file under --quick)"
        r = median(ex) / ref
        verdict_line = ("ndmem exact trace / %s: %.2fx   target <= %.1fx: %s%s" % (
            refname, r, EXACT_TORCH_SIZE_TARGET, verdict(r, EXACT_TORCH_SIZE_TARGET),
            "; / heaptrack --raw %.2fx" % (median(ex) / raw) if full else ""))
    else:
        verdict_line = ("ndmem exact trace / heaptrack's file: n/a, no heaptrack (target <= "
                        "%.1fx)" % EXACT_TORCH_SIZE_TARGET)
    out.append("  trace of one %d-step run: %s" % (steps, "; ".join(size_line)))
    out.append("  " + verdict_line)
    losses = [l for n in names for l in res[n]["loss"]] + ([full["loss"]] if full else [])
    plain = set(res["glibc"]["loss"])
    if len(set(losses)) == 1:
        msg, ok = "final loss identical in all %d runs" % len(losses), True
    elif len(plain) > 1:
        msg, ok = ("final loss varies even without a tool (%d values): not comparable"
                   % len(plain)), True
    else:
        msg, ok = "final loss DIFFERS between configurations: %s" % sorted(set(losses)), False
    out.append("  " + msg)
    summary = ["exact torch (py_torch.py --steps %d, whole process incl. import torch), median "
               "wall s / peak RSS MiB: %s" % (steps, ", ".join(
                   "%s %.3f/%.1f" % (n, median(res[n]["wall"]), mib(median(res[n]["rss"])))
                   for n in names))]
    e = rat[("ndmem exact", "glibc")]
    summary.append("  ndmem exact / glibc, whole process: wall %.3fx (target <= %.2fx: %s), peak "
                   "RSS %.3fx (target <= %.2fx: %s)" % (e[0], EXACT_TORCH_WALL_TARGET,
                                              verdict(e[0], EXACT_TORCH_WALL_TARGET), e[1],
                                              EXACT_TORCH_RSS_TARGET,
                                              verdict(e[1], EXACT_TORCH_RSS_TARGET)))
    summary.append("  " + loop_line)
    summary.append("  " + ", ".join("%s / %s %.3fx/%.3fx" % (a, b, r[0], r[1])
                                    for (a, b), r in rat.items() if (a, b) != ("ndmem exact",
                                                                               "glibc"))
                   + " (wall/RSS)")
    summary.append("  trace: " + "; ".join(size_line))
    summary.append("  " + verdict_line)
    summary.append("  " + msg)
    return out, summary, ok


def bench_exact(args, build, shim, churn, ops, steps, reps):
    """The --exact section: churn and the numpy loop under glibc, ndmem (default settings), ndmem
    with every block tracked (NDMEM_TRACK_MIN=0) and heaptrack recording (--raw: no analysis)."""
    ht = None
    if args.heaptrack != "":
        ht = args.heaptrack or shutil.which("heaptrack")
        if args.heaptrack and not os.access(ht, os.X_OK):
            raise SetupError("heaptrack not found at %s" % ht)
    htver = heaptrack_version(ht) if ht else None
    configs = exact_configs(shim, ht)
    report, summary, ok = [], [], True
    if not args.no_churn:
        cc, ns, cpu = bench_exact_churn(build, churn, configs, ops, reps)
        lines, lines2 = report_exact_churn(cc, ns, cpu, ops, reps, htver)
        report += lines + [""]
        summary += lines2
    if not args.no_numpy:
        py, npver, why = find_numpy_python()
        if py is None:
            msg = "exact: numpy skipped: %s" % why
            report += [msg, ""]
            summary.append(msg)
        else:
            res = bench_exact_numpy(build, py, configs, steps, reps)
            st = exact_trace_stats(build, py, shim, steps)
            lines, lines2, ok = report_exact_numpy(res, [c.name for c in configs], py, npver,
                                                   steps, reps, st)
            report += lines + [""]
            summary += lines2
    if not args.no_torch:
        py, tver, why = find_torch_python()
        if py is None:
            msg = "exact: torch skipped: %s" % why
            report += [msg, ""]
            summary.append(msg)
        else:
            tsteps = args.torch_steps or EXACT_TORCH_STEPS
            treps = args.reps or (1 if args.quick else reps)
            res = bench_exact_torch(build, py, configs, tsteps, treps, ht, args.quick)
            lines, lines2, tok = report_exact_torch(res, [c.name for c in configs], py, tver,
                                                    tsteps, treps)
            ok = ok and tok
            report += lines + [""]
            summary += lines2
    if not ht:
        summary.append("  heaptrack not found: its rows are skipped")
    return report, summary, ok


# ------------------------------------------------------------------------------------ python

PY_TARGET = 1.05  # Python frames on / off (the default against NDMEM_PYTHON=0), training loop
TORCH_SCRIPT = REPO / "tests" / "runtime" / "py_torch.py"
TORCH_STEPS = 2000     # a loop of about 2.5 s on a 2-core VM (1 s more for the import)
QUICK_TORCH_STEPS = 200
PY_CONFIGS = [("python=0", {"NDMEM_PYTHON": "0"}), ("python=1", {})]
PY_UNKNOWN = "NDMEM_PYTHON is not a known setting"


def find_torch_python():
    """(interpreter, torch version, None) or (None, None, why not): what runs TORCH_SCRIPT; the
    candidates are find_numpy_python's, $NDMEM_TEST_PYTHON first."""
    return find_python_with("torch", TORCH_SCRIPT, explicit_only=False)


def script_once(py, shim, script, steps, extra_env, what, summary=False, env=None):
    """One run of a training script that prints `final loss` (stdout) and `time S s` (stderr)
    under the shim: (wall seconds, loop seconds, final loss line, stderr)."""
    if env is None:
        env = base_env()
        env.update({"LD_PRELOAD": str(shim), "NDMEM_SUMMARY": "1" if summary else "0"})
    env.update(extra_env)
    p, wall = run([py, str(script), "--steps", str(steps)], env, what, 900)
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not loss:
        raise SetupError("%s: missing 'time ... s' on stderr or 'final loss' on stdout" % what)
    return wall, float(m.group(1)), loss[-1], p.stderr


def python_probe(build, py, shim, script, name):
    """What this shim does with Python frames, from short runs: (warning line or None, state).
    With NDMEM_PYTHON=0 the shim must be loaded; whether it knows the setting is read from its
    stderr. A default run's trace read by ndmemreport gives the summary's python object."""
    what = "%s (python probe)" % name
    _, _, _, err = script_once(py, shim, script, 3, {"NDMEM_PYTHON": "0"}, what, summary=True)
    if not ndmem_lines(err):
        raise SetupError("%s: no 'ndmem[' line with NDMEM_SUMMARY=1: the shim is not loaded.\n"
                         "stderr was:\n%s" % (what, err.strip()))
    warn = None
    if PY_UNKNOWN in err:
        warn = ("python: warning: this libndmem.so does not know NDMEM_PYTHON (no Python "
                "frames): both configurations run the same shim, the ratios show the noise")
    env = base_env()
    env.update({"LD_PRELOAD": str(shim), "NDMEM_SUMMARY": "0",
                "NDMEM_OUTPUT": os.path.join(trace_dir(), "python-probe.%p.trace")})
    script_once(py, shim, script, 3, {}, what, env=env)
    traces = [f for f in os.listdir(trace_dir()) if f.startswith("python-probe.")]
    rep = build / "report" / "ndmemreport"
    state = ("%d traces of the probe run, want 1" % len(traces) if len(traces) != 1
             else "not read (%s not built)" % rep)
    for f in traces:
        path = os.path.join(trace_dir(), f)
        if os.access(rep, os.X_OK) and len(traces) == 1:
            p, _ = run([str(rep), "--format", "json", path], base_env(), "ndmemreport (%s)" % what,
                       600)
            s = json.loads(p.stdout).get("python")
            if not isinstance(s, dict):
                state = "the report has no python object (an ndmemreport without Python frames)"
            else:
                state = "state %s, Python %s, %s of %s stacks read with Python frames" % (
                    s.get("state"), s.get("version"), s.get("with_python"), s.get("stacks"))
        os.unlink(path)
    return warn, state


def bench_python_workload(py, shim, script, steps, reps, name):
    """script under ndmem with Python frames off and on, interleaved and rotated per repetition
    (after one warm-up run of each): {config: {"wall", "loop", "loss"}}."""
    for n, e in PY_CONFIGS:
        script_once(py, shim, script, 3, e, "%s (%s, warm-up)" % (name, n))
    return interleaved(PY_CONFIGS, reps,
                       lambda n, e: script_once(py, shim, script, steps, e,
                                                "%s (%s)" % (name, n))[:3],
                       "python: %s repetition %%d/%%d done" % name)


def report_python_workload(res, name, steps, reps):
    off, on = res["python=0"], res["python=1"]
    out = ["  %s (%d steps)" % (name, steps)]
    r = {}
    for key, label in (("loop", "training loop"), ("wall", "whole process (wall)")):
        r[key] = ratio(on[key], off[key])
        out.append("    %-22s%20s%20s%10s" % (
            label, "%.3f (+-%.0f%%)" % (median(off[key]), spread(off[key])),
            "%.3f (+-%.0f%%)" % (median(on[key]), spread(on[key])), "%.3fx" % r[key]))
    out.append("    per run (loop s, off|on): " + "  ".join(
        "%.3f|%.3f" % (a, b) for a, b in zip(off["loop"], on["loop"])))
    if any(spread(x[k]) > NOISY for x in (off, on) for k in ("loop", "wall")):
        out.append("    note: spread above +-%.0f%%: the machine was busy; rerun or raise --reps"
                   % NOISY)
    loff, lon = set(off["loss"]), set(on["loss"])
    ok = True
    if len(loff) == 1 and loff == lon:
        msg = "final loss identical in all %d runs, Python frames on and off" % (2 * reps)
    elif len(loff) > 1:
        msg = "final loss varies even with Python frames off (%d values): not comparable" % len(
            loff)
    else:
        msg = "final loss DIFFERS with Python frames on: off %s, on %s" % (sorted(loff),
                                                                           sorted(lon))
        ok = False
    out.append("    " + msg)
    return out, r, msg, ok


def bench_python(args, build, shim, steps, reps):
    """The --python section: what reading Python frames costs a training job. The numpy loop
    (examples/train_numpy.py) and a PyTorch CPU loop (tests/runtime/py_torch.py) under ndmem
    with NDMEM_PYTHON=0 and with the default (frames read for every tracked block)."""
    tsteps = args.torch_steps or (QUICK_TORCH_STEPS if args.quick else TORCH_STEPS)
    work = []
    if not args.no_numpy:
        py, ver, why = find_numpy_python()
        work.append(("numpy", py, "numpy %s" % ver, TRAIN, steps, why))
    py, ver, why = find_torch_python()
    work.append(("torch", py, "torch %s" % ver, TORCH_SCRIPT, tsteps, why))
    report = ["python: Python frames in allocation stacks, the default (on) against "
              "NDMEM_PYTHON=0 (off), under ndmem, %d repetitions; median seconds (+-half "
              "range), on / off = median of per-repetition ratios" % reps]
    report.append("    %-22s%20s%20s%10s" % ("", "NDMEM_PYTHON=0", "default", "on / off"))
    summary, ok, worst, probed, warn = [], True, [], False, None
    for name, py, ver, script, n, why in work:
        if py is None:
            report.append("  %s: skipped: %s" % (name, why))
            summary.append("python %s: skipped: %s" % (name, why))
            continue
        if not probed:
            warn, state = python_probe(build, py, shim, script, name)
            if warn:
                log(warn)
                report.insert(1, warn)
                summary.append(warn)
            report.insert(1, "  shim (a short default run of %s, its report): %s" % (name, state))
            summary.append("python: shim %s" % state)
            probed = True
        log("python: %s, %d steps x %d repetitions with %s (%s)" % (name, n, reps, py, ver))
        res = bench_python_workload(py, shim, script, n, reps, name)
        lines, r, msg, wok = report_python_workload(res, "%s, %s, %s" % (name, py, ver), n, reps)
        report += lines
        ok = ok and wok
        worst.append(r["loop"])
        summary.append("python %s (%d steps): on / off loop %.3fx, wall %.3fx (target <= %.2fx: "
                       "%s); %s" % (name, n, r["loop"], r["wall"], PY_TARGET,
                                    verdict(r["loop"], PY_TARGET), msg))
    if worst:
        report.append("  on / off (worst training loop): %.3fx   target <= %.2fx: %s%s"
                      % (max(worst), PY_TARGET, verdict(max(worst), PY_TARGET),
                         " (the same shim twice: noise, not a cost)" if warn else ""))
    return report + [""], summary, ok


# ------------------------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="Meson build directory (default: build)")
    ap.add_argument("--reps", type=int, help="repetitions (default 5, or %d with --quick)"
                    % QUICK_REPS)
    ap.add_argument("--quick", action="store_true", help="short smoke run: fewer ops, steps, reps")
    ap.add_argument("--ops", type=int, help="churn ops per thread (default %d, or %d with --quick)"
                    % (CHURN_OPS, QUICK_OPS))
    ap.add_argument("--steps", type=int, help="train_numpy.py steps (default %d, or %d with "
                    "--quick)" % (TRAIN_STEPS, QUICK_STEPS))
    ap.add_argument("--jemalloc", metavar="PATH", help="libjemalloc.so.2 to use ('' to skip)")
    ap.add_argument("--mimalloc", metavar="PATH", help="libmimalloc.so.2 to use ('' to skip)")
    ap.add_argument("--no-churn", action="store_true", help="skip the churn benchmark")
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy benchmark")
    ap.add_argument("--report", action="store_true", help="also benchmark ndmemreport on a "
                    "synthetic trace of --report-size bytes (written to --tmpdir, then deleted)")
    ap.add_argument("--report-size", type=int, help="trace bytes for --report (default %d, or %d "
                    "with --quick)" % (REPORT_SIZE, QUICK_REPORT_SIZE))
    ap.add_argument("--workspace", action="store_true", help="also benchmark workspaces: "
                    "tensor_loop under each allocator and ndmem with workspaces off/on/marked, "
                    "and churn and numpy with NDMEM_WORKSPACES=0 against 1")
    ap.add_argument("--limits", action="store_true", help="also benchmark the limit checks: "
                    "churn and numpy with NDMEM_MAX_BYTES and with NDMEM_MAX_PHYSICAL_BYTES + "
                    "NDMEM_WARN_AT set far above use, against ndmem without limits")
    ap.add_argument("--stress", action="store_true", help="also benchmark threads that come "
                    "and go: stress and larson under glibc, ndmem (workspaces on and off), "
                    "jemalloc, ndmem+jemalloc and mimalloc, checking ndmem's counts in every run")
    ap.add_argument("--exact", action="store_true", help="also benchmark exact mode: churn and "
                    "numpy under glibc, ndmem, ndmem with every block tracked (NDMEM_TRACK_MIN=0) "
                    "and heaptrack (record only)")
    ap.add_argument("--exact-only", action="store_true", help="run only the --exact section")
    ap.add_argument("--python", action="store_true", help="also benchmark Python frames: the "
                    "numpy loop and a PyTorch CPU loop under ndmem with NDMEM_PYTHON=0 against "
                    "the default (frames read)")
    ap.add_argument("--python-only", action="store_true", help="run only the --python section")
    ap.add_argument("--torch-steps", type=int, help="PyTorch loop steps for --python (default "
                    "%d, or %d with --quick) and for --exact (default %d)"
                    % (TORCH_STEPS, QUICK_TORCH_STEPS, EXACT_TORCH_STEPS))
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch run of --exact")
    ap.add_argument("--heaptrack", metavar="PATH", help="heaptrack to compare with under --exact "
                    "(default: heaptrack on PATH; '' skips it)")
    ap.add_argument("--ws-iters", type=int, help="tensor_loop iterations for --workspace "
                    "(default: tensor_loop's own, 12; %d with --quick)" % WS_ITERS_QUICK)
    ap.add_argument("--ws-warmup", type=int, help="tensor_loop iterations left out of its "
                    "per-iteration figures (default: tensor_loop's own, 5; without --ws-iters, "
                    "7 more are measured)")
    ap.add_argument("--tmpdir", default=tempfile.gettempdir(),
                    help="where --report writes its trace (default %(default)s)")
    args = ap.parse_args()
    if args.exact_only:
        args.exact = True
    if args.python_only:
        args.python = True
    only = args.exact_only or args.python_only  # the default churn and numpy sections are left out
    reps = args.reps or (QUICK_REPS if args.quick else 5)
    ops = args.ops or (QUICK_OPS if args.quick else CHURN_OPS)
    steps = args.steps or (QUICK_STEPS if args.quick else TRAIN_STEPS)
    if reps < 1 or ops < 1 or steps < 1 or (args.torch_steps is not None and args.torch_steps < 1):
        ap.error("--reps, --ops, --steps and --torch-steps must be positive")
    if args.ws_warmup is not None and args.ws_warmup < 0:
        ap.error("--ws-warmup must not be negative")
    if args.ws_iters is not None and args.ws_iters <= (5 if args.ws_warmup is None
                                                       else args.ws_warmup):
        ap.error("--ws-iters must be more than the warm-up iterations (--ws-warmup, default 5)")
    report_size = args.report_size or (QUICK_REPORT_SIZE if args.quick else REPORT_SIZE)
    if report_size < 1 << 20:
        ap.error("--report-size must be at least 1 MiB")

    build = Path(args.build).resolve()
    shim = build / "interpose" / "libndmem.so"
    churn = build / "bench" / "churn"
    if not shim.is_file():
        raise SetupError("shim not found: %s (build it: ninja -C %s)" % (shim, args.build))
    needs_churn = not args.no_churn and (not args.python_only or args.exact or args.workspace
                                         or args.limits)
    if needs_churn and not os.access(churn, os.X_OK):
        raise SetupError("churn not found: %s (configure with -Dbenchmarks=true, then ninja -C %s)"
                         % (churn, args.build))

    started = time.time()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "?"
    host = "%s %s, %s CPUs, %s, load %.2f at start" % (
        platform.system(), platform.release(), os.cpu_count(), libc, load)
    log("ndmem bench: %s" % host)

    report, summary = [], []
    churn_rat = None
    if not args.no_churn and not only:
        je = find_lib(args.jemalloc, "libjemalloc.so.2")
        mi = find_lib(args.mimalloc, "libmimalloc.so.2")
        configs = [Config("glibc", []), Config("ndmem", [str(shim)])]
        if je:
            configs += [Config("jemalloc", [je], check="jemalloc"),
                        Config("ndmem+jemalloc", [str(shim), je], check="jemalloc")]
        if mi:
            configs += [Config("mimalloc", [mi], check="mimalloc"),
                        Config("ndmem+mimalloc", [str(shim), mi], check="mimalloc")]
        configs.append(Config("ideal", [], ideal=True))
        ns = bench_churn(churn, configs, ops, reps)
        lines, churn_rat, pairs = report_churn(configs, ns, ops, reps)
        if not je:
            lines.append("  jemalloc: libjemalloc.so.2 not found, its rows are skipped")
        if not mi:
            lines.append("  mimalloc: libmimalloc.so.2 not found, its rows are skipped")
        report += lines + [""]
        med = lambda n: "/".join("%.1f" % median(ns[(n, t)]) for t in THREADS)
        summary.append("churn (%d ops/thread, median ns/op 1T/2T): %s" % (
            ops, ", ".join("%s %s" % (c.name, med(c.name)) for c in configs)))
        for a, b in pairs:
            rs = "/".join("%.2fx" % churn_rat[(a, b, t)] for t in THREADS)
            tail = ""
            if (a, b) == ("ndmem", "glibc"):
                worst = max(churn_rat[(a, b, t)] for t in THREADS)
                tail = " (target <= %.1fx: %s)" % (CHURN_TARGET, verdict(worst, CHURN_TARGET))
            summary.append("  %s / %s 1T/2T: %s%s" % (a, b, rs, tail))
        summary.append("  vs ideal 1T/2T: " + ", ".join(
            "%s %s" % (c.name, "/".join("%.1fx" % ratio(ns[(c.name, t)], ns[("ideal", t)])
                                        for t in THREADS))
            for c in configs if c.name != "ideal"))

    loss_ok = True
    if not args.no_numpy and not only:
        py, npver, why = find_numpy_python()
        if py is None:
            msg = "numpy: skipped: %s" % why
            report += [msg, ""]
            summary.append(msg)
        else:
            res = bench_numpy(py, shim, steps, reps)
            lines, r, loss_msg, loss_ok = report_numpy(res, py, npver, steps, reps)
            report += lines + [""]
            summary.append("numpy train_numpy.py (%d steps, %s, numpy %s): ndmem/plain wall "
                           "%.3fx, loop %.3fx (target <= %.2fx: %s); %s" % (
                               steps, py, npver, r["wall"], r["loop"], TRAIN_TARGET,
                               verdict(r["wall"], TRAIN_TARGET), loss_msg))

    ws_ok = True
    if args.workspace:
        lines, lines2, ws_ok = bench_workspace(args, build, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    limits_ok = True
    if args.limits:
        lines, lines2, limits_ok = bench_limits(args, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    if args.stress:
        lines, lines2 = bench_stress(args, build, reps, shim)
        report += lines
        summary += lines2

    exact_ok = True
    if args.exact:
        lines, lines2, exact_ok = bench_exact(args, build, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    python_ok = True
    if args.python:
        lines, lines2, python_ok = bench_python(args, build, shim, steps, reps)
        report += lines
        summary += lines2

    if args.report:
        res = bench_report(build, report_size, reps, args.tmpdir)
        lines, line = report_report(res, reps)
        report += lines + [""]
        summary.append(line)

    print()
    print("\n".join(report).rstrip())
    print()
    print("---- ndmem bench summary ----")
    print("command: %s   (in %s; interpreter %s, Python %s)" % (
        command_line(), os.getcwd(), sys.executable, platform.python_version()))
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("host: %s, %.2f at end; %s UTC, %.0f s; %d repetitions%s" % (
        host, load_end, time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        time.time() - started, reps, ", --quick" if args.quick else ""))
    print("\n".join(summary))
    print("-----------------------------")
    if not loss_ok:
        raise SetupError("train_numpy.py computes a different final loss under ndmem")
    if not ws_ok:
        raise SetupError("train_numpy.py computes a different final loss with NDMEM_WORKSPACES=1")
    if not limits_ok:
        raise SetupError("train_numpy.py computes a different final loss with limits set")
    if not exact_ok:
        raise SetupError("train_numpy.py computes a different final loss in exact mode or under "
                         "heaptrack")
    if not python_ok:
        raise SetupError("a training loop computes a different final loss with Python frames on")


if __name__ == "__main__":
    try:
        main()
    except SetupError as e:
        print("run.py: error: %s" % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
