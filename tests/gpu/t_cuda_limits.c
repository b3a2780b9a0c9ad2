// SPDX-License-Identifier: MIT
// t_cuda_limits: NDMEM_MAX_DEVICE_BYTES[_<i>] and NDMEM_ON_LIMIT on device memory at exact
// boundaries, and the limit-aware cuMemGetInfo. t_cuda_limits.sh runs each mode with its
// environment and checks the stderr lines:
//   exact        NDMEM_MAX_DEVICE_BYTES=1M (both devices): 1 MiB in three calls fits, one more
//                byte is refused without reaching the driver, a free makes room again
//   apis         NDMEM_MAX_DEVICE_BYTES=4M: every allocating entry point at the boundary
//   dev1         NDMEM_MAX_DEVICE_BYTES_1=512K: device 1 is limited, device 0 is not
//   percent      NDMEM_MAX_DEVICE_BYTES=50% of FAKECUDA_TOTAL=4194304: 2 MiB
//   warn         NDMEM_ON_LIMIT=warn: the allocation over the limit goes through, a breach
//   getinfo      limit 3M on a 4M device: total = limit, free = limit - live, but never more
//                than the driver's own free (managed memory takes from it, not from live)
//   getinfo_big  limit 8M on a 4M device: cuMemGetInfo says what the driver says
//   bad          NDMEM_MAX_DEVICE_BYTES=banana: the job runs without a limit
// Without the shim a mode checks the double alone (nothing is refused then).
#include "cudacheck.h"

#include <unistd.h>

static model_t m;
static int ndev;
static uint64_t breaches[2], failed[2], gi_calls[2], gi_clamped[2];
static nd_cu_context ctx[2];
static nd_cu_mem_alloc_prop_t prop0; // cuMemCreate on device 0

static void check_dev_at(int d, long long limit, int line) {
  verify_at(&m, line);
  if (!shim()) return;
  ndmem_device_stats_t s = nd_dev(d);
  eq_at(line, "limit_bytes", d, s.limit_bytes, limit);
  eq_at(line, "breaches", d, (long long)s.breaches, (long long)breaches[d]);
  eq_at(line, "failed", d, (long long)s.failed, (long long)failed[d]);
  eq_at(line, "getinfo_calls", d, (long long)s.getinfo_calls, (long long)gi_calls[d]);
  eq_at(line, "getinfo_clamped", d, (long long)s.getinfo_clamped, (long long)gi_clamped[d]);
}
#define CHECK_DEV(d, limit) check_dev_at((d), (limit), __LINE__)

static void set_device(int d) { CU(cuCtxSetCurrent(ctx[d])); }

// ---- every allocating entry point, by number

enum api { A_ALLOC, A_PITCH, A_ASYNC, A_ASYNC_PTSZ, A_POOL, A_POOL_PTSZ, A_CREATE, A_N };
static const char *const api_names[] = {"cuMemAlloc", "cuMemAllocPitch", "cuMemAllocAsync",
    "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz",
    "cuMemCreate"};
// The least each can allocate beyond a limit: a pitched row is 512 bytes, cuMemCreate a granule.
static const long long over_by[] = {1, 512, 1, 1, 1, 1, 2 * MiB};

// n bytes on the current device (pitched: rows of 512 bytes; cuMemCreate: on device 0).
static int do_alloc(int api, long long n, unsigned long long *out) {
  nd_cu_deviceptr p = 0;
  nd_cu_mem_handle h = 0;
  nd_cu_mempool pool = NULL;
  size_t pitch = 0;
  int rc = -1;
  nd_cu_device dev = 0;
  CU(cuCtxGetDevice(&dev));
  if (api == A_POOL || api == A_POOL_PTSZ) CU(cuDeviceGetDefaultMemPool(&pool, dev));
  switch (api) {
  case A_ALLOC: rc = cuMemAlloc_v2(&p, n); break;
  case A_PITCH:
    rc = cuMemAllocPitch_v2(&p, &pitch, 512, n / 512, 4);
    if (rc == 0) CHECK_EQ(pitch, 512);
    break;
  case A_ASYNC: rc = cuMemAllocAsync(&p, n, NULL); break;
  case A_ASYNC_PTSZ: rc = cuMemAllocAsync_ptsz(&p, n, NULL); break;
  case A_POOL: rc = cuMemAllocFromPoolAsync(&p, n, pool, NULL); break;
  case A_POOL_PTSZ: rc = cuMemAllocFromPoolAsync_ptsz(&p, n, pool, NULL); break;
  case A_CREATE: rc = cuMemCreate(&h, n, &prop0, 0); p = h; break;
  default: break;
  }
  *out = p;
  return rc;
}

static void do_free(int api, unsigned long long p) {
  switch (api) {
  case A_ALLOC: case A_PITCH: CU(cuMemFree_v2(p)); break;
  // the double releases a stream-ordered block when its stream reaches the free
  case A_ASYNC: case A_POOL:
    CU(cuMemFreeAsync(p, NULL));
    CU(cuStreamSynchronize(NULL));
    break;
  case A_ASYNC_PTSZ: case A_POOL_PTSZ:
    CU(cuMemFreeAsync_ptsz(p, NULL));
    CU(cuStreamSynchronize(FK_CU_STREAM_PER_THREAD));
    break;
  case A_CREATE: CU(cuMemRelease(p)); break;
  default: break;
  }
}

// An allocation that fits: granted and counted.
static unsigned long long fits_at(int api, int d, long long n, int line) {
  unsigned long long p = 0;
  int rc = do_alloc(api, n, &p);
  if (rc != 0) {
    fprintf(stderr, "line %d: %s(%lld) on device %d: %d (%s), want success\n", line,
            api_names[api], n, d, rc, cu_err_name(rc));
    check_failures++;
    return 0;
  }
  m_alloc(&m, d, n);
  verify_at(&m, line);
  return p;
}
#define FITS(api, d, n) fits_at((api), (d), (n), __LINE__)

static void release(int api, int d, unsigned long long p, long long n) {
  do_free(api, p);
  m_free(&m, d, n);
}

// An allocation beyond device d's limit: with the shim refused with CUDA_ERROR_OUT_OF_MEMORY
// before the driver is called (the model's alloc_calls do not move), a breach and a failure;
// without it granted by the double and freed again.
static void over_at(int api, int d, int line) {
  unsigned long long p = 0;
  const long long n = over_by[api];
  int rc = do_alloc(api, n, &p);
  if (shim()) {
    if (rc != ND_CUDA_ERROR_OUT_OF_MEMORY) {
      fprintf(stderr, "line %d: %s(%lld) over the limit of device %d: %d (%s), want "
              "CUDA_ERROR_OUT_OF_MEMORY\n", line, api_names[api], n, d, rc, cu_err_name(rc));
      check_failures++;
      if (rc == 0) do_free(api, p);
    }
    breaches[d]++;
    failed[d]++;
    verify_at(&m, line);
    return;
  }
  eq_at(line, "result of the allocation (no shim: no limit)", d, rc, 0);
  m_alloc(&m, d, n);
  verify_at(&m, line);
  if (rc == 0) release(api, d, p, n);
}
#define OVER(api, d) over_at((api), (d), __LINE__)

// cuMemGetInfo in device d's context: with the shim the limit's view (clamped: the answer is
// lowered by the limit), without it the double's. Never more than the double's own free.
static void getinfo_at(int d, long long want_free, long long want_total, int clamped, int line) {
  size_t f = 0, t = 0;
  unsigned long long ff = 0, ft = 0;
  set_device(d);
  CU(HOSTQUIET(cuMemGetInfo_v2(&f, &t)));
  fakecuda_mem(d, &ff, &ft);
  gi_calls[d]++;
  if (shim()) {
    gi_clamped[d] += (uint64_t)clamped;
    eq_at(line, "cuMemGetInfo free", d, (long long)f, want_free);
    eq_at(line, "cuMemGetInfo total", d, (long long)t, want_total);
  } else {
    eq_at(line, "cuMemGetInfo free (no shim)", d, (long long)f, (long long)ff);
    eq_at(line, "cuMemGetInfo total (no shim)", d, (long long)t, (long long)ft);
  }
  if (f > ff) {
    fprintf(stderr, "line %d: cuMemGetInfo free %zu is more than the driver's %llu\n", line, f, ff);
    check_failures++;
  }
}
#define GETINFO(d, free_, total_, clamped) getinfo_at((d), (free_), (total_), (clamped), __LINE__)

// ---------------------------------------------------------------- modes

static void mode_exact(void) {
  const long long L = 1 * MiB;
  unsigned long long a = FITS(A_ALLOC, 0, 512 * KiB);
  unsigned long long b = FITS(A_ASYNC, 0, 256 * KiB);
  unsigned long long c = FITS(A_PITCH, 0, 256 * KiB); // 1 MiB live: exactly the limit
  CHECK_DEV(0, L);
  GETINFO(0, 0, L, 1);
  OVER(A_ALLOC, 0); // the first breach: one stderr line
  CHECK_DEV(0, L);
  release(A_ASYNC, 0, b, 256 * KiB);
  GETINFO(0, 256 * KiB, L, 1);
  b = FITS(A_ASYNC, 0, 256 * KiB); // room again
  CHECK_DEV(0, L);
  release(A_ALLOC, 0, a, 512 * KiB);
  release(A_ASYNC, 0, b, 256 * KiB);
  release(A_PITCH, 0, c, 256 * KiB);
  GETINFO(0, L, L, 1);
  CHECK_DEV(0, L);

  set_device(1); // the limit without a suffix is every device's
  a = FITS(A_ALLOC, 1, L);
  OVER(A_ALLOC, 1);
  release(A_ALLOC, 1, a, L);
  CHECK_DEV(1, L);
  CHECK_DEV(0, L);
}

static void mode_apis(void) {
  const long long L = 4 * MiB;
  for (int api = 0; api < A_N; api++) {
    unsigned long long p = FITS(api, 0, L);
    OVER(api, 0);
    CHECK_DEV(0, L);
    release(api, 0, p, L);
  }
  // the limit is on the sum, whatever the entry points
  unsigned long long a = FITS(A_ALLOC, 0, 2 * MiB - 512);
  unsigned long long b = FITS(A_PITCH, 0, 512);
  unsigned long long c = FITS(A_CREATE, 0, 2 * MiB);
  for (int api = 0; api < A_N; api++) OVER(api, 0);
  CHECK_DEV(0, L);
  release(A_ALLOC, 0, a, 2 * MiB - 512); // full again through other entry points
  a = FITS(A_ASYNC_PTSZ, 0, 1 * MiB);
  unsigned long long d = FITS(A_POOL, 0, 1 * MiB - 512);
  OVER(A_ALLOC, 0);
  release(A_PITCH, 0, b, 512);
  release(A_ASYNC_PTSZ, 0, a, 1 * MiB);
  release(A_POOL, 0, d, 1 * MiB - 512);
  release(A_CREATE, 0, c, 2 * MiB);
  CHECK_DEV(0, L);
}

static void mode_dev1(void) {
  unsigned long long a = FITS(A_ALLOC, 0, 2 * MiB); // device 0 has no limit
  CHECK_DEV(0, 0);
  set_device(1);
  unsigned long long b = FITS(A_ALLOC, 1, 512 * KiB);
  OVER(A_ALLOC, 1);
  GETINFO(1, 0, 512 * KiB, 1);
  GETINFO(0, 1 * GiB - 2 * MiB, 1 * GiB, 0);
  CHECK_DEV(1, 512 * KiB);
  CHECK_DEV(0, 0);
  set_device(1);
  release(A_ALLOC, 1, b, 512 * KiB);
  set_device(0);
  release(A_ALLOC, 0, a, 2 * MiB);
  CHECK_DEV(0, 0);
  CHECK_DEV(1, 512 * KiB);
}

static void mode_percent(void) {
  const long long L = 2 * MiB; // 50% of 4194304
  unsigned long long a = FITS(A_ALLOC, 0, 1 * MiB);
  CHECK_DEV(0, L);
  unsigned long long b = FITS(A_ALLOC, 0, 1 * MiB);
  OVER(A_ALLOC, 0);
  GETINFO(0, 0, L, 1);
  release(A_ALLOC, 0, a, 1 * MiB);
  release(A_ALLOC, 0, b, 1 * MiB);
  GETINFO(0, L, L, 1);
  CHECK_DEV(0, L);
}

static void mode_warn(void) {
  const long long L = 1 * MiB;
  unsigned long long a = FITS(A_ALLOC, 0, L);
  unsigned long long b = FITS(A_ALLOC, 0, 1); // over the limit, allowed: a breach, no failure
  breaches[0]++;
  CHECK_DEV(0, L);
  GETINFO(0, 0, L, 1); // live above the limit: nothing free, never negative
  release(A_ALLOC, 0, a, L);
  release(A_ALLOC, 0, b, 1);
  CHECK_DEV(0, L);
}

static void mode_getinfo(void) {
  const long long L = 3 * MiB;
  GETINFO(0, L, L, 1);
  nd_cu_deviceptr mm = 0;
  CU(cuMemAllocManaged(&mm, 2 * MiB, ND_CU_MEM_ATTACH_GLOBAL)); // the driver's free: 2 MiB
  m_alloc(&m, FAKECUDA_MANAGED, 2 * MiB);
  GETINFO(0, 2 * MiB, L, 1); // limit - live = 3 MiB, but the driver has only 2 MiB
  unsigned long long a = FITS(A_ALLOC, 0, 1 * MiB);
  GETINFO(0, 1 * MiB, L, 1);
  CU(cuMemFree_v2(mm));
  m_free(&m, FAKECUDA_MANAGED, 2 * MiB);
  GETINFO(0, 2 * MiB, L, 1); // limit - live
  release(A_ALLOC, 0, a, 1 * MiB);
  GETINFO(0, L, L, 1);
  CHECK_DEV(0, L);
}

static void mode_getinfo_big(void) {
  const long long L = 8 * MiB, T = 4 * MiB;
  GETINFO(0, T, T, 0); // the limit lowers nothing
  unsigned long long a = FITS(A_ALLOC, 0, 1 * MiB);
  GETINFO(0, T - 1 * MiB, T, 0);
  release(A_ALLOC, 0, a, 1 * MiB);
  CHECK_DEV(0, L);
}

static void mode_bad(void) {
  unsigned long long a = FITS(A_ALLOC, 0, 64 * MiB);
  unsigned long long b = FITS(A_ALLOC, 0, 64 * MiB);
  CHECK_DEV(0, 0);
  release(A_ALLOC, 0, a, 64 * MiB);
  release(A_ALLOC, 0, b, 64 * MiB);
  CHECK_DEV(0, 0);
}

static const struct {
  const char *name;
  void (*run)(void);
  int ndev;
  const char *total;
} modes[] = {
  {"exact", mode_exact, 2, "1073741824"},
  {"apis", mode_apis, 1, "1073741824"},
  {"dev1", mode_dev1, 2, "1073741824"},
  {"percent", mode_percent, 1, "4194304"},
  {"warn", mode_warn, 1, "1073741824"},
  {"getinfo", mode_getinfo, 1, "4194304"},
  {"getinfo_big", mode_getinfo_big, 1, "4194304"},
  {"bad", mode_bad, 1, "1073741824"},
};

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof modes[0]; i++) {
    if (strcmp(argv[1], modes[i].name) != 0) continue;
    char n[4];
    snprintf(n, sizeof n, "%d", modes[i].ndev);
    setenv("FAKECUDA_DEVICES", n, 0); // t_cuda_limits.sh sets them; by hand they need not be
    setenv("FAKECUDA_TOTAL", modes[i].total, 0);
    ndev = modes[i].ndev;
    CU(cuInit(0));
    size_t total = 0;
    CU(cuDeviceTotalMem_v2(&total, 0));
    CHECK_EQ(total, strtoll(modes[i].total, NULL, 10));
    model_init(&m, ndev);
    for (int d = 0; d < ndev; d++) CU(cuDevicePrimaryCtxRetain(&ctx[d], d));
    set_device(0);
    prop0.type = FK_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop0.location.type = ND_CU_MEM_LOCATION_TYPE_DEVICE;
    modes[i].run();
    VERIFY(&m);
    for (int d = 0; d < ndev; d++) CHECK_EQ(m.k[NDMEM_KIND_DEVICE0 + d].live_bytes, 0);
    printf("%s: %s\n", modes[i].name, shim() ? "the double and ndmem's limits checked"
                                             : "the double checked (no shim)");
    return CHECK_DONE();
  }
  fprintf(stderr, "usage: t_cuda_limits MODE [shim]\n");
  return 2;
}
