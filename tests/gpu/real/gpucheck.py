# SPDX-License-Identifier: MIT
"""gpucheck: what the GPU tier's drivers (t_*.py beside this file) share.

Deciding whether a GPU is usable (else exit 77, Meson's skip), running a program plain and with
the shim preloaded explicitly, reading ndmemreport's JSON, and collecting failures so that one
run names every wrong number. Standard library only: the GPU machine runs these from a folder
made by tools/device-bundle, with whatever python3 it has.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# A process under test starts from the caller's environment less anything that would preload,
# configure or inject into it; each run then adds exactly what it means to.
_STRIP = ("LD_PRELOAD", "CUDA_INJECTION64_PATH")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in _STRIP and not k.startswith("NDMEM_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def skip(msg):
    print("SKIP: " + msg)
    sys.stdout.flush()
    sys.exit(SKIP)


_PROBE = r"""
import ctypes, sys
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("libcuda.so.1 does not load: %s" % e); sys.exit(1)
r = cu.cuInit(0)
n = ctypes.c_int(0)
if r == 0:
    r = cu.cuDeviceGetCount(ctypes.byref(n))
if r != 0 or n.value < 1:
    print("cuInit/cuDeviceGetCount: CUresult %d, %d devices" % (r, n.value)); sys.exit(1)
print("%d CUDA devices" % n.value)
"""


def gpu_usable():
    """(True, what) when a GPU can be used: `nvidia-smi -L` lists one, or /dev/nvidiactl exists
    and cuInit succeeds (probed in a child, so this process never loads the driver). A driver
    test double on LD_LIBRARY_PATH never counts: it has no /dev/nvidiactl and no nvidia-smi."""
    why = []
    try:
        r = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60, env=clean_env())
        if r.returncode == 0 and re.search(r"^GPU \d+", r.stdout, re.M):
            return True, r.stdout.strip().splitlines()[0]
        why.append("nvidia-smi -L: exit %d" % r.returncode)
    except (OSError, subprocess.TimeoutExpired) as e:
        why.append("nvidia-smi: %s" % e.__class__.__name__)
    if not os.path.exists("/dev/nvidiactl"):
        why.append("no /dev/nvidiactl")
        return False, "; ".join(why)
    r = subprocess.run([sys.executable, "-c", _PROBE], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, env=clean_env(),
                       timeout=120)
    if r.returncode == 0:
        return True, r.stdout.strip()
    why.append(r.stdout.strip())
    return False, "; ".join(why)


def require_gpu():
    ok, what = gpu_usable()
    if not ok:
        skip("no usable GPU (%s)" % what)
    print("GPU: %s" % what)


def require_built(path, what):
    if not path or path == "-":
        skip("%s was not built (nvcc was not found when the build was configured)" % what)
    if not os.access(path, os.X_OK):
        skip("%s: %s is missing" % (what, path))


def missing_libs(prog):
    """The libraries ldd cannot resolve for prog (cuBLAS on a machine without the toolkit)."""
    try:
        r = subprocess.run(["ldd", prog], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.split()[0] for ln in r.stdout.splitlines() if "not found" in ln]


def run(cmd, env, timeout=600, cwd=None):
    print("+ " + " ".join(cmd))
    sys.stdout.flush()
    try:
        return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        print("timed out after %d s: %s" % (timeout, " ".join(cmd)))
        print(e.stdout or "")
        print(e.stderr or "")
        sys.exit(1)


def run_shim(cmd, shim, tmp, timeout=600, **extra):
    """Runs cmd with the shim preloaded and its trace in tmp; returns (result, trace path)."""
    env = clean_env(LD_PRELOAD=shim, NDMEM_OUTPUT=os.path.join(tmp, "ndmem.%p.trace"), **extra)
    print("+ " + " ".join(["%s=%s" % kv for kv in sorted(extra.items())] + ["LD_PRELOAD=" + shim]
                          + cmd))
    sys.stdout.flush()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        print("timed out after %d s under the shim:\n%s\n%s" % (timeout, out, err))
        sys.exit(1)
    res = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    return res, os.path.join(tmp, "ndmem.%d.trace" % p.pid)


def must_succeed(res, what):
    if res.returncode != 0:
        print("FAIL: %s exited %d" % (what, res.returncode))
        print("--- stdout\n" + res.stdout + "--- stderr\n" + res.stderr)
        sys.exit(1)


def report(ndmemreport, trace, *opts):
    """ndmemreport's JSON for trace: every site, leak and frame (--top 0 --frames 0)."""
    if not os.path.exists(trace):
        print("FAIL: no trace at %s" % trace)
        sys.exit(1)
    r = subprocess.run([ndmemreport, "--format", "json", "--top", "0", "--frames", "0"]
                       + list(opts) + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=600)
    if r.returncode != 0:
        print("FAIL: ndmemreport exited %d on %s\n%s" % (r.returncode, trace, r.stderr))
        sys.exit(1)
    return json.loads(r.stdout)


def device(doc, i=0):
    """The report's entry for device i: {"device", "live_bytes", "peak_bytes", "allocs", ...}."""
    devs = doc.get("devices")
    if devs is None:
        print("FAIL: the report has no \"devices\" array (the trace holds no device accounting)")
        sys.exit(1)
    for d in devs:
        if d.get("device") == i:
            return d
    print("FAIL: the report's \"devices\" has no device %d: %s" % (i, json.dumps(devs)))
    sys.exit(1)


def kind(doc, name):
    for k in doc.get("counters", {}).get("kinds", []):
        if k.get("kind") == name:
            return k
    return None


def marked_lines(source, tag):
    """{line: text} of the lines of source whose comment carries `// TAG:`."""
    out = {}
    with open(source) as f:
        for n, text in enumerate(f, 1):
            if re.search(r"//\s*%s:" % tag, text):
                out[n] = text.strip()
    return out


def source_lines(group, source):
    """The lines, innermost first, of group's frames that lie in source (matched by name)."""
    base = os.path.basename(source)
    return [fr["line"] for fr in group.get("frames", [])
            if fr.get("file") and os.path.basename(fr["file"]) == base and fr.get("line")]


def innermost_line(group, source):
    lines = source_lines(group, source)
    return lines[0] if lines else None


def parse_fields(line):
    """'name a 1 b 2' -> {'a': 1, 'b': 2}: the key-value lines the test programs print."""
    words = line.split()
    out = {}
    for k, v in zip(words[1::2], words[2::2]):
        try:
            out[k] = int(v)
        except ValueError:
            out[k] = v
    return out


class Checks:
    """Collects failures; done() prints them and exits 1, or prints PASS."""

    def __init__(self):
        self.failed = []
        self.dirs = []  # removed on success, kept (and named) on failure

    def tmpdir(self, prefix):
        d = tempfile.mkdtemp(prefix=prefix)
        self.dirs.append(d)
        return d

    def eq(self, what, got, want):
        ok = got == want
        print("%s %s: %s (want %s)" % ("ok  " if ok else "FAIL", what, got, want))
        if not ok:
            self.failed.append(what)
        return ok

    def true(self, what, cond, detail=""):
        print("%s %s%s" % ("ok  " if cond else "FAIL", what,
                           (": " + detail) if detail and not cond else ""))
        if not cond:
            self.failed.append(what)
        return cond

    def done(self):
        if self.failed:
            print("FAILED: %d check(s): %s" % (len(self.failed), "; ".join(self.failed)))
            if self.dirs:
                print("traces kept in: " + " ".join(self.dirs))
            sys.exit(1)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        print("PASS")
        sys.exit(0)
