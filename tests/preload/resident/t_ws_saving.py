#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_ws_saving: the workspace saving (docs/resident-memory.md), estimated with workspaces on, against
# the job measured with them off. t_ws_saving.c keeps a known amount of freed memory in glibc's
# heap from its first cycle on (HOLES: its temporaries, each between two pins), then maps a
# buffer, so its resident peak without workspaces is the holes plus the buffer. With them on, the
# report's saving must be within 25 % of the fall of the resident peak (resident.peak_bytes) from
# the off-run to the on-run, what workspaces truly kept off it (the off-run's allocator reading at
# its peak, retention.allocator_free_bytes, is printed only: a flush may read it mid-cycle, with
# holes in use, 20 % low in 1 run of 3); the memory the saving rests on (held_learning_bytes) is
# the holes to within their chunk headers, and since the arenas serve glibc holds none of it
# resident (held_serving_bytes). The three formats say the same sentence.
# usage: t_ws_saving.py LIBNDMEM T_WS_SAVING NDMEMREPORT
import glob
import json
import os
import subprocess
import sys
import tempfile

LIB, EXE, REP = (os.path.abspath(a) for a in sys.argv[1:4])
MIB = 1 << 20
N, BLOCK, STEP = 48, 4 * MIB, 64 << 10  # as in t_ws_saving.c
HOLES = sum(BLOCK + i * STEP for i in range(N))  # 262.5 MiB
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def run(ws, tmp):
    d = os.path.join(tmp, "ws" + ws)
    os.mkdir(d)
    # flushes every 20 ms: the resident points and the allocator's readings come from flushes
    env = dict(os.environ, LD_PRELOAD=LIB, NDMEM_OUTPUT=os.path.join(d, "t.%p.trace"),
               NDMEM_FLUSH_MS="20", NDMEM_SUMMARY="0", NDMEM_WORKSPACES=ws)
    env.pop("MALLOC_PERTURB_", None)  # meson's: glibc would write the pins, never to be touched
    p = subprocess.run([EXE], env=env, cwd=d, capture_output=True, text=True, timeout=120)
    # the pins are tracked bytes that rise for a while: ndmem may say so (a growing site)
    err = [l for l in p.stderr.splitlines() if not l.startswith("ndmem: growing: ")]
    check(p.returncode == 0 and not err, "ws=%s: exit %d, stderr %r" % (ws, p.returncode, err))
    traces = glob.glob(os.path.join(d, "t.*.trace"))
    check(len(traces) == 1, "ws=%s: %d traces" % (ws, len(traces)))
    out = {}
    for fmt in ("json", "text", "html"):
        r = subprocess.run([REP, "--format", fmt, traces[0]], capture_output=True, text=True)
        check(r.returncode == 0, "ws=%s %s: ndmemreport exit %d: %s" % (ws, fmt, r.returncode,
                                                                       r.stderr))
        out[fmt] = r.stdout
    return json.loads(out["json"]), out["text"], out["html"]


with tempfile.TemporaryDirectory() as tmp:
    on, on_text, on_html = run("1", tmp)
    off, off_text, _ = run("0", tmp)

e = on["workspaces_effect"]
saving, held = e["saving_bytes"], e["held_learning_bytes"]
print("on: saving %s, held while learning %s (%s reads), since serving %s, resident peak %d"
      % (saving, held, e["held_learning_reads"], e["held_serving_bytes"],
         on["resident"]["peak_bytes"]))
ret = off["retention"]["allocator_free_bytes"]
fall = off["resident"]["peak_bytes"] - on["resident"]["peak_bytes"]
print("off: allocator retention %d, resident peak %d: the peak fell by %d"
      % (ret, off["resident"]["peak_bytes"], fall))
check(isinstance(saving, int) and saving > 0, "on: no saving estimated: %r" % e)
if isinstance(saving, int):
    check(abs(saving - fall) <= fall / 4, "saving %d not within 25 %% of the resident peak's fall "
          "%d" % (saving, fall))
# glibc's chunk headers and the pins' headers: under 1 MiB beside the holes
check(isinstance(held, int) and HOLES <= held <= HOLES + MIB,
      "held while learning %r, the holes are %d" % (held, HOLES))
check(e["held_serving_bytes"] is not None and e["held_serving_bytes"] < 16 * MIB,
      "held since serving %r: the trim before the arena gave the holes back" % e["held_serving_bytes"])
check(off["workspaces_effect"]["saving_bytes"] is None, "off: a saving without workspaces")
# one sentence in every format
LABEL = "\n  saving      "
line = ""
if LABEL in on_text:  # the label's line and its continuations (indented past the label)
    rest = on_text.split(LABEL, 1)[1].split("\n")
    line = " ".join([rest[0]] + [l for l in __import__("itertools").takewhile(
        lambda l: l.startswith(" " * 14), rest[1:])])
    line = " ".join(line.split())

check(line.startswith("workspaces kept ~") and "since they serve" in line,
      "text: %r" % line[:200])
check("<b>saving</b>: workspaces kept ~" in on_html, "html: no saving sentence")
check(LABEL not in off_text, "off: the text says a saving")
if failures:
    sys.exit(1)
print("ok")
