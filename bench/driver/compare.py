# SPDX-License-Identifier: MIT
"""--compare OLD_BUILD: the shim of another checkout's Meson build runs as one more
configuration, "ndmem old", interleaved in every repetition of the benchmarks of the shim's cost
(churn at default settings, the numpy loop, --python's PyTorch loop, --stress's workloads); each
then prints the median of the per-repetition new / old ratios and a one-line verdict."""
from pathlib import Path

from .common import SetupError, ratio, spread

OLD = "ndmem old"    # the configuration's name: it starts with "ndmem", so it is checked as a shim
COMPARE_NOISE = 3.0  # +-%: a new / old ratio this close to 1 is unchanged, whatever the spread


def old_shim(old_build):
    """OLD_BUILD's interpose/libndmem.so, or None without --compare."""
    if old_build is None:
        return None
    shim = Path(old_build).resolve() / "interpose" / "libndmem.so"
    if not shim.is_file():
        raise SetupError("--compare: shim not found: %s (build it: ninja -C %s)"
                         % (shim, old_build))
    return shim


def compare_line(old, label, tags, tables, new="ndmem", indent="  "):
    """The new / old line of one benchmark. tables holds, per measure (tags, e.g. 1T and 2T),
    every configuration's samples by name: NEW's and OLD's give the median of the per-repetition
    ratios. The noise of a ratio is twice the largest +-% spread of any configuration (the
    machine's noise in this run; a ratio of two figures each off by s% can be off by 2s%), at
    least COMPARE_NOISE. The verdict is unchanged within noise where every ratio is within its
    noise or its per-repetition ratios fall on both sides of 1, else slower or faster, naming the
    measures that moved."""
    rs, noise, slower, faster = [], [], [], []
    for tag, table in zip(tags, tables):
        each = [x / y for x, y in zip(table[new], table[OLD])]
        r = ratio(table[new], table[OLD])
        n = max([COMPARE_NOISE] + [2 * spread(xs) for xs in table.values()])
        rs.append(r)
        noise.append(n)
        if 100.0 * abs(r - 1.0) > n and not min(each) <= 1.0 <= max(each):
            (slower if r > 1.0 else faster).append(tag)
    if not slower and not faster:
        word = "unchanged within noise"
    else:
        word = ", ".join("%s (%s)" % (w, ", ".join(ts))
                         for w, ts in (("slower", slower), ("faster", faster)) if ts)
    head = " ".join(x for x in (label, "/".join(tags)) if x)
    return "%s%s: %s / %s (--compare %s) %s, noise +-%s%%: %s" % (
        indent, head, new, OLD, old.parent.parent, "/".join("%.3fx" % r for r in rs),
        "/".join("%.0f" % n for n in noise), word)


def old_loss(base, old_runs, what):
    """(a line or None, ok): the old shim's final losses must be the ones of BASE's runs (when
    those agree among themselves)."""
    lb, lo = set(base), set(old_runs)
    if len(lb) != 1 or lo == lb:
        return None, True
    return "final loss DIFFERS under %s (%s): %s, %s %s" % (OLD, what, sorted(lb), OLD,
                                                             sorted(lo)), False
