// SPDX-License-Identifier: MIT
// fakecuda.c: a TEST DOUBLE of the CUDA driver, built as libcuda.so.1 so that programs linked
// with -lcuda, or dlopen'ing it as a statically linked CUDA runtime does, run on machines with
// no GPU and no CUDA toolkit (CI). Device memory is host memory: each device is a large
// PROT_NONE reservation whose pieces are mapped read-write when handed out, so that device
// pointers can be copied to and from, and are reused first-fit as on a real device. It never
// prints; fakecuda_counts/fakecuda_mem tell tests what it handed out. Configured by
// FAKECUDA_DEVICES (1..16, default 1) and FAKECUDA_TOTAL (bytes per device, default 16 GiB).
#include "fk_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

const char fakecuda_is_a_test_double[] =
    "fakecuda: a test double of the CUDA driver backed by host memory; there is no GPU here";

#define FK_MAX_DEV 16
#define FK_DRIVER_VERSION 13000
#define FK_PITCH_ALIGN 512
#define FK_POOLS 64
#define FK_MIN_RESERVE ((size_t)64 << 30)
#define FK_VA_RESERVE ((size_t)256 << 30)
#define FK_GRAN FAKECUDA_VMM_GRANULARITY
enum { FK_CUDA_ERROR_ALREADY_MAPPED = 208 };

// ---------------------------------------------------------------- state

enum fk_kind {
  FK_DEVMEM,  // cuMemAlloc, cuMemAllocPitch
  FK_ASYNC,   // cuMemAllocAsync, cuMemAllocFromPoolAsync
  FK_MANAGED, // cuMemAllocManaged
  FK_PINNED,  // cuMemAllocHost, cuMemHostAlloc
  FK_VA,      // cuMemAddressReserve
  FK_MAP,     // cuMemMap
  FK_HANDLE,  // cuMemCreate
};

typedef struct fk_ctx {
  int dev;
  int refs; // primary context retains; read without the lock (atomics)
} fk_ctx_t;

typedef struct fk_pool {
  int used, dev;
} fk_pool_t;

typedef struct fk_rec {
  uintptr_t addr; // start (a handle's key is the record's own address)
  size_t span;    // address space held: bytes rounded up to the page (VA, maps: the range)
  size_t bytes;   // what the program asked for
  int kind, dev;
  int fd;         // FK_HANDLE: the memfd holding its memory; -1 once released
  int prot;       // FK_MAP: what cuMemSetAccess granted
  int maps;       // FK_HANDLE: mappings of it still in place
  fk_ctx_t *ctx;
  struct fk_rec *handle; // FK_MAP: what is mapped
} fk_rec_t;

// Records sorted by addr. The arrays come from raw mmap system calls, not from the hooked
// mmap/malloc: the index is the double's own, never anything a shim in front of it should see.
typedef struct fk_index {
  fk_rec_t **v;
  size_t n, cap;
} fk_index_t;

typedef struct fk_dev {
  uintptr_t base, end; // the reservation
  size_t used;         // address space handed out: device, managed and cuMemCreate memory
  unsigned long long live, calls; // fakecuda_counts for the device
  fk_index_t blocks;   // FK_DEVMEM, FK_ASYNC, FK_MANAGED
  fk_ctx_t primary;
  fk_pool_t default_pool;
} fk_dev_t;

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static int fk_ready; // set (release) once cuInit succeeded; read with acquire
static int fk_ndev;
static size_t fk_total, fk_page;
static fk_dev_t fk_devs[FK_MAX_DEV];
static uintptr_t fk_va_base, fk_va_end;
static fk_index_t fk_host, fk_vas, fk_maps, fk_handles;
static fk_pool_t fk_pools[FK_POOLS];
static unsigned long long fk_pinned_live, fk_pinned_calls, fk_managed_live, fk_managed_calls;
static __thread fk_ctx_t *fk_cur; // the calling thread's current context

static void lock(void) { pthread_mutex_lock(&fk_lock); }
static void unlock(void) { pthread_mutex_unlock(&fk_lock); }
static int ready(void) { return __atomic_load_n(&fk_ready, __ATOMIC_ACQUIRE); }
static unsigned long long fk_calls[FKC_COUNT];
void fk_count_call(int call) { __atomic_fetch_add(&fk_calls[call], 1, __ATOMIC_RELAXED); }
static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The calling thread's context, if it is still alive. Without one the calls that work in a
// context fail with CUDA_ERROR_INVALID_CONTEXT, as on a real driver: device 0 is never implied.
static fk_ctx_t *cur_ctx(void) {
  fk_ctx_t *c = fk_cur;
  return c && __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) > 0 ? c : NULL;
}

// ---------------------------------------------------------------- index

static void *raw_map(size_t n) {
  long p = syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == -1 ? NULL : (void *)p;
}

// First position whose addr >= a.
static size_t idx_lower(const fk_index_t *ix, uintptr_t a) {
  size_t lo = 0, hi = ix->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ix->v[mid]->addr < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static fk_rec_t *idx_exact(const fk_index_t *ix, uintptr_t a) {
  size_t i = idx_lower(ix, a);
  return i < ix->n && ix->v[i]->addr == a ? ix->v[i] : NULL;
}

// The record whose [addr, addr + len) holds a, len being span or (use_bytes) bytes.
static fk_rec_t *idx_holding(const fk_index_t *ix, uintptr_t a, int use_bytes) {
  size_t i = idx_lower(ix, a + 1);
  if (i == 0) return NULL;
  fk_rec_t *r = ix->v[i - 1];
  return a - r->addr < (use_bytes ? r->bytes : r->span) ? r : NULL;
}

static int idx_insert(fk_index_t *ix, fk_rec_t *r) {
  if (ix->n == ix->cap) {
    size_t cap = ix->cap ? ix->cap * 2 : 1024;
    fk_rec_t **v = raw_map(cap * sizeof *v);
    if (!v) return -1;
    if (ix->n) memcpy(v, ix->v, ix->n * sizeof *v);
    if (ix->v) syscall(SYS_munmap, ix->v, ix->cap * sizeof *v);
    ix->v = v;
    ix->cap = cap;
  }
  size_t i = idx_lower(ix, r->addr);
  memmove(ix->v + i + 1, ix->v + i, (ix->n - i) * sizeof *ix->v);
  ix->v[i] = r;
  ix->n++;
  return 0;
}

static void idx_remove(fk_index_t *ix, const fk_rec_t *r) {
  size_t i = idx_lower(ix, r->addr);
  if (i < ix->n && ix->v[i] == r) {
    memmove(ix->v + i, ix->v + i + 1, (ix->n - i - 1) * sizeof *ix->v);
    ix->n--;
  }
}

// First fit: the lowest address in [base, end) aligned to align where span bytes are free.
// Freed ranges are found again, so addresses are reused as a device's allocator reuses them.
static uintptr_t idx_fit(const fk_index_t *ix, uintptr_t base, uintptr_t end, size_t span,
                         size_t align) {
  uintptr_t at = base;
  for (size_t i = 0; i <= ix->n; i++) {
    uintptr_t a = round_up(at, align);
    uintptr_t next = i < ix->n ? ix->v[i]->addr : end;
    if (a <= next && next - a >= span) return a;
    if (i < ix->n && ix->v[i]->addr + ix->v[i]->span > at) at = ix->v[i]->addr + ix->v[i]->span;
  }
  return 0;
}

// The double's bookkeeping is on the heap, allocated inside the very call that makes the
// allocation, as a real driver's is: a shim that counted the driver's own mallocs as the
// program's would show it in its host counters (t_cuda_direct checks that it does not).
static fk_rec_t *rec_new(int kind, int dev) {
  fk_rec_t *r = malloc(sizeof *r);
  if (!r) return NULL;
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->dev = dev;
  r->fd = -1;
  return r;
}

// ---------------------------------------------------------------- device memory

static int dev_of_addr(uintptr_t a) {
  for (int d = 0; d < fk_ndev; d++)
    if (a >= fk_devs[d].base && a < fk_devs[d].end) return d;
  return -1;
}

// Makes [a, a + len) of a reservation accessible (prot read-write) or inaccessible again with
// its pages dropped (PROT_NONE), by mapping fresh anonymous memory over it. MAP_NORESERVE, so
// that a device of FAKECUDA_TOTAL bytes can be handed out whole on a machine with less memory
// plus swap (mprotect would charge it all to the commit limit); a raw system call, so a shim in
// front of the double does not see device memory as the program's anonymous mmap.
static int piece_map(uintptr_t a, size_t len, int prot) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;
  return syscall(SYS_mmap, a, len, prot, flags, -1, 0) == (long)a ? 0 : -1;
}

// Records of blocks a stream released on its worker thread (lock held): freed by the next
// allocation or free the program makes, inside its call, as the rest of the bookkeeping is.
static fk_rec_t *fk_graveyard;

static void graveyard_empty(void) {
  while (fk_graveyard) {
    fk_rec_t *r = fk_graveyard;
    fk_graveyard = r->handle;
    free(r);
  }
}

// Hands out bytes on device d from its reservation (lock held). The call counts as reaching
// the allocator whether or not there is memory for it.
static nd_cu_result dev_carve(int d, size_t bytes, int kind, fk_ctx_t *ctx, nd_cu_deviceptr *out) {
  fk_dev_t *v = &fk_devs[d];
  graveyard_empty();
  if (kind == FK_MANAGED) fk_managed_calls++;
  else v->calls++;
  if (bytes > fk_total - v->used) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  size_t span = round_up(bytes, fk_page);
  if (span > fk_total - v->used) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t a = idx_fit(&v->blocks, v->base, v->end, span, fk_page);
  if (!a) return ND_CUDA_ERROR_OUT_OF_MEMORY; // the reservation is fragmented
  fk_rec_t *r = rec_new(kind, d);
  if (!r) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  r->addr = a;
  r->span = span;
  r->bytes = bytes;
  r->ctx = ctx;
  if (piece_map(a, span, PROT_READ | PROT_WRITE) != 0 || idx_insert(&v->blocks, r) != 0) {
    piece_map(a, span, PROT_NONE);
    free(r);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  v->used += span;
  if (kind == FK_MANAGED) fk_managed_live += bytes;
  else v->live += bytes;
  *out = a;
  return ND_CUDA_SUCCESS;
}

// The live device/managed block that starts at p (lock held), or NULL.
static fk_rec_t *dev_block(uintptr_t p) {
  int d = dev_of_addr(p);
  return d < 0 ? NULL : idx_exact(&fk_devs[d].blocks, p);
}

// Returns a block to its reservation: inaccessible again and its pages dropped, so a use
// after free faults (on a device it would read stale memory or fault) (lock held).
static void dev_release_from(fk_rec_t *r, int worker) {
  fk_dev_t *v = &fk_devs[r->dev];
  idx_remove(&v->blocks, r);
  piece_map(r->addr, r->span, PROT_NONE);
  v->used -= r->span;
  if (r->kind == FK_MANAGED) fk_managed_live -= r->bytes;
  else v->live -= r->bytes;
  if (worker) {
    r->handle = fk_graveyard;
    fk_graveyard = r;
  } else {
    free(r);
    graveyard_empty();
  }
}
static void dev_release(fk_rec_t *r) { dev_release_from(r, 0); }

// What fk_stream.c asks of the rest of the double (fk_internal.h).
int fk_ready_now(void) { return ready(); }
struct fk_ctx *fk_current(void) { return cur_ctx(); }
int fk_ctx_device(const struct fk_ctx *c) { return c->dev; }
int fk_devices(void) { return fk_ndev; }
void fk_mem_lock(void) { lock(); }
void fk_mem_unlock(void) { unlock(); }

int fk_release_block(uintptr_t p) {
  fk_rec_t *r = dev_block(p);
  if (!r || r->kind == FK_MANAGED) return -1;
  dev_release_from(r, 1);
  return 0;
}

static int pool_valid(const fk_pool_t *p) {
  for (int d = 0; d < fk_ndev; d++)
    if (p == &fk_devs[d].default_pool) return 1;
  return p >= fk_pools && p < fk_pools + FK_POOLS && p->used;
}

// ---------------------------------------------------------------- init

// FAKECUDA_* values: a plain integer, optionally with k, m, g or t (binary). 0 when absent,
// -1 when malformed.
static long long env_size(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  unsigned long long v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (1ULL << 50)) return -1;
    v = v * 10 + (unsigned)(*p - '0');
  }
  if (p == s) return -1;
  int shift = 0;
  switch (*p) {
  case 'k': case 'K': shift = 10; p++; break;
  case 'm': case 'M': shift = 20; p++; break;
  case 'g': case 'G': shift = 30; p++; break;
  case 't': case 'T': shift = 40; p++; break;
  default: break;
  }
  if (*p || v == 0 || v > (1ULL << (60 - shift))) return -1;
  return (long long)(v << shift);
}

// Reserves *len bytes of address space aligned to FK_GRAN (the mapping returned is FK_GRAN
// longer, for the alignment), or less where the process may not have that much (valgrind's
// address space manager refuses mappings over 32 GiB): halving *len down to floor. NULL if
// even floor is refused.
static void *reserve(size_t *len, size_t floor) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  for (size_t n = *len;; n = round_up(n / 2, FK_GRAN)) {
    if (n < floor) n = floor;
    void *p = mmap(NULL, n + FK_GRAN, PROT_NONE, flags, -1, 0);
    if (p != MAP_FAILED) {
      *len = n;
      return p;
    }
    if (n == floor) return NULL;
  }
}

static void fk_atfork_prepare(void) {
  fk_streams_atfork_prepare();
  lock();
}
static void fk_atfork_parent(void) {
  unlock();
  fk_streams_atfork_parent();
}
static void fk_atfork_child(void) {
  unlock();
  fk_streams_atfork_child();
}

nd_cu_result cuInit(unsigned int flags) {
  if (flags != 0) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  if (fk_ready) {
    unlock();
    return ND_CUDA_SUCCESS;
  }
  long long ndev = env_size("FAKECUDA_DEVICES"), total = env_size("FAKECUDA_TOTAL");
  const char *nd = getenv("FAKECUDA_DEVICES");
  nd_cu_result rc = ND_CUDA_SUCCESS;
  if (nd && strcmp(nd, "0") == 0) rc = ND_CUDA_ERROR_NO_DEVICE;
  else if (ndev < 0 || ndev > FK_MAX_DEV || total < 0) rc = ND_CUDA_ERROR_INVALID_VALUE;
  if (rc != ND_CUDA_SUCCESS) {
    unlock();
    return rc;
  }
  fk_ndev = ndev ? (int)ndev : 1;
  fk_total = total ? (size_t)total : (size_t)16 << 30;
  fk_page = (size_t)sysconf(_SC_PAGESIZE);
  // Address space only (PROT_NONE, MAP_NORESERVE): twice the memory, so that fragmentation of
  // the address space does not run out before the memory does.
  size_t res = round_up(fk_total * 2 > FK_MIN_RESERVE ? fk_total * 2 : FK_MIN_RESERVE, FK_GRAN);
  void *raw[FK_MAX_DEV + 1];
  size_t raw_len[FK_MAX_DEV + 1];
  int d = 0;
  for (; d <= fk_ndev; d++) {
    size_t len = d < fk_ndev ? res : FK_VA_RESERVE;
    raw[d] = reserve(&len, d < fk_ndev ? round_up(fk_total, FK_GRAN) : FK_GRAN);
    if (!raw[d]) break;
    raw_len[d] = len;
    uintptr_t base = round_up((uintptr_t)raw[d], FK_GRAN);
    if (d < fk_ndev) {
      fk_devs[d].base = base;
      fk_devs[d].end = base + len;
      fk_devs[d].primary.dev = d;
      fk_devs[d].default_pool.dev = d;
      fk_devs[d].default_pool.used = 1;
    } else {
      fk_va_base = base;
      fk_va_end = base + len;
    }
  }
  if (d <= fk_ndev) { // no address space for it: undo
    for (int i = 0; i < d; i++) munmap(raw[i], raw_len[i] + FK_GRAN);
    memset(fk_devs, 0, sizeof fk_devs);
    unlock();
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  static int atfork_done;
  if (!atfork_done) {
    pthread_atfork(fk_atfork_prepare, fk_atfork_parent, fk_atfork_child);
    atfork_done = 1;
  }
  __atomic_store_n(&fk_ready, 1, __ATOMIC_RELEASE);
  unlock();
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuDriverGetVersion(int *version) {
  if (!version) return ND_CUDA_ERROR_INVALID_VALUE;
  *version = FK_DRIVER_VERSION;
  return ND_CUDA_SUCCESS;
}

#define NEED_INIT()                                                                              \
  do {                                                                                           \
    if (!ready()) return ND_CUDA_ERROR_NOT_INITIALIZED;                                          \
  } while (0)
#define VALID_DEV(d) ((d) >= 0 && (d) < fk_ndev)

// ---------------------------------------------------------------- devices and contexts

nd_cu_result cuDeviceGet(nd_cu_device *device, int ordinal) {
  NEED_INIT();
  if (!device) return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(ordinal)) return ND_CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuDeviceGetCount(int *count) {
  NEED_INIT();
  if (!count) return ND_CUDA_ERROR_INVALID_VALUE;
  *count = fk_ndev;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuDeviceTotalMem_v2(size_t *bytes, nd_cu_device dev) {
  NEED_INIT();
  if (!bytes) return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(dev)) return ND_CUDA_ERROR_INVALID_DEVICE;
  *bytes = fk_total;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuDeviceGetName(char *name, int len, nd_cu_device dev) {
  NEED_INIT();
  if (!name || len <= 0) return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(dev)) return ND_CUDA_ERROR_INVALID_DEVICE;
  char buf[48] = "fakecuda test double ";
  size_t n = strlen(buf);
  if (dev >= 10) buf[n++] = (char)('0' + dev / 10);
  buf[n++] = (char)('0' + dev % 10);
  buf[n] = '\0';
  if (n >= (size_t)len) n = (size_t)len - 1;
  memcpy(name, buf, n);
  name[n] = '\0';
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuDevicePrimaryCtxRetain(nd_cu_context *pctx, nd_cu_device dev) {
  NEED_INIT();
  if (!pctx) return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(dev)) return ND_CUDA_ERROR_INVALID_DEVICE;
  __atomic_add_fetch(&fk_devs[dev].primary.refs, 1, __ATOMIC_ACQ_REL);
  *pctx = &fk_devs[dev].primary;
  return ND_CUDA_SUCCESS;
}

// A real driver destroys the primary context, and frees its memory, when the last retain is
// released; the double keeps the memory (blocks stay live and freeable) and only refuses the
// context's further use.
nd_cu_result cuDevicePrimaryCtxRelease_v2(nd_cu_device dev) {
  NEED_INIT();
  if (!VALID_DEV(dev)) return ND_CUDA_ERROR_INVALID_DEVICE;
  nd_cu_result rc = ND_CUDA_SUCCESS;
  lock();
  fk_ctx_t *c = &fk_devs[dev].primary;
  if (c->refs > 0) __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
  else rc = ND_CUDA_ERROR_INVALID_CONTEXT;
  unlock();
  return rc;
}

nd_cu_result cuCtxSetCurrent(nd_cu_context ctx) {
  NEED_INIT();
  if (ctx == NULL) {
    fk_cur = NULL;
    return ND_CUDA_SUCCESS;
  }
  for (int d = 0; d < fk_ndev; d++)
    if (ctx == &fk_devs[d].primary) {
      if (__atomic_load_n(&fk_devs[d].primary.refs, __ATOMIC_ACQUIRE) <= 0)
        return ND_CUDA_ERROR_INVALID_CONTEXT;
      fk_cur = ctx;
      return ND_CUDA_SUCCESS;
    }
  return ND_CUDA_ERROR_INVALID_CONTEXT;
}

nd_cu_result cuCtxGetCurrent(nd_cu_context *pctx) {
  NEED_INIT();
  if (!pctx) return ND_CUDA_ERROR_INVALID_VALUE;
  *pctx = fk_cur;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuCtxGetDevice(nd_cu_device *device) {
  NEED_INIT();
  if (!device) return ND_CUDA_ERROR_INVALID_VALUE;
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  *device = c->dev;
  return ND_CUDA_SUCCESS;
}

// Waits until every stream of the context's device has run all its work.
nd_cu_result cuCtxSynchronize(void) {
  NEED_INIT();
  fk_count_call(FKC_CTX_SYNC);
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  fk_sync_device(c->dev);
  return ND_CUDA_SUCCESS;
}

// ---------------------------------------------------------------- cuMemAlloc family

nd_cu_result cuMemAlloc_v2(nd_cu_deviceptr *dptr, size_t bytesize) {
  NEED_INIT();
  fk_count_call(FKC_ALLOC);
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!dptr || bytesize == 0) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  nd_cu_result rc = dev_carve(c->dev, bytesize, FK_DEVMEM, c, dptr);
  unlock();
  return rc;
}

nd_cu_result cuMemAllocPitch_v2(nd_cu_deviceptr *dptr, size_t *pitch, size_t width_bytes,
                                size_t height, unsigned int element_size_bytes) {
  NEED_INIT();
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!dptr || !pitch || width_bytes == 0 || height == 0) return ND_CUDA_ERROR_INVALID_VALUE;
  if (element_size_bytes != 4 && element_size_bytes != 8 && element_size_bytes != 16)
    return ND_CUDA_ERROR_INVALID_VALUE;
  if (width_bytes > SIZE_MAX / 2) return ND_CUDA_ERROR_INVALID_VALUE;
  size_t p = round_up(width_bytes, FK_PITCH_ALIGN);
  if (height > SIZE_MAX / p) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  lock();
  nd_cu_result rc = dev_carve(c->dev, p * height, FK_DEVMEM, c, dptr);
  unlock();
  if (rc == ND_CUDA_SUCCESS) *pitch = p;
  return rc;
}

nd_cu_result cuMemAllocManaged(nd_cu_deviceptr *dptr, size_t bytesize, unsigned int flags) {
  NEED_INIT();
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!dptr || bytesize == 0) return ND_CUDA_ERROR_INVALID_VALUE;
  if (flags != ND_CU_MEM_ATTACH_GLOBAL && flags != FK_CU_MEM_ATTACH_HOST)
    return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  nd_cu_result rc = dev_carve(c->dev, bytesize, FK_MANAGED, c, dptr);
  unlock();
  return rc;
}

// cuMemFree frees what cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and the stream-ordered
// allocators returned, on any device, whichever context is current. As a driver's, it first
// waits for all the block's device's work: nothing queued can still use the block.
nd_cu_result cuMemFree_v2(nd_cu_deviceptr dptr) {
  NEED_INIT();
  fk_count_call(FKC_FREE);
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  lock();
  int d = dev_block(dptr) ? dev_of_addr(dptr) : -1;
  unlock();
  if (d < 0) return ND_CUDA_ERROR_INVALID_VALUE;
  fk_sync_device(d);
  lock();
  fk_rec_t *r = dev_block(dptr);
  if (r) dev_release(r);
  unlock();
  return r ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------- pinned host memory

static nd_cu_result host_alloc(void **pp, size_t bytesize, unsigned int flags) {
  NEED_INIT();
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!pp || bytesize == 0 || bytesize > SIZE_MAX / 2) return ND_CUDA_ERROR_INVALID_VALUE;
  if (flags & ~7u) return ND_CUDA_ERROR_INVALID_VALUE; // PORTABLE | DEVICEMAP | WRITECOMBINED
  fk_count_call(FKC_HOST_ALLOC);
  lock();
  fk_pinned_calls++;
  nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
  size_t span = round_up(bytesize, fk_page);
  // A plain anonymous mmap, as the driver's own page-locked memory is: a shim in front of the
  // double must not count it as the program's mmap as well as its pinned memory.
  void *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  fk_rec_t *r = p == MAP_FAILED ? NULL : rec_new(FK_PINNED, c->dev);
  if (r) {
    r->addr = (uintptr_t)p;
    r->span = span;
    r->bytes = bytesize;
    r->ctx = c;
    if (idx_insert(&fk_host, r) == 0) {
      fk_pinned_live += bytesize;
      *pp = p;
      rc = ND_CUDA_SUCCESS;
    } else {
      free(r);
      r = NULL;
    }
  }
  if (!r && p != MAP_FAILED) munmap(p, span);
  unlock();
  return rc;
}

nd_cu_result cuMemAllocHost_v2(void **pp, size_t bytesize) { return host_alloc(pp, bytesize, 0); }

nd_cu_result cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  return host_alloc(pp, bytesize, flags);
}

// Waits for the work of every device first (work on any of them may use page-locked memory).
nd_cu_result cuMemFreeHost(void *p) {
  NEED_INIT();
  fk_count_call(FKC_FREE_HOST);
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  for (int d = 0; d < fk_ndev; d++) fk_sync_device(d);
  lock();
  fk_rec_t *r = idx_exact(&fk_host, (uintptr_t)p);
  if (r) {
    idx_remove(&fk_host, r);
    munmap(p, r->span);
    fk_pinned_live -= r->bytes;
    free(r);
  }
  unlock();
  return r ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_INVALID_VALUE;
}

// The device pointer of page-locked memory: with unified addressing, the host address itself.
nd_cu_result cuMemHostGetDevicePointer_v2(nd_cu_deviceptr *dptr, void *p, unsigned int flags) {
  NEED_INIT();
  fk_count_call(FKC_HOST_DEVPTR);
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!dptr || flags != 0) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  fk_rec_t *r = idx_holding(&fk_host, (uintptr_t)p, 1);
  unlock();
  if (!r) return ND_CUDA_ERROR_INVALID_VALUE;
  *dptr = (nd_cu_deviceptr)(uintptr_t)p;
  return ND_CUDA_SUCCESS;
}

// ---------------------------------------------------------------- stream-ordered allocation

// An allocation is made at the call (its memory is new: nothing queued uses it); a free is work
// on its stream, and the block is released when the stream reaches it. The _ptsz entry points
// take NULL as the calling thread's default stream.
static nd_cu_result alloc_async(nd_cu_deviceptr *dptr, size_t bytesize, fk_pool_t *pool,
                                nd_cu_stream stream, int ptsz) {
  NEED_INIT();
  fk_count_call(FKC_ALLOC_ASYNC);
  if (!dptr || bytesize == 0) return ND_CUDA_ERROR_INVALID_VALUE;
  struct fk_stream *st;
  nd_cu_result rc = fk_stream_get(stream, ptsz, &st);
  int dev = rc == ND_CUDA_SUCCESS ? fk_stream_device(st) : -1;
  lock();
  if (rc == ND_CUDA_SUCCESS && pool) {
    if (pool_valid(pool)) dev = pool->dev; // a pool's memory is on the pool's device
    else rc = ND_CUDA_ERROR_INVALID_VALUE;
  }
  if (rc == ND_CUDA_SUCCESS) rc = dev_carve(dev, bytesize, FK_ASYNC, cur_ctx(), dptr);
  unlock();
  return rc;
}

nd_cu_result cuMemAllocAsync(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_stream stream) {
  return alloc_async(dptr, bytesize, NULL, stream, 0);
}
nd_cu_result cuMemAllocAsync_ptsz(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_stream stream) {
  return alloc_async(dptr, bytesize, NULL, stream, 1);
}
nd_cu_result cuMemAllocFromPoolAsync(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_mempool pool,
                                     nd_cu_stream stream) {
  if (!pool) return ND_CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, stream, 0);
}
nd_cu_result cuMemAllocFromPoolAsync_ptsz(nd_cu_deviceptr *dptr, size_t bytesize,
                                          nd_cu_mempool pool, nd_cu_stream stream) {
  if (!pool) return ND_CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, stream, 1);
}

static nd_cu_result free_async(nd_cu_deviceptr dptr, nd_cu_stream stream, int ptsz) {
  NEED_INIT();
  fk_count_call(FKC_FREE_ASYNC);
  struct fk_stream *st;
  nd_cu_result rc = fk_stream_get(stream, ptsz, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  lock();
  fk_rec_t *r = dev_block(dptr);
  int ok = r && r->kind != FK_MANAGED;
  unlock();
  if (!ok) return ND_CUDA_ERROR_INVALID_VALUE;
  return fk_enqueue(st, FK_OP_FREE, dptr, 0, 0, 0, 0, NULL);
}

nd_cu_result cuMemFreeAsync(nd_cu_deviceptr dptr, nd_cu_stream stream) {
  return free_async(dptr, stream, 0);
}
nd_cu_result cuMemFreeAsync_ptsz(nd_cu_deviceptr dptr, nd_cu_stream stream) {
  return free_async(dptr, stream, 1);
}

nd_cu_result cuDeviceGetDefaultMemPool(nd_cu_mempool *pool, nd_cu_device dev) {
  NEED_INIT();
  if (!pool) return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(dev)) return ND_CUDA_ERROR_INVALID_DEVICE;
  *pool = &fk_devs[dev].default_pool;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuMemPoolCreate(nd_cu_mempool *pool, const fk_cu_mem_pool_props_t *props) {
  NEED_INIT();
  if (!pool || !props || props->alloc_type != FK_CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != ND_CU_MEM_LOCATION_TYPE_DEVICE)
    return ND_CUDA_ERROR_INVALID_VALUE;
  if (!VALID_DEV(props->location.id)) return ND_CUDA_ERROR_INVALID_DEVICE;
  nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
  lock();
  for (int i = 0; i < FK_POOLS; i++)
    if (!fk_pools[i].used) {
      fk_pools[i].used = 1;
      fk_pools[i].dev = props->location.id;
      *pool = &fk_pools[i];
      rc = ND_CUDA_SUCCESS;
      break;
    }
  unlock();
  return rc;
}

// Blocks still live from a destroyed pool stay live and freeable (they belong to its device).
nd_cu_result cuMemPoolDestroy(nd_cu_mempool pool) {
  NEED_INIT();
  fk_pool_t *p = pool;
  nd_cu_result rc = ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  if (p >= fk_pools && p < fk_pools + FK_POOLS && p->used) { // not a default pool
    p->used = 0;
    rc = ND_CUDA_SUCCESS;
  }
  unlock();
  return rc;
}

// ---------------------------------------------------------------- virtual memory management
// cuMemCreate's memory is a memfd (so several address ranges can map the same memory, as on a
// device); cuMemAddressReserve carves address space from one shared reservation; cuMemMap maps
// the memfd there without access, and cuMemSetAccess grants it. The memory counts against its
// device from cuMemCreate to cuMemRelease, even while still mapped (a real driver frees it at
// the last unmap).

nd_cu_result cuMemGetAllocationGranularity(size_t *granularity, const nd_cu_mem_alloc_prop_t *prop,
                                           int option) {
  NEED_INIT();
  if (!granularity || !prop || option < 0 || option > 1) return ND_CUDA_ERROR_INVALID_VALUE;
  *granularity = FK_GRAN;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuMemCreate(nd_cu_mem_handle *handle, size_t size, const nd_cu_mem_alloc_prop_t *prop,
                         unsigned long long flags) {
  NEED_INIT();
  if (!handle || !prop || flags != 0 || prop->type != FK_CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != ND_CU_MEM_LOCATION_TYPE_DEVICE)
    return ND_CUDA_ERROR_INVALID_VALUE;
  int d = prop->location.id;
  if (!VALID_DEV(d)) return ND_CUDA_ERROR_INVALID_DEVICE;
  if (size == 0 || size % FK_GRAN) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  fk_dev_t *v = &fk_devs[d];
  v->calls++;
  nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
  if (size <= fk_total - v->used) {
    int fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
    fk_rec_t *r = fd < 0 ? NULL : rec_new(FK_HANDLE, d);
    if (r && ftruncate(fd, (off_t)size) == 0) {
      r->addr = (uintptr_t)r;
      r->span = 1;
      r->bytes = size;
      r->fd = fd;
      if (idx_insert(&fk_handles, r) == 0) {
        v->used += size;
        v->live += size;
        *handle = (nd_cu_mem_handle)(uintptr_t)r;
        rc = ND_CUDA_SUCCESS;
      }
    }
    if (rc != ND_CUDA_SUCCESS) {
      free(r);
      if (fd >= 0) close(fd);
    }
  }
  unlock();
  return rc;
}

static void handle_drop(fk_rec_t *h) { // lock held: released and no longer mapped
  if (h->fd >= 0) close(h->fd);
  free(h);
}

nd_cu_result cuMemRelease(nd_cu_mem_handle handle) {
  NEED_INIT();
  lock();
  fk_rec_t *h = idx_exact(&fk_handles, (uintptr_t)handle);
  if (h) {
    idx_remove(&fk_handles, h);
    fk_devs[h->dev].used -= h->bytes;
    fk_devs[h->dev].live -= h->bytes;
    close(h->fd); // the mappings keep the memory
    h->fd = -1;
    if (h->maps == 0) handle_drop(h);
  }
  unlock();
  return h ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_INVALID_VALUE;
}

nd_cu_result cuMemAddressReserve(nd_cu_deviceptr *ptr, size_t size, size_t alignment,
                                 nd_cu_deviceptr addr, unsigned long long flags) {
  NEED_INIT();
  if (!ptr || size == 0 || size % FK_GRAN || flags != 0 || (alignment & (alignment - 1)))
    return ND_CUDA_ERROR_INVALID_VALUE;
  if (alignment < FK_GRAN) alignment = FK_GRAN;
  lock();
  uintptr_t a = 0;
  if (addr && addr % alignment == 0 && addr >= fk_va_base && addr < fk_va_end &&
      fk_va_end - addr >= size) { // the hint, if that range is free
    size_t i = idx_lower(&fk_vas, addr);
    int clash = (i < fk_vas.n && fk_vas.v[i]->addr < addr + size) ||
                (i > 0 && fk_vas.v[i - 1]->addr + fk_vas.v[i - 1]->span > addr);
    if (!clash) a = addr;
  }
  if (!a) a = idx_fit(&fk_vas, fk_va_base, fk_va_end, size, alignment);
  nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
  fk_rec_t *r = a ? rec_new(FK_VA, -1) : NULL;
  if (r) {
    r->addr = a;
    r->span = r->bytes = size;
    if (idx_insert(&fk_vas, r) == 0) {
      *ptr = a;
      rc = ND_CUDA_SUCCESS;
    } else {
      free(r);
    }
  }
  unlock();
  return rc;
}

// The maps that exactly tile [p, p + size), from index *first (lock held); 0 or -1.
static int maps_tiling(uintptr_t p, size_t size, size_t *first, size_t *count) {
  size_t i = idx_lower(&fk_maps, p), j = i;
  uintptr_t at = p;
  while (at - p < size && j < fk_maps.n && fk_maps.v[j]->addr == at) {
    at += fk_maps.v[j]->span;
    j++;
  }
  if (size == 0 || at - p != size) return -1;
  *first = i;
  *count = j - i;
  return 0;
}

nd_cu_result cuMemAddressFree(nd_cu_deviceptr ptr, size_t size) {
  NEED_INIT();
  lock();
  fk_rec_t *r = idx_exact(&fk_vas, ptr);
  nd_cu_result rc = ND_CUDA_ERROR_INVALID_VALUE;
  if (r && r->span == size) {
    size_t i = idx_lower(&fk_maps, ptr);
    if (!(i < fk_maps.n && fk_maps.v[i]->addr < ptr + size)) { // nothing still mapped in it
      idx_remove(&fk_vas, r);
      free(r);
      rc = ND_CUDA_SUCCESS;
    }
  }
  unlock();
  return rc;
}

nd_cu_result cuMemMap(nd_cu_deviceptr ptr, size_t size, size_t offset, nd_cu_mem_handle handle,
                      unsigned long long flags) {
  NEED_INIT();
  if (offset != 0 || flags != 0 || size == 0 || size % FK_GRAN || ptr % FK_GRAN)
    return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  nd_cu_result rc = ND_CUDA_ERROR_INVALID_VALUE;
  fk_rec_t *h = idx_exact(&fk_handles, (uintptr_t)handle);
  fk_rec_t *va = idx_holding(&fk_vas, ptr, 0);
  if (!h || size > h->bytes || !va || va->addr + va->span - ptr < size) goto out;
  size_t i = idx_lower(&fk_maps, ptr);
  if ((i < fk_maps.n && fk_maps.v[i]->addr < ptr + size) ||
      (i > 0 && fk_maps.v[i - 1]->addr + fk_maps.v[i - 1]->span > ptr)) {
    rc = FK_CUDA_ERROR_ALREADY_MAPPED;
    goto out;
  }
  rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
  fk_rec_t *m = rec_new(FK_MAP, h->dev);
  if (!m) goto out;
  m->addr = ptr;
  m->span = m->bytes = size;
  m->handle = h;
  m->prot = PROT_NONE;
  // The memfd over the reservation (MAP_FIXED replaces its PROT_NONE pages); raw, as piece_map.
  if (syscall(SYS_mmap, ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0) != (long)ptr) {
    free(m);
    goto out;
  }
  if (idx_insert(&fk_maps, m) != 0) {
    piece_map(ptr, size, PROT_NONE);
    free(m);
    goto out;
  }
  h->maps++;
  rc = ND_CUDA_SUCCESS;
out:
  unlock();
  return rc;
}

nd_cu_result cuMemUnmap(nd_cu_deviceptr ptr, size_t size) {
  NEED_INIT();
  lock();
  size_t first, count;
  nd_cu_result rc = ND_CUDA_ERROR_INVALID_VALUE;
  if (maps_tiling(ptr, size, &first, &count) == 0) {
    // Back to reserved address space; the handle's memory stays with the handle.
    piece_map(ptr, size, PROT_NONE);
    for (size_t k = 0; k < count; k++) {
      fk_rec_t *m = fk_maps.v[first];
      idx_remove(&fk_maps, m);
      if (--m->handle->maps == 0 && m->handle->fd < 0) handle_drop(m->handle);
      free(m);
    }
    rc = ND_CUDA_SUCCESS;
  }
  unlock();
  return rc;
}

nd_cu_result cuMemSetAccess(nd_cu_deviceptr ptr, size_t size, const fk_cu_mem_access_desc_t *desc,
                            size_t count) {
  NEED_INIT();
  if (!desc || count == 0) return ND_CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != ND_CU_MEM_LOCATION_TYPE_DEVICE) return ND_CUDA_ERROR_INVALID_VALUE;
    if (!VALID_DEV(desc[i].location.id)) return ND_CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags == FK_CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
    else if (desc[i].flags == FK_CU_MEM_ACCESS_FLAGS_PROT_READ) prot |= PROT_READ;
    else if (desc[i].flags != FK_CU_MEM_ACCESS_FLAGS_PROT_NONE) return ND_CUDA_ERROR_INVALID_VALUE;
  }
  lock();
  size_t first, n;
  nd_cu_result rc = ND_CUDA_ERROR_INVALID_VALUE;
  if (maps_tiling(ptr, size, &first, &n) == 0 && mprotect((void *)ptr, size, prot) == 0) {
    for (size_t k = 0; k < n; k++) fk_maps.v[first + k]->prot = prot;
    rc = ND_CUDA_SUCCESS;
  }
  unlock();
  return rc;
}

// ---------------------------------------------------------------- queries and copies

nd_cu_result cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  NEED_INIT();
  fk_ctx_t *c = cur_ctx();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!free_bytes || !total_bytes) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  *free_bytes = fk_total - fk_devs[c->dev].used;
  *total_bytes = fk_total;
  unlock();
  return ND_CUDA_SUCCESS;
}

// The record that owns address p (lock held): a device or managed block, a mapped range, or
// pinned host memory.
static fk_rec_t *owner(uintptr_t p) {
  int d = dev_of_addr(p);
  if (d >= 0) return idx_holding(&fk_devs[d].blocks, p, 1);
  fk_rec_t *r = idx_holding(&fk_maps, p, 0);
  return r ? r : idx_holding(&fk_host, p, 1);
}

nd_cu_result cuPointerGetAttribute(void *data, int attribute, nd_cu_deviceptr ptr) {
  NEED_INIT();
  if (!data) return ND_CUDA_ERROR_INVALID_VALUE;
  lock();
  fk_rec_t *r = owner(ptr);
  nd_cu_result rc = r ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_INVALID_VALUE;
  if (r) {
    switch (attribute) {
    case FK_CU_POINTER_ATTRIBUTE_CONTEXT: *(nd_cu_context *)data = r->ctx; break;
    case FK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *(unsigned *)data = r->kind == FK_PINNED ? FK_CU_MEMORYTYPE_HOST : FK_CU_MEMORYTYPE_DEVICE;
      break;
    case FK_CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(nd_cu_deviceptr *)data = ptr; break;
    case FK_CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (r->kind == FK_PINNED || r->kind == FK_MANAGED) *(void **)data = (void *)ptr;
      else rc = ND_CUDA_ERROR_INVALID_VALUE;
      break;
    case FK_CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = r->kind == FK_MANAGED; break;
    case ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = r->dev; break;
    case FK_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(nd_cu_deviceptr *)data = r->addr; break;
    case FK_CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = r->bytes; break;
    default: rc = ND_CUDA_ERROR_INVALID_VALUE; break;
    }
  }
  unlock();
  return rc;
}

// Whether [p, p + n) lies inside one live block the device can reach (fk_internal.h) (lock held).
int fk_device_can(uintptr_t p, size_t n, int write) {
  fk_rec_t *r = owner(p);
  if (!r || n > r->bytes - (p - r->addr)) return 0;
  if (r->kind == FK_MAP) return write ? r->prot == (PROT_READ | PROT_WRITE) : (r->prot & PROT_READ);
  return 1;
}

// Device memory the program may copy to or from (page-locked host memory is the other side).
static int device_range(uintptr_t p, size_t n, int write) {
  fk_rec_t *r = owner(p);
  return r && r->kind != FK_PINNED && fk_device_can(p, n, write);
}

// The synchronous copies and memset are work on the legacy default stream (so they come after
// the work queued before them), and the call returns when it has run.
static nd_cu_result sync_op(int kind, uintptr_t dst, uintptr_t src, size_t n, int value) {
  struct fk_stream *st;
  nd_cu_result rc = fk_stream_get(FK_CU_STREAM_LEGACY, 0, &st);
  uint64_t seq;
  if (rc == ND_CUDA_SUCCESS) rc = fk_enqueue(st, kind, dst, src, n, (uint64_t)value, 0, &seq);
  if (rc == ND_CUDA_SUCCESS) fk_wait(st, seq);
  return rc;
}

nd_cu_result cuMemcpyHtoD_v2(nd_cu_deviceptr dst, const void *src, size_t bytes) {
  NEED_INIT();
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return ND_CUDA_SUCCESS;
  lock();
  int ok = src && device_range(dst, bytes, 1);
  unlock();
  if (!ok) return ND_CUDA_ERROR_INVALID_VALUE;
  return sync_op(FK_OP_COPY, dst, (uintptr_t)src, bytes, 0);
}

nd_cu_result cuMemcpyDtoH_v2(void *dst, nd_cu_deviceptr src, size_t bytes) {
  NEED_INIT();
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return ND_CUDA_SUCCESS;
  lock();
  int ok = dst && device_range(src, bytes, 0);
  unlock();
  if (!ok) return ND_CUDA_ERROR_INVALID_VALUE;
  return sync_op(FK_OP_COPY, (uintptr_t)dst, src, bytes, 0);
}

nd_cu_result cuMemsetD8_v2(nd_cu_deviceptr dst, unsigned char value, size_t n) {
  NEED_INIT();
  if (!cur_ctx()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (n == 0) return ND_CUDA_SUCCESS;
  lock();
  int ok = device_range(dst, n, 1);
  unlock();
  if (!ok) return ND_CUDA_ERROR_INVALID_VALUE;
  return sync_op(FK_OP_SET, dst, 0, n, value);
}

// The asynchronous ones are queued on their stream and touch memory when it reaches them; the
// device side must be device memory (or page-locked memory) at the call.
static nd_cu_result async_op(int kind, uintptr_t dst, uintptr_t src, size_t n, int value,
                             uintptr_t dev_side, int write, nd_cu_stream stream) {
  NEED_INIT();
  if (n == 0) return ND_CUDA_SUCCESS;
  struct fk_stream *st;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  lock();
  int ok = fk_device_can(dev_side, n, write) && (kind == FK_OP_SET || (src && dst));
  unlock();
  if (!ok) return ND_CUDA_ERROR_INVALID_VALUE;
  return fk_enqueue(st, kind, dst, src, n, (uint64_t)value, 0, NULL);
}

nd_cu_result cuMemcpyHtoDAsync_v2(nd_cu_deviceptr dst, const void *src, size_t bytes,
                                  nd_cu_stream stream) {
  return async_op(FK_OP_COPY, dst, (uintptr_t)src, bytes, 0, dst, 1, stream);
}
nd_cu_result cuMemcpyDtoHAsync_v2(void *dst, nd_cu_deviceptr src, size_t bytes, nd_cu_stream stream) {
  return async_op(FK_OP_COPY, (uintptr_t)dst, src, bytes, 0, src, 0, stream);
}
nd_cu_result cuMemsetD8Async(nd_cu_deviceptr dst, unsigned char value, size_t n, nd_cu_stream stream) {
  return async_op(FK_OP_SET, dst, 0, n, value, dst, 1, stream);
}

// ---------------------------------------------------------------- errors

static const struct {
  int code;
  const char *name, *text;
} fk_errors[] = {
  {ND_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
  {ND_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {ND_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {ND_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {ND_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {ND_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {ND_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {FK_CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
  {FK_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {ND_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {FK_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {FK_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static nd_cu_result error_lookup(nd_cu_result error, const char **str, int name) {
  if (!str) return ND_CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof fk_errors / sizeof fk_errors[0]; i++)
    if (fk_errors[i].code == error) {
      *str = name ? fk_errors[i].name : fk_errors[i].text;
      return ND_CUDA_SUCCESS;
    }
  *str = NULL;
  return ND_CUDA_ERROR_INVALID_VALUE;
}

nd_cu_result cuGetErrorString(nd_cu_result error, const char **str) {
  return error_lookup(error, str, 0);
}
nd_cu_result cuGetErrorName(nd_cu_result error, const char **str) {
  return error_lookup(error, str, 1);
}

// ---------------------------------------------------------------- cuGetProcAddress

typedef void (*fk_fn)(void);
#define FN(f) ((fk_fn)(f))

// A base name and what it resolves to: `fn` from `since` on, `v2` instead from `v2_at` on (the
// double exports no v1 of the _v2 functions except cuGetProcAddress: below v2_at those are
// VERSION_NOT_SUFFICIENT), `ptsz` instead when the caller asks for per-thread default streams.
static const struct {
  const char *name;
  fk_fn fn, v2, ptsz;
  int since, v2_at;
} fk_syms[] = {
  {"cuInit", FN(cuInit), 0, 0, 2000, 0},
  {"cuDriverGetVersion", FN(cuDriverGetVersion), 0, 0, 2020, 0},
  {"cuDeviceGet", FN(cuDeviceGet), 0, 0, 2000, 0},
  {"cuDeviceGetCount", FN(cuDeviceGetCount), 0, 0, 2000, 0},
  {"cuDeviceTotalMem", 0, FN(cuDeviceTotalMem_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuDeviceGetName", FN(cuDeviceGetName), 0, 0, 2000, 0},
  {"cuDevicePrimaryCtxRetain", FN(cuDevicePrimaryCtxRetain), 0, 0, 7000, 0},
  {"cuDevicePrimaryCtxRelease", 0, FN(cuDevicePrimaryCtxRelease_v2), 0, 7000, 11000},
  {"cuCtxSetCurrent", FN(cuCtxSetCurrent), 0, 0, 4000, 0},
  {"cuCtxGetCurrent", FN(cuCtxGetCurrent), 0, 0, 4000, 0},
  {"cuCtxGetDevice", FN(cuCtxGetDevice), 0, 0, 2000, 0},
  {"cuCtxSynchronize", FN(cuCtxSynchronize), 0, 0, 2000, 0},
  {"cuMemAlloc", 0, FN(cuMemAlloc_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemAllocPitch", 0, FN(cuMemAllocPitch_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemFree", 0, FN(cuMemFree_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemAllocManaged", FN(cuMemAllocManaged), 0, 0, 6000, 0},
  {"cuMemAllocHost", 0, FN(cuMemAllocHost_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemHostAlloc", FN(cuMemHostAlloc), 0, 0, 2020, 0},
  {"cuMemFreeHost", FN(cuMemFreeHost), 0, 0, 2000, 0},
  {"cuMemAllocAsync", FN(cuMemAllocAsync), 0, FN(cuMemAllocAsync_ptsz), 11020, 0},
  {"cuMemAllocFromPoolAsync", FN(cuMemAllocFromPoolAsync), 0, FN(cuMemAllocFromPoolAsync_ptsz),
   11020, 0},
  {"cuMemFreeAsync", FN(cuMemFreeAsync), 0, FN(cuMemFreeAsync_ptsz), 11020, 0},
  {"cuDeviceGetDefaultMemPool", FN(cuDeviceGetDefaultMemPool), 0, 0, 11020, 0},
  {"cuMemPoolCreate", FN(cuMemPoolCreate), 0, 0, 11020, 0},
  {"cuMemPoolDestroy", FN(cuMemPoolDestroy), 0, 0, 11020, 0},
  {"cuMemCreate", FN(cuMemCreate), 0, 0, 10020, 0},
  {"cuMemRelease", FN(cuMemRelease), 0, 0, 10020, 0},
  {"cuMemGetAllocationGranularity", FN(cuMemGetAllocationGranularity), 0, 0, 10020, 0},
  {"cuMemAddressReserve", FN(cuMemAddressReserve), 0, 0, 10020, 0},
  {"cuMemAddressFree", FN(cuMemAddressFree), 0, 0, 10020, 0},
  {"cuMemMap", FN(cuMemMap), 0, 0, 10020, 0},
  {"cuMemUnmap", FN(cuMemUnmap), 0, 0, 10020, 0},
  {"cuMemSetAccess", FN(cuMemSetAccess), 0, 0, 10020, 0},
  {"cuMemGetInfo", 0, FN(cuMemGetInfo_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuPointerGetAttribute", FN(cuPointerGetAttribute), 0, 0, 4000, 0},
  {"cuMemcpyHtoD", 0, FN(cuMemcpyHtoD_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemcpyDtoH", 0, FN(cuMemcpyDtoH_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemsetD8", 0, FN(cuMemsetD8_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemcpyHtoDAsync", 0, FN(cuMemcpyHtoDAsync_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemcpyDtoHAsync", 0, FN(cuMemcpyDtoHAsync_v2), 0, 2000, ND_CU_V2_MEM_VERSION},
  {"cuMemsetD8Async", FN(cuMemsetD8Async), 0, 0, 3020, 0},
  {"cuMemHostGetDevicePointer", 0, FN(cuMemHostGetDevicePointer_v2), 0, 2020, ND_CU_V2_MEM_VERSION},
  {"cuStreamCreate", FN(cuStreamCreate), 0, 0, 2000, 0},
  {"cuStreamCreateWithPriority", FN(cuStreamCreateWithPriority), 0, 0, 5050, 0},
  {"cuStreamDestroy", 0, FN(cuStreamDestroy_v2), 0, 2000, 11000},
  {"cuStreamSynchronize", FN(cuStreamSynchronize), 0, 0, 2000, 0},
  {"cuStreamQuery", FN(cuStreamQuery), 0, 0, 2000, 0},
  {"cuStreamIsCapturing", FN(cuStreamIsCapturing), 0, 0, 10000, 0},
  {"cuStreamWaitEvent", FN(cuStreamWaitEvent), 0, FN(cuStreamWaitEvent_ptsz), 3020, 0},
  {"cuEventCreate", FN(cuEventCreate), 0, 0, 2000, 0},
  {"cuEventDestroy", 0, FN(cuEventDestroy_v2), 0, 2000, 4000},
  {"cuEventRecord", FN(cuEventRecord), 0, FN(cuEventRecord_ptsz), 2000, 0},
  {"cuEventQuery", FN(cuEventQuery), 0, 0, 2000, 0},
  {"cuEventSynchronize", FN(cuEventSynchronize), 0, 0, 2000, 0},
  {"cuGetErrorString", FN(cuGetErrorString), 0, 0, 6000, 0},
  {"cuGetErrorName", FN(cuGetErrorName), 0, 0, 6000, 0},
  {"cuGetProcAddress", FN(cuGetProcAddress), FN(cuGetProcAddress_v2), 0, 11030,
   ND_CU_V2_PROC_VERSION},
};

// Works before cuInit: a CUDA runtime finds cuInit itself through it. Unknown names and
// versioned names (cuMemAlloc_v2: the table holds base names only) are CUDA_ERROR_NOT_FOUND.
static nd_cu_result proc_address(const char *symbol, void **pfn, int cuda_version,
                                 nd_cu_u64 flags, int *status) {
  if (status) *status = ND_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn || flags > ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    return ND_CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  for (size_t i = 0; i < sizeof fk_syms / sizeof fk_syms[0]; i++) {
    if (strcmp(fk_syms[i].name, symbol) != 0) continue;
    fk_fn f = fk_syms[i].fn;
    if (fk_syms[i].v2 && cuda_version >= fk_syms[i].v2_at) f = fk_syms[i].v2;
    if (cuda_version < fk_syms[i].since || !f) {
      if (status) *status = ND_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return ND_CUDA_ERROR_NOT_FOUND;
    }
    if ((flags & ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && fk_syms[i].ptsz)
      f = fk_syms[i].ptsz;
    // A function pointer handed out as void * (as dlsym does): same size on every target the
    // driver exists for, so the bits are copied rather than cast (ISO C has no such cast).
    memcpy(pfn, &f, sizeof *pfn);
    if (status) *status = ND_CU_GET_PROC_ADDRESS_SUCCESS;
    return ND_CUDA_SUCCESS;
  }
  return ND_CUDA_ERROR_NOT_FOUND;
}

nd_cu_result cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, nd_cu_u64 flags) {
  return proc_address(symbol, pfn, cuda_version, flags, NULL);
}

nd_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, nd_cu_u64 flags,
                                 int *symbol_status) {
  return proc_address(symbol, pfn, cuda_version, flags, symbol_status);
}

// ---------------------------------------------------------------- the double's own truth

int fakecuda_counts(int dev, unsigned long long *live_bytes, unsigned long long *alloc_calls) {
  if (!ready() || dev < FAKECUDA_MANAGED || dev >= fk_ndev) return -1;
  lock();
  unsigned long long live = dev == FAKECUDA_PINNED ? fk_pinned_live
                            : dev == FAKECUDA_MANAGED ? fk_managed_live
                                                      : fk_devs[dev].live;
  unsigned long long calls = dev == FAKECUDA_PINNED ? fk_pinned_calls
                             : dev == FAKECUDA_MANAGED ? fk_managed_calls
                                                       : fk_devs[dev].calls;
  unlock();
  if (live_bytes) *live_bytes = live;
  if (alloc_calls) *alloc_calls = calls;
  return 0;
}

long long fakecuda_calls(const char *fn) {
  static const char *const names[FKC_COUNT] = {
      [FKC_ALLOC] = "cuMemAlloc",           [FKC_FREE] = "cuMemFree",
      [FKC_ALLOC_ASYNC] = "cuMemAllocAsync", [FKC_FREE_ASYNC] = "cuMemFreeAsync",
      [FKC_CTX_SYNC] = "cuCtxSynchronize",  [FKC_STREAM_SYNC] = "cuStreamSynchronize",
      [FKC_EVENT_RECORD] = "cuEventRecord", [FKC_EVENT_QUERY] = "cuEventQuery",
      [FKC_EVENT_SYNC] = "cuEventSynchronize", [FKC_STREAM_WAIT_EVENT] = "cuStreamWaitEvent",
      [FKC_HOST_ALLOC] = "cuMemHostAlloc",  [FKC_FREE_HOST] = "cuMemFreeHost",
      [FKC_HOST_DEVPTR] = "cuMemHostGetDevicePointer"};
  for (int i = 0; fn && i < FKC_COUNT; i++)
    if (strcmp(names[i], fn) == 0) return (long long)__atomic_load_n(&fk_calls[i], __ATOMIC_RELAXED);
  return -1;
}

int fakecuda_mem(int dev, unsigned long long *free_bytes, unsigned long long *total_bytes) {
  if (!ready() || dev < 0 || dev >= fk_ndev) return -1;
  lock();
  if (free_bytes) *free_bytes = fk_total - fk_devs[dev].used;
  if (total_bytes) *total_bytes = fk_total;
  unlock();
  return 0;
}
