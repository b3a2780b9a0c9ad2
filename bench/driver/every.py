# SPDX-License-Identifier: MIT
"""--every: what tracking every block costs. Five workloads (churn, a PyTorch MLP and import
torch as whole processes, threads made and ended every round, a CNN with two DataLoader workers)
under plain, the shim's default settings, the light sampling mode set explicitly
(NDMEM_TRACK_MIN=8192), every block tracked (NDMEM_TRACK_MIN=0) and heaptrack --raw: wall time
and peak RSS of the whole process, ratios to plain and the goals of every block."""
import os
import re
import time

from .churn import churn_cmd, parse_churn, verify_churn_config
from .common import (NOISY, QUICK_REPS, REPO, SetupError, base_env, log, median, mib, quote_join,
                     ratio, run, spread, trace_dir)
from .configs import EnvConfig, WrapConfig
from .exact import exact_trace_check
from .exact_torch import TORCH_MIN_ALLOCS, torch_trace_summary
from .heaptrack import (find_heaptrack, heaptrack_events, heaptrack_out, heaptrack_raw,
                        heaptrack_version)
from .rss import rss_floor, rss_run
from .scripts import TORCH_SCRIPT, find_torch_python

EVERY_OPS = 5_000_000        # churn, 1 thread: about 0.5 s plain on a 2-core VM
QUICK_EVERY_OPS = 500_000
EVERY_TORCH_STEPS = 40       # py_torch.py: the process is mostly import torch
CNN_SCRIPT = REPO / "tests" / "runtime" / "limits" / "torch_cnn.py"
CNN_EPOCHS = 3               # about 4 s plain here (import, 2 workers, 3 epochs)
QUICK_CNN_EPOCHS = 1
# Threads made and ended every round: 8 new threads a round, 20 rounds, 1500 allocations each
# (240,000 allocations by 160 threads), 0.16-0.18 s plain on an idle 2-core VM.
THREADS_ARGS = ["--threads", "8", "--rounds", "20", "--iters", "1500"]
THREADS_ALLOCS = 8 * 20 * 1500
SAMPLED_MIN = 8192           # NDMEM_TRACK_MIN of the light sampling mode
PROBE_OPS = 20000            # churn's ops in the checks before timing

PLAIN, DEFAULT, SAMPLED, EVERY, HEAPTRACK = ("plain", "default", "sampled", "every block",
                                             "heaptrack --raw")
EVERY_OLD = "every block, old"  # --compare OLD_BUILD: that build's shim with NDMEM_TRACK_MIN=0
# Goals for every block, each a ratio to plain of the whole process: (workload, measure, goal).
EVERY_GOALS = [("churn", "wall", 1.5), ("torch MLP", "wall", 1.15), ("torch MLP", "rss", 1.25),
               ("import torch", "wall", 1.3), ("threads per round", "wall", 1.5)]
HEAPTRACK_GOAL = 1.0         # every block / heaptrack --raw, wall, on every workload
# heaptrack is not run on the CNN: its preload's lock is not taken around fork, so a DataLoader
# worker forked while another thread of the trainer held it waits for it forever (seen here: a
# worker's thread in heaptrack_free, one run in a few).
CNN_NO_HEAPTRACK = ("heaptrack --raw is not run on the CNN row: heaptrack's preload can deadlock "
                    "in a forked DataLoader worker (a lock held by another thread at fork: the "
                    "worker's first free waits forever)")


class ShimConfig(EnvConfig):
    """An EnvConfig whose name need not start with "ndmem": it runs the shim when it preloads
    anything (has_ndmem), and `track_min` is what its trace must say (None: the shim's default,
    read from a probe run)."""

    def __init__(self, name, preload, extra_env=None, track_min=None):
        EnvConfig.__init__(self, name, preload, extra_env)
        self.track_min = track_min

    @property
    def has_ndmem(self):
        return bool(self.preload)


class Workload:
    """One row: how to run it (cmd), what to compare across runs and the workload's own figure
    (parse(p, what) -> (result, figure or None)), the heap allocations heaptrack's raw file (and
    the first torch MLP trace) must at least hold, what the compared result is called (label;
    None: nothing to compare), whether a differing result is a broken setup (strict:
    deterministic) or compared only when the plain runs agree with each other, and whether
    heaptrack runs it."""

    def __init__(self, name, cmd, parse, min_allocs, label, strict, heaptrack=True):
        self.name, self.cmd, self.parse = name, list(cmd), parse
        self.min_allocs, self.label, self.strict = min_allocs, label, strict
        self.heaptrack = heaptrack   # False: heaptrack does not run this workload

    def runs(self, cfg):
        return self.heaptrack or cfg.check != "heaptrack"


def every_configs(shim, ht, old=None):
    configs = [ShimConfig(PLAIN, []), ShimConfig(DEFAULT, [str(shim)]),
               ShimConfig(SAMPLED, [str(shim)], {"NDMEM_TRACK_MIN": str(SAMPLED_MIN)},
                          SAMPLED_MIN),
               ShimConfig(EVERY, [str(shim)], {"NDMEM_TRACK_MIN": "0"}, 0)]
    if old:
        configs.append(ShimConfig(EVERY_OLD, [str(old)], {"NDMEM_TRACK_MIN": "0"}, 0))
    if ht:
        configs.append(WrapConfig(HEAPTRACK, [ht, "--raw", "-o", heaptrack_out()],
                                  check="heaptrack"))
    return configs


def parse_churn_run(p, what):
    ns, checksum = parse_churn(p.stdout, what)
    return "checksum %d" % checksum, ns


def parse_threads_run(p, what):
    m = re.search(r"elapsed_s=([0-9.]+).*checksum=([0-9a-f]+)", p.stdout)
    if not m:
        raise SetupError("%s: unexpected output: %r" % (what, p.stdout.strip()))
    return "checksum %s" % m.group(2), float(m.group(1))


def parse_mlp_run(p, what):
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not loss:
        raise SetupError("%s: no 'final loss' line on stdout" % what)
    return loss[-1], None


def parse_import_run(p, what):
    return "", None


def cnn_parser(epochs):
    def parse(p, what):
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("epoch ")]
        if len(lines) != epochs or "peak_rss_kib" not in p.stdout:
            raise SetupError("%s: want %d 'epoch N loss ...' lines and 'peak_rss_kib', got:\n%s"
                             % (what, epochs, p.stdout.strip()))
        return "; ".join(lines), None
    return parse


def every_workloads(build, ops, py, steps, epochs):
    """The rows: churn and threads per round always, the torch ones with an interpreter (py) and
    the CNN unless epochs is None."""
    out = [Workload("churn", [str(build / "bench" / "churn"), "--threads", "1", "--ops",
                              str(ops)], parse_churn_run, ops, "checksum", True)]
    if py:
        out.append(Workload("torch MLP", [py, str(TORCH_SCRIPT), "--steps", str(steps)],
                            parse_mlp_run, TORCH_MIN_ALLOCS, "final loss", False))
    out.append(Workload("threads per round", [str(build / "bench" / "stress")] + THREADS_ARGS,
                        parse_threads_run, THREADS_ALLOCS, "checksum", True))
    if py:
        out.append(Workload("import torch", [py, "-c", "import torch"], parse_import_run,
                            TORCH_MIN_ALLOCS, None, False))
        if epochs:
            out.append(Workload("CNN + 2 DataLoader workers", [py, str(CNN_SCRIPT), "--epochs",
                                                               str(epochs)],
                                cnn_parser(epochs), TORCH_MIN_ALLOCS, "epoch losses", False,
                                heaptrack=False))
    return out


def every_env(cfg, tag, summary=False):
    """cfg's environment with the shim's traces (one per process) at TAG.<pid>.trace in the
    private folder, never in the working directory."""
    env = cfg.env(summary)
    env["NDMEM_OUTPUT"] = os.path.join(trace_dir(), "%s.%%p.trace" % tag)
    return env


def take_traces(tag, what):
    """The paths of the traces TAG.<pid>.trace the last run wrote; none means the shim did not
    run."""
    files = sorted(f for f in os.listdir(trace_dir()) if f.startswith(tag + "."))
    if not files:
        raise SetupError("%s: the shim wrote no trace %s.*: the preload was not live"
                         % (what, tag))
    return [os.path.join(trace_dir(), f) for f in files]


def probe_track_min(build, churn, cfg):
    """track_min of a short churn run's trace under cfg (read by ndmemreport)."""
    what = "churn/%s (tracking check)" % cfg.name
    run(churn_cmd(churn, cfg, 1, PROBE_OPS), every_env(cfg, "every-probe"), what, 300)
    paths = take_traces("every-probe", what)
    doc, heap = torch_trace_summary(build, paths[0], what)
    for path in paths:
        os.unlink(path)
    if heap["allocs"] < PROBE_OPS:
        raise SetupError("%s: the trace counts %d heap allocations, churn made at least %d"
                         % (what, heap["allocs"], PROBE_OPS))
    return doc["tracking"]["track_min"]


def verify_every_configs(build, churn, configs):
    """Before timing, each configuration does what it says: the shim is live (its summary line
    counts churn's mallocs) and tracks what its setting says (sampled: track_min 8192; every
    block: track_min 0 and every heap allocation in an exact site); heaptrack recorded. Returns
    the default settings' track_min."""
    default_min = None
    for cfg in configs:
        what = "churn/%s (check)" % cfg.name
        if cfg.check == "heaptrack":
            run(churn_cmd(churn, cfg, 1, PROBE_OPS), cfg.env(), what, 300)
            n = heaptrack_events(what)
            if n < PROBE_OPS:
                raise SetupError("%s: heaptrack recorded %d allocations, churn made at least %d"
                                 % (what, n, PROBE_OPS))
        elif cfg.has_ndmem:
            verify_churn_config(churn, cfg)
            got = probe_track_min(build, churn, cfg)
            if cfg.track_min is None:
                default_min = cfg.track_min = got
            elif got != cfg.track_min:
                raise SetupError("%s: the trace says track_min %r, NDMEM_TRACK_MIN=%d was set"
                                 % (what, got, cfg.track_min))
            if cfg.name in (EVERY, EVERY_OLD):
                exact_trace_check(build, cfg.env(), churn_cmd(churn, cfg, 1, PROBE_OPS), what,
                                  PROBE_OPS)
        else:
            run(churn_cmd(churn, cfg, 1, PROBE_OPS), cfg.env(), what, 300)  # warm-up
    log("every: configurations verified (%s; default track_min %s)"
        % (", ".join(c.name for c in configs), default_min))
    return default_min


def every_once(build, cfg, wl, what, first):
    """One run of a workload through the RSS helper: (wall s, peak RSS bytes, result, figure).
    Under the shim its traces must exist (they are removed); the first torch MLP trace of each
    shim configuration is read: complete, import torch's allocations counted, the track_min
    set. Under heaptrack its raw file must hold the workload's allocations."""
    cmd = list(getattr(cfg, "wrap", ())) + wl.cmd
    p, wall, peak = rss_run(cmd, every_env(cfg, "every"), what, 600)
    result, figure = wl.parse(p, what)
    if cfg.check == "heaptrack":
        n, _ = heaptrack_raw(what)
        if n < wl.min_allocs:
            raise SetupError("%s: heaptrack recorded %d allocations (want >= %d)"
                             % (what, n, wl.min_allocs))
    elif cfg.has_ndmem:
        paths = take_traces("every", what)
        if first and wl.name == "torch MLP":
            doc, heap = torch_trace_summary(build, paths[0], what)
            tmin = doc["tracking"]["track_min"]
            if (len(paths) != 1 or not doc["trace"]["complete"] or tmin != cfg.track_min
                    or heap["allocs"] < wl.min_allocs):
                raise SetupError("%s: want one complete trace with track_min %r and >= %d heap "
                                 "allocations; got %d trace(s), complete %r, track_min %r, %d"
                                 % (what, cfg.track_min, wl.min_allocs, len(paths),
                                    doc["trace"]["complete"], tmin, heap["allocs"]))
        for path in paths:
            os.unlink(path)
    return wall, peak, result, figure


def bench_every_runs(build, configs, workloads, reps):
    """Every workload under every configuration once per repetition, the configurations in an
    order that rotates per repetition; returns {(config, workload): {"wall", "rss", "fig",
    "result": [...]}}."""
    res = {(c.name, w.name): {"wall": [], "rss": [], "fig": [], "result": []}
           for c in configs for w in workloads}
    for rep in range(reps):
        t0 = time.perf_counter()
        k = rep % len(configs)
        for wl in workloads:
            for cfg in [c for c in configs[k:] + configs[:k] if wl.runs(c)]:
                what = "%s (%s)" % (wl.name, cfg.name)
                wall, peak, result, figure = every_once(build, cfg, wl, what, rep == 0)
                r = res[(cfg.name, wl.name)]
                r["wall"].append(wall)
                r["rss"].append(peak)
                r["fig"].append(figure)
                r["result"].append(result)
        log("every: repetition %d/%d done (%.1f s)" % (rep + 1, reps, time.perf_counter() - t0))
    return res


def check_results(res, names, workloads):
    """Every run of a workload computed the same: a deterministic workload (checksums) that
    does not is a broken setup (SetupError); a torch one is compared only when its plain runs
    agree with each other. Returns (lines, ok)."""
    lines, ok = [], True
    for wl in workloads:
        if wl.label is None:
            continue
        every = [x for n in names for x in res[(n, wl.name)]["result"]]
        names_run = [n for n in names if res[(n, wl.name)]["result"]]
        plain = set(res[(PLAIN, wl.name)]["result"])
        if len(set(every)) == 1:
            lines.append("%s: %s identical in all %d runs" % (wl.name, wl.label, len(every)))
        elif wl.strict:
            raise SetupError("%s: %s differs between runs: %r" % (
                wl.name, wl.label, {n: sorted(set(res[(n, wl.name)]["result"]))
                                    for n in names_run}))
        elif len(plain) > 1:
            lines.append("%s: %s varies even plain (%d values): not compared"
                         % (wl.name, wl.label, len(plain)))
        else:
            ok = False
            lines.append("%s: %s DIFFERS between configurations: %s" % (
                wl.name, wl.label, "; ".join("%s %s" % (n, sorted(set(res[(n, wl.name)]
                                                                       ["result"])))
                                             for n in names_run)))
    return lines, ok


def markdown_table(header, rows):
    """A Markdown table whose columns are padded to line up as plain text too."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return [fmt(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r)
                                                                                  for r in rows]


def goal_lines(rat, hrat, names, wls):
    """The goals of every block, each `met` or `not met` (`n/a` when its row did not run)."""
    out = []
    for wname, key, goal in EVERY_GOALS:
        label = "%s %s <= %.2fx plain" % (wname, "wall" if key == "wall" else "peak RSS", goal)
        if wname not in wls:
            out.append("%-46s n/a (row skipped)" % label)
            continue
        r = rat[(EVERY, wname, key)]
        out.append("%-46s %5.2fx  %s" % (label, r, "met" if r <= goal else "not met"))
    label = "every row <= %.2fx heaptrack --raw (wall)" % HEAPTRACK_GOAL
    if HEAPTRACK not in names:
        out.append("%-46s n/a (no heaptrack)" % label)
    else:
        wls = [w for w in wls if (w, "wall") in hrat]  # the rows heaptrack ran
        miss = [w for w in wls if hrat[(w, "wall")] > HEAPTRACK_GOAL]
        worst = max(hrat[(w, "wall")] for w in wls)
        out.append("%-46s %5.2fx  %s" % (label, worst, "met" if not miss
                                          else "not met (%s)" % ", ".join(miss)))
    return out


def report_every(res, configs, workloads, reps, floor, ht, default_min, py_line, skipped,
                 checks, old=None):
    names = [c.name for c in configs]
    wls = [w.name for w in workloads]
    have = lambda n, w: bool(res[(n, w)]["wall"])  # heaptrack does not run every workload
    out = ["every: what tracking every block costs, %d repetitions (configurations interleaved "
           "and rotated per repetition); median wall seconds of the whole process (+-half "
           "range) and median peak RSS (wait4 ru_maxrss through the RSS helper, floor %.1f MiB; "
           "heaptrack: the largest process of its tree); ratios are medians of per-repetition "
           "ratios" % (reps, mib(floor))]
    out.append("  configurations: plain = no preload; default = the shim, no NDMEM_* setting "
               "(its trace says track_min %s); sampled = NDMEM_TRACK_MIN=%d; every block = "
               "NDMEM_TRACK_MIN=0; heaptrack --raw = %s" % (
                   default_min, SAMPLED_MIN,
                   "%s --raw -o FILE (%s; record only)" % (ht, heaptrack_version(ht)) if ht
                   else "not found (apt-get install heaptrack, or --heaptrack PATH): its column "
                   "is skipped") + ("; every block, old = %s with NDMEM_TRACK_MIN=0 (--compare)"
                                    % old if old else ""))
    for wl in workloads:
        out.append("  %-27s %s" % (wl.name, quote_join(
            os.path.relpath(a, REPO) if a.startswith(str(REPO)) else a for a in wl.cmd)))
    if py_line:
        out.append("  " + py_line)
    out += ["  " + s for s in skipped]
    rows = []
    for w in wls:
        cells = [w]
        for n in names:
            r = res[(n, w)]
            cells.append("%.3f s +-%.0f%%, %.1f MiB" % (median(r["wall"]), spread(r["wall"]),
                                                        mib(median(r["rss"])))
                         if have(n, w) else "n/a")
        rows.append(cells)
    table = markdown_table(["workload"] + names, rows)
    churn = ", ".join("%s %.1f" % (n, median(res[(n, "churn")]["fig"])) for n in names)
    table.append("churn's own clock, median ns/op: %s" % churn)
    noisy = ["%s/%s" % (n, w) for w in wls for n in names if spread(res[(n, w)]["wall"]) > NOISY]
    out += [""] + ["  " + ln for ln in table]
    if noisy:
        out.append("  note: wall spread above +-%.0f%% for %s: the machine was busy; the paired "
                   "ratios are more robust than the medians" % (NOISY, ", ".join(noisy)))
    rat, hrat = {}, {}
    lines = ["ratios to plain (median of per-repetition ratios), wall / peak RSS:"]
    for w in wls:
        parts = []
        for n in [n for n in names[1:] if have(n, w)]:
            for key in ("wall", "rss"):
                rat[(n, w, key)] = ratio(res[(n, w)][key], res[(PLAIN, w)][key])
            parts.append("%s %.2fx/%.2fx" % (n, rat[(n, w, "wall")], rat[(n, w, "rss")]))
        lines.append("  %-27s %s" % (w, ", ".join(parts)))
    lines.append("  %-27s %s" % ("churn ns/op (its clock)", ", ".join(
        "%s %.2fx" % (n, ratio(res[(n, "churn")]["fig"], res[(PLAIN, "churn")]["fig"]))
        for n in names[1:])))
    if EVERY_OLD in names:
        lines.append("every block / every block, old (--compare), wall / peak RSS: %s" % ", ".join(
            "%s %.2fx/%.2fx" % (w, ratio(res[(EVERY, w)]["wall"], res[(EVERY_OLD, w)]["wall"]),
                                ratio(res[(EVERY, w)]["rss"], res[(EVERY_OLD, w)]["rss"]))
            for w in wls))
    if HEAPTRACK in names:
        hwls = [w for w in wls if have(HEAPTRACK, w)]
        for w in hwls:
            for key in ("wall", "rss"):
                hrat[(w, key)] = ratio(res[(EVERY, w)][key], res[(HEAPTRACK, w)][key])
        lines.append("every block / heaptrack --raw, wall / peak RSS: %s" % ", ".join(
            "%s %.2fx/%.2fx" % (w, hrat[(w, "wall")], hrat[(w, "rss")]) for w in hwls))
    lines.append("goals, every block (whole process):")
    lines += ["  " + g for g in goal_lines(rat, hrat, names, wls)]
    lines += ["checks:"] + ["  " + c for c in checks]
    out += [""] + ["  " + ln for ln in lines]
    summary = ["every block (%d repetitions; median wall s +-half range, peak RSS MiB):" % reps]
    summary += table + lines + skipped
    return out + [""], summary


def bench_every(args, build, shim, old=None):
    """The --every section: returns (report lines, summary lines, ok), ok false when a torch
    workload computed something else under a tool than plain."""
    churn = build / "bench" / "churn"
    for prog in ("churn", "stress"):
        if not os.access(build / "bench" / prog, os.X_OK):
            raise SetupError("%s not found: %s (ninja -C %s)" % (prog, build / "bench" / prog,
                                                                 args.build))
    reps = args.every_reps or args.reps or (QUICK_REPS if args.quick else 5)
    ops = args.ops or (QUICK_EVERY_OPS if args.quick else EVERY_OPS)
    steps = args.torch_steps or EVERY_TORCH_STEPS
    epochs = None if args.no_cnn else (QUICK_CNN_EPOCHS if args.quick else CNN_EPOCHS)
    ht = find_heaptrack(args)
    skipped, py_line = [], None
    py, tver, why = find_torch_python()
    if py is None:
        skipped.append("torch rows skipped (torch MLP, import torch, CNN): %s" % why)
    else:
        py_line = "torch rows: %s (torch %s)" % (py, tver)
        if epochs and not CNN_SCRIPT.is_file():
            skipped.append("CNN row skipped: %s not found" % CNN_SCRIPT)
            epochs = None
    if args.no_cnn:
        skipped.append("CNN row skipped (--no-cnn)")
    if not ht:
        skipped.append("heaptrack --raw column skipped: %s" % (
            "--heaptrack ''" if args.heaptrack == "" else "heaptrack not found"))
    configs = every_configs(shim, ht, old)
    workloads = every_workloads(build, ops, py, steps, epochs)
    if ht and any(not w.heaptrack for w in workloads):
        skipped.append(CNN_NO_HEAPTRACK)
    default_min = verify_every_configs(build, churn, configs)
    if py:  # warm-up: torch's libraries into the page cache
        run([py, str(TORCH_SCRIPT), "--steps", "3"], base_env(), "py_torch.py (warm-up)", 900)
    floor = rss_floor()
    res = bench_every_runs(build, configs, workloads, reps)
    checks, ok = check_results(res, [c.name for c in configs], workloads)
    checks.insert(0, "shim live in every configuration that runs it (its summary line on a "
                     "short churn run, and a trace from every timed run); every block tracked "
                     "every heap allocation of a short churn run exactly; the first torch MLP "
                     "trace of each says its track_min%s" % (
                         "; heaptrack's raw file held each run's allocations" if ht else ""))
    out, summary = report_every(res, configs, workloads, reps, floor, ht, default_min, py_line,
                                skipped, checks, old)
    return out, summary, ok
