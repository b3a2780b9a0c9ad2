# SPDX-License-Identifier: MIT
"""The configurations --exact compares (glibc, ndmem, ndmem with every block tracked, heaptrack
recording) and heaptrack's side of it: its version, and the raw file each of its runs writes."""
import os
import shutil
import subprocess

from .common import SetupError, trace_dir
from .configs import EnvConfig, WrapConfig

EXACT_PAIRS = [("ndmem exact", "glibc"), ("heaptrack", "glibc"), ("ndmem exact", "heaptrack"),
               ("ndmem exact", "ndmem"), ("ndmem", "glibc")]


def heaptrack_out():
    """heaptrack's -o argument: one file in the private trace folder, rewritten by every run."""
    return os.path.join(trace_dir(), "heaptrack")


def find_heaptrack(args):
    """The heaptrack to run: --heaptrack PATH (which must be executable), '' for none, else
    heaptrack on PATH (None when there is none)."""
    if args.heaptrack == "":
        return None
    ht = args.heaptrack or shutil.which("heaptrack")
    if args.heaptrack and not os.access(ht, os.X_OK):
        raise SetupError("heaptrack not found at %s" % ht)
    return ht


def heaptrack_version(ht):
    try:
        p = subprocess.run([ht, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (p.stdout.strip().splitlines() or ["?"])[-1]


def heaptrack_events(what):
    """Allocations (`+` lines) in the raw file heaptrack --raw wrote: proof that it recorded."""
    return heaptrack_raw(what)[0]


def heaptrack_raw(what):
    """(allocations, bytes) of the compressed raw file heaptrack --raw wrote, then removed."""
    files = [f for f in os.listdir(trace_dir()) if f.startswith("heaptrack.raw.")]
    if len(files) != 1:
        raise SetupError("%s: heaptrack wrote no raw file in %s (found %r)"
                         % (what, trace_dir(), files))
    path = os.path.join(trace_dir(), files[0])
    tool = {"zst": "zstd", "gz": "gzip"}.get(path.rsplit(".", 1)[-1])
    if not tool or not shutil.which(tool):
        raise SetupError("%s: cannot read %s (%s not found)" % (what, path, tool or "format"))
    size = os.path.getsize(path)
    p = subprocess.Popen([tool, "-dc", path], stdout=subprocess.PIPE)
    n = sum(1 for line in p.stdout if line.startswith(b"+ "))
    if p.wait() != 0:
        raise SetupError("%s: %s -dc %s failed" % (what, tool, path))
    os.unlink(path)
    return n, size



def exact_configs(shim, ht):
    configs = [EnvConfig("glibc", []), EnvConfig("ndmem", [str(shim)]),
               EnvConfig("ndmem exact", [str(shim)], {"NDMEM_TRACK_MIN": "0"})]
    if ht:
        configs.append(WrapConfig("heaptrack", [ht, "--raw", "-o", heaptrack_out()],
                                  check="heaptrack"))
    return configs

