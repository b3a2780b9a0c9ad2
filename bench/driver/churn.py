# SPDX-License-Identifier: MIT
"""churn, the worst case: an allocation-bound loop (bench/churn.c) on 1 and 2 threads under
glibc, ndmem, jemalloc and mimalloc alone and behind ndmem, and no allocator at all (ideal)."""
import re
import time

from .common import (NOISY, THREADS, SetupError, find_allocators, log, median, paired, ratio,
                     run, skipped_allocators, spread, verdict)
from .compare import OLD, compare_line
from .configs import Config, allocator_configs, shim_lines, verify_allocator

CHURN_OPS = 10_000_000   # per thread; about 0.9 s with glibc on a 2-core Debian 12 VM
QUICK_OPS = 500_000
CHURN_TARGET = 1.5       # ndmem / glibc, default settings


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
    env = cfg.check_env()
    what = "churn/%s (preload check)" % cfg.name
    p, _ = run(churn_cmd(churn, cfg, 1, ops), env, what, 120)
    if cfg.has_ndmem:
        lines = shim_lines(what, env, p.stderr)
        m = re.search(r"heap:.*?(\d+) allocated", lines[0])
        if not m or int(m.group(1)) < ops:
            raise SetupError("%s: the shim loaded but did not see churn's %d mallocs:\n%s"
                             % (what, ops, "\n".join(lines)))
    verify_allocator(cfg, p, what)


def children_cpu():
    """User + system seconds of this process's children that ended and were waited for (a
    wrapper's own children included: heaptrack's compressor)."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def churn_reps(churn, configs, ops, reps, label, timeout, after=None):
    """churn under every configuration and thread count, interleaved in an order that rotates
    per repetition; after(cfg, what), if given, runs after each. Returns churn's own ns/op (wall,
    per thread) and the CPU time of the whole run per op (all threads and processes) of each
    (name, threads); every configuration must give the same checksum."""
    ns = {(c.name, t): [] for c in configs for t in THREADS}
    cpu = {(c.name, t): [] for c in configs for t in THREADS}
    sums = {t: {} for t in THREADS}
    jobs = [(c, t) for t in THREADS for c in configs]
    for rep in range(reps):
        k = rep % len(jobs)  # rotate the order: no configuration always runs first or last
        t0 = time.perf_counter()
        for cfg, t in jobs[k:] + jobs[:k]:
            what = "churn/%s --threads %d" % (cfg.name, t)
            c0 = children_cpu()
            p, _ = run(churn_cmd(churn, cfg, t, ops), cfg.env(), what, timeout)
            cpu[(cfg.name, t)].append((children_cpu() - c0) * 1e9 / (ops * t))
            v, s = parse_churn(p.stdout, what)
            ns[(cfg.name, t)].append(v)
            sums[t][cfg.name] = s
            if after:
                after(cfg, what)
        log("%s repetition %d/%d done (%.1f s)" % (label, rep + 1, reps,
                                                   time.perf_counter() - t0))
    for t in THREADS:  # every configuration did the same ops on the same sizes
        if len(set(sums[t].values())) != 1:
            raise SetupError("churn --threads %d: checksums differ between configurations: %r"
                             % (t, sums[t]))
    return ns, cpu


def bench_churn(churn, configs, ops, reps):
    for cfg in configs:
        verify_churn_config(churn, cfg)
    log("churn: preloads verified (%s)" % ", ".join(c.name for c in configs))
    for cfg in configs:  # warm-up: page cache, CPU frequency
        for t in THREADS:
            run(churn_cmd(churn, cfg, t, max(ops // 10, 1000)), cfg.env(), "churn warm-up", 300)
    return churn_reps(churn, configs, ops, reps, "churn:", 600)[0]


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


def churn_section(args, shim, old, churn, ops, reps):
    """The default churn section: glibc, ndmem, jemalloc and mimalloc alone and behind ndmem,
    ideal, and with --compare the old build's shim; (report lines, summary lines)."""
    je, mi = find_allocators(args)
    configs = [Config("glibc", []), Config("ndmem", [str(shim)])]
    if old:
        configs.append(Config(OLD, [str(old)]))
    configs += allocator_configs(Config, shim, je, "jemalloc")
    configs += allocator_configs(Config, shim, mi, "mimalloc")
    configs.append(Config("ideal", [], ideal=True))
    ns = bench_churn(churn, configs, ops, reps)
    lines, churn_rat, pairs = report_churn(configs, ns, ops, reps)
    summary = []
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
    if old:
        line = compare_line(old, "churn", ["%dT" % t for t in THREADS],
                            [{c.name: ns[(c.name, t)] for c in configs if c.name != "ideal"}
                             for t in THREADS])
        lines.append(line)
        summary.append(line)
    return lines + skipped_allocators(je, mi) + [""], summary
