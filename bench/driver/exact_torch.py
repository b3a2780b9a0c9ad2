# SPDX-License-Identifier: MIT
"""The PyTorch run of --exact: tests/runtime/python/py_torch.py, the whole process (import torch
included), under glibc, ndmem, ndmem exact and heaptrack: wall time, the training loop's median
step, peak RSS through the RSS helper, and the size of each tool's file."""
import json
import os
import re
import shutil
import subprocess
import time

from .common import (NOISY, SetupError, base_env, log, median, mib, ratio, run, spread,
                     trace_dir, verdict)
from .configs import WrapConfig
from .heaptrack import EXACT_PAIRS, heaptrack_raw
from .rss import rss_floor, rss_run
from .scripts import TORCH_SCRIPT

EXACT_TORCH_STEPS = 40
EXACT_TORCH_WALL_TARGET = 1.15  # ndmem exact / glibc, wall time: the loop, and the whole process
EXACT_TORCH_RSS_TARGET = 1.2    # ndmem exact / glibc, peak RSS
EXACT_TORCH_SIZE_TARGET = 1.0   # ndmem exact trace / heaptrack's compressed file, same run
TORCH_MIN_ALLOCS = 100000       # import torch alone makes about a million heap allocations


def torch_env(cfg, tag, summary=False):
    """cfg's environment with the trace (when the shim runs) at a name of its own, TAG.<pid>."""
    env = cfg.env(summary)
    env["NDMEM_OUTPUT"] = os.path.join(trace_dir(), "%s.%%p.trace" % tag)
    return env


def take_trace(tag, what):
    """The path of the one trace TAG.<pid>.trace in the private folder."""
    files = [f for f in os.listdir(trace_dir()) if f.startswith(tag + ".")]
    if len(files) != 1:
        raise SetupError("%s: expected one trace %s.*, found %r" % (what, tag, files))
    return os.path.join(trace_dir(), files[0])


def torch_once(py, cfg, steps, env, what):
    """One py_torch.py run through the RSS helper: (wall s, peak RSS bytes, (loop s, median step
    s), final loss line, stderr)."""
    cmd = list(getattr(cfg, "wrap", ())) + [py, str(TORCH_SCRIPT), "--steps", str(steps)]
    p, wall, peak = rss_run(cmd, env, what, 1800)
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    st = re.search(r"^step ([0-9.]+) ms median", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not st or not loss:
        raise SetupError("%s: missing 'time ... s' or 'step ... ms median' on stderr or 'final "
                         "loss' on stdout" % what)
    return wall, peak, (float(m.group(1)), float(st.group(1)) / 1000), loss[-1], p.stderr


def torch_trace_summary(build, path, what):
    """(ndmemreport's JSON, its heap counters) for a torch trace: one site, no symbols (the full
    site list of an exact torch import runs to gigabytes of JSON)."""
    p, _ = run([str(build / "report" / "ndmemreport"), "--format", "json", "--top", "1",
                "--no-symbols", path], base_env(), "ndmemreport (%s)" % what, 900)
    doc = json.loads(p.stdout)
    return doc, [k for k in doc["counters"]["kinds"] if k["kind"] == "heap"][0]


def torch_trace_facts(build, path, what):
    """The exact run's trace: it must say every block was tracked (track_min 0), be complete,
    and hold at least TORCH_MIN_ALLOCS heap allocations. Returns its size and counts."""
    doc, heap = torch_trace_summary(build, path, what)
    f = {"bytes": os.path.getsize(path), "records": doc["trace"]["records"],
         "sites": doc["sites"]["count"], "allocs": heap["allocs"],
         "track_min": doc["tracking"]["track_min"], "complete": doc["trace"]["complete"]}
    if f["track_min"] != 0 or not f["complete"] or f["allocs"] < TORCH_MIN_ALLOCS:
        raise SetupError("%s: not an exact, complete trace: track_min %r, complete %r, %d heap "
                         "allocations (want 0, true, >= %d)" % (what, f["track_min"],
                                                                 f["complete"], f["allocs"],
                                                                 TORCH_MIN_ALLOCS))
    return f


def zstd_size(path):
    """Bytes of PATH compressed by zstd at its default level, or None without zstd."""
    if not shutil.which("zstd"):
        return None
    p = subprocess.Popen(["zstd", "-q", "-c", path], stdout=subprocess.PIPE)
    n = 0
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        n += len(b)
    return n if p.wait() == 0 else None


def torch_default_check(build, path, what):
    """The default-settings run's trace: the shim was loaded, wrote a complete trace and counted
    at least import torch's TORCH_MIN_ALLOCS heap allocations."""
    doc, heap = torch_trace_summary(build, path, what)
    if not doc["trace"]["complete"] or heap["allocs"] < TORCH_MIN_ALLOCS:
        raise SetupError("%s: the shim's trace is incomplete or counted %d heap allocations "
                         "(want >= %d)" % (what, heap["allocs"], TORCH_MIN_ALLOCS))


def bench_exact_torch(build, py, configs, steps, reps, ht, quick):
    """py_torch.py --steps N under every --exact configuration, the whole process timed and its
    peak RSS taken through the RSS helper, interleaved and rotated per repetition after one
    plain 3-step warm-up (torch's libraries are large: the page cache). Every timed run is
    checked: under the shim its trace must exist (the preload was live; the first one of each
    is read by ndmemreport: exact = track_min 0 and complete, and both counted import torch's
    allocations), under heaptrack its raw file must hold them. The trace sizes come from these
    runs; without --quick one more run under heaptrack without --raw writes its interpreted,
    compressed file, whose size is the target's reference."""
    glibc = [c for c in configs if c.name == "glibc"][0]
    torch_once(py, glibc, 3, glibc.env(), "py_torch.py (glibc, warm-up)")
    res = {c.name: {"wall": [], "rss": [], "loop": [], "step": [], "loss": [], "size": []}
           for c in configs}
    facts = None
    checked = set()
    for rep in range(reps):
        k = rep % len(configs)
        t0 = time.perf_counter()
        for cfg in configs[k:] + configs[:k]:
            what = "py_torch.py (%s)" % cfg.name
            wall, peak, loop, loss, _ = torch_once(py, cfg, steps, torch_env(cfg, "torch"), what)
            r = res[cfg.name]
            r["wall"].append(wall)
            r["rss"].append(peak)
            r["loop"].append(loop[0])
            r["step"].append(loop[1])
            r["loss"].append(loss)
            if cfg.check == "heaptrack":
                n, size = heaptrack_raw(what)
                if n < TORCH_MIN_ALLOCS:
                    raise SetupError("%s: heaptrack recorded %d allocations (want >= %d)"
                                     % (what, n, TORCH_MIN_ALLOCS))
                r["size"].append(size)
            elif cfg.has_ndmem:
                path = take_trace("torch", what)  # none: the preload was not live
                r["size"].append(os.path.getsize(path))
                if cfg.name == "ndmem exact" and facts is None:
                    facts = torch_trace_facts(build, path, what)
                    facts["zstd"] = zstd_size(path)
                elif cfg.name not in checked:
                    torch_default_check(build, path, what)
                checked.add(cfg.name)
                os.unlink(path)
        log("exact: torch repetition %d/%d done (%.1f s)" % (rep + 1, reps,
                                                            time.perf_counter() - t0))
    full = None
    if ht and not quick:
        what = "py_torch.py (heaptrack, interpreted file)"
        out = os.path.join(trace_dir(), "heaptrack-full")
        cfg = WrapConfig("heaptrack", [ht, "-o", out])
        wall, peak, _, loss, _ = torch_once(py, cfg, steps, cfg.env(), what)
        files = [f for f in os.listdir(trace_dir()) if f.startswith("heaptrack-full.")]
        if len(files) != 1:
            raise SetupError("%s: expected one file heaptrack-full.*, found %r" % (what, files))
        path = os.path.join(trace_dir(), files[0])
        full = {"bytes": os.path.getsize(path), "name": files[0].replace("heaptrack-full", "*"),
                "wall": wall, "rss": peak, "loss": loss}
        os.unlink(path)
    return {"res": res, "facts": facts, "full": full, "floor": rss_floor()}


def report_exact_torch(bt, names, py, tver, steps, reps):
    res, facts, full, floor = bt["res"], bt["facts"], bt["full"], bt["floor"]
    out = ["exact: torch, tests/runtime/python/py_torch.py --steps %d, %s (torch %s), "
           "%d repetition%s; the whole process (import torch included): median wall seconds and peak RSS "
           "(+-half range), / glibc = median of per-repetition ratios; peak RSS is wait4's "
           "ru_maxrss of the program run by a small fork+exec helper (its floor: %.1f MiB), for "
           "heaptrack the largest process of its tree" % (steps, py, tver, reps,
                                                       "s" if reps != 1 else "", mib(floor))]
    out.append("  %-16s%18s%10s%20s%10s%16s" % ("config", "wall s", "/ glibc", "peak RSS MiB",
                                                "/ glibc", "loop s"))
    for n in names:
        r = res[n]
        out.append("  %-16s%18s%10s%20s%10s%16s" % (
            n, "%.3f (+-%.0f%%)" % (median(r["wall"]), spread(r["wall"])),
            "%.3fx" % ratio(r["wall"], res["glibc"]["wall"]) if n != "glibc" else "-",
            "%.1f (+-%.0f%%)" % (mib(median(r["rss"])), spread(r["rss"])),
            "%.3fx" % ratio(r["rss"], res["glibc"]["rss"]) if n != "glibc" else "-",
            "%.3f (+-%.0f%%)" % (median(r["loop"]), spread(r["loop"]))))
    if any(spread(res[n]["wall"]) > NOISY for n in names):
        out.append("  note: spread above +-%.0f%%: the machine was busy; rerun or raise --reps"
                   % NOISY)
    def per_run(label, key, fmt, scale=1):
        return "  per run (%s): %s" % (label, "; ".join(
            "%s %s" % (n, " ".join(fmt % (scale * x) for x in res[n][key])) for n in names))
    out.append(per_run("wall s", "wall", "%.2f"))
    out.append("  ratios (median of per-repetition ratios), wall / peak RSS:")
    rat = {}
    for a, b in [pr for pr in EXACT_PAIRS if pr[0] in names and pr[1] in names]:
        rat[(a, b)] = (ratio(res[a]["wall"], res[b]["wall"]), ratio(res[a]["rss"], res[b]["rss"]))
        row = "  %-28s  %.3fx / %.3fx" % ("%s / %s" % (a, b), rat[(a, b)][0], rat[(a, b)][1])
        if (a, b) == ("ndmem exact", "glibc"):
            row += "   targets wall <= %.2fx: %s, peak RSS <= %.2fx: %s" % (
                EXACT_TORCH_WALL_TARGET, verdict(rat[(a, b)][0], EXACT_TORCH_WALL_TARGET),
                EXACT_TORCH_RSS_TARGET, verdict(rat[(a, b)][1], EXACT_TORCH_RSS_TARGET))
        out.append(row)
    # The training loop alone, by py_torch.py's own clock: what each step of a long job pays,
    # apart from the one-time cost of import torch that dominates a 40-step process. A 40-step
    # loop lasts ~40 ms, so its total swings with one slow step; each run's median step does not.
    loop = {n: ratio(res[n]["step"], res["glibc"]["step"]) for n in names if n != "glibc"}
    loop_line = ("the training loop alone (py_torch.py's median step; glibc %.3f ms), / glibc: %s"
                 "   ndmem exact target <= %.2fx: %s" % (
                     1000 * median(res["glibc"]["step"]),
                     ", ".join("%s %.3fx" % (n, r) for n, r in loop.items()),
                     EXACT_TORCH_WALL_TARGET,
                     verdict(loop["ndmem exact"], EXACT_TORCH_WALL_TARGET)))
    out.append("  " + loop_line)
    out.append(per_run("median step ms", "step", "%.3f", 1000))
    # trace sizes
    ex = res["ndmem exact"]["size"]
    size_line = ["ndmem exact trace %.1f MiB (%d B; %d records, %d sites, %d heap allocations, "
                 "track_min 0%s)" % (mib(facts["bytes"]), facts["bytes"], facts["records"],
                                     facts["sites"], facts["allocs"],
                                     "; zstd'ed %.1f MiB" % mib(facts["zstd"])
                                     if facts["zstd"] else "")]
    size_line.append("ndmem (default) trace %.2f MiB" % mib(median(res["ndmem"]["size"])))
    verdict_line = None
    if "heaptrack" in names:
        raw = median(res["heaptrack"]["size"])
        size_line.append("heaptrack --raw %.1f MiB (heaptrack.raw.zst, median of the timed runs)"
                         % mib(raw))
        if full:
            size_line.append("heaptrack %.1f MiB (heaptrack.%s: interpreted, its own file; that "
                             "run %.2f s, peak RSS %.1f MiB with heaptrack_interpret)"
                             % (mib(full["bytes"]), full["name"], full["wall"], mib(full["rss"])))
            ref, refname = full["bytes"], "heaptrack's file (interpreted .zst)"
        else:
            ref, refname = raw, "heaptrack's raw .zst (no interpreted file under --quick)"
        r = median(ex) / ref
        verdict_line = ("ndmem exact trace / %s: %.2fx   target <= %.1fx: %s%s" % (
            refname, r, EXACT_TORCH_SIZE_TARGET, verdict(r, EXACT_TORCH_SIZE_TARGET),
            "; / heaptrack --raw %.2fx" % (median(ex) / raw) if full else ""))
    else:
        verdict_line = ("ndmem exact trace / heaptrack's file: n/a, no heaptrack (target <= "
                        "%.1fx)" % EXACT_TORCH_SIZE_TARGET)
    out.append("  trace of one %d-step run: %s" % (steps, "; ".join(size_line)))
    out.append("  " + verdict_line)
    losses = [l for n in names for l in res[n]["loss"]] + ([full["loss"]] if full else [])
    plain = set(res["glibc"]["loss"])
    if len(set(losses)) == 1:
        msg, ok = "final loss identical in all %d runs" % len(losses), True
    elif len(plain) > 1:
        msg, ok = ("final loss varies even without a tool (%d values): not comparable"
                   % len(plain)), True
    else:
        msg, ok = "final loss DIFFERS between configurations: %s" % sorted(set(losses)), False
    out.append("  " + msg)
    summary = ["exact torch (py_torch.py --steps %d, whole process incl. import torch), median "
               "wall s / peak RSS MiB: %s" % (steps, ", ".join(
                   "%s %.3f/%.1f" % (n, median(res[n]["wall"]), mib(median(res[n]["rss"])))
                   for n in names))]
    e = rat[("ndmem exact", "glibc")]
    summary.append("  ndmem exact / glibc, whole process: wall %.3fx (target <= %.2fx: %s), peak "
                   "RSS %.3fx (target <= %.2fx: %s)" % (e[0], EXACT_TORCH_WALL_TARGET,
                                              verdict(e[0], EXACT_TORCH_WALL_TARGET), e[1],
                                              EXACT_TORCH_RSS_TARGET,
                                              verdict(e[1], EXACT_TORCH_RSS_TARGET)))
    summary.append("  " + loop_line)
    summary.append("  " + ", ".join("%s / %s %.3fx/%.3fx" % (a, b, r[0], r[1])
                                    for (a, b), r in rat.items() if (a, b) != ("ndmem exact",
                                                                               "glibc"))
                   + " (wall/RSS)")
    summary.append("  trace: " + "; ".join(size_line))
    summary.append("  " + verdict_line)
    summary.append("  " + msg)
    return out, summary, ok

