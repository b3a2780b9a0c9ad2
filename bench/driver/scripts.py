# SPDX-License-Identifier: MIT
"""The training scripts the driver times (examples/train_numpy.py,
tests/runtime/python/py_torch.py): the interpreter that can run each, one run under the shim with
its loop time and final loss, and every configuration run once per repetition in a rotating
order."""
import os
import re
import shutil
import subprocess
import sys

from .common import REPO, SetupError, base_env, log, median, ratio, run, spread

TRAIN = REPO / "examples" / "train_numpy.py"
TORCH_SCRIPT = REPO / "tests" / "runtime" / "python" / "py_torch.py"


def find_python_with(module, script, explicit_only=True):
    """(interpreter, MODULE's version, None) or (None, None, why not): the first of
    $NDMEM_TEST_PYTHON (alone when set and explicit_only), /usr/bin/python3, this interpreter and
    python3 on PATH that can import MODULE, to run SCRIPT."""
    if not script.is_file():
        return None, None, "%s not found" % script
    explicit = os.environ.get("NDMEM_TEST_PYTHON")
    cands = [explicit] if explicit else []
    if not (explicit and explicit_only):
        for c in ["/usr/bin/python3", sys.executable, shutil.which("python3")]:
            if c and c not in cands:
                cands.append(c)
    probe = ["-c", "import %s; print(%s.__version__)" % (module, module)]
    tried = []
    for c in cands:
        try:
            p = subprocess.run([c] + probe, env=base_env(), capture_output=True, text=True,
                               timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append("%s: %s" % (c, e))
            continue
        if p.returncode == 0:
            return c, p.stdout.strip(), None
        last = (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]
        tried.append("%s: %s" % (c, last))
    src = "NDMEM_TEST_PYTHON" if explicit and explicit_only else "candidates"
    return None, None, "no interpreter can import %s (%s tried: %s)" % (module, src,
                                                                        "; ".join(tried))


def find_numpy_python():
    """(interpreter, numpy version, None) or (None, None, why not): what runs TRAIN."""
    return find_python_with("numpy", TRAIN)


def find_torch_python():
    """(interpreter, torch version, None) or (None, None, why not): what runs TORCH_SCRIPT; the
    candidates are find_numpy_python's, $NDMEM_TEST_PYTHON first."""
    return find_python_with("torch", TORCH_SCRIPT, explicit_only=False)


def loop_and_loss(p, what):
    """(loop seconds, final loss line) of a training script's run: it prints `time S s` on
    stderr and `final loss` on stdout."""
    m = re.search(r"^time ([0-9.]+) s", p.stderr, re.M)
    loss = [ln for ln in p.stdout.splitlines() if ln.startswith("final loss")]
    if not m or not loss:
        raise SetupError("%s: missing 'time ... s' on stderr or 'final loss' on stdout" % what)
    return float(m.group(1)), loss[-1]


def script_once(py, shim, script, steps, extra_env, what, summary=False, env=None):
    """One run of a training script that prints `final loss` (stdout) and `time S s` (stderr)
    under the shim (plain when shim is None): (wall seconds, loop seconds, final loss line,
    stderr)."""
    if env is None:
        env = base_env()
        if shim is not None:
            env.update({"LD_PRELOAD": str(shim), "NDMEM_SUMMARY": "1" if summary else "0"})
    env.update(extra_env)
    p, wall = run([py, str(script), "--steps", str(steps)], env, what, 900)
    loop, loss = loop_and_loss(p, what)
    return wall, loop, loss, p.stderr


def train_once(py, shim, steps, with_ndmem, summary=False, extra_env=None, label=None):
    what = "train_numpy.py (%s)" % (label or ("ndmem" if with_ndmem else "plain"))
    return script_once(py, shim if with_ndmem else None, TRAIN, steps, extra_env or {}, what,
                       summary)


def interleaved(configs, reps, run_one, done):
    """Runs every (name, env) configuration once per repetition, in an order that rotates from
    one repetition to the next; run_one(name, env) gives (wall, loop, loss). Returns
    {name: {"wall": [...], "loop": [...], "loss": [...]}}; `done` % (rep, reps) is logged."""
    res = {n: {"wall": [], "loop": [], "loss": []} for n, _ in configs}
    for rep in range(reps):
        k = rep % len(configs)
        for n, e in configs[k:] + configs[:k]:
            wall, loop, loss = run_one(n, e)
            res[n]["wall"].append(wall)
            res[n]["loop"].append(loop)
            res[n]["loss"].append(loss)
        log(done % (rep + 1, reps))
    return res


LABELS = {"wall": "whole process (wall)", "loop": "training loop"}


def time_rows(base, other, keys, indent, width):
    """The rows of a two-configuration table of a training script: per key ("wall", "loop"),
    the median seconds (+-half range) of BASE and of OTHER and other / base (median of the
    per-repetition ratios). Returns (rows, {key: ratio})."""
    rows, r = [], {}
    fmt = "%s%%-22s%%%ds%%%ds%%10s" % (indent, width, width)
    for key in keys:
        r[key] = ratio(other[key], base[key])
        rows.append(fmt % (
            LABELS[key], "%.3f (+-%.0f%%)" % (median(base[key]), spread(base[key])),
            "%.3f (+-%.0f%%)" % (median(other[key]), spread(other[key])), "%.3fx" % r[key]))
    return rows, r


def skip(report, summary, msg):
    """A part that cannot run (no interpreter): its one line goes to the report and summary."""
    report.extend([msg, ""])
    summary.append(msg)
