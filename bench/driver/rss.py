# SPDX-License-Identifier: MIT
"""Peak RSS of one program, taken by a small helper that forks and execs it (see rss_run)."""
import os
import re
import shutil
import sys

from .common import RSS_PRELOAD, SetupError, base_env, run, trace_dir

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
