// SPDX-License-Identifier: MIT
// t_cuda_leak: leaks 3 MiB of device memory (cuMemAlloc on device 0) and 1 MiB of pinned host
// memory (cuMemAllocHost) at the lines marked LEAK, and frees a temporary device block at the
// line marked TEMP; t_cuda_leak.sh checks that ndmemreport names exactly those leaks with their
// file:line, kind and bytes. Built with -O0 -g so each call keeps its own line. Without the shim
// it checks what the driver test double holds at exit.
#include "cudacheck.h"

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  setenv("FAKECUDA_DEVICES", "1", 0);
  setenv("FAKECUDA_TOTAL", "1073741824", 0);
  CU(cuInit(0));
  nd_cu_context ctx = NULL;
  CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CU(cuCtxSetCurrent(ctx));
  nd_cu_deviceptr tmp = 0, leaked = 0;
  void *host = NULL;
  CU(cuMemAlloc_v2(&tmp, 5 * MiB)); // TEMP:device0
  CU(cuMemAlloc_v2(&leaked, 3 * MiB)); // LEAK:device0
  CU(cuMemAllocHost_v2(&host, 1 * MiB)); // LEAK:pinned
  CU(cuMemFree_v2(tmp));
  unsigned long long live = 0, pinned = 0;
  fakecuda_counts(0, &live, NULL);
  fakecuda_counts(FAKECUDA_PINNED, &pinned, NULL);
  CHECK_EQ(live, 3 * MiB);
  CHECK_EQ(pinned, 1 * MiB);
  if (shim()) {
    ndmem_device_stats_t d = nd_dev(0);
    CHECK_EQ(d.live_bytes, 3 * MiB);
    CHECK_EQ(d.peak_bytes, 8 * MiB);
    ndmem_stats_t s = nd_snap();
    CHECK_EQ(s.kind[NDMEM_KIND_PINNED].live_bytes, 1 * MiB);
  }
  return CHECK_DONE(); // without freeing either
}
