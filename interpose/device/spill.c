// SPDX-License-Identifier: MIT
// spill.c: device allocations served from host memory (spill.h).
//
// Why mapped page-locked memory (cuMemHostAlloc with DEVICEMAP | PORTABLE, its device address
// from cuMemHostGetDevicePointer) and not managed memory: it never moves. Managed memory migrates
// to the device on access, which takes device memory again, exactly what is short; page-locked
// memory stays on the host, every device reaches it over the bus (zero-copy), its device address
// works in kernels, copies and memsets, and the limit's accounting stays true (it takes no device
// memory at all). The cost is bandwidth (the bus instead of the device's memory) and page-locked
// host memory; both are said in the summary and the report, with the sites that spilled.
#include "device/spill.h"

#include "runtime/config.h"
#include "device/driver.h"
#include "common/fmt.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "account/sites.h"
#include "common/trace_format.h"

#include <string.h>

// The spilled blocks (device address -> host address, site), and per (device, site) totals:
// open addressing under one lock (spilling is the slow path: a page-locked allocation costs
// milliseconds in the driver).
#define BLOCKS 8192
#define SITES 1024
typedef struct sblock {
  nd_cu_deviceptr p;
  void *host;
  nd_site_t *site;
  int dev;
} sblock_t;
typedef struct ssite {
  nd_site_t *site; // NULL and used: the totals of allocations without a stack
  int dev, used;
  nd_rec_device_spill_t r;
} ssite_t;

static struct {
  int lock;
  sblock_t b[BLOCKS];
  uint32_t nb;
  ssite_t s[SITES];
  nd_rec_device_spill_t dev[NDMEM_MAX_DEVICES]; // the totals per device
  uint64_t refused; // allocations that could not be spilled (the driver refused, or no room here)
} spilled;

int nd_spill_on(void) { return nd_cfg.on_device_limit == ND_ON_DEVICE_LIMIT_HOST; }

static uint32_t bslot(nd_cu_deviceptr p) { return (uint32_t)((p >> 12) * 0x9e3779b97f4a7c15ull >> 40) & (BLOCKS - 1); }

static ssite_t *site_of(int d, nd_site_t *site) { // lock held; NULL when the table is full
  uint32_t i = (uint32_t)(((uintptr_t)site >> 6) * 0x9e3779b97f4a7c15ull >> 40) & (SITES - 1);
  i = (i + (uint32_t)d * 131) & (SITES - 1);
  for (uint32_t k = 0; k < SITES; k++, i = (i + 1) & (SITES - 1)) {
    ssite_t *e = &spilled.s[i];
    if (e->used && e->site == site && e->dev == d) return e;
    if (!e->used) {
      e->used = 1;
      e->site = site;
      e->dev = d;
      e->r.device = (uint32_t)d;
      e->r.stack_id = site ? site->id : ND_SPILL_TOTAL - 1;
      return e;
    }
  }
  return NULL;
}

static void add(nd_rec_device_spill_t *r, int alloc, uint64_t n, int why) {
  if (alloc) {
    r->allocs++;
    r->alloc_bytes += n;
    r->live_bytes += (int64_t)n;
    if (r->live_bytes > r->peak_bytes) r->peak_bytes = r->live_bytes;
    if (why == ND_SPILL_WHY_LIMIT) r->over_limit++;
    else r->device_full++;
  } else {
    r->frees++;
    r->live_bytes -= (int64_t)n;
  }
}

int nd_spill_alloc(int d, const void *real, size_t n, nd_site_t *site, int why, nd_cu_deviceptr *dptr) {
  nd_drv_resolve(real); // fills what the driver has, even where device workspaces lack something
  if (!nd_drv.host_alloc || !nd_drv.host_devptr || !nd_drv.free_host || !nd_drv.stream_sync || !n)
    return -1;
  nd_spin_lock(&spilled.lock);
  int room = spilled.nb * 4 < BLOCKS * 3; // keep the table at most 3/4 full
  nd_spin_unlock(&spilled.lock);
  void *host = NULL;
  nd_cu_deviceptr p = 0;
  if (!room || nd_drv.host_alloc(&host, n, ND_CU_MEMHOSTALLOC_PORTABLE | ND_CU_MEMHOSTALLOC_DEVICEMAP) !=
                   ND_CUDA_SUCCESS) {
    __atomic_fetch_add(&spilled.refused, 1, __ATOMIC_RELAXED);
    return -1;
  }
  if (nd_drv.host_devptr(&p, host, 0) != ND_CUDA_SUCCESS || !p) {
    nd_drv.free_host(host);
    __atomic_fetch_add(&spilled.refused, 1, __ATOMIC_RELAXED);
    return -1;
  }
  nd_spin_lock(&spilled.lock);
  uint32_t i = bslot(p);
  while (spilled.b[i].p) i = (i + 1) & (BLOCKS - 1);
  spilled.b[i] = (sblock_t){p, host, site, d};
  spilled.nb++;
  add(&spilled.dev[d], 1, n, why);
  ssite_t *e = site_of(d, site);
  if (e) add(&e->r, 1, n, why);
  nd_spin_unlock(&spilled.lock);
  *dptr = p;
  return 0;
}

nd_cu_result nd_spill_free(int d, nd_cu_deviceptr p, uint64_t n, int async, nd_cu_stream s) {
  nd_spin_lock(&spilled.lock);
  uint32_t i = bslot(p);
  while (spilled.b[i].p && spilled.b[i].p != p) i = (i + 1) & (BLOCKS - 1);
  sblock_t b = spilled.b[i];
  nd_spin_unlock(&spilled.lock);
  if (!b.p) return ND_CUDA_ERROR_INVALID_VALUE;
  // A stream-ordered free: the memory goes back once the stream has run what came before it.
  if (async) nd_drv.stream_sync(s);
  nd_cu_result rc = nd_drv.free_host(b.host); // page-locked memory: the driver waits for the device
  if (rc != ND_CUDA_SUCCESS) return rc;
  nd_spin_lock(&spilled.lock);
  uint32_t hole = i; // backward-shift deletion
  for (uint32_t j = (i + 1) & (BLOCKS - 1); spilled.b[j].p; j = (j + 1) & (BLOCKS - 1)) {
    uint32_t home = bslot(spilled.b[j].p);
    if (((j - home) & (BLOCKS - 1)) >= ((j - hole) & (BLOCKS - 1))) {
      spilled.b[hole] = spilled.b[j];
      hole = j;
    }
  }
  spilled.b[hole].p = 0;
  spilled.nb--;
  add(&spilled.dev[d], 0, n, 0);
  ssite_t *e = site_of(d, b.site);
  if (e) add(&e->r, 0, n, 0);
  nd_spin_unlock(&spilled.lock);
  return ND_CUDA_SUCCESS;
}

void nd_spill_device_stats(int d, ndmem_device_stats_t *out) {
  nd_spin_lock(&spilled.lock);
  nd_rec_device_spill_t r = spilled.dev[d];
  nd_spin_unlock(&spilled.lock);
  out->host_allocs = r.allocs;
  out->host_frees = r.frees;
  out->host_alloc_bytes = r.alloc_bytes;
  out->host_live_bytes = r.live_bytes;
  out->host_peak_bytes = r.peak_bytes;
}

void nd_spill_write_records(nd_spill_record_fn rec, void *ctx) {
  if (!nd_spill_on()) return;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    nd_spin_lock(&spilled.lock);
    nd_rec_device_spill_t r = spilled.dev[d];
    nd_spin_unlock(&spilled.lock);
    if (!r.allocs) continue;
    r.device = (uint32_t)d;
    r.stack_id = ND_SPILL_TOTAL;
    rec(ctx, ND_REC_DEVICE_SPILL, &r, sizeof r);
  }
  for (uint32_t i = 0; i < SITES; i++) {
    nd_spin_lock(&spilled.lock);
    ssite_t e = spilled.s[i];
    nd_spin_unlock(&spilled.lock);
    if (!e.used || !e.site || !e.site->written) continue; // its STACK is not in the trace yet
    rec(ctx, ND_REC_DEVICE_SPILL, &e.r, sizeof e.r);
  }
}

void nd_spill_summary(int fd) {
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    nd_spin_lock(&spilled.lock);
    nd_rec_device_spill_t r = spilled.dev[d];
    nd_spin_unlock(&spilled.lock);
    if (!r.allocs) continue;
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem[");
    nd_buf_u64(&b, (uint64_t)nd_os_getpid());
    nd_buf_str(&b, "]: device ");
    nd_buf_u64(&b, (uint64_t)d);
    nd_buf_str(&b, " ran from host memory: ");
    nd_buf_u64(&b, r.allocs);
    nd_buf_str(&b, " allocations (");
    nd_buf_bytes(&b, (int64_t)r.alloc_bytes);
    nd_buf_str(&b, ", peak ");
    nd_buf_bytes(&b, r.peak_bytes);
    nd_buf_str(&b, " at once, live at exit ");
    nd_buf_bytes(&b, r.live_bytes);
    nd_buf_str(&b, ") served from page-locked host memory (NDMEM_ON_DEVICE_LIMIT=host): ");
    nd_buf_u64(&b, r.over_limit);
    nd_buf_str(&b, " over the device limit, ");
    nd_buf_u64(&b, r.device_full);
    nd_buf_str(&b, " refused by a full device; ndmemreport names their sites");
    nd_buf_line(&b, fd);
  }
}

// The parent's page-locked memory stays mapped in a fork child (as host memory does), but the
// child has no CUDA context to free it with: it is forgotten, not freed.
void nd_spill_atfork_child(void) {
  memset(&spilled, 0, sizeof spilled);
}
