# SPDX-License-Identifier: MIT
"""numpy, the real job: examples/train_numpy.py (a two-layer MLP, OpenBLAS matmuls) plain and
under ndmem, whole process and training loop; and the same loop under ndmem with other
settings, which --workspace and --limits use."""
from .common import NOISY, SetupError, log, ndmem_lines, spread, verdict
from .compare import OLD, compare_line, old_loss
from .scripts import find_numpy_python, interleaved, skip, time_rows, train_once

TRAIN_STEPS = 300        # train_numpy.py's default; about 3 s a run
QUICK_STEPS = 30
TRAIN_TARGET = 1.05      # ndmem / plain, whole-process wall time


def bench_numpy(py, shim, steps, reps, old=None):
    """train_numpy.py plain and under the shim (and the old one with --compare), each
    repetition in a rotated order: {name: {"wall", "loop", "loss"}}."""
    shims = [("plain", None), ("ndmem", shim)] + ([(OLD, old)] if old else [])
    for n, s in shims[1:]:
        _, _, _, err = train_once(py, s, 3, True, summary=True, label=n)
        if not ndmem_lines(err):
            raise SetupError("train_numpy.py under LD_PRELOAD=%s with NDMEM_SUMMARY=1 printed no "
                             "'ndmem[' line: the shim is not loaded.\nstderr was:\n%s"
                             % (s, err.strip()))
    train_once(py, shim, 3, False)  # warm-up (imports, page cache)
    log("numpy: shim verified, %d steps x %d repetitions with %s" % (steps, reps, py))
    return interleaved(shims, reps,
                       lambda n, s: train_once(py, s, steps, s is not None, label=n)[:3],
                       "numpy: repetition %d/%d done")


def report_numpy(res, py, npver, steps, reps):
    plain, nd = res["plain"], res["ndmem"]
    out = ["numpy: examples/train_numpy.py --steps %d, %s (numpy %s), %d repetitions"
           % (steps, py, npver, reps)]
    out.append("  %-22s%16s%16s%10s" % ("median seconds", "plain", "ndmem", "ratio"))
    rows, r = time_rows(plain, nd, ("wall", "loop"), "  ", 16)
    out += rows
    if any(spread(res[k][key]) > NOISY for k in ("plain", "ndmem") for key in ("wall", "loop")):
        out.append("  note: spread above +-%.0f%%: the machine was busy (OpenBLAS threads are "
                   "sensitive to other load); rerun or raise --reps" % NOISY)
    out.append("  per run (wall s, plain|ndmem): " + "  ".join(
        "%.2f|%.2f" % (a, b) for a, b in zip(plain["wall"], nd["wall"])))
    out.append("  ndmem / plain (wall): %.3fx   target <= %.2fx: %s"
               % (r["wall"], TRAIN_TARGET, verdict(r["wall"], TRAIN_TARGET)))
    lp, ln = set(plain["loss"]), set(nd["loss"])
    if len(lp) == 1 and lp == ln:
        loss_msg = "final loss identical in all %d runs, plain and ndmem: %s" % (
            2 * reps, next(iter(lp))[len("final loss "):])
        loss_ok = True
    elif len(lp) > 1:
        loss_msg = ("final loss varies even without ndmem (%d distinct values): not comparable"
                    % len(lp))
        loss_ok = True
    else:
        loss_msg = "final loss DIFFERS under ndmem: plain %s, ndmem %s" % (sorted(lp), sorted(ln))
        loss_ok = False
    out.append("  " + loss_msg)
    return out, r, loss_msg, loss_ok


def numpy_section(shim, old, steps, reps):
    """The default numpy section: (report lines, summary lines, whether the losses agree)."""
    py, npver, why = find_numpy_python()
    if py is None:
        report, summary = [], []
        skip(report, summary, "numpy: skipped: %s" % why)
        return report, summary, True
    res = bench_numpy(py, shim, steps, reps, old)
    lines, r, loss_msg, loss_ok = report_numpy(res, py, npver, steps, reps)
    summary = ["numpy train_numpy.py (%d steps, %s, numpy %s): ndmem/plain wall %.3fx, loop "
               "%.3fx (target <= %.2fx: %s); %s" % (steps, py, npver, r["wall"], r["loop"],
                                                   TRAIN_TARGET, verdict(r["wall"], TRAIN_TARGET),
                                                   loss_msg)]
    if old:
        line = compare_line(old, "numpy", ["wall", "loop"],
                            [{n: x[k] for n, x in res.items()} for k in ("wall", "loop")])
        differs, ok = old_loss(res["plain"]["loss"], res[OLD]["loss"], "train_numpy.py")
        lines += [line] + (["  " + differs] if differs else [])
        summary += [line] + (["  " + differs] if differs else [])
        loss_ok = loss_ok and ok
    return lines + [""], summary, loss_ok


def bench_numpy_envs(py, shim, steps, reps, configs, what):
    """train_numpy.py under ndmem once per (name, extra environment) in configs, each repetition
    in a rotated order; first a short run of each proves the shim is live (and warms up).
    Returns {name: {"wall": [...], "loop": [...], "loss": [...]}}."""
    for n, e in configs:
        _, _, _, err = train_once(py, shim, 3, True, summary=True, extra_env=e, label=n)
        if not ndmem_lines(err):
            raise SetupError("train_numpy.py (%s) under LD_PRELOAD=%s with %r printed no 'ndmem[' "
                             "line with NDMEM_SUMMARY=1: the shim is not loaded.\nstderr was:\n%s"
                             % (n, shim, e, err.strip()))
    return interleaved(configs, reps,
                       lambda n, e: train_once(py, shim, steps, True, extra_env=e, label=n)[:3],
                       "%s: numpy repetition %%d/%%d done" % what)
