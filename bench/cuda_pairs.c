// SPDX-License-Identifier: MIT
// cuda_pairs.c: what a device allocation costs, in ns per cuMemAlloc + cuMemFree pair, for a few
// sizes, and per cuMemGetInfo call. Plain C without the CUDA toolkit: it reaches the driver as
// the static CUDA runtime does (dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2"),
// then cuGetProcAddress for every function), so under the shim it times the path a real CUDA
// program takes through ndmem's hooks. bench/cuda_bench.sh runs it plain and under the shim.
// Against the driver test double (LD_LIBRARY_PATH) it measures the hooks' own cost, not a GPU's.
#include "device/cuda_abi.h"
#include "ndmem.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef nd_cu_result (*get_proc_fn)(const char *, void **, int, nd_cu_u64, int *);
typedef nd_cu_result (*init_fn)(unsigned);
typedef nd_cu_result (*device_get_fn)(nd_cu_device *, int);
typedef nd_cu_result (*retain_fn)(nd_cu_context *, nd_cu_device);
typedef nd_cu_result (*set_current_fn)(nd_cu_context);
typedef nd_cu_result (*alloc_fn)(nd_cu_deviceptr *, size_t);
typedef nd_cu_result (*free_fn)(nd_cu_deviceptr);
typedef nd_cu_result (*getinfo_fn)(size_t *, size_t *);

#define CUDA_VERSION_ASKED 12000 // answers the _v2 entry points (ND_CU_V2_*_VERSION)
#define MAX_SIZES 16
#define MAX_REPS 1000

static struct {
  init_fn init;
  device_get_fn device_get;
  retain_fn retain;
  set_current_fn set_current;
  alloc_fn alloc;
  free_fn free;
  getinfo_fn getinfo;
} cu;

// Function pointers come back as void * from dlsym and cuGetProcAddress (POSIX guarantees the
// conversion); memcpy keeps -Wpedantic quiet about it.
static int resolve(void *lib, get_proc_fn gp, const char *name, const char *v2, void *dst) {
  void *f = NULL;
  int status = 0;
  if (gp) {
    nd_cu_result r = gp(name, &f, CUDA_VERSION_ASKED, ND_CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != ND_CUDA_SUCCESS || status != ND_CU_GET_PROC_ADDRESS_SUCCESS) f = NULL;
  } else {
    f = dlsym(lib, v2 ? v2 : name);
  }
  if (!f) {
    fprintf(stderr, "cuda_pairs: the driver has no %s\n", v2 ? v2 : name);
    return -1;
  }
  memcpy(dst, &f, sizeof f);
  return 0;
}

static void check(nd_cu_result r, const char *what) {
  if (r == ND_CUDA_SUCCESS) return;
  fprintf(stderr, "cuda_pairs: %s: CUresult %d\n", what, r);
  exit(1);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ns per pair of one round of n pairs
static double pairs_round(size_t size, uint64_t n) {
  double t0 = now_ns();
  for (uint64_t i = 0; i < n; i++) {
    nd_cu_deviceptr p;
    check(cu.alloc(&p, size), "cuMemAlloc");
    check(cu.free(p), "cuMemFree");
  }
  return (now_ns() - t0) / (double)n;
}

static double getinfo_round(uint64_t n) {
  double t0 = now_ns();
  for (uint64_t i = 0; i < n; i++) {
    size_t free_b, total_b;
    check(cu.getinfo(&free_b, &total_b), "cuMemGetInfo");
  }
  return (now_ns() - t0) / (double)n;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-') return -1;
  // a size may carry k/m (KiB/MiB), as the output prints them
  if (*end == 'k' || *end == 'K') v <<= 10, end++;
  else if (*end == 'm' || *end == 'M') v <<= 20, end++;
  if (*end) return -1;
  *out = v;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: cuda_pairs [--pairs N] [--reps N] [--sizes S,S,...] [--getinfo N] [--dlsym]\n"
          "       cuda_pairs --probe\n"
          "  --pairs N    cuMemAlloc + cuMemFree pairs per size and repetition (default 2000)\n"
          "  --reps N     repetitions; the median is printed (default 5)\n"
          "  --sizes L    sizes in bytes, k or m suffix allowed (default 256,64k,4m,64m)\n"
          "  --getinfo N  cuMemGetInfo calls per repetition (default 20000; 0: none)\n"
          "  --dlsym      resolve cuMemAlloc_v2 etc. by dlsym on the driver, not cuGetProcAddress\n"
          "  --probe      load the driver, make a context and exit: 0 usable, 77 not\n"
          "prints one line per size: size, pairs, reps, ns_per_pair (median), min, max; then\n"
          "'getinfo ns_per_call', and under ndmem how many of its allocations ndmem counted\n");
}

int main(int argc, char **argv) {
  uint64_t pairs = 2000, reps = 5, getinfo = 20000;
  uint64_t sizes[MAX_SIZES] = {256, 64 << 10, 4 << 20, 64 << 20};
  int nsizes = 4, by_dlsym = 0, probe = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    uint64_t *dst = NULL;
    if (!strcmp(a, "--dlsym")) {
      by_dlsym = 1;
      continue;
    } else if (!strcmp(a, "--probe")) {
      probe = 1;
      continue;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--sizes") && i + 1 < argc) {
      char *list = argv[++i], *save = NULL;
      nsizes = 0;
      for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (nsizes == MAX_SIZES || parse_u64(tok, &sizes[nsizes]) || !sizes[nsizes]) {
          fprintf(stderr, "cuda_pairs: bad size '%s' (at most %d sizes)\n", tok, MAX_SIZES);
          return 2;
        }
        nsizes++;
      }
      if (!nsizes) dst = NULL; // falls through to the error below
      else continue;
    } else if (!strcmp(a, "--pairs")) {
      dst = &pairs;
    } else if (!strcmp(a, "--reps")) {
      dst = &reps;
    } else if (!strcmp(a, "--getinfo")) {
      dst = &getinfo;
    }
    if (!dst || i + 1 >= argc || parse_u64(argv[++i], dst)) {
      fprintf(stderr, "cuda_pairs: bad argument near '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (pairs < 1 || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "cuda_pairs: need --pairs >= 1 and 1 <= --reps <= %d\n", MAX_REPS);
    return 2;
  }

  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cuda_pairs: %s (no CUDA driver; the test double's folder on "
                    "LD_LIBRARY_PATH stands in for one)\n", dlerror());
    return 77;
  }
  get_proc_fn gp = NULL;
  if (!by_dlsym) {
    void *f = dlsym(lib, "cuGetProcAddress_v2");
    if (!f) {
      fprintf(stderr, "cuda_pairs: the driver has no cuGetProcAddress_v2 (CUDA 12+); try --dlsym\n");
      return 77;
    }
    memcpy(&gp, &f, sizeof f);
  }
  if (resolve(lib, gp, "cuInit", NULL, &cu.init) ||
      resolve(lib, gp, "cuDeviceGet", NULL, &cu.device_get) ||
      resolve(lib, gp, "cuDevicePrimaryCtxRetain", NULL, &cu.retain) ||
      resolve(lib, gp, "cuCtxSetCurrent", NULL, &cu.set_current) ||
      resolve(lib, gp, "cuMemAlloc", "cuMemAlloc_v2", &cu.alloc) ||
      resolve(lib, gp, "cuMemFree", "cuMemFree_v2", &cu.free) ||
      resolve(lib, gp, "cuMemGetInfo", "cuMemGetInfo_v2", &cu.getinfo))
    return 77;
  nd_cu_device dev;
  nd_cu_context ctx;
  nd_cu_result r = cu.init(0);
  if (r == ND_CUDA_SUCCESS) r = cu.device_get(&dev, 0);
  if (r == ND_CUDA_SUCCESS) r = cu.retain(&ctx, dev);
  if (r != ND_CUDA_SUCCESS) {
    fprintf(stderr, "cuda_pairs: no usable device (CUresult %d)\n", r);
    return 77;
  }
  check(cu.set_current(ctx), "cuCtxSetCurrent");
  if (probe) return 0;

  ndmem_device_stats_t before = {.size = sizeof before}, after = {.size = sizeof after};
  int counted = ndmem_device_stats && ndmem_device_stats(0, &before) == 0;
  uint64_t made = 0;
  double v[MAX_REPS];
  for (int s = 0; s < nsizes; s++) {
    pairs_round(sizes[s], pairs < 16 ? pairs : 16); // warm-up: the driver's first-use paths
    made += pairs < 16 ? pairs : 16;
    for (uint64_t k = 0; k < reps; k++) v[k] = pairs_round(sizes[s], pairs);
    made += pairs * reps;
    double lo = v[0], hi = v[0];
    for (uint64_t k = 1; k < reps; k++) lo = v[k] < lo ? v[k] : lo, hi = v[k] > hi ? v[k] : hi;
    printf("cuda_pairs size=%" PRIu64 " pairs=%" PRIu64 " reps=%" PRIu64
           " ns_per_pair=%.1f min=%.1f max=%.1f\n",
           sizes[s], pairs, reps, median(v, (int)reps), lo, hi);
    fflush(stdout);
  }
  if (getinfo) {
    for (uint64_t k = 0; k < reps; k++) v[k] = getinfo_round(getinfo);
    printf("cuda_pairs getinfo calls=%" PRIu64 " reps=%" PRIu64 " ns_per_call=%.1f\n", getinfo,
           reps, median(v, (int)reps));
  }
  // Under the shim, proof that the hooks were on the path: ndmem counted every allocation made.
  if (counted && ndmem_device_stats(0, &after) == 0)
    printf("cuda_pairs ndmem allocs_counted=%" PRIu64 " allocs_made=%" PRIu64 "\n",
           after.allocs - before.allocs, made);
  else
    printf("cuda_pairs ndmem none\n");
  return 0;
}
