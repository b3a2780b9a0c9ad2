# SPDX-License-Identifier: MIT
"""--workspace: what learned workspaces save. tensor_loop (bench/tensor_loop.c, a training loop's
schedule of 14 buffers) under glibc, jemalloc, mimalloc and ndmem with workspaces off, on and
marked, against its buffers allocated once; then churn and numpy with workspaces on against off."""
import os
import re
import time

from .churn import bench_churn
from .common import (NOISY, THREADS, SetupError, find_allocators, log, median, mib, ratio, run,
                     skipped_allocators, spread, verdict)
from .configs import EnvConfig, allocator_configs, shim_lines, verify_allocator
from .numpy_loop import bench_numpy_envs
from .scripts import find_numpy_python, skip, time_rows

WS_ITERS_QUICK = 8       # tensor_loop --iters with --quick (its own default otherwise: 12)
TENSOR_BUFFERS = 14      # tensor_loop's buffers per iteration
WS_TIME_TARGET = 1.1     # ndmem ws=1 time per iteration / ideal
WS_FAULT_TARGET = 1.0    # ndmem ws=1 minor faults per steady-state iteration: below 1 (ideal: 0)
WS_RSS_TARGET = 1.1      # ndmem ws=1 (peak RSS - C) / cycle peak live; C: see report_tensor
WS_ONOFF_TARGET = 1.02   # churn and numpy, workspaces on / off: no slower, 2% allowed for noise


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
    env = cfg.check_env()
    what = "tensor_loop/%s (preload check)" % cfg.name
    p, _ = run(tensor_cmd(tl, cfg, 2, 1), env, what, 600)
    r = parse_tensor(p.stdout, what)
    if cfg.has_ndmem:
        lines = shim_lines(what, env, p.stderr)
        m = re.search(r"calls: malloc (\d+)", "\n".join(lines))
        if m and int(m.group(1)) < 2 * TENSOR_BUFFERS:
            raise SetupError("%s: the shim loaded but did not see tensor_loop's %d mallocs:\n%s"
                             % (what, 2 * TENSOR_BUFFERS, "\n".join(lines)))
    verify_allocator(cfg, p, what)
    return r


def tensor_configs(shim, je, mi):
    ws = lambda on: {"NDMEM_WORKSPACES": "1" if on else "0"}
    configs = [EnvConfig("glibc", [])]
    configs += allocator_configs(EnvConfig, shim, je, "jemalloc", behind=False)
    configs += allocator_configs(EnvConfig, shim, mi, "mimalloc", behind=False)
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
    rows, r = time_rows(off, on, ("wall", "loop"), "  ", 20)
    out += rows
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
    je, mi = find_allocators(args)
    configs = tensor_configs(shim, je, mi)
    res = bench_tensor(tl, configs, iters, args.ws_warmup, reps)
    lines, summary = report_tensor(configs, res, reps)
    report = lines + skipped_allocators(je, mi, "row is", "row is") + [""]
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
            skip(report, summary, "workspace on/off: numpy skipped: %s" % why)
        else:
            lines, line, ok = report_ws_numpy(bench_ws_numpy(py, shim, steps, reps), steps, reps)
            report += lines + [""]
            summary.append(line)
    return report, summary, ok

