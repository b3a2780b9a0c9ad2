// SPDX-License-Identifier: MIT
// metrics.c: NDMEM_METRICS, the process's counters as a Prometheus text-exposition file (format
// 0.0.4) for node_exporter's textfile collector, so a fleet's dashboards see what ndmem sees
// while the job runs. Written by the trace writer at every flush and at the final one: the whole
// text is built in a static buffer, written to PATH.tmp.<pid> and renamed over PATH, so a reader
// sees the previous file or the new one, never a part. No timestamps (the textfile collector
// rejects them); every process has its own pid label, so the files of many ranks merge.
#include "output/metrics.h"

#include "runtime/allocstat.h"
#include "runtime/config.h"
#include "account/counters.h"
#include "device/cuda_hooks.h"
#include "device/dws.h"
#include "common/fmt.h"
#include "limits/limits.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "ws/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> // rename(2) only: no stream is used
#include <string.h>
#include <unistd.h>

extern char **environ;

// 16 devices and 4 host kinds at 4 series each stay far below this; a text that does not fit is
// not written at all (a truncated file would be read as a valid one with series missing).
#define TEXT_MAX (32 * 1024)
#define PATH_CAP (4096 + ND_CONFIG_PATH_MAX + 256)

static struct {
  int on, warned;
  char dir[4096]; // the trace's folder, before a relative pattern ("" when the trace's is absolute)
  char path[PATH_CAP];
  char tmp[PATH_CAP + 32]; // path.tmp.<pid>
  char text[TEXT_MAX];
  size_t len;
  int full;
  char pid[24];
} metrics;

// A pattern with %p gives each process its own file; one without it would have a child replace
// its parent's file (a %% followed by p is a literal "%p" in the name, not the pid).
static int has_pid(const char *pat) {
  for (const char *p = pat; *p; p++)
    if (*p == '%') {
      if (p[1] == 'p') return 1;
      if (p[1]) p++;
    }
  return 0;
}

void nd_metrics_setup(const char *dir) {
  if (!nd_cfg.metrics[0]) return;
  if (nd_child != ND_ROOT && !has_pid(nd_cfg.metrics)) return;
  size_t n = strlen(dir);
  if (n >= sizeof metrics.dir) return;
  memcpy(metrics.dir, dir, n + 1);
  metrics.on = 1;
}

void nd_metrics_atfork_child(void) {
  if (!has_pid(nd_cfg.metrics)) metrics.on = 0;
  metrics.warned = 0;
}

static void warn_once(const char *what, const char *path, int err) {
  if (metrics.warned || nd_quiet()) return;
  metrics.warned = 1;
  nd_say_path_error(what, path, err, "tried again at every flush (NDMEM_METRICS)");
}

// ---------------------------------------------------------------- text

static void put(const char *s, size_t n) {
  if (metrics.len + n > sizeof metrics.text) {
    metrics.full = 1;
    return;
  }
  memcpy(metrics.text + metrics.len, s, n);
  metrics.len += n;
}

static void puts_(const char *s) { put(s, strlen(s)); }

// A label value: backslash, double quote and newline escaped, as the format requires.
static void put_value(const char *s) {
  for (; *s; s++) {
    if (*s == '\\') puts_("\\\\");
    else if (*s == '"') puts_("\\\"");
    else if (*s == '\n') puts_("\\n");
    else put(s, 1);
  }
}

static void put_u64(uint64_t v) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_u64(&b, v);
  put(b.data, b.len);
}

static void put_i64(int64_t v) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_i64(&b, v);
  put(b.data, b.len);
}

// The # HELP and # TYPE lines: once per metric, before its first sample.
static void family(const char *name, const char *type, const char *help) {
  puts_("# HELP ");
  puts_(name);
  put(" ", 1);
  puts_(help);
  puts_("\n# TYPE ");
  puts_(name);
  put(" ", 1);
  puts_(type);
  put("\n", 1);
}

// name{pid="P"[,key="value"]} (the value follows)
static void series(const char *name, const char *key, const char *value) {
  puts_(name);
  puts_("{pid=\"");
  puts_(metrics.pid);
  put("\"", 1);
  if (key) {
    put(",", 1);
    puts_(key);
    puts_("=\"");
    put_value(value);
    put("\"", 1);
  }
  puts_("} ");
}

static const char *const host_kinds[] = {"heap", "mmap", "pinned", "managed"};
_Static_assert(NDMEM_KIND_HEAP == 0 && NDMEM_KIND_MMAP == 1 && NDMEM_KIND_PINNED == 2 &&
                   NDMEM_KIND_MANAGED == 3 && NDMEM_KIND_DEVICE0 == 4,
               "host_kinds follows enum ndmem_kind");

enum { F_LIVE, F_PEAK, F_ALLOCS, F_FREES, F_COUNT };
static const struct {
  const char *name, *type, *help;
} per_kind[F_COUNT] = {
    {"ndmem_live_bytes", "gauge", "Bytes live now, by kind of memory (heap: usable sizes)."},
    {"ndmem_peak_bytes", "gauge", "Highest live bytes so far, by kind of memory."},
    {"ndmem_allocations_total", "counter", "Blocks or mappings allocated, by kind of memory."},
    {"ndmem_frees_total", "counter", "Blocks or mappings released, by kind of memory."},
};

static void build(uint64_t growth_sites, const uint64_t *anon) {
  metrics.len = 0;
  metrics.full = 0;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  memcpy(metrics.pid, b.data, b.len);
  metrics.pid[b.len] = 0;

  family("ndmem_info", "gauge", "ndmem's version; always 1.");
  puts_("ndmem_info{version=\"");
  put_value(ND_VERSION);
  puts_("\",pid=\"");
  puts_(metrics.pid);
  puts_("\"} 1\n");

  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  ndmem_device_stats_t dev[NDMEM_MAX_DEVICES];
  int used[NDMEM_MAX_DEVICES] = {0};
  if (nd_cuda_used())
    for (int d = 0; d < NDMEM_MAX_DEVICES; d++)
      used[d] = nd_cuda_device_stats(d, &dev[d]) == 0 && (dev[d].allocs > 0 || dev[d].arena_bytes);
  for (int f = 0; f < F_COUNT; f++) {
    family(per_kind[f].name, per_kind[f].type, per_kind[f].help);
    for (int k = 0; k < 4; k++) {
      const ndmem_kind_stats_t *ks = &s.kind[k];
      series(per_kind[f].name, "kind", host_kinds[k]);
      if (f == F_LIVE) put_i64(ks->live_bytes);
      else if (f == F_PEAK) put_i64(ks->peak_bytes);
      else put_u64(f == F_ALLOCS ? ks->allocs : ks->frees);
      put("\n", 1);
    }
    for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
      if (!used[d]) continue;
      char kind[16] = "device";
      nd_buf_reset(&b);
      nd_buf_u64(&b, (uint64_t)d);
      memcpy(kind + 6, b.data, b.len);
      kind[6 + b.len] = 0;
      series(per_kind[f].name, "kind", kind);
      if (f == F_LIVE) put_i64(dev[d].live_bytes);
      else if (f == F_PEAK) put_i64(dev[d].peak_bytes);
      else put_u64(f == F_ALLOCS ? dev[d].allocs : dev[d].frees);
      put("\n", 1);
    }
  }

  if (anon) { // the flush's reading (trace.c), the one its RESIDENT record has
    family("ndmem_resident_anon_bytes", "gauge",
           "Anonymous resident bytes (resident - shared of /proc/self/statm).");
    series("ndmem_resident_anon_bytes", NULL, NULL);
    put_u64(*anon);
    put("\n", 1);
  }

  // The allocator's own account (allocstat.c), as of its last reading: only when one was read
  // (an allocator ndmem cannot ask has no series, never a guessed 0).
  nd_rec_resident_t a;
  if (nd_allocstat_last(&a) == 0) {
    const char *who = a.allocator == ND_ALLOCATOR_GLIBC ? "glibc" : "jemalloc";
    family("ndmem_allocator_free_bytes", "gauge",
           "Bytes the program freed that the allocator keeps resident (glibc: mallinfo2 "
           "fordblks, less what a malloc_trim may have given back; jemalloc: resident - "
           "allocated), at its last reading.");
    series("ndmem_allocator_free_bytes", "allocator", who);
    put_u64(a.alloc_free_bytes - a.alloc_trimmed_bytes); // <= free (allocstat.c)
    put("\n", 1);
    family("ndmem_allocator_system_bytes", "gauge",
           "Bytes the allocator holds from the system (glibc: arena + hblkhd; jemalloc: "
           "resident), at its last reading.");
    series("ndmem_allocator_system_bytes", "allocator", who);
    put_u64(a.alloc_system_bytes);
    put("\n", 1);
  }

  nd_ws_totals_t w;
  nd_ws_totals(&w);
  static const struct {
    const char *name, *type, *help;
  } ws[] = {
      {"ndmem_workspace_hits_total", "counter", "Allocations served from workspace arenas."},
      {"ndmem_workspace_spills_total", "counter",
       "Routed allocations a workspace plan could not serve (served externally)."},
      {"ndmem_workspace_spill_bytes_total", "counter", "Bytes of those spilled allocations."},
      {"ndmem_workspace_arena_bytes", "gauge", "Bytes of the workspaces' planned arenas."},
  };
  uint64_t wv[] = {w.hits, w.spills, w.spill_bytes, w.arena_bytes};
  for (int i = 0; i < 4; i++) {
    family(ws[i].name, ws[i].type, ws[i].help);
    series(ws[i].name, NULL, NULL);
    put_u64(wv[i]);
    put("\n", 1);
  }

  // Device workspaces and device memory served from host memory (version 11), per device that
  // has either.
  static const struct {
    const char *name, *type, *help;
  } dv[] = {
      {"ndmem_device_workspace_hits_total", "counter",
       "Device allocations served from a device workspace's arena (no driver call)."},
      {"ndmem_device_workspace_spills_total", "counter",
       "Routed device allocations the workspace's plan could not serve (the driver's)."},
      {"ndmem_device_workspace_arena_bytes", "gauge", "Bytes of the device workspace's arenas."},
      {"ndmem_device_workspace_waits_total", "counter",
       "Waits that kept reused device memory safe (at frees, on the host, on streams)."},
      {"ndmem_device_host_allocations_total", "counter",
       "Device allocations served from page-locked host memory (NDMEM_ON_DEVICE_LIMIT=host)."},
      {"ndmem_device_host_bytes", "gauge", "Live bytes of those host-served device allocations."},
  };
  ndmem_device_ws_stats_t dws[NDMEM_MAX_DEVICES];
  int dshow[NDMEM_MAX_DEVICES] = {0}, any = 0;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    nd_dws_stats(d, &dws[d]);
    dshow[d] = used[d] && (dws[d].enabled || dev[d].host_allocs);
    any |= dshow[d];
  }
  for (int i = 0; any && i < 6; i++) {
    family(dv[i].name, dv[i].type, dv[i].help);
    for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
      if (!dshow[d]) continue;
      char dn[8];
      nd_buf_reset(&b);
      nd_buf_u64(&b, (uint64_t)d);
      memcpy(dn, b.data, b.len);
      dn[b.len] = 0;
      series(dv[i].name, "device", dn);
      const ndmem_device_ws_stats_t *w = &dws[d];
      uint64_t v[6] = {w->hits, w->spills, w->arena_bytes,
                       w->ctx_syncs + w->host_waits + w->stream_waits, dev[d].host_allocs,
                       (uint64_t)dev[d].host_live_bytes};
      put_u64(v[i]);
      put("\n", 1);
    }
  }

  uint64_t lb, lp;
  nd_limits_breaches(&lb, &lp);
  family("ndmem_limit_breaches_total", "counter",
         "Allocations that crossed NDMEM_MAX_BYTES or NDMEM_MAX_PHYSICAL_BYTES.");
  series("ndmem_limit_breaches_total", "limit", "max_bytes");
  put_u64(lb);
  put("\n", 1);
  series("ndmem_limit_breaches_total", "limit", "max_physical_bytes");
  put_u64(lp);
  put("\n", 1);

  family("ndmem_growth_sites", "gauge",
         "Allocation sites the growth detector found growing (NDMEM_GROWTH_CYCLES).");
  series("ndmem_growth_sites", NULL, NULL);
  put_u64(growth_sites);
  put("\n", 1);
}

// ---------------------------------------------------------------- file

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

// PATH, with the trace's folder before a relative pattern (an absolute one is used as given,
// wherever the trace goes); expanded at every write (a fork child's %p is its own pid). 0, or -1
// (said once).
static int resolve(void) {
  char rel[ND_CONFIG_PATH_MAX + 256];
  if (nd_config_expand_path(rel, sizeof rel, nd_cfg.metrics, environ) != 0) {
    warn_once("cannot expand NDMEM_METRICS", nd_cfg.metrics, EINVAL);
    return -1;
  }
  size_t dl = rel[0] == '/' ? 0 : strlen(metrics.dir), rl = strlen(rel);
  if (dl + rl + 2 > sizeof metrics.path) {
    warn_once("metrics path too long", rel, ENAMETOOLONG);
    return -1;
  }
  memcpy(metrics.path, metrics.dir, dl);
  if (dl) metrics.path[dl++] = '/';
  memcpy(metrics.path + dl, rel, rl + 1);
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, ".tmp.");
  nd_buf_str(&b, metrics.pid);
  size_t pl = strlen(metrics.path);
  if (pl + b.len + 1 > sizeof metrics.tmp) {
    warn_once("metrics path too long", rel, ENAMETOOLONG);
    return -1;
  }
  memcpy(metrics.tmp, metrics.path, pl);
  memcpy(metrics.tmp + pl, b.data, b.len);
  metrics.tmp[pl + b.len] = 0;
  return 0;
}

void nd_metrics_write(uint64_t growth_sites, const uint64_t *anon) {
  if (!metrics.on) return;
  int saved = errno;
  build(growth_sites, anon);
  if (metrics.full || resolve() != 0) {
    errno = saved;
    return;
  }
  // O_NOFOLLOW: a link planted at the temporary name is not followed; O_TRUNC: one left by a
  // killed writer of this pid (a pid reused) is overwritten, not appended to.
  int fd = open(metrics.tmp, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    warn_once("cannot create metrics file", metrics.tmp, errno);
    errno = saved;
    return;
  }
  // Opened, written and closed inside the trace's flush, which holds off the program's dup2
  // meanwhile (common/os.h: nd_os_fd_enter).
  fd = nd_os_fd_high(fd, 0); // other threads run: never above the soft limit
  int err = write_all(fd, metrics.text, metrics.len);
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(metrics.tmp, metrics.path) != 0) err = errno;
  if (err) {
    unlink(metrics.tmp);
    warn_once("cannot write metrics file", metrics.path, err);
  }
  errno = saved;
}
