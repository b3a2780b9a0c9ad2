#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_metrics: NDMEM_METRICS writes a valid Prometheus text file while the program runs and at its
# exit. The file is read at each of t_metrics.c's phases and parsed strictly (a parser here, to
# the exposition format's rules; prometheus_client's too where it is installed): exact heap
# deltas, no temporary file left, nothing in the program's working directory, and a bad pattern
# costs one stderr line while the job runs on.
# usage: t_metrics.py LIBNDMEM T_METRICS_EXE
import os
import re
import subprocess
import sys
import tempfile
import time

LIB, EXE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
VALUE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|Inf|NaN)\Z")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def parse(text):
    """Strict text-format parser: {(name, frozenset(labels)): value}, {name: type}."""
    if not text.endswith("\n"):
        raise ValueError("file does not end with a newline")
    types, helps, samples, seen_sample = {}, {}, {}, set()
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d %r" % (n, line)
        if line.startswith("#"):
            m = re.match(r"# (HELP|TYPE) (\S+) (.*)\Z", line)
            if not m:
                raise ValueError(where + ": a comment other than HELP or TYPE")
            kind, name, rest = m.groups()
            if not NAME.match(name):
                raise ValueError(where + ": bad metric name")
            if name in seen_sample:
                raise ValueError(where + ": HELP/TYPE after the metric's samples")
            table = helps if kind == "HELP" else types
            if name in table:
                raise ValueError(where + ": second " + kind)
            if kind == "TYPE" and rest not in ("gauge", "counter"):
                raise ValueError(where + ": type " + rest)
            if kind == "HELP" and (not rest or re.search(r"\\[^\\n]", rest)):
                raise ValueError(where + ": empty HELP or a bad escape")
            table[name] = rest
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)\Z", line)
        if not m:
            raise ValueError(where + ": not a sample")
        name, body, value = m.groups()
        if not VALUE.match(value):
            raise ValueError(where + ": bad value")
        if name not in helps or name not in types:
            raise ValueError(where + ": sample before its HELP and TYPE")
        labels, pos = {}, 0
        body = body or ""
        while pos < len(body):
            lm = re.compile(r'([^=]+)="((?:[^"\\\n]|\\[\\"n])*)"(,|\Z)').match(body, pos)
            if not lm:
                raise ValueError(where + ": bad label list")
            key, raw = lm.group(1), lm.group(2)
            if not LABEL.match(key) or key.startswith("__"):
                raise ValueError(where + ": bad label name " + key)
            if key in labels:
                raise ValueError(where + ": label twice")
            labels[key] = re.sub(r"\\(.)", lambda e: {"n": "\n"}.get(e.group(1), e.group(1)), raw)
            pos = lm.end()
        series = (name, frozenset(labels.items()))
        if series in samples:
            raise ValueError(where + ": duplicate series")
        if types[name] == "counter" and not name.endswith("_total"):
            raise ValueError(where + ": a counter not named *_total")
        if types[name] == "counter" and float(value) < 0:
            raise ValueError(where + ": negative counter")
        seen_sample.add(name)
        samples[series] = float(value)
    for name in set(helps) | set(types):
        if name not in seen_sample:
            raise ValueError(name + ": HELP/TYPE without samples")
    return samples, types


def client_parse(text):
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return
    n = sum(len(f.samples) for f in text_string_to_metric_families(text))
    if n != text.count("\n") - 2 * text.count("# HELP "):
        fail("prometheus_client read %d samples" % n)


def value(samples, name, **labels):
    for (n, ls), v in samples.items():
        if n == name and all(dict(ls).get(k) == v2 for k, v2 in labels.items()):
            return v
    raise KeyError("%s %s" % (name, labels))


def read(path):
    with open(path) as f:
        text = f.read()
    samples, types = parse(text)
    client_parse(text)
    return samples, types


def poll(path, until, what, timeout=10.0):
    """Reads the file until `until(samples)` holds (a flush after the phase), or fails; returns
    that file's (samples, types)."""
    end, last = time.monotonic() + timeout, None
    while time.monotonic() < end:
        if os.path.exists(path):
            last = read(path)
            if until(last[0]):
                return last
        time.sleep(0.02)
    raise AssertionError("%s: not seen in %gs (last: %r)" % (what, timeout, last and last[0]))


TRACES = tempfile.mkdtemp(prefix="ndmem-metrics-traces-")


def env_for(pattern):
    # Traces to a folder of this test's own: a shared one may hold an older trace of a reused pid.
    env = dict(os.environ)
    env.update(LD_PRELOAD=LIB, NDMEM_METRICS=pattern, NDMEM_FLUSH_MS="50", NDMEM_SUMMARY="0",
               NDMEM_OUTPUT=os.path.join(TRACES, "ndmem.%p.trace"))
    return env


def main():
    top = tempfile.mkdtemp(prefix="ndmem-metrics-")
    out, cwd = os.path.join(top, "out"), os.path.join(top, "cwd")
    os.mkdir(out)
    os.mkdir(cwd)
    pattern = os.path.join(out, "m.%p.prom")
    p = subprocess.Popen([EXE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=cwd, env=env_for(pattern), text=True)
    path = os.path.join(out, "m.%d.prom" % p.pid)
    pid = str(p.pid)
    heap = dict(kind="heap", pid=pid)

    assert p.stdout.readline() == "0\n"
    s0, types = poll(path, lambda s: True, "the first file")
    expect = {"ndmem_info": "gauge", "ndmem_live_bytes": "gauge", "ndmem_peak_bytes": "gauge",
              "ndmem_allocations_total": "counter", "ndmem_frees_total": "counter",
              "ndmem_resident_anon_bytes": "gauge", "ndmem_allocator_free_bytes": "gauge",
              "ndmem_allocator_system_bytes": "gauge", "ndmem_workspace_hits_total": "counter",
              "ndmem_workspace_spills_total": "counter",
              "ndmem_workspace_spill_bytes_total": "counter",
              "ndmem_workspace_arena_bytes": "gauge", "ndmem_limit_breaches_total": "counter",
              "ndmem_growth_sites": "gauge"}
    if types != expect:
        fail("metric families %r" % types)
    if value(s0, "ndmem_info", pid=pid) != 1 or not dict(
            next(ls for (n, ls) in s0 if n == "ndmem_info")).get("version"):
        fail("ndmem_info")
    for k in ("heap", "mmap", "pinned", "managed"):
        value(s0, "ndmem_live_bytes", kind=k, pid=pid)
    if any(dict(ls).get("kind", "").startswith("device") for (n, ls) in s0):
        fail("a device series without a device")
    for lim in ("max_bytes", "max_physical_bytes"):
        if value(s0, "ndmem_limit_breaches_total", limit=lim, pid=pid) != 0:
            fail("breaches of " + lim)
    if value(s0, "ndmem_resident_anon_bytes", pid=pid) <= 0:
        fail("resident_anon_bytes")
    # glibc's own account (the first flush always reads it): free bytes within what it holds
    free = value(s0, "ndmem_allocator_free_bytes", pid=pid, allocator="glibc")
    held = value(s0, "ndmem_allocator_system_bytes", pid=pid, allocator="glibc")
    if not 0 <= free <= held or held <= 0:
        fail("allocator free %r of %r" % (free, held))
    if any(dict(ls).get("pid") != pid for (n, ls) in s0):
        fail("a series without the pid label")
    # The baseline: the program is blocked in read(2); wait for a flush that saw it there.
    time.sleep(0.2)
    s0 = read(path)[0]
    a0, f0 = value(s0, "ndmem_allocations_total", **heap), value(s0, "ndmem_frees_total", **heap)
    live0 = value(s0, "ndmem_live_bytes", **heap)

    p.stdin.write("\n")
    p.stdin.flush()
    line = p.stdout.readline().split()
    assert line[0] == "1", line
    n, usable = int(line[1]), int(line[2])
    s1, _ = poll(path, lambda s: value(s, "ndmem_allocations_total", **heap) >= a0 + n,
                 "phase 1")
    if value(s1, "ndmem_allocations_total", **heap) != a0 + n:
        fail("allocations delta %g, not %d" % (value(s1, "ndmem_allocations_total", **heap) - a0, n))
    if value(s1, "ndmem_live_bytes", **heap) != live0 + usable:
        fail("live heap %g, not %g + %d" % (value(s1, "ndmem_live_bytes", **heap), live0, usable))
    if value(s1, "ndmem_peak_bytes", **heap) < live0 + usable:
        fail("peak below live")

    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.readline() == "2\n"
    s2, _ = poll(path, lambda s: value(s, "ndmem_frees_total", **heap) >= f0 + n, "phase 2")
    if value(s2, "ndmem_frees_total", **heap) != f0 + n:
        fail("frees delta")
    if value(s2, "ndmem_live_bytes", **heap) != live0:
        fail("live heap after freeing everything %g, not %g" %
             (value(s2, "ndmem_live_bytes", **heap), live0))

    p.stdin.write("\n")
    p.stdin.flush()
    _, err = p.communicate(timeout=30)
    if p.returncode != 0 or err:
        fail("exit %d, stderr %r" % (p.returncode, err))
    s3 = read(path)[0]  # the final flush's file
    if value(s3, "ndmem_frees_total", **heap) < f0 + n:
        fail("final file older than the program's last phase")
    left = sorted(os.listdir(out))
    if left != ["m.%s.prom" % pid]:
        fail("files beside the metrics: %r" % left)
    if os.listdir(cwd):
        fail("the program's working directory got %r" % os.listdir(cwd))

    # A bad pattern: one line naming the variable, no file, the job runs to its end.
    bad = os.path.join(out, "b.%x.prom")
    r = subprocess.run([EXE], input="\n\n\n", capture_output=True, cwd=cwd, env=env_for(bad),
                       text=True, timeout=30)
    lines = r.stderr.splitlines()
    if r.returncode != 0 or r.stdout.split("\n")[0] != "0" or len(lines) != 1 or \
            "NDMEM_METRICS" not in lines[0]:
        fail("bad pattern: exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout, r.stderr))
    if sorted(os.listdir(out)) != left or os.listdir(cwd):
        fail("bad pattern left files: %r %r" % (os.listdir(out), os.listdir(cwd)))

    # fork: with %p the child writes its own file; without it only the parent writes one.
    for pat, files in (("f.%p.prom", 2), ("g.prom", 1)):
        r = subprocess.run([EXE, "fork"], capture_output=True, cwd=cwd,
                           env=env_for(os.path.join(out, pat)), text=True, timeout=30)
        got = sorted(f for f in os.listdir(out) if f[0] == pat[0])
        if r.returncode != 0 or r.stderr or len(got) != files:
            fail("fork %s: exit %d, stderr %r, files %r" % (pat, r.returncode, r.stderr, got))
        pids = set()
        for f in got:
            pids.add(dict(next(ls for (n, ls) in read(os.path.join(out, f))[0]
                               if n == "ndmem_info"))["pid"])
        if len(pids) != files:
            fail("fork %s: pids %r" % (pat, pids))
    if any(".tmp." in f for f in os.listdir(out)):
        fail("temporary files left: %r" % os.listdir(out))

    # An absolute pattern is used as given beside a relative trace path (the trace in the
    # working directory, the metrics file where it was asked for); a relative one goes beside the
    # trace.
    rel = os.path.join(top, "rel")
    os.mkdir(rel)
    for pat, where in ((os.path.join(out, "a.%p.prom"), out), ("r.%p.prom", rel)):
        env = env_for(pat)
        env["NDMEM_OUTPUT"] = "t.%p.trace"
        r = subprocess.run([EXE], input="\n\n\n", capture_output=True, cwd=rel, env=env,
                           text=True, timeout=30)
        name = os.path.basename(pat)[0] + ".%s.prom"
        got = sorted(f for f in os.listdir(where) if f.endswith(".prom"))
        pids = [f.split(".")[1] for f in got if f[0] == name[0]]
        if r.returncode != 0 or r.stderr or len(pids) != 1 or \
                not os.path.exists(os.path.join(rel, "t.%s.trace" % pids[0])):
            fail("pattern %s with a relative trace: exit %d, stderr %r, %r in %s, %r in the "
                 "working directory" % (pat, r.returncode, r.stderr, got, where, os.listdir(rel)))
        else:
            value(read(os.path.join(where, name % pids[0]))[0], "ndmem_info", pid=pids[0])

    # The parser itself refuses what the format forbids.
    for broken in ['x 1', '# TYPE x_total counter\n# HELP x_total h\nx_total{a="1",a="2"} 1\n',
                   '# HELP x h\n# TYPE x counter\nx 1\n', '# HELP x h\n# TYPE x gauge\nx{0a="1"} 1\n',
                   '# HELP x h\n# TYPE x gauge\nx 1\nx 2\n', '# HELP x h\n# TYPE x gauge\nx{a="\\q"} 1\n']:
        try:
            parse(broken if broken.endswith("\n") else broken + "\n")
            fail("the parser accepted %r" % broken)
        except ValueError:
            pass

    import shutil
    shutil.rmtree(top)
    shutil.rmtree(TRACES, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
