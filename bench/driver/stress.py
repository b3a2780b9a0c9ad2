# SPDX-License-Identifier: MIT
"""--stress: threads that come and go. bench/stress.c and bench/larson.c (blocks freed by other
threads, some large enough for the workspace path) under glibc, ndmem with workspaces on and off,
jemalloc, ndmem+jemalloc and mimalloc, every run under ndmem checking its counts; time and peak
RSS of each."""
import os
import re
import time

from .common import (NOISY, SetupError, find_allocators, log, median, mib, ratio, run,
                     skipped_allocators, spread, verdict)
from .compare import OLD, compare_line
from .configs import EnvConfig, allocator_configs, shim_lines, verify_allocator
from .rss import rss_floor, rss_run

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


def stress_configs(shim, je, mi, old=None):
    configs = [EnvConfig("glibc", []),
               EnvConfig("ndmem", [str(shim)]),
               EnvConfig("ndmem ws=0", [str(shim)], {"NDMEM_WORKSPACES": "0"})]
    if old:
        configs.append(EnvConfig(OLD, [str(old)]))
    configs += allocator_configs(EnvConfig, shim, je, "jemalloc")
    return configs + allocator_configs(EnvConfig, shim, mi, "mimalloc", behind=False)


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
        env = cfg.check_env()
        what = "%s/%s (preload check)" % (prog, cfg.name)
        p, _ = run([str(build / "bench" / prog)] + args + ["--check"], env, what, 300)
        parse_stress(p, cfg, what)
        if cfg.has_ndmem:
            shim_lines(what, env, p.stderr, "the shim is not loaded")
        verify_allocator(cfg, p, what)


def bench_stress(args, build, reps, shim, old=None):
    """The --stress section: stress and larson under every configuration, interleaved and
    rotated per repetition, every run with --check; medians and paired ratios."""
    for prog in STRESS_PROBE:
        if not os.access(build / "bench" / prog, os.X_OK):
            raise SetupError("%s not found: %s (ninja -C %s)" % (prog, build / "bench" / prog,
                                                                 args.build))
    je, mi = find_allocators(args)
    configs = stress_configs(shim, je, mi, old)
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
    return report_stress(configs, workloads, secs, rss, floor, reps, checked, je, mi, old)


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


def report_stress(configs, workloads, secs, rss, floor, reps, checked, je, mi, old=None):
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
    cmp = None
    if old:
        cmp = compare_line(old, "", wl, [{n: secs[(n, w)] for n in names} for w in wl])
        out.append(cmp)
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
    out += skipped_allocators(je, mi, mi_rows="row is")
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
    if cmp:
        summary.append(cmp)
    summary.append("  --check exact in all %d runs under ndmem; checksums identical" % checked)
    return out + [""], summary

