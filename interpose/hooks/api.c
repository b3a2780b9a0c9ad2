// SPDX-License-Identifier: MIT
// api.c: the ndmem_* functions of include/ndmem.h.
#include "device/cuda_hooks.h"
#include "device/dws.h"
#include "limits/limits.h"
#include "runtime/shim.h"
#include "ws/ws.h"

#include <string.h>

#ifndef ND_VERSION
#define ND_VERSION "unknown"
#endif

ND_EXPORT int ndmem_stats(ndmem_stats_t *out, int scope) {
  nd_tls_t *t = &nd_tls;
  int mode = nd_thread_prepare(t);
  if (!out || !nd_accounting_on() || (mode != ND_T_COUNT && mode != ND_T_BUSY)) return -1;
  size_t want = out->size && out->size < sizeof(ndmem_stats_t) ? out->size : sizeof(ndmem_stats_t);
  ndmem_stats_t s;
  if (scope == NDMEM_SCOPE_THREAD) {
    if (!t->shard) return -1;
    nd_counters_snapshot_shard(t->shard, &s);
  } else {
    // Publish this thread's pending deltas so that a single-threaded caller sees an exact peak.
    if (t->shard)
      for (int i = 0; i < NDMEM_KIND_COUNT; i++) nd_shard_publish(t->shard, i);
    nd_counters_snapshot_process(&s);
  }
  s.size = (uint32_t)want;
  memcpy(out, &s, want);
  return 0;
}

ND_EXPORT const char *ndmem_version(void) { return ND_VERSION; }

ND_EXPORT void ndmem_cycle_begin(void) { nd_ws_cycle_begin(NULL); }
ND_EXPORT void ndmem_cycle_end(void) { nd_ws_cycle_end(); }
ND_EXPORT void ndmem_workspace_enter(const char *name) { nd_ws_cycle_begin(name ? name : "cycle"); }
ND_EXPORT void ndmem_workspace_leave(void) { nd_ws_cycle_end(); }
ND_EXPORT int ndmem_workspace_configure(const char *name, const char *options) {
  return nd_ws_configure(name, options);
}
ND_EXPORT int ndmem_ws_stats(ndmem_ws_stats_t *out, int max) { return nd_ws_stats(out, max); }

ND_EXPORT int ndmem_limits(ndmem_limits_t *out) {
  nd_tls_t *t = &nd_tls;
  int mode = nd_thread_prepare(t);
  if (!out || !nd_accounting_on() || (mode != ND_T_COUNT && mode != ND_T_BUSY)) return -1;
  size_t want = out->size && out->size < sizeof(ndmem_limits_t) ? out->size : sizeof(ndmem_limits_t);
  ndmem_limits_t l;
  memset(&l, 0, sizeof l);
  nd_limits_get(&l);
  l.size = (uint32_t)want;
  memcpy(out, &l, want);
  return 0;
}

ND_EXPORT int ndmem_limit_set(const char *name, const char *value) {
  nd_tls_t *t = &nd_tls;
  int mode = nd_thread_prepare(t);
  if (!nd_accounting_on() || (mode != ND_T_COUNT && mode != ND_T_BUSY)) return -1;
  return nd_limits_set(name, value);
}

// A statistics struct that starts with its caller-set `size` (uint32_t): filled by get() for
// `device`, then copied up to what the caller's version of the struct holds. 0, or -1.
static int sized_stats(void *out, size_t full, int device, int (*get)(int, void *)) {
  nd_tls_t *t = &nd_tls;
  int mode = nd_thread_prepare(t);
  if (!out || !nd_accounting_on() || (mode != ND_T_COUNT && mode != ND_T_BUSY)) return -1;
  uint32_t size;
  memcpy(&size, out, sizeof size);
  size_t want = size && size < full ? size : full;
  union {
    ndmem_device_stats_t dev;
    ndmem_device_ws_stats_t ws;
  } s;
  if (full > sizeof s || get(device, &s) != 0) return -1;
  size = (uint32_t)want;
  memcpy(&s, &size, sizeof size);
  memcpy(out, &s, want);
  return 0;
}

static int get_device(int d, void *s) { return nd_cuda_device_stats(d, s); }
static int get_device_ws(int d, void *s) { return nd_dws_stats(d, s); }

ND_EXPORT int ndmem_device_stats(int device, ndmem_device_stats_t *out) {
  return sized_stats(out, sizeof *out, device, get_device);
}

ND_EXPORT int ndmem_device_ws_stats(int device, ndmem_device_ws_stats_t *out) {
  return sized_stats(out, sizeof *out, device, get_device_ws);
}

// From ndmem's CUPTI injection library (cupti/), on any thread the driver calls it on.
ND_EXPORT int ndmem_cupti_update(const ndmem_cupti_device_t *d) {
  if (!nd_accounting_on()) return -1;
  return nd_cuda_cupti_update(d);
}
