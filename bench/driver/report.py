# SPDX-License-Identifier: MIT
"""--report: ndmemreport reading a large synthetic trace (bench/gen_trace.c) in every format,
and diff and merge of two such traces; seconds per GB and each run's peak RSS."""
import json
import os
import subprocess
import tempfile
import time

from .common import SetupError, base_env, log, median, run, spread, verdict

REPORT_SIZE = 1 << 30    # bytes of synthetic trace for --report (and a quarter of it)
REPORT_FORMATS = ["text", "json", "html", "collapsed"]  # every --format, each timed
REPORT_COMMANDS = ["diff", "merge"]  # and the commands that read two traces, on two large ones
REPORT_RSS_MIB = 500     # the memory target for any format on a 1 GB trace
QUICK_REPORT_SIZE = 1 << 28
REPORT_TARGET = 10.0     # ndmemreport seconds per GB (10^9 bytes) of trace


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

