// SPDX-License-Identifier: MIT
// cudacheck.h: what the CUDA-tier test programs share. Each program checks two things: the
// driver test double's own behaviour (always, through fakecuda_counts/fakecuda_mem), and
// ndmem's accounting of it (only when libndmem.so with its CUDA hooks is preloaded, found
// through the weak ndmem_device_stats). Run with the argument "shim" a program fails when the
// shim is missing, so a registration that preloads it cannot pass by silently checking less.
// The expected counters are kept in a model_t that every step updates and verify() compares.
#ifndef ND_CUDACHECK_H
#define ND_CUDACHECK_H

#include "../check.h"
#include "fakecuda.h"
#include "ndmem.h"

#define KiB 1024LL
#define MiB (1024LL * 1024)
#define GiB (1024LL * 1024 * 1024)

// A driver call that must return want; prints the call and both codes' names otherwise.
#define CU_EQ(call, want)                                                                        \
  do {                                                                                           \
    int cu_rc_ = (call), cu_want_ = (want);                                                      \
    if (cu_rc_ != cu_want_) {                                                                    \
      fprintf(stderr, "%s:%d: %s returned %d (%s), want %d (%s)\n", __FILE__, __LINE__, #call,   \
              cu_rc_, cu_err_name(cu_rc_), cu_want_, cu_err_name(cu_want_));                     \
      check_failures++;                                                                          \
    }                                                                                            \
  } while (0)
#define CU(call) CU_EQ(call, ND_CUDA_SUCCESS)

static inline const char *cu_err_name(int rc) {
  switch (rc) {
  case ND_CUDA_SUCCESS: return "CUDA_SUCCESS";
  case ND_CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case ND_CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case ND_CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case ND_CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
  case ND_CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
  case ND_CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
  case FK_CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
  default: return "?";
  }
}

// ndmem with its CUDA hooks is preloaded (ndmem_device_stats is weak: NULL without it).
static inline int shim(void) { return ndmem_device_stats != NULL; }

// An argument "shim": the registration preloads libndmem.so, so it must be there with its hooks.
static inline void require_shim_if_asked(int argc, char **argv) {
  int asked = 0;
  for (int i = 1; i < argc; i++) asked |= strcmp(argv[i], "shim") == 0;
  if (asked && !shim()) {
    fprintf(stderr, "%s: run with \"shim\" but libndmem.so with CUDA hooks (ndmem_device_stats) "
            "is not loaded\n", argv[0]);
    exit(1);
  }
}

static inline ndmem_stats_t nd_snap(void) {
  ndmem_stats_t s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  if (shim() && ndmem_stats(&s, NDMEM_SCOPE_PROCESS) != 0) {
    fprintf(stderr, "ndmem_stats failed: accounting is off\n");
    exit(1);
  }
  return s;
}

static inline ndmem_device_stats_t nd_dev(int d) {
  ndmem_device_stats_t s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  if (shim() && ndmem_device_stats(d, &s) != 0) {
    fprintf(stderr, "ndmem_device_stats(%d) failed\n", d);
    exit(1);
  }
  return s;
}

// Runs a driver call that must leave ndmem's host counters (heap and anonymous mmap) as they
// were: what the driver allocates for itself inside a hooked call is not the program's memory.
#define HOSTQUIET(call)                                                                          \
  __extension__({                                                                                \
    ndmem_stats_t hq_b_ = nd_snap();                                                             \
    int hq_rc_ = (call);                                                                         \
    ndmem_stats_t hq_a_ = nd_snap();                                                             \
    host_unchanged(&hq_b_, &hq_a_, #call, __LINE__);                                             \
    hq_rc_;                                                                                      \
  })

static inline void host_unchanged(const ndmem_stats_t *b, const ndmem_stats_t *a, const char *what,
                                  int line) {
  static const int kinds[] = {NDMEM_KIND_HEAP, NDMEM_KIND_MMAP};
  for (int i = 0; i < 2; i++) {
    const ndmem_kind_stats_t *x = &b->kind[kinds[i]], *y = &a->kind[kinds[i]];
    if (x->live_bytes != y->live_bytes || x->allocs != y->allocs || x->frees != y->frees) {
      fprintf(stderr, "line %d: %s moved ndmem's %s counters: live %lld -> %lld, allocs %llu -> "
              "%llu, frees %llu -> %llu\n", line, what, i ? "mmap" : "heap",
              (long long)x->live_bytes, (long long)y->live_bytes, (unsigned long long)x->allocs,
              (unsigned long long)y->allocs, (unsigned long long)x->frees,
              (unsigned long long)y->frees);
      check_failures++;
    }
  }
}

// ---- the model: what ndmem's CUDA kinds and the double's counts must read

// A program that dlopens the driver instead of linking it defines FK_COUNTS as its pointer.
#ifndef FK_COUNTS
#define FK_COUNTS fakecuda_counts
#endif

// The double's devices, then its two host kinds: index of fake "dev" d (FAKECUDA_PINNED -1,
// FAKECUDA_MANAGED -2) is d + 2.
#define FK_SLOTS (NDMEM_MAX_DEVICES + 2)

typedef struct model {
  int ndev;
  ndmem_kind_stats_t k[NDMEM_KIND_COUNT]; // only PINNED, MANAGED and the devices are compared
  unsigned long long fk_live[FK_SLOTS], fk_calls[FK_SLOTS];
} model_t;

static inline int fk_kind(int fkdev) {
  return fkdev == FAKECUDA_PINNED ? NDMEM_KIND_PINNED
         : fkdev == FAKECUDA_MANAGED ? NDMEM_KIND_MANAGED
                                     : NDMEM_KIND_DEVICE0 + fkdev;
}

// Starts from what ndmem and the double read now.
static inline void model_init(model_t *m, int ndev) {
  memset(m, 0, sizeof *m);
  m->ndev = ndev;
  ndmem_stats_t s = nd_snap();
  memcpy(m->k, s.kind, sizeof m->k);
  for (int d = -2; d < ndev; d++)
    if (FK_COUNTS(d, &m->fk_live[d + 2], &m->fk_calls[d + 2]) != 0) {
      fprintf(stderr, "fakecuda_counts(%d) failed\n", d);
      check_failures++;
    }
}

// An allocation of n bytes the double made on fkdev (and ndmem must count).
static inline void m_alloc(model_t *m, int fkdev, long long n) {
  ndmem_kind_stats_t *k = &m->k[fk_kind(fkdev)];
  k->allocs++;
  k->alloc_bytes += n;
  k->live_bytes += n;
  k->live_count++;
  if (k->live_bytes > k->peak_bytes) k->peak_bytes = k->live_bytes;
  m->fk_live[fkdev + 2] += n;
  m->fk_calls[fkdev + 2]++;
}

// An allocation call that reached the double and was refused by it (no memory).
static inline void m_refused(model_t *m, int fkdev) { m->fk_calls[fkdev + 2]++; }

static inline void m_free(model_t *m, int fkdev, long long n) {
  ndmem_kind_stats_t *k = &m->k[fk_kind(fkdev)];
  k->frees++;
  k->free_bytes += n;
  k->live_bytes -= n;
  k->live_count--;
  m->fk_live[fkdev + 2] -= n;
}

static inline void eq_at(int line, const char *what, int idx, long long got, long long want) {
  if (got != want) {
    fprintf(stderr, "line %d: %s[%d] is %lld, want %lld\n", line, what, idx, got, want);
    check_failures++;
  }
}

// Compares ndmem's CUDA kinds, ndmem_device_stats and the double's counts with the model.
static inline void verify_at(const model_t *m, int line) {
  for (int d = -2; d < m->ndev; d++) {
    unsigned long long live = 0, calls = 0;
    FK_COUNTS(d, &live, &calls);
    eq_at(line, "fakecuda live_bytes", d, (long long)live, (long long)m->fk_live[d + 2]);
    eq_at(line, "fakecuda alloc_calls", d, (long long)calls, (long long)m->fk_calls[d + 2]);
  }
  if (!shim()) return;
  ndmem_stats_t s = nd_snap();
  for (int k = NDMEM_KIND_PINNED; k < NDMEM_KIND_COUNT; k++) {
    const ndmem_kind_stats_t *g = &s.kind[k], *w = &m->k[k];
    eq_at(line, "ndmem kind allocs", k, (long long)g->allocs, (long long)w->allocs);
    eq_at(line, "ndmem kind frees", k, (long long)g->frees, (long long)w->frees);
    eq_at(line, "ndmem kind alloc_bytes", k, (long long)g->alloc_bytes, (long long)w->alloc_bytes);
    eq_at(line, "ndmem kind free_bytes", k, (long long)g->free_bytes, (long long)w->free_bytes);
    eq_at(line, "ndmem kind live_bytes", k, g->live_bytes, w->live_bytes);
    eq_at(line, "ndmem kind live_count", k, g->live_count, w->live_count);
    eq_at(line, "ndmem kind peak_bytes", k, g->peak_bytes, w->peak_bytes);
  }
  for (int d = 0; d < m->ndev; d++) {
    ndmem_device_stats_t ds = nd_dev(d);
    const ndmem_kind_stats_t *w = &m->k[NDMEM_KIND_DEVICE0 + d];
    eq_at(line, "ndmem_device_stats device", d, ds.device, d);
    eq_at(line, "ndmem_device_stats live_bytes", d, ds.live_bytes, w->live_bytes);
    eq_at(line, "ndmem_device_stats peak_bytes", d, ds.peak_bytes, w->peak_bytes);
    eq_at(line, "ndmem_device_stats allocs", d, (long long)ds.allocs, (long long)w->allocs);
    eq_at(line, "ndmem_device_stats frees", d, (long long)ds.frees, (long long)w->frees);
  }
}
#define VERIFY(m) verify_at((m), __LINE__)

// void * from dlsym or cuGetProcAddress into a function pointer (POSIX guarantees it works;
// ISO C has no cast for it, so the bits are copied).
#define AS_FN(fp, p)                                                                             \
  do {                                                                                           \
    void *as_fn_p_ = (p);                                                                        \
    memcpy(&(fp), &as_fn_p_, sizeof(fp));                                                        \
  } while (0)

// Retains device d's primary context and makes it current on the calling thread.
static inline nd_cu_context use_device(int d) {
  nd_cu_context c = NULL;
  CU(cuDevicePrimaryCtxRetain(&c, d));
  CU(cuCtxSetCurrent(c));
  return c;
}

#endif
