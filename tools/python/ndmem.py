# SPDX-License-Identifier: MIT
"""Workspace marks for Python programs run under libndmem.so (through ctypes).

    import ndmem
    for batch in loader:
        with ndmem.cycle():          # one iteration: learned once, then served from a workspace
            loss = step(batch)
    with ndmem.workspace("eval"):    # a named workspace of its own
        evaluate()
    print(ndmem.stats())             # this thread's workspaces
    ndmem.set_limit("max_bytes", "8G")   # NDMEM_MAX_BYTES while the program runs
    print(ndmem.limits())            # limits, tracked and resident bytes, breaches

Without the shim (not preloaded) every function is a no-op and stats() returns [], so a program
can keep its marks whether or not it runs under ndmem. Marks are per thread, as in ndmem.h.
"""
import contextlib
import ctypes

__all__ = ["cycle", "workspace", "configure", "stats", "limits", "set_limit", "loaded"]


class _WsStats(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32)] + [
        (f, ctypes.c_uint64) for f in (
            "cycles", "learned_cycles", "arena_bytes", "plan_peak_bytes", "plan_sum_bytes",
            "hits", "spills", "spill_bytes", "escapes", "relearns", "deviations", "pinned_bytes")]


class _Limits(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("version", ctypes.c_uint32),
                ("max_bytes", ctypes.c_int64), ("max_physical_bytes", ctypes.c_int64),
                ("warn_at", ctypes.c_int64), ("on_limit", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("tracked_bytes", ctypes.c_int64),
                ("physical_bytes", ctypes.c_int64)] + [
        (f, ctypes.c_uint64) for f in (
            "physical_reads", "since_reading", "breaches_bytes", "breaches_physical", "failed",
            "reliefs", "relief_bytes", "snapshots", "ram_bytes", "cgroup_bytes")]


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
    try:
        lim = (lib.ndmem_limits, lib.ndmem_limit_set)
    except AttributeError:
        return fns
    lim[0].argtypes = [ctypes.POINTER(_Limits)]
    lim[0].restype = ctypes.c_int
    lim[1].argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lim[1].restype = ctypes.c_int
    return fns + lim


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


_ACTIONS = ("fail", "warn", "abort")


def limits():
    """The limits and where the process stands (ndmem_limits), as a dict; {} without the shim.
    Bytes; 0 means no limit; physical_bytes is -1 before the first reading."""
    if not _fns or len(_fns) < 8:
        return {}
    l = _Limits()
    l.size = ctypes.sizeof(l)
    if _fns[6](ctypes.byref(l)) != 0:
        return {}
    d = {f: getattr(l, f) for f, _ in _Limits._fields_ if f not in ("size", "version", "reserved")}
    d["on_limit"] = _ACTIONS[l.on_limit] if 0 <= l.on_limit < 3 else l.on_limit
    return d


def set_limit(name, value):
    """Changes a limit while the program runs (ndmem_limit_set): name is max_bytes,
    max_physical_bytes, warn_at or on_limit; value as in the NDMEM_* variables ("8G", "75%",
    "off"; "fail", "warn", "abort"). True when it applied."""
    if not _fns or len(_fns) < 8:
        return False
    return _fns[7](name.encode(), str(value).encode()) == 0
