#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bindings: runs a command without and with the shim preloaded, both with LD_DEBUG=bindings and
# LD_BIND_NOW=1 (every symbol bound as its object loads), and compares the loader's bindings: for
# every object and symbol bound in both runs, the object that provides it must be the same. The
# shim's own bindings are set aside: those from or to libndmem.so (the hooks it exists for) and
# those from the libraries only the shim brought (its libunwind, libzstd ...). Every process of
# the command is read (LD_DEBUG_OUTPUT writes one file per pid).
# Fails on any difference, or when the run without the shim bound no _Unwind_* symbol (then the
# command tested nothing of the C++ unwinder).
# usage: bindings.py LIBNDMEM CMD...
import collections
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")


def name(path):
    return os.path.basename(os.path.realpath(path)) if path.startswith("/") else path


def bindings(cmd, folder, extra):
    os.makedirs(folder)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_DEBUG")}
    env.update(extra, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=os.path.join(folder, "ld"),
               LD_BIND_NOW="1")
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=600)
    if r.returncode != 0:
        sys.exit("%s exited %d%s:\n%s" % (cmd[0], r.returncode, " under the shim" if extra else "",
                                           r.stderr[-2000:]))
    got = collections.defaultdict(set)  # (from object, symbol) -> objects it was bound to
    for f in os.listdir(folder):
        with open(os.path.join(folder, f), errors="replace") as fh:
            for ln in fh:
                m = LINE.search(ln)
                if m:
                    got[(name(m.group(1)), m.group(3))].add(name(m.group(2)))
    return got, r.stdout


def main():
    shim, cmd = sys.argv[1], sys.argv[2:]
    shim_name = name(shim)
    with tempfile.TemporaryDirectory() as tmp:
        plain, out_plain = bindings(cmd, os.path.join(tmp, "plain"), {})
        shimmed, out_shim = bindings(cmd, os.path.join(tmp, "shim"),
                                     {"LD_PRELOAD": shim,
                                      "NDMEM_OUTPUT": os.path.join(tmp, "ndmem.%p.trace")})
    if out_plain != out_shim:
        print("the command's output differs under the shim:\n--- plain\n%s--- shim\n%s"
              % (out_plain, out_shim))
        return 1
    objects = {k[0] for k in plain}
    compared = unwind = 0
    differ = []
    for key, targets in sorted(shimmed.items()):
        obj, sym = key
        if obj == shim_name or shim_name in targets or obj not in objects or key not in plain:
            continue
        compared += 1
        unwind += sym.startswith("_Unwind_")
        if targets != plain[key]:
            differ.append("%s: %s -> %s without the shim, %s with it" % (
                obj, sym, ",".join(sorted(plain[key])), ",".join(sorted(targets))))
    plain_unwind = sum(1 for k in plain if k[1].startswith("_Unwind_"))
    print("%d bindings compared (%d of _Unwind_* symbols; %d without the shim)"
          % (compared, unwind, plain_unwind))
    for d in differ[:40]:
        print("DIFFERS " + d)
    if differ:
        print("%d bindings differ under the shim" % len(differ))
        return 1
    if not plain_unwind or not unwind:
        print("no _Unwind_* symbol was bound: the command tested nothing of the unwinder")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
