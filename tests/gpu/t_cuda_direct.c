// SPDX-License-Identifier: MIT
// t_cuda_direct: a program linked with -lcuda calls the driver's memory entry points directly,
// on two devices, and ndmem's counters follow exactly (bytes are those asked for: n, pitch *
// height as the driver returned it, cuMemCreate's size), while its host counters do not move
// with the driver's own memory. Frees of unknown pointers and allocations the driver refuses
// change nothing. The double's own behaviour (contexts, first-fit reuse, copies, VMM aliasing,
// threads, faults after free) is checked with or without the shim.
#include "cudacheck.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NDEV 2
static const long long TOTAL = 1 * GiB;
static model_t m;
static long long page;
static long long used[NDEV]; // device address space the double must have handed out
static nd_cu_context ctx[NDEV];
static unsigned char buf[4 << 20], back[4 << 20];

static long long rounded(long long n) { return (n + page - 1) / page * page; }

// The double's free memory on d, from fakecuda_mem and (a shim without a limit passes it
// through unchanged) cuMemGetInfo in d's context.
static void check_free_at(int d, int line) {
  unsigned long long f = 0, t = 0;
  fakecuda_mem(d, &f, &t);
  eq_at(line, "fakecuda_mem free", d, (long long)f, TOTAL - used[d]);
  eq_at(line, "fakecuda_mem total", d, (long long)t, TOTAL);
}
#define CHECK_FREE(d) check_free_at((d), __LINE__)

// Writes a pattern through cuMemcpyHtoD and reads it back through cuMemcpyDtoH.
static void roundtrip(nd_cu_deviceptr p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 31 + seed);
  memset(back, 0, n);
  CU(cuMemcpyHtoD_v2(p, buf, n));
  CU(cuMemcpyDtoH_v2(back, p, n));
  CHECK(memcmp(buf, back, n) == 0);
}

static int ordinal_of(nd_cu_deviceptr p) {
  int ord = -1;
  CU(cuPointerGetAttribute(&ord, ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  return ord;
}

static void set_device(int d) { CU(cuCtxSetCurrent(ctx[d])); }

// ---------------------------------------------------------------- before a context

static void before_init(void) {
  ndmem_stats_t s = nd_snap();
  nd_cu_deviceptr p = 0;
  int n = -1;
  CU_EQ(cuMemAlloc_v2(&p, 4096), ND_CUDA_ERROR_NOT_INITIALIZED);
  CU_EQ(cuDeviceGetCount(&n), ND_CUDA_ERROR_NOT_INITIALIZED);
  CHECK_EQ(fakecuda_counts(0, NULL, NULL), -1);
  int v = 0;
  CU(cuDriverGetVersion(&v)); // works before cuInit, as on a real driver
  CHECK_EQ(v, 13000);
  CU_EQ(cuInit(1), ND_CUDA_ERROR_INVALID_VALUE);
  CU(cuInit(0));
  CU(cuInit(0));
  ndmem_stats_t a = nd_snap();
  for (int k = NDMEM_KIND_PINNED; k < NDMEM_KIND_COUNT; k++)
    CHECK_EQ(a.kind[k].allocs, s.kind[k].allocs);
}

static void devices(void) {
  int n = -1;
  CU(cuDeviceGetCount(&n));
  CHECK_EQ(n, NDEV);
  nd_cu_device dev = -1;
  CU(cuDeviceGet(&dev, 1));
  CHECK_EQ(dev, 1);
  CU_EQ(cuDeviceGet(&dev, NDEV), ND_CUDA_ERROR_INVALID_DEVICE);
  size_t t = 0;
  CU(cuDeviceTotalMem_v2(&t, 1));
  CHECK_EQ(t, TOTAL);
  char name[64];
  CU(cuDeviceGetName(name, sizeof name, 1));
  CHECK_STR(name, "fakecuda test double 1");
  CU(cuDeviceGetName(name, 9, 0));
  CHECK_STR(name, "fakecuda");
  CHECK(strstr(fakecuda_is_a_test_double, "test double") != NULL);
  const char *str = NULL;
  CU(cuGetErrorName(ND_CUDA_ERROR_OUT_OF_MEMORY, &str));
  CHECK_STR(str, "CUDA_ERROR_OUT_OF_MEMORY");
  CU(cuGetErrorString(ND_CUDA_ERROR_OUT_OF_MEMORY, &str));
  CHECK_STR(str, "out of memory");
  CU_EQ(cuGetErrorName(12345, &str), ND_CUDA_ERROR_INVALID_VALUE);
  CHECK(str == NULL);
}

// Without a current context nothing is allocated: no device is implied.
static void no_context(void) {
  nd_cu_context c = (nd_cu_context)&c;
  CU(cuCtxGetCurrent(&c));
  CHECK(c == NULL);
  nd_cu_device dev;
  nd_cu_deviceptr p;
  void *h;
  size_t fr, to, pitch;
  CU_EQ(cuCtxGetDevice(&dev), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(cuCtxSynchronize(), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemAlloc_v2(&p, 4096)), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemAllocPitch_v2(&p, &pitch, 64, 2, 4)), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemAllocManaged(&p, 4096, ND_CU_MEM_ATTACH_GLOBAL)),
        ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemAllocHost_v2(&h, 4096)), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemAllocAsync(&p, 4096, NULL)), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(HOSTQUIET(cuMemGetInfo_v2(&fr, &to)), ND_CUDA_ERROR_INVALID_CONTEXT);
  CU_EQ(cuCtxSetCurrent((nd_cu_context)&c), ND_CUDA_ERROR_INVALID_CONTEXT);
  VERIFY(&m);
  for (int d = 0; d < NDEV; d++) CU(cuDevicePrimaryCtxRetain(&ctx[d], d));
  CHECK(ctx[0] != ctx[1]);
  set_device(0);
  CU(cuCtxGetDevice(&dev));
  CHECK_EQ(dev, 0);
  CU(cuCtxSynchronize());
}

// ---------------------------------------------------------------- cuMemAlloc, cuMemAllocPitch

static void mem_alloc(void) {
  const long long n = 1000003;
  nd_cu_deviceptr p = 0, q = 0, r = 0;
  CU(HOSTQUIET(cuMemAlloc_v2(&p, n)));
  m_alloc(&m, 0, n);
  used[0] += rounded(n);
  VERIFY(&m);
  CHECK_FREE(0);
  CHECK(p % 256 == 0);
  CHECK_EQ(ordinal_of(p + 1000), 0);
  roundtrip(p, n, 1);
  CU(cuMemsetD8_v2(p + 10, 0xab, 100));
  CU(cuMemcpyDtoH_v2(back, p, 200));
  CHECK(back[9] == buf[9] && back[10] == 0xab && back[109] == 0xab && back[110] == buf[110]);
  CU_EQ(cuMemcpyHtoD_v2(p + n - 10, buf, 11), ND_CUDA_ERROR_INVALID_VALUE); // past its end
  nd_cu_deviceptr start = 0;
  size_t size = 0;
  CU(cuPointerGetAttribute(&start, FK_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 77));
  CU(cuPointerGetAttribute(&size, FK_CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 77));
  CHECK(start == p);
  CHECK_EQ(size, n);

  CU(HOSTQUIET(cuMemAlloc_v2(&q, 5000)));
  m_alloc(&m, 0, 5000);
  used[0] += rounded(5000);
  CHECK(q >= p + n || q + 5000 <= p);
  CU(HOSTQUIET(cuMemFree_v2(p)));
  m_free(&m, 0, n);
  used[0] -= rounded(n);
  VERIFY(&m);
  CHECK_FREE(0);
  CU(HOSTQUIET(cuMemAlloc_v2(&r, n))); // first fit: the freed range comes back
  m_alloc(&m, 0, n);
  used[0] += rounded(n);
  CHECK(r == p);
  VERIFY(&m);
  CU_EQ(HOSTQUIET(cuMemFree_v2(r + 256)), ND_CUDA_ERROR_INVALID_VALUE); // not a block's start
  VERIFY(&m);
  CU(HOSTQUIET(cuMemFree_v2(r)));
  m_free(&m, 0, n);
  CU(HOSTQUIET(cuMemFree_v2(q)));
  m_free(&m, 0, 5000);
  used[0] -= rounded(n) + rounded(5000);
  VERIFY(&m);
  CU_EQ(HOSTQUIET(cuMemFree_v2(q)), ND_CUDA_ERROR_INVALID_VALUE); // twice
  CU_EQ(HOSTQUIET(cuMemAlloc_v2(&p, 0)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
  CHECK_FREE(0);
}

static void mem_alloc_pitch(void) {
  nd_cu_deviceptr p = 0, q = 0, r = 0;
  size_t pitch = 0;
  CU(HOSTQUIET(cuMemAllocPitch_v2(&p, &pitch, 1100, 7, 4))); // rows of 512-byte multiples
  CHECK_EQ(pitch, 1536);
  m_alloc(&m, 0, 1536 * 7);
  used[0] += rounded(1536 * 7);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemAllocPitch_v2(&q, &pitch, 512, 3, 16)));
  CHECK_EQ(pitch, 512);
  m_alloc(&m, 0, 512 * 3);
  used[0] += rounded(512 * 3);
  VERIFY(&m);
  CHECK_FREE(0);
  roundtrip(p, 1536 * 7, 2);
  CU_EQ(HOSTQUIET(cuMemAllocPitch_v2(&r, &pitch, 100, 2, 3)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemFree_v2(p)));
  m_free(&m, 0, 1536 * 7);
  CU(HOSTQUIET(cuMemFree_v2(q)));
  m_free(&m, 0, 512 * 3);
  used[0] -= rounded(1536 * 7) + rounded(512 * 3);
  VERIFY(&m);
}

// ---------------------------------------------------------------- managed and pinned memory

static void managed(void) {
  nd_cu_deviceptr p = 0, q = 0;
  const long long n = 300000;
  CU(HOSTQUIET(cuMemAllocManaged(&p, n, ND_CU_MEM_ATTACH_GLOBAL)));
  m_alloc(&m, FAKECUDA_MANAGED, n);
  used[0] += rounded(n); // the double takes managed memory from the device
  VERIFY(&m);
  CHECK_FREE(0);
  unsigned is_managed = 0;
  CU(cuPointerGetAttribute(&is_managed, FK_CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
  CHECK_EQ(is_managed, 1);
  CHECK_EQ(ordinal_of(p), 0);
  ((volatile unsigned char *)p)[n - 1] = 7; // reachable from the host, as managed memory is
  roundtrip(p, 1000, 3);
  CU_EQ(HOSTQUIET(cuMemAllocManaged(&q, 4096, 0)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemFree_v2(p)));
  m_free(&m, FAKECUDA_MANAGED, n);
  used[0] -= rounded(n);
  VERIFY(&m);
  CHECK_FREE(0);
}

static void pinned(void) {
  void *h = NULL, *h2 = NULL, *h3 = NULL;
  const long long n = MiB + 5;
  // HOSTQUIET: the pinned memory is an anonymous mmap inside the driver, not the program's mmap
  CU(HOSTQUIET(cuMemAllocHost_v2(&h, n)));
  m_alloc(&m, FAKECUDA_PINNED, n);
  VERIFY(&m);
  CHECK_FREE(0); // not device memory
  memset(h, 1, n);
  unsigned type = 0;
  CU(cuPointerGetAttribute(&type, FK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (nd_cu_deviceptr)h));
  CHECK_EQ(type, FK_CU_MEMORYTYPE_HOST);
  CU(HOSTQUIET(cuMemHostAlloc(&h2, 200000, 1 /* CU_MEMHOSTALLOC_PORTABLE */)));
  m_alloc(&m, FAKECUDA_PINNED, 200000);
  VERIFY(&m);
  CU_EQ(HOSTQUIET(cuMemHostAlloc(&h3, 100, 8)), ND_CUDA_ERROR_INVALID_VALUE);
  int local;
  CU_EQ(HOSTQUIET(cuMemFreeHost(&local)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemFreeHost((char *)h + 4096)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemFreeHost(h)));
  m_free(&m, FAKECUDA_PINNED, n);
  CU(HOSTQUIET(cuMemFreeHost(h2)));
  m_free(&m, FAKECUDA_PINNED, 200000);
  VERIFY(&m);
}

// ---------------------------------------------------------------- stream-ordered, pools

static void async(void) {
  nd_cu_stream s = NULL;
  nd_cu_deviceptr p = 0, q = 0;
  CU(cuStreamCreate(&s, 0));
  CU(HOSTQUIET(cuMemAllocAsync(&p, 123457, s)));
  m_alloc(&m, 0, 123457);
  VERIFY(&m);
  // ndmem counts the free at the call; the double releases the block when the stream reaches it
  CU(HOSTQUIET(cuMemFreeAsync(p, s)));
  m_free(&m, 0, 123457);
  CU(cuStreamSynchronize(s));
  VERIFY(&m);
  CHECK_FREE(0);

  CU(HOSTQUIET(cuMemAllocAsync_ptsz(&p, 65536, NULL)));
  m_alloc(&m, 0, 65536);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemFreeAsync_ptsz(p, FK_CU_STREAM_PER_THREAD)));
  m_free(&m, 0, 65536);
  CU(cuStreamSynchronize(FK_CU_STREAM_PER_THREAD));
  VERIFY(&m);

  nd_cu_mempool pool0 = NULL, again = NULL, dflt1 = NULL, pool1 = NULL;
  CU(cuDeviceGetDefaultMemPool(&pool0, 0));
  CU(cuDeviceGetDefaultMemPool(&again, 0));
  CU(cuDeviceGetDefaultMemPool(&dflt1, 1));
  CHECK(pool0 == again && pool0 != dflt1 && pool0 != NULL);
  CU(HOSTQUIET(cuMemAllocFromPoolAsync(&p, 70000, pool0, s)));
  m_alloc(&m, 0, 70000);
  VERIFY(&m);
  // A pool may be on another device than the stream: the memory is the pool's device's.
  fk_cu_mem_pool_props_t props;
  memset(&props, 0, sizeof props);
  props.alloc_type = FK_CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = ND_CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CU(cuMemPoolCreate(&pool1, &props));
  CU(HOSTQUIET(cuMemAllocFromPoolAsync_ptsz(&q, 90000, pool1, s)));
  m_alloc(&m, 1, 90000);
  VERIFY(&m);
  CHECK_EQ(ordinal_of(q), 1);
  CU(HOSTQUIET(cuMemFreeAsync(q, s)));
  m_free(&m, 1, 90000);
  CU(cuStreamSynchronize(s));
  CU(HOSTQUIET(cuMemFree_v2(p))); // cuMemFree frees stream-ordered memory too
  m_free(&m, 0, 70000);
  VERIFY(&m);

  // A stream of device 0 while device 1 is current: the stream's device; the null stream: the
  // current context's.
  set_device(1);
  CU(HOSTQUIET(cuMemAllocAsync(&p, 4000, s)));
  m_alloc(&m, 0, 4000);
  CU(HOSTQUIET(cuMemAllocAsync(&q, 8000, NULL)));
  m_alloc(&m, 1, 8000);
  VERIFY(&m);
  CHECK_EQ(ordinal_of(p), 0);
  CHECK_EQ(ordinal_of(q), 1);
  CU(HOSTQUIET(cuMemFreeAsync(p, NULL)));
  m_free(&m, 0, 4000);
  CU(HOSTQUIET(cuMemFreeAsync(q, s)));
  m_free(&m, 1, 8000);
  CU(cuStreamSynchronize(NULL));
  CU(cuStreamSynchronize(s));
  VERIFY(&m);
  set_device(0);

  CU(cuMemPoolDestroy(pool1));
  CU_EQ(cuMemPoolDestroy(pool0), ND_CUDA_ERROR_INVALID_VALUE); // a default pool
  CU_EQ(HOSTQUIET(cuMemAllocFromPoolAsync(&p, 100, pool1, s)), ND_CUDA_ERROR_INVALID_VALUE);
  CU(cuStreamDestroy_v2(s));
  CU_EQ(cuStreamDestroy_v2(s), FK_CUDA_ERROR_INVALID_HANDLE);
  CU_EQ(HOSTQUIET(cuMemAllocAsync(&p, 100, s)), FK_CUDA_ERROR_INVALID_HANDLE);
  VERIFY(&m);
  CHECK_FREE(0);
  CHECK_FREE(1);
}

// ---------------------------------------------------------------- device 1, across devices

static void second_device(void) {
  nd_cu_deviceptr p = 0;
  const long long n = 2 * MiB + 1;
  set_device(1);
  CU(HOSTQUIET(cuMemAlloc_v2(&p, n)));
  m_alloc(&m, 1, n);
  used[1] += rounded(n);
  VERIFY(&m);
  CHECK_FREE(0);
  CHECK_FREE(1);
  CHECK_EQ(ordinal_of(p), 1);
  roundtrip(p, 4096, 4);
  set_device(0); // freed while device 0 is current: still device 1's memory
  CU(HOSTQUIET(cuMemFree_v2(p)));
  m_free(&m, 1, n);
  used[1] -= rounded(n);
  VERIFY(&m);
  CHECK_FREE(1);
}

// ---------------------------------------------------------------- virtual memory management

static void vmm(void) {
  nd_cu_mem_alloc_prop_t prop;
  memset(&prop, 0, sizeof prop);
  prop.type = FK_CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = ND_CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  size_t g = 0;
  CU(cuMemGetAllocationGranularity(&g, &prop, 0));
  CHECK_EQ(g, 2 * MiB);
  nd_cu_mem_handle h = 0;
  // device 0 is current: the memory is where prop.location says
  CU(HOSTQUIET(cuMemCreate(&h, 4 * MiB, &prop, 0)));
  m_alloc(&m, 1, 4 * MiB);
  used[1] += 4 * MiB;
  VERIFY(&m);
  CHECK_FREE(1);
  nd_cu_deviceptr va = 0;
  CU(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
  CHECK(va % (2 * MiB) == 0);
  CU(cuMemMap(va, 4 * MiB, 0, h, 0));
  CU(cuMemMap(va + 4 * MiB, 4 * MiB, 0, h, 0)); // the same memory at a second address
  CU_EQ(cuMemMap(va, 2 * MiB, 0, h, 0), 208 /* CUDA_ERROR_ALREADY_MAPPED */);
  VERIFY(&m);
  CU_EQ(cuMemcpyHtoD_v2(va, buf, 16), ND_CUDA_ERROR_INVALID_VALUE); // no access granted yet
  fk_cu_mem_access_desc_t acc = {{ND_CU_MEM_LOCATION_TYPE_DEVICE, 1},
                                 FK_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CU(cuMemSetAccess(va, 8 * MiB, &acc, 1));
  roundtrip(va + 3 * MiB, 4096, 5);
  CU(cuMemcpyDtoH_v2(back, va + 7 * MiB, 4096)); // the alias reads what was written
  CHECK(memcmp(back, buf, 4096) == 0);
  CHECK_EQ(ordinal_of(va + 5 * MiB), 1);
  CU(cuMemUnmap(va + 4 * MiB, 4 * MiB));
  CU(cuMemUnmap(va, 4 * MiB));
  CU_EQ(cuMemUnmap(va, 4 * MiB), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
  CU(HOSTQUIET(cuMemRelease(h)));
  m_free(&m, 1, 4 * MiB);
  used[1] -= 4 * MiB;
  VERIFY(&m);
  CHECK_FREE(1);
  CU_EQ(HOSTQUIET(cuMemRelease(h)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);

  // released while still mapped: counted at the release; the mapping stays usable to its unmap
  prop.location.id = 0;
  CU(HOSTQUIET(cuMemCreate(&h, 2 * MiB, &prop, 0)));
  m_alloc(&m, 0, 2 * MiB);
  CU(cuMemMap(va, 2 * MiB, 0, h, 0));
  acc.location.id = 0;
  CU(cuMemSetAccess(va, 2 * MiB, &acc, 1));
  CU(HOSTQUIET(cuMemRelease(h)));
  m_free(&m, 0, 2 * MiB);
  VERIFY(&m);
  CHECK_FREE(0);
  roundtrip(va, 4096, 6);
  CU_EQ(cuMemAddressFree(va, 8 * MiB), ND_CUDA_ERROR_INVALID_VALUE); // still mapped
  CU(cuMemUnmap(va, 2 * MiB));
  CU(cuMemAddressFree(va, 8 * MiB));
  CU_EQ(HOSTQUIET(cuMemCreate(&h, 3 * MiB, &prop, 0)), ND_CUDA_ERROR_INVALID_VALUE);
  prop.location.id = NDEV;
  CU_EQ(HOSTQUIET(cuMemCreate(&h, 2 * MiB, &prop, 0)), ND_CUDA_ERROR_INVALID_DEVICE);
  VERIFY(&m);
}

// ---------------------------------------------------------------- what must change nothing

static void unknown_frees(void) {
  const nd_cu_deviceptr bogus = 0xdead0000;
  CU_EQ(HOSTQUIET(cuMemFree_v2(bogus)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemFreeAsync(bogus, NULL)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemFreeAsync_ptsz(bogus, NULL)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemFreeHost((void *)bogus)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemRelease(bogus)), ND_CUDA_ERROR_INVALID_VALUE);
  CU_EQ(HOSTQUIET(cuMemFree_v2(0)), ND_CUDA_ERROR_INVALID_VALUE);
  VERIFY(&m);
}

// Allocations the driver refuses (more than its free memory) are not counted by ndmem, and are
// not ndmem's failures.
static void refused(void) {
  nd_cu_deviceptr p = 0, q = 0;
  size_t pitch = 0;
  nd_cu_mem_handle h = 0;
  nd_cu_mem_alloc_prop_t prop;
  memset(&prop, 0, sizeof prop);
  prop.type = FK_CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = ND_CU_MEM_LOCATION_TYPE_DEVICE;
  CU_EQ(HOSTQUIET(cuMemAlloc_v2(&p, TOTAL + 1)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, 0);
  VERIFY(&m);
  const long long all = TOTAL - used[0];
  CU(HOSTQUIET(cuMemAlloc_v2(&p, all))); // every free byte
  m_alloc(&m, 0, all);
  used[0] += all;
  VERIFY(&m);
  CHECK_FREE(0);
  CU_EQ(HOSTQUIET(cuMemAlloc_v2(&q, 1)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, 0);
  CU_EQ(HOSTQUIET(cuMemAllocAsync(&q, 1, NULL)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, 0);
  CU_EQ(HOSTQUIET(cuMemAllocPitch_v2(&q, &pitch, 4, 1, 4)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, 0);
  CU_EQ(HOSTQUIET(cuMemAllocManaged(&q, 1, ND_CU_MEM_ATTACH_GLOBAL)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, FAKECUDA_MANAGED);
  CU_EQ(HOSTQUIET(cuMemCreate(&h, 2 * MiB, &prop, 0)), ND_CUDA_ERROR_OUT_OF_MEMORY);
  m_refused(&m, 0);
  VERIFY(&m);
  if (shim()) {
    ndmem_device_stats_t ds = nd_dev(0);
    CHECK_EQ(ds.failed, 0);
    CHECK_EQ(ds.breaches, 0);
    CHECK_EQ(ds.limit_bytes, 0);
  }
  set_device(1); // the other device is untouched
  CU(HOSTQUIET(cuMemAlloc_v2(&q, 1)));
  m_alloc(&m, 1, 1);
  CU(HOSTQUIET(cuMemFree_v2(q)));
  m_free(&m, 1, 1);
  set_device(0);
  CU(HOSTQUIET(cuMemFree_v2(p)));
  m_free(&m, 0, all);
  used[0] -= all;
  VERIFY(&m);
  CHECK_FREE(0);
}

// ---------------------------------------------------------------- cuMemGetInfo without a limit

static void getinfo(void) {
  nd_cu_deviceptr p = 0;
  set_device(1);
  CU(cuMemAlloc_v2(&p, 3 * MiB + 3));
  m_alloc(&m, 1, 3 * MiB + 3);
  used[1] += rounded(3 * MiB + 3);
  for (int d = 0; d < NDEV; d++) {
    set_device(d);
    ndmem_device_stats_t b = nd_dev(d);
    size_t fr = 0, to = 0;
    CU(HOSTQUIET(cuMemGetInfo_v2(&fr, &to)));
    CHECK_EQ(to, TOTAL); // unchanged: there is no limit
    CHECK_EQ(fr, TOTAL - used[d]);
    CHECK_FREE(d);
    if (shim()) {
      ndmem_device_stats_t a = nd_dev(d);
      CHECK_EQ(a.getinfo_calls, b.getinfo_calls + 1);
      CHECK_EQ(a.getinfo_clamped, 0);
      CHECK_EQ(a.total_bytes, TOTAL);
      CHECK_EQ(a.limit_bytes, 0);
    }
  }
  CU(cuMemFree_v2(p));
  m_free(&m, 1, 3 * MiB + 3);
  used[1] -= rounded(3 * MiB + 3);
  set_device(0);
  VERIFY(&m);
}

// ---------------------------------------------------------------- threads

#define THREADS 4
#define ROUNDS 300
#define KEEP 8

typedef struct worker {
  int id, dev;
  long long allocs, bytes, max_live;
  int failures;
} worker_t;

// Each thread has no context until it sets one; then allocates, fills and frees blocks of
// changing sizes on its device, checking every block still holds its own pattern (the double
// never hands out the same memory twice).
static void *work(void *arg) {
  worker_t *w = arg;
  nd_cu_context c = (nd_cu_context)w;
  nd_cu_deviceptr p = 0;
  if (cuCtxGetCurrent(&c) != 0 || c != NULL) w->failures++;
  if (cuMemAlloc_v2(&p, 4096) != ND_CUDA_ERROR_INVALID_CONTEXT) w->failures++;
  if (cuCtxSetCurrent(ctx[w->dev]) != 0) w->failures++;
  nd_cu_deviceptr live[KEEP] = {0};
  size_t size[KEEP] = {0};
  long long live_bytes = 0;
  unsigned char pattern[256], got[256];
  for (int i = 0; i < ROUNDS; i++) {
    int slot = i % KEEP;
    if (live[slot]) {
      memset(pattern, (w->id << 4) | slot, sizeof pattern);
      if (cuMemcpyDtoH_v2(got, live[slot] + size[slot] - 256, 256) != 0 ||
          memcmp(got, pattern, 256) != 0)
        w->failures++;
      if (cuMemFree_v2(live[slot]) != 0) w->failures++;
      live_bytes -= (long long)size[slot];
    }
    size[slot] = 256 + (size_t)((i * 7919 + w->id * 104729) % 300000);
    if (cuMemAlloc_v2(&live[slot], size[slot]) != 0) {
      w->failures++;
      live[slot] = 0;
      continue;
    }
    w->allocs++;
    w->bytes += (long long)size[slot];
    live_bytes += (long long)size[slot];
    if (live_bytes > w->max_live) w->max_live = live_bytes;
    if (cuMemsetD8_v2(live[slot], (unsigned char)((w->id << 4) | slot), size[slot]) != 0)
      w->failures++;
  }
  for (int s = 0; s < KEEP; s++)
    if (live[s] && cuMemFree_v2(live[s]) != 0) w->failures++;
  return NULL;
}

static void threads(void) {
  pthread_t t[THREADS];
  worker_t w[THREADS];
  ndmem_stats_t before = nd_snap();
  for (int i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].id = i;
    w[i].dev = i % NDEV;
    CHECK_EQ(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  long long max_live[NDEV] = {0};
  for (int i = 0; i < THREADS; i++) {
    CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(w[i].failures, 0);
    m.fk_calls[w[i].dev + 2] += (unsigned long long)w[i].allocs;
    ndmem_kind_stats_t *k = &m.k[NDMEM_KIND_DEVICE0 + w[i].dev];
    k->allocs += (uint64_t)w[i].allocs;
    k->frees += (uint64_t)w[i].allocs;
    k->alloc_bytes += (uint64_t)w[i].bytes;
    k->free_bytes += (uint64_t)w[i].bytes;
    max_live[w[i].dev] += w[i].max_live;
  }
  if (shim()) { // the peak depends on how the threads interleaved: bounded, then taken as is
    ndmem_stats_t after = nd_snap();
    for (int d = 0; d < NDEV; d++) {
      const int k = NDMEM_KIND_DEVICE0 + d;
      const long long was = before.kind[k].peak_bytes;
      const long long bound = before.kind[k].live_bytes + max_live[d];
      CHECK(after.kind[k].peak_bytes >= was);
      CHECK(after.kind[k].peak_bytes <= (bound > was ? bound : was));
      m.k[k].peak_bytes = after.kind[k].peak_bytes;
    }
  }
  VERIFY(&m);
  CHECK_FREE(0);
  CHECK_FREE(1);
}

// ---------------------------------------------------------------- the double: faults after free

// Freed device memory is inaccessible again (the double's own property; checked without the
// shim only, whose fatal-signal handling would only add a trace).
static void fault_after_free(void) {
  if (shim()) return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    nd_cu_deviceptr p = 0;
    if (cuCtxSetCurrent(ctx[0]) != 0 || cuMemAlloc_v2(&p, 4096) != 0) _exit(2);
    ((volatile char *)p)[0] = 1;
    if (cuMemFree_v2(p) != 0) _exit(3);
    ((volatile char *)p)[0] = 1; // must fault
    _exit(4);
  }
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  setenv("FAKECUDA_DEVICES", "2", 0);
  setenv("FAKECUDA_TOTAL", "1073741824", 0);
  page = sysconf(_SC_PAGESIZE);
  before_init();
  model_init(&m, NDEV);
  devices();
  no_context();
  mem_alloc();
  mem_alloc_pitch();
  managed();
  pinned();
  async();
  second_device();
  vmm();
  unknown_frees();
  refused();
  getinfo();
  threads();
  fault_after_free();
  VERIFY(&m);
  for (int d = 0; d < NDEV; d++) {
    CHECK_EQ(m.k[NDMEM_KIND_DEVICE0 + d].live_bytes, 0);
    CHECK_EQ(m.fk_live[d + 2], 0);
  }
  printf("t_cuda_direct: %s\n", shim() ? "the double and ndmem's accounting checked"
                                       : "the double checked (no shim)");
  return CHECK_DONE();
}
