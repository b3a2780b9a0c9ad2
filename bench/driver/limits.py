# SPDX-License-Identifier: MIT
"""--limits: what the limit checks cost. churn and the numpy loop under ndmem with no limit, with
NDMEM_MAX_BYTES and with NDMEM_MAX_PHYSICAL_BYTES plus NDMEM_WARN_AT, all far above use."""
from .churn import bench_churn
from .common import THREADS, median, ratio, spread, verdict
from .configs import Config, EnvConfig
from .numpy_loop import bench_numpy_envs
from .scripts import find_numpy_python, skip

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
            skip(report, summary, "limits: numpy skipped: %s" % why)
            return report, summary, ok
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

