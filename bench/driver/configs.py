# SPDX-License-Identifier: MIT
"""Configurations: what a run preloads (or which wrapper runs it), with which environment, and
the proof that a preload is live (ndmem's summary line, jemalloc's and mimalloc's own output)."""
from .common import SetupError, base_env, ndmem_lines


class Config:
    def __init__(self, name, preload, ideal=False, check=None):
        self.name, self.preload, self.ideal, self.check = name, preload, ideal, check

    def env(self, summary=False):
        env = base_env()
        if self.preload:
            env["LD_PRELOAD"] = " ".join(self.preload)
        env["NDMEM_SUMMARY"] = "1" if summary else "0"
        return env

    def check_env(self):
        """The environment of a preload check: ndmem prints its summary, jemalloc its
        statistics, mimalloc speaks."""
        env = self.env(summary=self.has_ndmem)
        if self.check == "jemalloc":
            env["MALLOC_CONF"] = "stats_print:true"
        elif self.check == "mimalloc":
            env["MIMALLOC_VERBOSE"] = "1"
        return env

    @property
    def has_ndmem(self):
        return self.name.startswith("ndmem")


class EnvConfig(Config):
    """A configuration with extra environment variables and extra program arguments."""

    def __init__(self, name, preload, extra_env=None, args=(), check=None):
        Config.__init__(self, name, preload, check=check)
        self.extra_env, self.args = dict(extra_env or {}), list(args)

    def env(self, summary=False):
        env = Config.env(self, summary)
        env.update(self.extra_env)
        return env


class WrapConfig(EnvConfig):
    """A configuration whose command runs under a wrapper program (heaptrack CMD)."""

    def __init__(self, name, wrap, extra_env=None, check=None):
        EnvConfig.__init__(self, name, [], extra_env, check=check)
        self.wrap = list(wrap)


def shim_lines(what, env, stderr, why="the shim is not loaded or not intercepting"):
    """ndmem's summary lines on stderr of a run with NDMEM_SUMMARY=1; none is an error."""
    lines = ndmem_lines(stderr)
    if not lines:
        raise SetupError("%s: no line starting with 'ndmem[' on stderr with NDMEM_SUMMARY=1 "
                         "and LD_PRELOAD=%r: %s.\nstderr was:\n%s"
                         % (what, env["LD_PRELOAD"], why, stderr.strip()))
    return lines


def verify_allocator(cfg, p, what):
    """The preloaded allocator is the one named: it printed its statistics when asked to."""
    if cfg.check == "jemalloc" and "jemalloc statistics" not in p.stderr:
        raise SetupError("%s: jemalloc did not print its statistics with MALLOC_CONF="
                         "stats_print:true; is %s really jemalloc?" % (what, cfg.preload[-1]))
    if cfg.check == "mimalloc" and "mimalloc:" not in p.stderr:
        raise SetupError("%s: mimalloc printed nothing with MIMALLOC_VERBOSE=1; is %s really "
                         "mimalloc?" % (what, cfg.preload[-1]))


def allocator_configs(cls, shim, lib, name, behind=True):
    """The allocator LIB (None: not found or skipped) preloaded alone as NAME and, if BEHIND,
    chained behind the shim as ndmem+NAME; both proven live by NAME's own output."""
    if not lib:
        return []
    configs = [cls(name, [lib], check=name)]
    if behind:
        configs.append(cls("ndmem+" + name, [str(shim), lib], check=name))
    return configs
