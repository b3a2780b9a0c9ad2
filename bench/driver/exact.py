# SPDX-License-Identifier: MIT
"""--exact: exact mode (NDMEM_TRACK_MIN=0, every block tracked with its stack) against glibc,
the default settings and heaptrack --raw, on churn and the numpy loop; the PyTorch run is in
exact_torch.py. Each run under exact mode or heaptrack is checked to have recorded."""
import json
import os

from .churn import churn_reps, churn_cmd, verify_churn_config
from .common import (NOISY, THREADS, SetupError, base_env, log, median, ndmem_lines, paired, ratio,
                     run, spread, trace_dir, verdict)
from .configs import Config
from .exact_torch import EXACT_TORCH_STEPS, bench_exact_torch, report_exact_torch
from .heaptrack import (EXACT_PAIRS, exact_configs, find_heaptrack, heaptrack_events,
                        heaptrack_version)
from .report import measured
from .scripts import (TRAIN, find_numpy_python, find_torch_python, interleaved, loop_and_loss,
                      skip)

EXACT_TARGET = 0.5  # churn, ndmem exact / heaptrack: "well below heaptrack", read as at most half
# churn by its own clock, every thread count: the shim's cost with every block tracked, and with
# the default settings, against plain glibc
EXACT_CHURN_TARGETS = {("ndmem exact", "glibc"): 1.5, ("ndmem", "glibc"): 1.15,
                       ("ndmem exact", "heaptrack"): EXACT_TARGET}


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

    def after(cfg, what):
        if cfg.check == "heaptrack":
            heaptrack_events(what)  # proves it recorded, and removes the file
    ns, cpu = churn_reps(churn, configs, ops, reps, "exact: churn", 900, after)
    return configs, ns, cpu


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
    return (wall,) + loop_and_loss(p, what)


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

    def run_one(name, cfg):
        what = "train_numpy.py (%s)" % name
        r = exact_numpy_once(py, cfg, steps, what)
        if cfg.check == "heaptrack":
            heaptrack_events(what)
        return r
    return interleaved([(c.name, c) for c in configs], reps, run_one,
                       "exact: numpy repetition %d/%d done")


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



def bench_exact(args, build, shim, churn, ops, steps, reps):
    """The --exact section: churn and the numpy loop under glibc, ndmem (default settings), ndmem
    with every block tracked (NDMEM_TRACK_MIN=0) and heaptrack recording (--raw: no analysis)."""
    ht = find_heaptrack(args)
    htver = heaptrack_version(ht) if ht else None
    configs = exact_configs(shim, ht)
    report, summary, ok = [], [], True
    if not args.no_churn:
        cc, ns, cpu = bench_exact_churn(build, churn, configs, ops, reps)
        lines, lines2 = report_exact_churn(cc, ns, cpu, ops, reps, htver)
        report += lines + [""]
        summary += lines2
    names = [c.name for c in configs]

    def numpy_part(py, npver):
        res = bench_exact_numpy(build, py, configs, steps, reps)
        st = exact_trace_stats(build, py, shim, steps)
        return report_exact_numpy(res, names, py, npver, steps, reps, st)

    def torch_part(py, tver):
        tsteps = args.torch_steps or EXACT_TORCH_STEPS
        treps = args.reps or (1 if args.quick else reps)
        res = bench_exact_torch(build, py, configs, tsteps, treps, ht, args.quick)
        return report_exact_torch(res, names, py, tver, tsteps, treps)

    parts = ([("numpy", find_numpy_python, numpy_part)] if not args.no_numpy else []) + (
        [("torch", find_torch_python, torch_part)] if not args.no_torch else [])
    for name, find, part in parts:
        py, ver, why = find()
        if py is None:
            skip(report, summary, "exact: %s skipped: %s" % (name, why))
            continue
        lines, lines2, pok = part(py, ver)
        ok = ok and pok
        report += lines + [""]
        summary += lines2
    if not ht:
        summary.append("  heaptrack not found: its rows are skipped")
    return report, summary, ok

