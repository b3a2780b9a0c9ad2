#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark driver for ndmem: allocator churn and a numpy training loop, with and without the shim.

    python3 bench/run.py --build build [--reps 5] [--quick] [--report] [--workspace] [--limits] [--stress]
                         [--exact | --exact-only] [--python | --python-only] [--compare OLD_BUILD]
                         [--every | --every-only] [--every-reps N] [--no-cnn]

--report adds the ndmemreport benchmark: a synthetic trace of 1 GiB (and one a quarter of that
size) is written to a temporary directory, read by ndmemreport in text and JSON, and deleted.
--workspace adds the workspace benchmark: tensor_loop (a training-loop-shaped program) under
glibc, jemalloc, mimalloc and ndmem with workspaces off, on and on with cycle marks, against the
same schedule with its buffers allocated once; and churn and numpy with workspaces on and off.
--limits adds the cost of the limit checks: churn and numpy under ndmem with no limit, with
NDMEM_MAX_BYTES (far above use: every allocation checked, none refused) and with
NDMEM_MAX_PHYSICAL_BYTES and NDMEM_WARN_AT (resident memory read by step and by a thread).
--stress adds threads that come and go: stress and larson (blocks of 8 B-8 MiB freed by other
threads) under glibc, ndmem with workspaces on and off, jemalloc, ndmem+jemalloc and mimalloc,
each run under ndmem also checking that ndmem's counters equal the program's calls, with every
run's peak RSS (see rss_run in driver/rss.py).
--exact adds exact mode against heaptrack: churn, numpy and a PyTorch CPU loop (whole process,
import torch included: wall time, peak RSS and the size of each tool's file) under glibc, ndmem,
ndmem with every block tracked (NDMEM_TRACK_MIN=0) and heaptrack --raw (record only);
--exact-only runs just that.
--every adds what tracking every block costs: churn, a PyTorch MLP and import torch (whole
processes), threads made and ended every round (stress) and a CNN with 2 DataLoader workers, each
under plain, the shim's default settings, NDMEM_TRACK_MIN=8192 (sampled), NDMEM_TRACK_MIN=0
(every block) and heaptrack --raw: wall time and peak RSS, ratios to plain and the goals of every
block; --every-only runs just that (--every-reps N, --no-cnn; with --compare OLD_BUILD, OLD_BUILD's
shim with every block tracked is one more column).
--python adds the cost of Python frames: the numpy loop and a PyTorch CPU loop under ndmem with
NDMEM_PYTHON=0 and with the default (Python frames read); --python-only runs just that.
--compare OLD_BUILD runs another checkout's shim (OLD_BUILD/interpose/libndmem.so) as one more
configuration in churn, numpy, --python's PyTorch loop and --stress, and prints new / old ratios.

Standard library only; any python3 runs it. Configurations are interleaved within every
repetition (the machine may be noisy) and results are medians over the repetitions; ratios are
medians of the per-repetition ratios of runs made back to back. It exits non-zero only when the
setup is broken (shim or churn missing, the shim not loaded, a run crashing or computing a
different result), never because of a ratio. See bench/README.md. The benchmarks themselves
are in bench/driver/, one module each; this file reads the options and prints the report.
"""
import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from driver.churn import CHURN_OPS, QUICK_OPS, churn_section
from driver.common import QUICK_REPS, SetupError, command_line, log
from driver.compare import old_shim
from driver.exact import bench_exact
from driver.every import EVERY_OPS, QUICK_EVERY_OPS, bench_every
from driver.exact_torch import EXACT_TORCH_STEPS
from driver.limits import bench_limits
from driver.numpy_loop import QUICK_STEPS, TRAIN_STEPS, numpy_section
from driver.python import QUICK_TORCH_STEPS, TORCH_STEPS, bench_python
from driver.report import QUICK_REPORT_SIZE, REPORT_SIZE, bench_report, report_report
from driver.stress import bench_stress
from driver.workspace import WS_ITERS_QUICK, bench_workspace


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="Meson build directory (default: build)")
    ap.add_argument("--reps", type=int, help="repetitions (default 5, or %d with --quick)"
                    % QUICK_REPS)
    ap.add_argument("--quick", action="store_true", help="short smoke run: fewer ops, steps, reps")
    ap.add_argument("--ops", type=int, help="churn ops per thread (default %d, or %d with --quick;"
                    " --every's churn row: %d, or %d)" % (CHURN_OPS, QUICK_OPS, EVERY_OPS,
                                                        QUICK_EVERY_OPS))
    ap.add_argument("--steps", type=int, help="train_numpy.py steps (default %d, or %d with "
                    "--quick)" % (TRAIN_STEPS, QUICK_STEPS))
    ap.add_argument("--jemalloc", metavar="PATH", help="libjemalloc.so.2 to use ('' to skip)")
    ap.add_argument("--mimalloc", metavar="PATH", help="libmimalloc.so.2 to use ('' to skip)")
    ap.add_argument("--no-churn", action="store_true", help="skip the churn benchmark")
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy benchmark")
    ap.add_argument("--report", action="store_true", help="also benchmark ndmemreport on a "
                    "synthetic trace of --report-size bytes (written to --tmpdir, then deleted)")
    ap.add_argument("--report-size", type=int, help="trace bytes for --report (default %d, or %d "
                    "with --quick)" % (REPORT_SIZE, QUICK_REPORT_SIZE))
    ap.add_argument("--workspace", action="store_true", help="also benchmark workspaces: "
                    "tensor_loop under each allocator and ndmem with workspaces off/on/marked, "
                    "and churn and numpy with NDMEM_WORKSPACES=0 against 1")
    ap.add_argument("--limits", action="store_true", help="also benchmark the limit checks: "
                    "churn and numpy with NDMEM_MAX_BYTES and with NDMEM_MAX_PHYSICAL_BYTES + "
                    "NDMEM_WARN_AT set far above use, against ndmem without limits")
    ap.add_argument("--stress", action="store_true", help="also benchmark threads that come "
                    "and go: stress and larson under glibc, ndmem (workspaces on and off), "
                    "jemalloc, ndmem+jemalloc and mimalloc, checking ndmem's counts in every run")
    ap.add_argument("--exact", action="store_true", help="also benchmark exact mode: churn and "
                    "numpy under glibc, ndmem, ndmem with every block tracked (NDMEM_TRACK_MIN=0) "
                    "and heaptrack (record only)")
    ap.add_argument("--exact-only", action="store_true", help="run only the --exact section")
    ap.add_argument("--every", action="store_true", help="also benchmark tracking every block: "
                    "churn, a PyTorch MLP, import torch, threads made every round and a CNN with "
                    "2 DataLoader workers under plain, the shim (default settings, "
                    "NDMEM_TRACK_MIN=8192, NDMEM_TRACK_MIN=0) and heaptrack --raw: wall time and "
                    "peak RSS of the whole process")
    ap.add_argument("--every-only", action="store_true", help="run only the --every section")
    ap.add_argument("--every-reps", type=int, help="repetitions of --every (default --reps: 5, "
                    "or %d with --quick)" % QUICK_REPS)
    ap.add_argument("--no-cnn", action="store_true", help="skip the CNN row of --every")
    ap.add_argument("--python", action="store_true", help="also benchmark Python frames: the "
                    "numpy loop and a PyTorch CPU loop under ndmem with NDMEM_PYTHON=0 against "
                    "the default (frames read)")
    ap.add_argument("--python-only", action="store_true", help="run only the --python section")
    ap.add_argument("--torch-steps", type=int, help="PyTorch loop steps for --python (default "
                    "%d, or %d with --quick) and for --exact and --every (default %d)"
                    % (TORCH_STEPS, QUICK_TORCH_STEPS, EXACT_TORCH_STEPS))
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch run of --exact")
    ap.add_argument("--heaptrack", metavar="PATH", help="heaptrack to compare with under --exact "
                    "and --every (default: heaptrack on PATH; '' skips it)")
    ap.add_argument("--ws-iters", type=int, help="tensor_loop iterations for --workspace "
                    "(default: tensor_loop's own, 12; %d with --quick)" % WS_ITERS_QUICK)
    ap.add_argument("--ws-warmup", type=int, help="tensor_loop iterations left out of its "
                    "per-iteration figures (default: tensor_loop's own, 5; without --ws-iters, "
                    "7 more are measured)")
    ap.add_argument("--compare", metavar="OLD_BUILD", help="also run OLD_BUILD's "
                    "interpose/libndmem.so (the Meson build directory of another checkout) in "
                    "every repetition of churn, numpy, --python's PyTorch loop and --stress, and "
                    "print the new / old ratios")
    ap.add_argument("--tmpdir", default=tempfile.gettempdir(),
                    help="where --report writes its trace (default %(default)s)")
    args = ap.parse_args()
    if args.exact_only:
        args.exact = True
    if args.python_only:
        args.python = True
    if args.every_only:
        args.every = True
    # the default churn and numpy sections are left out
    only = args.exact_only or args.python_only or args.every_only
    reps = args.reps or (QUICK_REPS if args.quick else 5)
    ops = args.ops or (QUICK_OPS if args.quick else CHURN_OPS)
    steps = args.steps or (QUICK_STEPS if args.quick else TRAIN_STEPS)
    if reps < 1 or ops < 1 or steps < 1 or (args.torch_steps is not None and args.torch_steps < 1):
        ap.error("--reps, --ops, --steps and --torch-steps must be positive")
    if args.every_reps is not None and args.every_reps < 1:
        ap.error("--every-reps must be positive")
    if args.ws_warmup is not None and args.ws_warmup < 0:
        ap.error("--ws-warmup must not be negative")
    if args.ws_iters is not None and args.ws_iters <= (5 if args.ws_warmup is None
                                                       else args.ws_warmup):
        ap.error("--ws-iters must be more than the warm-up iterations (--ws-warmup, default 5)")
    report_size = args.report_size or (QUICK_REPORT_SIZE if args.quick else REPORT_SIZE)
    if report_size < 1 << 20:
        ap.error("--report-size must be at least 1 MiB")

    build = Path(args.build).resolve()
    shim = build / "interpose" / "libndmem.so"
    churn = build / "bench" / "churn"
    if not shim.is_file():
        raise SetupError("shim not found: %s (build it: ninja -C %s)" % (shim, args.build))
    old = old_shim(args.compare)
    needs_churn = not args.no_churn and (not args.python_only or args.exact or args.workspace
                                         or args.limits)
    if needs_churn and not os.access(churn, os.X_OK):
        raise SetupError("churn not found: %s (configure with -Dbenchmarks=true, then ninja -C %s)"
                         % (churn, args.build))

    started = time.time()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "?"
    host = "%s %s, %s CPUs, %s, load %.2f at start" % (
        platform.system(), platform.release(), os.cpu_count(), libc, load)
    log("ndmem bench: %s" % host)

    report, summary = [], []
    if not args.no_churn and not only:
        lines, lines2 = churn_section(args, shim, old, churn, ops, reps)
        report += lines
        summary += lines2

    loss_ok = True
    if not args.no_numpy and not only:
        lines, lines2, loss_ok = numpy_section(shim, old, steps, reps)
        report += lines
        summary += lines2

    ws_ok = True
    if args.workspace:
        lines, lines2, ws_ok = bench_workspace(args, build, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    limits_ok = True
    if args.limits:
        lines, lines2, limits_ok = bench_limits(args, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    if args.stress:
        lines, lines2 = bench_stress(args, build, reps, shim, old)
        report += lines
        summary += lines2

    exact_ok = True
    if args.exact:
        lines, lines2, exact_ok = bench_exact(args, build, shim, churn, ops, steps, reps)
        report += lines
        summary += lines2

    every_ok = True
    if args.every:
        lines, lines2, every_ok = bench_every(args, build, shim, old)
        report += lines
        summary += lines2

    python_ok = True
    if args.python:
        lines, lines2, python_ok = bench_python(args, build, shim, steps, reps, old)
        report += lines
        summary += lines2

    if args.report:
        res = bench_report(build, report_size, reps, args.tmpdir)
        lines, line = report_report(res, reps)
        report += lines + [""]
        summary.append(line)

    print()
    print("\n".join(report).rstrip())
    print()
    print("---- ndmem bench summary ----")
    print("command: %s   (in %s; interpreter %s, Python %s)" % (
        command_line(), os.getcwd(), sys.executable, platform.python_version()))
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("host: %s, %.2f at end; %s UTC, %.0f s; %d repetitions%s" % (
        host, load_end, time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        time.time() - started, args.every_reps or reps if args.every_only else reps,
        ", --quick" if args.quick else ""))
    print("\n".join(summary))
    print("-----------------------------")
    if not loss_ok:
        raise SetupError("train_numpy.py computes a different final loss under ndmem")
    if not ws_ok:
        raise SetupError("train_numpy.py computes a different final loss with NDMEM_WORKSPACES=1")
    if not limits_ok:
        raise SetupError("train_numpy.py computes a different final loss with limits set")
    if not exact_ok:
        raise SetupError("train_numpy.py computes a different final loss in exact mode or under "
                         "heaptrack")
    if not every_ok:
        raise SetupError("a PyTorch workload of --every computes a different loss under a tool")
    if not python_ok:
        raise SetupError("a training loop computes a different final loss with Python frames on")


if __name__ == "__main__":
    try:
        main()
    except SetupError as e:
        print("run.py: error: %s" % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
