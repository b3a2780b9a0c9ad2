# SPDX-License-Identifier: MIT
"""The benchmark driver behind bench/run.py, one module per benchmark: churn, numpy_loop,
workspace, limits, stress, exact and exact_torch, every (the cost of tracking every block),
python, and report (ndmemreport reading a large trace); compare runs another build's shim
beside this one (--compare). What they share: common (running a program, medians and ratios),
rss (peak RSS through a helper), configs (what a configuration preloads and the proof that it
is live), scripts (the training scripts and their interpreters) and heaptrack (the reference of
--exact and --every)."""
