#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_cuda_alloc: cuda_static (the static or the shared CUDA runtime) under the shim. Every count
# the program says it expects (device 0 allocs, frees, bytes, live, peak; pinned; managed) must be
# what ndmem counted, read three ways: in-process (ndmem_device_stats, ndmem_stats), in the
# report's "devices" (totals, and the plain and async classes) and counters, and as the one leak
# at exit, 3 MiB of device 0 at the
# source's LEAK line. Exits 77 without a usable GPU.
# usage: t_cuda_alloc.py LIBNDMEM NDMEMREPORT PROGRAM SOURCE   (PROGRAM '-': not built)
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucheck as g  # noqa: E402


def expectations(stdout):
    exp, inproc = {}, {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) > 2 and w[0] == "expect":
            exp[w[1]] = g.parse_fields(line[len("expect"):])
        elif len(w) > 2 and w[0] == "inprocess":
            inproc[w[1]] = g.parse_fields(line[len("inprocess"):])
    return exp, inproc


def main():
    shim, ndmemreport, prog, source = sys.argv[1:5]
    g.require_gpu()
    g.require_built(prog, "cuda_static")
    c = g.Checks()
    name = os.path.basename(prog)

    plain = g.run([prog], g.clean_env())
    g.must_succeed(plain, name + " without the shim")
    c.true("without the shim the program sees no ndmem", "inprocess none" in plain.stdout)

    tmp = c.tmpdir("ndmem-gpu-alloc.")
    res, trace = g.run_shim([prog], shim, tmp)
    g.must_succeed(res, name + " under the shim")
    print(res.stdout, end="")
    exp, inproc = expectations(res.stdout)
    for k in ("device0", "pool", "pinned", "managed"):
        if k not in exp:
            print("FAIL: the program printed no 'expect %s' line" % k)
            sys.exit(1)
    dev = exp["device0"]

    # in-process
    ds = inproc.get("device_stats")
    if c.true("in-process ndmem_device_stats answered", ds is not None):
        for f in ("allocs", "frees", "live", "peak"):
            c.eq("in-process device_stats %s" % f, ds[f], dev[f])
    for k in ("device0", "pinned", "managed"):
        got = inproc.get(k)
        if c.true("in-process ndmem_stats kind %s answered" % k, got is not None):
            for f in ("allocs", "frees", "alloc_bytes", "free_bytes", "live", "peak"):
                c.eq("in-process ndmem_stats %s %s" % (k, f), got[f], exp[k][f])

    # the report
    doc = g.report(ndmemreport, trace)
    d = g.device(doc, 0)
    for f, want in (("allocs", dev["allocs"]), ("frees", dev["frees"]),
                    ("live_bytes", dev["live"]), ("peak_bytes", dev["peak"])):
        c.eq("report devices[0].%s" % f, d.get(f), want)
    c.eq("report devices[0].failed", d.get("failed"), 0)
    # by class: cudaMalloc blocks ("plain") and the stream-ordered one ("async")
    pool = exp["pool"]
    for cls, want in (("plain", {f: dev[f] - pool[f] for f in
                                  ("allocs", "frees", "alloc_bytes", "free_bytes")}),
                      ("async", pool)):
        got = d.get(cls)
        if c.true("report devices[0] has the class %s" % cls, isinstance(got, dict)):
            for f in ("allocs", "frees", "alloc_bytes", "free_bytes"):
                c.eq("report devices[0].%s.%s" % (cls, f), got.get(f), want[f])
    for k in ("device0", "pinned", "managed"):
        got = g.kind(doc, k)
        if c.true("report counters.kinds has %s" % k, got is not None):
            for f, want in (("allocs", exp[k]["allocs"]), ("frees", exp[k]["frees"]),
                            ("live_bytes", exp[k]["live"]), ("peak_bytes", exp[k]["peak"])):
                c.eq("report kind %s %s" % (k, f), got.get(f), want)

    # the leak at exit: one group, device 0, 3 MiB, innermost frame in SOURCE at the LEAK line
    leak_lines = g.marked_lines(source, "LEAK")
    temp_lines = g.marked_lines(source, "TEMP")
    if len(leak_lines) != 1:
        print("FAIL: %s must mark exactly one LEAK line, has %d" % (source, len(leak_lines)))
        sys.exit(1)
    (leak_line, leak_text), = leak_lines.items()
    want_bytes = int(leak_text.split(" x ")[-1])
    leaks = doc["leaks"]
    c.true("leaks at exit are known", leaks.get("known") is True)
    found = []
    device_bytes = 0
    for grp in leaks.get("groups", []):
        line = g.innermost_line(grp, source)
        if grp.get("kind") == "device0":
            device_bytes += grp["bytes"]
        if line in temp_lines:
            c.true("no leak at line %d (freed: %s)" % (line, temp_lines[line]), False,
                   "%d bytes, kind %s" % (grp["bytes"], grp.get("kind")))
        if line == leak_line:
            found.append(grp)
    if c.eq("leak groups at %s:%d" % (os.path.basename(source), leak_line), len(found), 1):
        grp = found[0]
        c.eq("leak kind", grp.get("kind"), "device0")
        c.eq("leak bytes", grp.get("bytes"), want_bytes)
        c.eq("leak blocks", grp.get("blocks"), 1)
        c.eq("leak estimated", grp.get("estimated"), False)
    c.eq("device 0 bytes live at exit, all groups", device_bytes, want_bytes)
    c.done()


if __name__ == "__main__":
    main()
