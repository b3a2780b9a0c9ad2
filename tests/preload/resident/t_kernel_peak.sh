#!/bin/sh
# SPDX-License-Identifier: MIT
# t_kernel_peak: the report's headline peak is the kernel's, exact: resident.peak_rss_bytes
# within 1 % of what /usr/bin/time -f %M says of the same process (a C program, a numpy job and a
# PyTorch job); the C program's parts at the peak are its exact figures (a 32 MiB heap block, 1 MiB
# touched of a 256 MiB mapping, 255 MiB untouched shown apart) and with ndmem's own, the file
# pages and the kernel's counters add up to the peak within 2 MiB + 1 %; the flame graph's
# default (peak) width is never above the peak RSS, and the barely touched mapping is not the
# first of the top sites. /usr/bin/time runs the shim's process through env, so its own process
# is not traced. Skips (77) without /usr/bin/time; the Python jobs without their modules.
# usage: t_kernel_peak.sh LIBNDMEM T_KERNEL_PEAK NDMEMREPORT FIND_PYTHON
set -u
lib=$1 prog=$2 report=$3 find_python=$4
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (Debian: apt-get install time)" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# run NAME PROG ARGS...: under the shim, measured by /usr/bin/time; JSON and text reports
run() {
  name=$1
  shift
  /usr/bin/time -f %M -o "$tmp/$name.time" env LD_PRELOAD="$lib" NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 \
    NDMEM_OUTPUT="$tmp/$name.trace" "$@" >"$tmp/$name.out" 2>&1 || { no "$name: exit $?"; return 1; }
  "$report" --no-symbols --format json "$tmp/$name.trace" >"$tmp/$name.json" ||
    { no "$name: JSON report exit $?"; return 1; }
  "$report" --no-symbols "$tmp/$name.trace" >"$tmp/$name.txt" || no "$name: report exit $?"
  "$report" --no-symbols --format collapsed "$tmp/$name.trace" >"$tmp/$name.collapsed" ||
    no "$name: collapsed exit $?"
}

# check NAME: the peak within 1 % of /usr/bin/time's; the default flame width not above it
check() {
  python3 - "$tmp" "$1" <<'PY' || fail=1
import json, sys
tmp, name = sys.argv[1:]
kib = int(open("%s/%s.time" % (tmp, name)).read().split()[-1])
d = json.load(open("%s/%s.json" % (tmp, name)))["resident"]
peak = d["peak_rss_bytes"]
ok = d["peak_rss_read"] == "at_end" and abs(peak - kib * 1024) <= kib * 1024 // 100
width = sum(int(l.rsplit(" ", 1)[1]) for l in open("%s/%s.collapsed" % (tmp, name)) if l.strip())
if width > peak:
    ok = False
p = d["at_peak"]
print("%s: /usr/bin/time %d KiB, ndmem %d B (%.3f %%); flame width %d B; at the peak: %s" % (
    name, kib, peak, 100.0 * (peak - kib * 1024) / (kib * 1024), width, p))
if not ok:
    print("FAIL: %s: peak_rss_bytes %d (%s) against /usr/bin/time's %d KiB, flame width %d" % (
        name, peak, d["peak_rss_read"], kib, width))
sys.exit(0 if ok else 1)
PY
}

if run c "$prog"; then
  check c
  python3 - "$tmp/c.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))["resident"]
p, peak = d["at_peak"], d["peak_rss_bytes"]
M = 1 << 20
ok = True
def want(what, cond):
    global ok
    if not cond:
        print("FAIL: c: %s: %s" % (what, p))
        ok = False
want("heap in use: the 32 MiB block (usable size)", 32 * M <= p["heap_in_use_bytes"] < 32 * M + 64 * 1024)
want("mappings touched: 1 MiB exact", p["mappings_touched_bytes"] == M)
want("mappings untouched: 255 MiB exact", p["mappings_untouched_bytes"] == 255 * M)
named = (p["heap_in_use_bytes"] + (p["allocator_free_bytes"] or 0) + p["mappings_touched_bytes"]
         + p["workspace_idle_bytes"] + p["ndmem_bytes"] + p["file_bytes"] + p["shmem_bytes"])
# The parts with "other" and "between readings" add up to the peak exactly; without them within
# the stated tolerance (the C library's, the loader's and the stack's own pages, the kernel's
# per-CPU counters).
want("parts + other + between == peak", named + p["other_anonymous_bytes"] + p["between_readings_bytes"] == peak)
want("named parts within 2 MiB + 1 %% of the peak (%d of %d)" % (named, peak),
     abs(peak - named) <= 2 * M + peak // 100)
want("the 255 MiB untouched in no part", p["rss_bytes"] < 64 * M)
sys.exit(0 if ok else 1)
PY
  # the top sites: the 32 MiB heap block first, the mapping after it with its untouched bytes apart
  first=$(grep -m1 '^#1 ' "$tmp/c.txt")
  case $first in *heap*"peak 32.00 MiB"*) ;; *) no "c: top site #1 is not the heap block: $first" ;; esac
  grep -q '^#2   mmap     peak touched 1.00 MiB (1048576 B)' "$tmp/c.txt" ||
    no "c: the mapping's touched peak not #2"
  tr '\n' ' ' <"$tmp/c.txt" | grep -q 'mapped 256.00 MiB, never touched 255.00 MiB' ||
    no "c: the mapping's untouched bytes not shown apart"
  grep -q '^  peak RSS    .*the kernel.s high-water mark of resident' "$tmp/c.txt" ||
    no "c: no peak RSS headline"
fi

# numpy (OpenBLAS reserves its buffers) and PyTorch: the same process measured twice
if py=$("$find_python" numpy 2>/dev/null); then
  if run numpy "$py" -c 'import numpy as np
a = np.ones((1500, 1500)); b = a @ a; c = [np.ones(1 << 20) for _ in range(16)]
print(float(b[0, 0]) + len(c))'; then check numpy; fi
else
  echo "numpy: skipped (no interpreter with numpy)" >&2
fi
if py=$("$find_python" torch 2>/dev/null); then
  if run torch "$py" -c 'import torch
x = torch.randn(1000, 1000); y = x @ x; z = [torch.ones(1 << 20) for _ in range(16)]
print(float(y.sum()) * 0 + len(z))'; then check torch; fi
else
  echo "torch: skipped (no interpreter with torch)" >&2
fi
exit $fail
