# SPDX-License-Identifier: MIT
"""--python: what reading Python frames costs a training job. The numpy loop and a PyTorch CPU
loop under ndmem with NDMEM_PYTHON=0 and with the default (frames read for every tracked
block); with --compare, the PyTorch loop under the old build's shim too."""
import json
import os

from .common import NOISY, SetupError, base_env, log, ndmem_lines, run, spread, trace_dir, verdict
from .compare import OLD, compare_line, old_loss
from .scripts import (TORCH_SCRIPT, TRAIN, find_numpy_python, find_torch_python, interleaved,
                      script_once, time_rows)

PY_TARGET = 1.05  # Python frames on / off (the default against NDMEM_PYTHON=0), training loop
TORCH_STEPS = 2000     # a loop of about 2.5 s on a 2-core VM (1 s more for the import)
QUICK_TORCH_STEPS = 200
PY_CONFIGS = [("python=0", {"NDMEM_PYTHON": "0"}), ("python=1", {})]
PY_UNKNOWN = "NDMEM_PYTHON is not a known setting"


def python_probe(build, py, shim, script, name):
    """What this shim does with Python frames, from short runs: (warning line or None, state).
    With NDMEM_PYTHON=0 the shim must be loaded; whether it knows the setting is read from its
    stderr. A default run's trace read by ndmemreport gives the summary's python object."""
    what = "%s (python probe)" % name
    _, _, _, err = script_once(py, shim, script, 3, {"NDMEM_PYTHON": "0"}, what, summary=True)
    if not ndmem_lines(err):
        raise SetupError("%s: no 'ndmem[' line with NDMEM_SUMMARY=1: the shim is not loaded.\n"
                         "stderr was:\n%s" % (what, err.strip()))
    warn = None
    if PY_UNKNOWN in err:
        warn = ("python: warning: this libndmem.so does not know NDMEM_PYTHON (no Python "
                "frames): both configurations run the same shim, the ratios show the noise")
    env = base_env()
    env.update({"LD_PRELOAD": str(shim), "NDMEM_SUMMARY": "0",
                "NDMEM_OUTPUT": os.path.join(trace_dir(), "python-probe.%p.trace")})
    script_once(py, shim, script, 3, {}, what, env=env)
    traces = [f for f in os.listdir(trace_dir()) if f.startswith("python-probe.")]
    rep = build / "report" / "ndmemreport"
    state = ("%d traces of the probe run, want 1" % len(traces) if len(traces) != 1
             else "not read (%s not built)" % rep)
    for f in traces:
        path = os.path.join(trace_dir(), f)
        if os.access(rep, os.X_OK) and len(traces) == 1:
            p, _ = run([str(rep), "--format", "json", path], base_env(), "ndmemreport (%s)" % what,
                       600)
            s = json.loads(p.stdout).get("python")
            if not isinstance(s, dict):
                state = "the report has no python object (an ndmemreport without Python frames)"
            else:
                state = "state %s, Python %s, %s of %s stacks read with Python frames" % (
                    s.get("state"), s.get("version"), s.get("with_python"), s.get("stacks"))
        os.unlink(path)
    return warn, state


def bench_python_workload(py, shim, script, steps, reps, name, old=None):
    """script under ndmem with Python frames off and on (and with --compare, on under the old
    build's shim), interleaved and rotated per repetition (after one warm-up run of each, which
    proves the old shim is live): {config: {"wall", "loop", "loss"}}."""
    configs = PY_CONFIGS + ([(OLD, {"LD_PRELOAD": str(old)})] if old else [])
    for n, e in configs:
        what = "%s (%s, warm-up)" % (name, n)
        _, _, _, err = script_once(py, shim, script, 3, e, what, summary=n == OLD)
        if n == OLD and not ndmem_lines(err):
            raise SetupError("%s: no 'ndmem[' line with NDMEM_SUMMARY=1: the shim %s is not "
                             "loaded.\nstderr was:\n%s" % (what, old, err.strip()))
    return interleaved(configs, reps,
                       lambda n, e: script_once(py, shim, script, steps, e,
                                                "%s (%s)" % (name, n))[:3],
                       "python: %s repetition %%d/%%d done" % name)


def report_python_workload(res, name, steps, reps):
    off, on = res["python=0"], res["python=1"]
    out = ["  %s (%d steps)" % (name, steps)]
    rows, r = time_rows(off, on, ("loop", "wall"), "    ", 20)
    out += rows
    out.append("    per run (loop s, off|on): " + "  ".join(
        "%.3f|%.3f" % (a, b) for a, b in zip(off["loop"], on["loop"])))
    if any(spread(x[k]) > NOISY for x in (off, on) for k in ("loop", "wall")):
        out.append("    note: spread above +-%.0f%%: the machine was busy; rerun or raise --reps"
                   % NOISY)
    loff, lon = set(off["loss"]), set(on["loss"])
    ok = True
    if len(loff) == 1 and loff == lon:
        msg = "final loss identical in all %d runs, Python frames on and off" % (2 * reps)
    elif len(loff) > 1:
        msg = "final loss varies even with Python frames off (%d values): not comparable" % len(
            loff)
    else:
        msg = "final loss DIFFERS with Python frames on: off %s, on %s" % (sorted(loff),
                                                                           sorted(lon))
        ok = False
    out.append("    " + msg)
    return out, r, msg, ok


def bench_python(args, build, shim, steps, reps, old=None):
    """The --python section: what reading Python frames costs a training job. The numpy loop
    (examples/train_numpy.py) and a PyTorch CPU loop (tests/runtime/python/py_torch.py) under ndmem
    with NDMEM_PYTHON=0 and with the default (frames read for every tracked block); with
    --compare, the PyTorch loop under the old build's shim as well."""
    tsteps = args.torch_steps or (QUICK_TORCH_STEPS if args.quick else TORCH_STEPS)
    work = []
    if not args.no_numpy:
        py, ver, why = find_numpy_python()
        work.append(("numpy", py, "numpy %s" % ver, TRAIN, steps, why))
    py, ver, why = find_torch_python()
    work.append(("torch", py, "torch %s" % ver, TORCH_SCRIPT, tsteps, why))
    report = ["python: Python frames in allocation stacks, the default (on) against "
              "NDMEM_PYTHON=0 (off), under ndmem, %d repetitions; median seconds (+-half "
              "range), on / off = median of per-repetition ratios" % reps]
    report.append("    %-22s%20s%20s%10s" % ("", "NDMEM_PYTHON=0", "default", "on / off"))
    summary, ok, worst, probed, warn = [], True, [], False, None
    for name, py, ver, script, n, why in work:
        if py is None:
            report.append("  %s: skipped: %s" % (name, why))
            summary.append("python %s: skipped: %s" % (name, why))
            continue
        if not probed:
            warn, state = python_probe(build, py, shim, script, name)
            if warn:
                log(warn)
                report.insert(1, warn)
                summary.append(warn)
            report.insert(1, "  shim (a short default run of %s, its report): %s" % (name, state))
            summary.append("python: shim %s" % state)
            probed = True
        log("python: %s, %d steps x %d repetitions with %s (%s)" % (name, n, reps, py, ver))
        cmp = old if name == "torch" else None
        res = bench_python_workload(py, shim, script, n, reps, name, cmp)
        lines, r, msg, wok = report_python_workload(res, "%s, %s, %s" % (name, py, ver), n, reps)
        report += lines
        ok = ok and wok
        worst.append(r["loop"])
        summary.append("python %s (%d steps): on / off loop %.3fx, wall %.3fx (target <= %.2fx: "
                       "%s); %s" % (name, n, r["loop"], r["wall"], PY_TARGET,
                                    verdict(r["loop"], PY_TARGET), msg))
        if cmp:
            line = compare_line(old, name, ["loop", "wall"],
                                [{c: x[k] for c, x in res.items()} for k in ("loop", "wall")],
                                "python=1", "    ")
            differs, cok = old_loss(res["python=0"]["loss"], res[OLD]["loss"], script.name)
            report += [line] + (["    " + differs] if differs else [])
            summary += ["  " + line.strip()] + (["  " + differs] if differs else [])
            ok = ok and cok
    if worst:
        report.append("  on / off (worst training loop): %.3fx   target <= %.2fx: %s%s"
                      % (max(worst), PY_TARGET, verdict(max(worst), PY_TARGET),
                         " (the same shim twice: noise, not a cost)" if warn else ""))
    return report + [""], summary, ok

