// SPDX-License-Identifier: MIT
// views.c: what the device room tells the rest: its setup, the device statistics (ndmem.h),
// CUPTI's cross-check, the summary lines, the DEVICE and CUDA records, the live blocks at exit and
// the fork handlers, as the runtime's module (runtime/module.h).
#include "device/books.h"

#include "common/os.h"
#include "device/cuda_hooks.h"
#include "device/driver.h"
#include "device/dws.h"
#include "device/spill.h"
#include "limits/admit.h"
#include "runtime/module.h"
#include "stacks/names.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// Function pointers travel as void * here, as dlsym and cuGetProcAddress hand them out (POSIX
// requires the conversion to work); and a '%' limit needs a 128-bit product.
#pragma GCC diagnostic ignored "-Wpedantic"

// ---------------------------------------------------------------- views

int nd_cuda_used(void) { return LD(nd_cu_calls.used); }

// PYTORCH_CUDA_ALLOC_CONF as the process started (enum nd_torch_conf), for the report: whether a
// PyTorch job's device sites are tensors (backend:cudaMallocAsync) or the caching allocator's
// segments. Read once at start-up, without allocating.
static uint64_t torch_conf;
static int has_word(const char *s, const char *w) {
  for (size_t n = strlen(w); *s; s++) {
    size_t i = 0;
    while (i < n && s[i] && (s[i] | 32) == (w[i] | 32)) i++;
    if (i == n) return 1;
  }
  return 0;
}
static void setup(char *const *envp) {
  uint64_t f = 0;
  for (char *const *e = envp; e && *e; e++) {
    if (strncmp(*e, "PYTORCH_CUDA_ALLOC_CONF=", 24) == 0) {
      const char *v = *e + 24;
      f |= ND_TORCH_CONF_SET;
      if (has_word(v, "backend:cudamallocasync")) f |= ND_TORCH_CONF_ASYNC;
      if (has_word(v, "expandable_segments:true")) f |= ND_TORCH_CONF_EXPANDABLE;
    }
  }
  if (nd_cfg.torch_tensors) f |= ND_TORCH_CONF_BY_NDMEM;
  torch_conf = f;
  nd_dws_setup();
}

int nd_cuda_device_stats(int d, ndmem_device_stats_t *out) {
  if (d < 0 || d >= NDMEM_MAX_DEVICES) return -1;
  struct dev *v = &nd_cu_devs[d];
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->device = d;
  out->live_bytes = LD(v->live);
  out->peak_bytes = LD(v->peak);
  for (int k = 0; k < ND_DEV_CLASSES; k++) {
    out->allocs += LD(v->cls[k][0]);
    out->frees += LD(v->cls[k][1]);
  }
  if (__atomic_load_n(&v->resolved, __ATOMIC_ACQUIRE)) {
    out->limit_bytes = LD(v->limit);
  } else { // not used yet: a byte setting is known, a '%' one is not until the device is
    int64_t set;
    int frac;
    cu_limit_setting(d, &set, &frac);
    out->limit_bytes = frac ? 0 : set;
  }
  out->total_bytes = LD(v->total);
  out->breaches = LD(v->breaches);
  out->failed = LD(v->failed);
  out->getinfo_calls = LD(v->getinfo_calls);
  out->getinfo_clamped = LD(v->getinfo_clamped);
  nd_spill_device_stats(d, out);
  out->arena_bytes = nd_dws_arena_bytes(d);
  return 0;
}

int nd_cuda_cupti_update(const ndmem_cupti_device_t *in) {
  if (!in || in->size < sizeof *in || in->device < 0 || in->device >= NDMEM_MAX_DEVICES) return -1;
  nd_spin_lock(&nd_cu_cupti_lock);
  nd_cu_devs[in->device].cupti = *in;
  nd_cu_devs[in->device].cupti_seen = 1;
  nd_spin_unlock(&nd_cu_cupti_lock);
  return 0;
}

// One line per device used, and one for pinned and managed memory and the hooks, in the summary.
static void summary(int fd) {
  if (!LD(nd_cu_calls.used)) return;
  nd_buf_t b;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    ndmem_device_stats_t s;
    nd_cuda_device_stats(d, &s);
    if (!s.allocs && !s.getinfo_calls && !s.arena_bytes) continue;
    nd_buf_reset(&b);
    nd_buf_fmt(&b, "ndmem[%d]: device %d: peak %s, live %s in %llu blocks; %llu allocations",
               (int)nd_os_getpid(), d, ND_BYTES(s.peak_bytes), ND_BYTES(s.live_bytes),
               (unsigned long long)(s.allocs - s.frees), (unsigned long long)s.allocs);
    if (s.arena_bytes) nd_buf_fmt(&b, " (workspace arenas %s of it)", ND_BYTES(s.arena_bytes));
    if (s.limit_bytes)
      nd_buf_fmt(&b, "; maxDeviceBytes %s, breaches %llu, failed %llu", ND_BYTES(s.limit_bytes),
                 (unsigned long long)s.breaches, (unsigned long long)s.failed);
    nd_admit_say(&b, ND_LIMIT_DEVICE, d);
    nd_buf_line(&b, fd);
  }
  nd_dws_summary(fd);
  nd_spill_summary(fd);
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "ndmem[%d]: cuda: lookups answered %llu (cuGetProcAddress %llu); fallbacks: "
                 "unhooked lookups %llu, frees of unseen memory %llu, untracked %llu",
             (int)nd_os_getpid(),
             (unsigned long long)(LD(nd_cu_calls.answered_dlsym) + LD(nd_cu_calls.answered_proc)),
             (unsigned long long)LD(nd_cu_calls.answered_proc),
             (unsigned long long)LD(nd_cu_calls.unhooked),
             (unsigned long long)LD(nd_cu_calls.unknown_frees),
             (unsigned long long)LD(nd_cu_calls.untracked));
  nd_buf_line(&b, fd);
}

static void write_records(nd_record_fn rec, void *ctx) {
  if (!LD(nd_cu_calls.used)) return;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    struct dev *v = &nd_cu_devs[d];
    ndmem_device_stats_t s;
    nd_cuda_device_stats(d, &s);
    if (!s.allocs && !s.getinfo_calls && !s.breaches && !v->cupti_seen) continue;
    nd_rec_device_t r;
    memset(&r, 0, sizeof r);
    r.device = (uint32_t)d;
    r.total_bytes = (uint64_t)s.total_bytes;
    r.limit_bytes = (uint64_t)s.limit_bytes;
    r.live_bytes = s.live_bytes;
    r.peak_bytes = s.peak_bytes;
    for (int k = 0; k < ND_DEV_CLASSES; k++) {
      r.cls[k].allocs = LD(v->cls[k][0]);
      r.cls[k].frees = LD(v->cls[k][1]);
      r.cls[k].alloc_bytes = LD(v->cls[k][2]);
      r.cls[k].free_bytes = LD(v->cls[k][3]);
    }
    r.breaches = s.breaches;
    r.failed = s.failed;
    r.getinfo_calls = s.getinfo_calls;
    r.getinfo_clamped = s.getinfo_clamped;
    nd_spin_lock(&nd_cu_cupti_lock);
    if (v->cupti_seen) {
      const ndmem_cupti_device_t *u = &v->cupti;
      r.flags |= ND_DEV_CUPTI;
      r.cupti = (nd_rec_dev_class_t){u->allocs, u->frees, u->alloc_bytes, u->free_bytes};
      r.cupti_pool = (nd_rec_dev_class_t){u->pool_allocs, u->pool_frees, u->pool_alloc_bytes, u->pool_free_bytes};
      r.cupti_pool_reserved = u->pool_reserved_bytes;
      r.cupti_pool_reserved_peak = u->pool_reserved_peak;
      r.cupti_pinned = u->pinned_bytes;
      r.cupti_managed = u->managed_bytes;
      r.cupti_records = u->records;
      r.cupti_dropped = u->dropped;
    }
    nd_spin_unlock(&nd_cu_cupti_lock);
    rec(ctx, ND_REC_DEVICE, &r, sizeof r);
  }
  nd_rec_cuda_t r;
  memset(&r, 0, sizeof r);
  r.first_ns = LD(nd_cu_calls.first_ns);
  for (int f = 0; f < F_COUNT; f++) r.calls[f] = LD(nd_cu_calls.calls[f]);
  r.answered_dlsym = LD(nd_cu_calls.answered_dlsym);
  r.answered_proc = LD(nd_cu_calls.answered_proc);
  r.unhooked = LD(nd_cu_calls.unhooked);
  r.unknown_frees = LD(nd_cu_calls.unknown_frees);
  r.untracked = LD(nd_cu_calls.untracked);
  r.torch_conf = torch_conf;
  rec(ctx, ND_REC_CUDA, &r, sizeof r);
  nd_dws_write_records(rec, ctx);
  nd_spill_write_records(rec, ctx);
}

// Live blocks at exit, as the trace writer's BLOCK records.
void nd_cuda_each_live(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx) {
  if (!LD(nd_cu_calls.used)) return;
  nd_spin_lock(&nd_cu_blocks.lock);
  for (size_t i = 0; i < nd_cu_blocks.cap; i++) {
    blk_t *b = &nd_cu_blocks.v[i];
    if (b->state != 1 || !b->site) continue;
    nd_cuda_block_t o = {b->key, b->size, b->site, b->born, b->cycle};
    fn(ctx, &o);
  }
  nd_spin_unlock(&nd_cu_blocks.lock);
}

int nd_cuda_each_live_stopped(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx) {
  if (!LD(nd_cu_calls.used)) return 0;
  if (__atomic_load_n(&nd_cu_blocks.lock, __ATOMIC_ACQUIRE)) return -1;
  for (size_t i = 0; i < nd_cu_blocks.cap; i++) {
    blk_t *b = &nd_cu_blocks.v[i];
    if (b->state != 1 || !b->site) continue;
    nd_cuda_block_t o = {b->key, b->size, b->site, b->born, b->cycle};
    fn(ctx, &o);
  }
  return 0;
}

static void atfork_prepare(void) { nd_spin_lock(&nd_cu_blocks.lock); }
static void atfork_parent(void) { nd_spin_unlock(&nd_cu_blocks.lock); }

// A fork child holds none of its parent's device memory (a CUDA context does not survive fork):
// the parent's device blocks leave the child's books, as frees at the fork. Pinned and managed
// pages are inherited as host memory is, and stay.
static void atfork_child(nd_tls_t *t) {
  nd_dws_atfork_child();
  nd_spill_atfork_child();
  nd_drv_atfork_child();
  nd_cu_blocks.lock = 0;
  nd_cu_cupti_lock = 0;
  nd_cu_drv.lock = 0;
  for (size_t i = 0; i < nd_cu_blocks.cap; i++) {
    blk_t *b = &nd_cu_blocks.v[i];
    if (b->state != 1 || b->cls == ND_DEV_HOSTMEM) continue; // host spill is a device class
    call_t c = {t, t->mode, 1};
    cu_untrack(&c, b);
    b->state = 2;
    nd_cu_blocks.live--;
  }
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    __atomic_store_n(&nd_cu_devs[d].live, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&nd_cu_devs[d].granted, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&nd_cu_devs[d].peak, 0, __ATOMIC_RELAXED);
    memset(nd_cu_devs[d].cls, 0, sizeof nd_cu_devs[d].cls);
    nd_cu_devs[d].breaches = nd_cu_devs[d].failed = nd_cu_devs[d].getinfo_calls = nd_cu_devs[d].getinfo_clamped = 0;
    nd_cu_devs[d].cupti_seen = 0;
  }
}

ND_MODULE(nd_cuda_module) = {.name = "cuda", .rank = 40, .order = 30, .setup = setup,
                             .atfork_prepare = atfork_prepare, .atfork_parent = atfork_parent,
                             .atfork_child = atfork_child, .summary = summary,
                             .write_records = write_records};

