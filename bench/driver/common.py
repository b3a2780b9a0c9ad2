# SPDX-License-Identifier: MIT
"""What every benchmark uses: the error that stops the driver, running one program to
completion in a clean environment, finding an allocator to preload, and the statistics
(medians, spreads, paired ratios, verdicts) the reports are made of."""
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

QUICK_REPS = 2
THREADS = (1, 2)
NOISY = 10.0             # +-% spread above which the report warns that the machine was busy

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
            "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib"]

# The variable through which the RSS helper is handed LD_PRELOAD (see rss.py); run() names it
# in its errors when LD_PRELOAD itself is not set.
RSS_PRELOAD = "BENCH_RSS_PRELOAD"


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


def find_allocators(args):
    """(jemalloc, mimalloc): the paths to preload, None where skipped or not found."""
    return (find_lib(args.jemalloc, "libjemalloc.so.2"),
            find_lib(args.mimalloc, "libmimalloc.so.2"))


def skipped_allocators(je, mi, je_rows="rows are", mi_rows="rows are"):
    """The lines that say which allocator was not found, so that its rows are missing."""
    out = []
    if not je:
        out.append("  jemalloc: libjemalloc.so.2 not found, its %s skipped" % je_rows)
    if not mi:
        out.append("  mimalloc: libmimalloc.so.2 not found, its %s skipped" % mi_rows)
    return out


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


def mib(nbytes):
    return nbytes / 1048576.0

