// SPDX-License-Identifier: MIT
// t_cuda_spill: NDMEM_ON_DEVICE_LIMIT=host against the driver double. Modes (t_cuda_spill.sh sets
// the environment):
//   limit   NDMEM_MAX_DEVICE_BYTES=4M: 3 MiB fit; 2 MiB more (cuMemAlloc), 2 MiB more
//           (cuMemAllocAsync) and a pitched 2 MiB are over the limit and run from page-locked
//           host memory: kernels and copies on them give exact results, their frees (synchronous
//           and stream-ordered) release that memory, and the device's books never hold them
//   full    no limit, FAKECUDA_TOTAL=8M: the driver refuses 4 MiB with 6 MiB taken (device
//           full); it runs from host memory too
//   control NDMEM_MAX_DEVICE_BYTES=4M without host spill: the same 2 MiB are refused
// Every number the double and ndmem report is checked exactly.
#include "cudacheck.h"

#define FLOATS(n) ((n) / sizeof(float))

static float host_in[FLOATS(2 * MiB)], host_out[FLOATS(2 * MiB)];

// y = x + 1 over n bytes on stream s, with the input copied in and the output read back.
static long long roundtrip(nd_cu_stream s, nd_cu_deviceptr x, nd_cu_deviceptr y, size_t n) {
  size_t k = FLOATS(n);
  for (size_t j = 0; j < k; j++) host_in[j] = (float)(j % 4096);
  CU(cuMemcpyHtoDAsync_v2(x, host_in, n, s));
  CU(fakecuda_launch(s, FAKECUDA_ADD, y, x, k, 1, 500));
  CU(cuMemcpyDtoHAsync_v2(host_out, y, n, s));
  CU(cuStreamSynchronize(s));
  long long bad = 0;
  for (size_t j = 0; j < k; j++) bad += host_out[j] != host_in[j] + 1;
  return bad;
}

static unsigned long long pinned_live(void) {
  unsigned long long live = 0;
  fakecuda_counts(FAKECUDA_PINNED, &live, NULL);
  return live;
}

static unsigned long long dev_live(void) {
  unsigned long long live = 0;
  fakecuda_counts(0, &live, NULL);
  return live;
}

int main(int argc, char **argv) {
  require_shim_if_asked(argc, argv);
  const char *mode = argc > 1 ? argv[1] : "limit";
  CU(cuInit(0));
  nd_cu_context ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CU(cuCtxSetCurrent(ctx));
  nd_cu_stream s;
  CU(cuStreamCreate(&s, 0));
  long long bad = 0;

  if (!strcmp(mode, "limit") || !strcmp(mode, "control")) {
    int spill = !strcmp(mode, "limit");
    nd_cu_deviceptr a = 0, b = 0, c = 0, d = 0;
    size_t pitch = 0;
    CU(cuMemAlloc_v2(&a, 3 * MiB));
    CHECK_EQ(dev_live(), 3 * MiB);
    int rc = cuMemAlloc_v2(&b, 2 * MiB); // SPILLED: over the limit
    if (!spill) {
      CHECK_EQ(rc, ND_CUDA_ERROR_OUT_OF_MEMORY);
      ndmem_device_stats_t ds = nd_dev(0);
      CHECK_EQ(ds.failed, 1);
      CHECK_EQ(ds.host_allocs, 0);
      CU(cuMemFree_v2(a));
      printf("mode=control refused=1\n");
      return CHECK_DONE();
    }
    CU(rc);
    CHECK_EQ(dev_live(), 3 * MiB); // not device memory
    CHECK_EQ(pinned_live(), 2 * MiB);
    bad += roundtrip(s, b, a, 2 * MiB);  // host memory in, device out
    bad += roundtrip(s, a, b, 2 * MiB);  // and back
    CU(cuMemAllocAsync(&c, 2 * MiB, s)); // SPILLED: stream-ordered, over the limit too
    CHECK_EQ(pinned_live(), 4 * MiB);
    bad += roundtrip(s, c, a, 2 * MiB);
    CU(cuMemAllocPitch_v2(&d, &pitch, 1000, 2048, 4)); // SPILLED: rows of 1024 B on the host
    CHECK_EQ(pitch, 1024);
    CHECK_EQ(pinned_live(), 6 * MiB);
    ndmem_device_stats_t ds = nd_dev(0);
    if (shim()) {
      CHECK_EQ(ds.live_bytes, 3 * MiB);
      CHECK_EQ(ds.breaches, 3);
      CHECK_EQ(ds.failed, 0);
      CHECK_EQ(ds.host_allocs, 3);
      CHECK_EQ(ds.host_alloc_bytes, 6 * MiB);
      CHECK_EQ(ds.host_live_bytes, 6 * MiB);
      ndmem_stats_t st = nd_snap();
      CHECK_EQ(st.kind[NDMEM_KIND_DEVICE0].live_bytes, 9 * MiB); // the program's view: 4 blocks
    }
    CU(cuMemFreeAsync(c, s));
    CU(cuMemFree_v2(b));
    CU(cuMemFree_v2(d));
    CU(cuStreamSynchronize(s));
    CHECK_EQ(pinned_live(), 0);
    CU(cuMemFree_v2(a));
    CHECK_EQ(dev_live(), 0);
    ds = nd_dev(0);
    if (shim()) {
      CHECK_EQ(ds.host_frees, 3);
      CHECK_EQ(ds.host_live_bytes, 0);
      CHECK_EQ(ds.host_peak_bytes, 6 * MiB);
      CHECK_EQ(ds.live_bytes, 0);
      CHECK_EQ(ds.peak_bytes, 3 * MiB);
    }
  } else if (!strcmp(mode, "full")) {
    nd_cu_deviceptr a = 0, b = 0;
    CU(cuMemAlloc_v2(&a, 6 * MiB));
    CU(cuMemAlloc_v2(&b, 4 * MiB)); // the device has 2 MiB left: host memory
    CHECK_EQ(pinned_live(), 4 * MiB);
    bad += roundtrip(s, b, a, 2 * MiB);
    if (shim()) {
      ndmem_device_stats_t ds = nd_dev(0);
      CHECK_EQ(ds.host_allocs, 1);
      CHECK_EQ(ds.breaches, 0);
      CHECK_EQ(ds.live_bytes, 6 * MiB);
    }
    CU(cuMemFree_v2(b));
    CU(cuMemFree_v2(a));
    CHECK_EQ(pinned_live(), 0);
  } else {
    fprintf(stderr, "t_cuda_spill: unknown mode %s\n", mode);
    return 2;
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(fakecuda_faults(), 0);
  printf("mode=%s bad=%lld\n", mode, bad);
  return CHECK_DONE();
}
