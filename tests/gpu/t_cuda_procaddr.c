// SPDX-License-Identifier: MIT
// t_cuda_procaddr: what a statically linked CUDA runtime does, and ndmem must still see. The
// program is not linked with libcuda: it dlopens libcuda.so.1, takes cuGetProcAddress_v2 with
// dlsym, asks it for cuGetProcAddress and finds every other entry point through THAT pointer
// (base names at CUDA 13000, the stream-ordered ones with and without per-thread default
// streams), plus cuMemAlloc_v2 by plain dlsym and the v1 cuGetProcAddress. Every allocation
// made through those pointers is accounted exactly. Without the shim it checks the double's
// resolution itself: each name gives the very entry point the real driver would.
#define FK_COUNTS fk_counts
#include "fakecuda.h"
static int (*fk_counts)(int, unsigned long long *, unsigned long long *);
#include "cudacheck.h"

#include <dlfcn.h>

#define VERSION 13000

typedef nd_cu_result (*gpa2_t)(const char *, void **, int, nd_cu_u64, int *);
typedef nd_cu_result (*gpa1_t)(const char *, void **, int, nd_cu_u64);
typedef nd_cu_result (*init_t)(unsigned);
typedef nd_cu_result (*retain_t)(nd_cu_context *, nd_cu_device);
typedef nd_cu_result (*setcur_t)(nd_cu_context);
typedef nd_cu_result (*alloc_t)(nd_cu_deviceptr *, size_t);
typedef nd_cu_result (*free_t)(nd_cu_deviceptr);
typedef nd_cu_result (*getinfo_t)(size_t *, size_t *);
typedef nd_cu_result (*alloc_async_t)(nd_cu_deviceptr *, size_t, nd_cu_stream);
typedef nd_cu_result (*free_async_t)(nd_cu_deviceptr, nd_cu_stream);
typedef nd_cu_result (*create_t)(nd_cu_mem_handle *, size_t, const nd_cu_mem_alloc_prop_t *,
                                 unsigned long long);
typedef nd_cu_result (*release_t)(nd_cu_mem_handle);

static void *lib;
static gpa2_t gpa;
static model_t m;

// Looks a base name up through the cuGetProcAddress the driver itself handed out; without the
// shim the answer must be exactly the driver's own export `want` (NULL: not checked).
static void *lookup(const char *name, nd_cu_u64 flags, const char *want) {
  void *p = NULL;
  int status = -1;
  CU(gpa(name, &p, VERSION, flags, &status));
  CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_SUCCESS);
  if (!p) {
    fprintf(stderr, "cuGetProcAddress(%s) gave NULL\n", name);
    exit(1);
  }
  if (want && !shim() && p != dlsym(lib, want)) {
    fprintf(stderr, "cuGetProcAddress(%s, flags %llu) is not %s\n", name,
            (unsigned long long)flags, want);
    check_failures++;
  }
  return p;
}

// The double's resolution rules, checked without the shim (with it the answers are ndmem's).
static void resolution_rules(void) {
  void *p = (void *)&p;
  int status = -1;
  CU_EQ(gpa("cuNoSuchThing", &p, VERSION, 0, &status), ND_CUDA_ERROR_NOT_FOUND);
  CHECK(p == NULL);
  CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CU_EQ(gpa("cuMemAllocAsync", &p, 11000, 0, &status), ND_CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  if (shim()) return;
  static const struct {
    const char *name;
    int version;
    nd_cu_u64 flags;
    const char *want;
  } rules[] = {
    {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    {"cuMemAllocPitch", 12000, 0, "cuMemAllocPitch_v2"},
    {"cuMemFree", 12000, 2, "cuMemFree_v2"},
    {"cuMemAllocHost", 12000, 0, "cuMemAllocHost_v2"},
    {"cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2"},
    {"cuDeviceTotalMem", 12000, 0, "cuDeviceTotalMem_v2"},
    {"cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2"},
    {"cuMemcpyDtoH", 12000, 0, "cuMemcpyDtoH_v2"},
    {"cuMemsetD8", 12000, 0, "cuMemsetD8_v2"},
    {"cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2"},
    {"cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2"},
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"cuMemAllocAsync", 12000, 1, "cuMemAllocAsync"},
    {"cuMemAllocFromPoolAsync", 12000, 2, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz"},
    {"cuMemHostAlloc", 12000, 0, "cuMemHostAlloc"},
    {"cuMemAllocManaged", 12000, 0, "cuMemAllocManaged"},
    {"cuMemCreate", 12000, 0, "cuMemCreate"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    p = NULL;
    status = -1;
    CU(gpa(rules[i].name, &p, rules[i].version, rules[i].flags, &status));
    CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_SUCCESS);
    if (p != dlsym(lib, rules[i].want)) {
      fprintf(stderr, "cuGetProcAddress(%s, %d, flags %llu) is not %s\n", rules[i].name,
              rules[i].version, (unsigned long long)rules[i].flags, rules[i].want);
      check_failures++;
    }
  }
  // a versioned name is not a base name; below 3020 there is no cuMemAlloc the double has
  CU_EQ(gpa("cuMemAlloc_v2", &p, VERSION, 0, &status), ND_CUDA_ERROR_NOT_FOUND);
  CU_EQ(gpa("cuMemAlloc", &p, 3000, 0, &status), ND_CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

// The requests the static CUDA runtime 13.0 (libcudart_static.a) makes for the memory functions
// and for cuGetProcAddress itself, as recorded from its start-up (a debugger on the driver's
// cuGetProcAddress_v2): each name at the version that introduced its current form, and the
// stream-ordered ones with and without per-thread default streams. Under the shim every answer
// must be one of ndmem's hooks; the double's own answer for cuGetProcAddress at 11030 is the v1
// entry point, at 12000 the v2 one.
static void cudart_requests(gpa2_t g) {
  static const struct {
    const char *name;
    int version;
    nd_cu_u64 flags;
  } reqs[] = {
      {"cuGetProcAddress", 11030, 0},       {"cuGetProcAddress", 12000, 0},
      {"cuMemGetInfo", 3020, 0},            {"cuMemAllocManaged", 6000, 0},
      {"cuMemAlloc", 3020, 0},              {"cuMemAllocPitch", 3020, 0},
      {"cuMemFree", 3020, 0},               {"cuMemFreeHost", 2000, 0},
      {"cuMemHostAlloc", 2020, 0},          {"cuMemAllocAsync", 11020, 0},
      {"cuMemAllocAsync", 11020, 2},        {"cuMemAllocFromPoolAsync", 11020, 0},
      {"cuMemAllocFromPoolAsync", 11020, 2}, {"cuMemFreeAsync", 11020, 0},
      {"cuMemFreeAsync", 11020, 2},
  };
  for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
    void *p = NULL;
    int status = -1;
    CU(g(reqs[i].name, &p, reqs[i].version, reqs[i].flags, &status));
    Dl_info info;
    const char *where = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
    int hooked = strstr(where, "libndmem") != NULL;
    if (hooked != shim()) {
      fprintf(stderr, "%s at %d (flags %llu) answered from %s\n", reqs[i].name, reqs[i].version,
              (unsigned long long)reqs[i].flags, where);
      check_failures++;
    }
  }
}

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  setenv("FAKECUDA_DEVICES", "1", 0);
  setenv("FAKECUDA_TOTAL", "1073741824", 0);
  lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  if (!dlsym(lib, "fakecuda_is_a_test_double")) {
    fprintf(stderr, "libcuda.so.1 is not the test double (LD_LIBRARY_PATH?)\n");
    return 1;
  }
  AS_FN(fk_counts, dlsym(lib, "fakecuda_counts"));
  gpa2_t gpa_dlsym;
  AS_FN(gpa_dlsym, dlsym(lib, "cuGetProcAddress_v2"));
  CHECK(gpa_dlsym != NULL);
  // Works before cuInit: the runtime finds cuInit through it. From now on only its answers.
  void *p = NULL;
  int status = -1;
  CU(gpa_dlsym("cuGetProcAddress", &p, VERSION, 0, &status));
  CHECK_EQ(status, ND_CU_GET_PROC_ADDRESS_SUCCESS);
  AS_FN(gpa, p);
  if (!gpa) return 1;
  if (!shim()) CHECK(p == dlsym(lib, "cuGetProcAddress_v2"));

  init_t init;
  retain_t retain;
  setcur_t setcur;
  alloc_t alloc;
  free_t mfree;
  getinfo_t getinfo;
  alloc_async_t alloc_async, alloc_async_pt;
  free_async_t free_async, free_async_pt;
  create_t create;
  release_t release;
  AS_FN(init, lookup("cuInit", 0, "cuInit"));
  AS_FN(retain, lookup("cuDevicePrimaryCtxRetain", 0, "cuDevicePrimaryCtxRetain"));
  AS_FN(setcur, lookup("cuCtxSetCurrent", 0, "cuCtxSetCurrent"));
  AS_FN(alloc, lookup("cuMemAlloc", 0, "cuMemAlloc_v2"));
  AS_FN(mfree, lookup("cuMemFree", 0, "cuMemFree_v2"));
  AS_FN(getinfo, lookup("cuMemGetInfo", 0, "cuMemGetInfo_v2"));
  AS_FN(alloc_async, lookup("cuMemAllocAsync", 0, "cuMemAllocAsync"));
  AS_FN(alloc_async_pt, lookup("cuMemAllocAsync", ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                               "cuMemAllocAsync_ptsz"));
  AS_FN(free_async, lookup("cuMemFreeAsync", 0, "cuMemFreeAsync"));
  AS_FN(free_async_pt, lookup("cuMemFreeAsync", ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                              "cuMemFreeAsync_ptsz"));
  AS_FN(create, lookup("cuMemCreate", 0, "cuMemCreate"));
  AS_FN(release, lookup("cuMemRelease", 0, "cuMemRelease"));
  resolution_rules();

  CU(init(0));
  model_init(&m, 1);
  nd_cu_context ctx = NULL;
  CU(retain(&ctx, 0));
  CU(setcur(ctx));

  nd_cu_deviceptr a = 0, b = 0, c = 0, d = 0;
  CU(HOSTQUIET(alloc(&a, 1 * MiB + 1)));
  m_alloc(&m, 0, 1 * MiB + 1);
  VERIFY(&m);
  CU(HOSTQUIET(alloc_async(&b, 300000, NULL)));
  m_alloc(&m, 0, 300000);
  CU(HOSTQUIET(alloc_async_pt(&c, 200000, NULL)));
  m_alloc(&m, 0, 200000);
  VERIFY(&m);
  size_t fr = 0, to = 0;
  CU(HOSTQUIET(getinfo(&fr, &to)));
  CHECK_EQ(to, 1 * GiB);
  unsigned long long fk_free = 0;
  int (*fk_mem)(int, unsigned long long *, unsigned long long *);
  AS_FN(fk_mem, dlsym(lib, "fakecuda_mem"));
  fk_mem(0, &fk_free, NULL);
  CHECK_EQ(fr, fk_free);
  if (shim()) CHECK_EQ(nd_dev(0).getinfo_calls, 1);
  CU(HOSTQUIET(free_async(b, NULL)));
  m_free(&m, 0, 300000);
  CU(HOSTQUIET(free_async_pt(c, NULL)));
  m_free(&m, 0, 200000);
  // the double releases stream-ordered blocks when their streams reach the frees
  nd_cu_result (*ctx_sync)(void);
  AS_FN(ctx_sync, dlsym(lib, "cuCtxSynchronize"));
  CU(ctx_sync());
  VERIFY(&m);

  nd_cu_mem_alloc_prop_t prop;
  memset(&prop, 0, sizeof prop);
  prop.type = FK_CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = ND_CU_MEM_LOCATION_TYPE_DEVICE;
  nd_cu_mem_handle h = 0;
  CU(HOSTQUIET(create(&h, 6 * MiB, &prop, 0)));
  m_alloc(&m, 0, 6 * MiB);
  VERIFY(&m);
  CU(HOSTQUIET(release(h)));
  m_free(&m, 0, 6 * MiB);
  VERIFY(&m);

  // cuMemAlloc_v2 by plain dlsym on the driver's handle, as some loaders do
  alloc_t alloc_dlsym;
  AS_FN(alloc_dlsym, dlsym(lib, "cuMemAlloc_v2"));
  CU(HOSTQUIET(alloc_dlsym(&d, 777777)));
  m_alloc(&m, 0, 777777);
  VERIFY(&m);

  // the v1 cuGetProcAddress (by dlsym): what older runtimes call
  gpa1_t gpa1;
  AS_FN(gpa1, dlsym(lib, "cuGetProcAddress"));
  void *q = NULL;
  CU(gpa1("cuMemFree", &q, 12000, 0));
  free_t mfree1;
  AS_FN(mfree1, q);
  if (!shim()) CHECK(q == dlsym(lib, "cuMemFree_v2"));
  CU(gpa1("cuMemAlloc", &q, 12000, 0));
  alloc_t alloc1;
  AS_FN(alloc1, q);
  nd_cu_deviceptr e = 0;
  CU(HOSTQUIET(alloc1(&e, 5555)));
  m_alloc(&m, 0, 5555);
  VERIFY(&m);
  CU(HOSTQUIET(mfree1(e)));
  m_free(&m, 0, 5555);
  CU(HOSTQUIET(mfree1(d)));
  m_free(&m, 0, 777777);
  CU(HOSTQUIET(mfree(a)));
  m_free(&m, 0, 1 * MiB + 1);
  VERIFY(&m);
  CHECK_EQ(m.k[NDMEM_KIND_DEVICE0].live_bytes, 0);
  cudart_requests(gpa);
  printf("t_cuda_procaddr: %s\n", shim() ? "the double and ndmem's accounting checked"
                                         : "the double checked (no shim)");
  return CHECK_DONE();
}
