# SPDX-License-Identifier: MIT
"""Workspace marks for Python programs run under libndmem.so (through ctypes).

    import ndmem
    for batch in loader:
        with ndmem.cycle():          # one iteration: learned once, then served from a workspace
            loss = step(batch)
    with ndmem.workspace("eval"):    # a named workspace of its own
        evaluate()
    print(ndmem.stats())             # this thread's workspaces

Without the shim (not preloaded) every function is a no-op and stats() returns [], so a program
can keep its marks whether or not it runs under ndmem. Marks are per thread, as in ndmem.h.
"""
import contextlib
import ctypes

__all__ = ["cycle", "workspace", "configure", "stats", "loaded"]


class _WsStats(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32)] + [
        (f, ctypes.c_uint64) for f in (
            "cycles", "learned_cycles", "arena_bytes", "plan_peak_bytes", "plan_sum_bytes",
            "hits", "spills", "spill_bytes", "escapes", "relearns", "deviations", "pinned_bytes")]


def _resolve():
    try:
        lib = ctypes.CDLL(None)  # the process itself: a preloaded shim's symbols are global
        fns = (lib.ndmem_cycle_begin, lib.ndmem_cycle_end, lib.ndmem_workspace_enter,
               lib.ndmem_workspace_leave, lib.ndmem_ws_stats, lib.ndmem_workspace_configure)
    except (OSError, AttributeError):
        return None
    fns[2].argtypes = [ctypes.c_char_p]
    fns[4].argtypes = [ctypes.POINTER(_WsStats), ctypes.c_int]
    fns[4].restype = ctypes.c_int
    fns[5].argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    fns[5].restype = ctypes.c_int
    return fns


_fns = _resolve()


def loaded():
    """True when libndmem.so is preloaded into this process."""
    return _fns is not None


@contextlib.contextmanager
def cycle():
    """One iteration of the program's repeated work (ndmem_cycle_begin/end)."""
    if _fns:
        _fns[0]()
    try:
        yield
    finally:
        if _fns:
            _fns[1]()


@contextlib.contextmanager
def workspace(name):
    """A cycle of the named workspace NAME (ndmem_workspace_enter/leave)."""
    if _fns:
        _fns[2](name.encode())
    try:
        yield
    finally:
        if _fns:
            _fns[3]()


def configure(name=None, **options):
    """Sets the policies of workspace NAME (None: the one cycle() uses), e.g.
    configure("eval", learning="over_time", cycles=4, spill="fail", max_size="1g").
    Returns True when every option applied (ndmem_workspace_configure)."""
    if not _fns:
        return False
    opts = ",".join("%s=%s" % kv for kv in options.items())
    return _fns[5](name.encode() if name else None, opts.encode()) == 0


def stats():
    """This thread's workspaces, as a list of dicts (empty without the shim)."""
    if not _fns:
        return []
    buf = (_WsStats * 16)()
    n = min(_fns[4](buf, 16), 16)
    out = []
    for s in buf[:n]:
        d = {f: getattr(s, f) for f, _ in _WsStats._fields_[1:]}
        d["name"] = s.name.decode(errors="replace")
        out.append(d)
    return out
