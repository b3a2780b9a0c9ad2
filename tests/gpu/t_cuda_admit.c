// SPDX-License-Identifier: MIT
// t_cuda_admit: the device limit refuses only where the program takes it. Under
// NDMEM_MAX_DEVICE_BYTES=4M and NDMEM_LIMIT_SLACK=8m (t_cuda_admit.sh), through a stand-in of the
// CUDA runtime (admit/libcudart_ndmemtest.so, passed through to find the code asking):
//   - a library's workspace (admit/libcuwork.so) over the limit is admitted, within the slack;
//   - PyTorch's caching allocator (a stand-in named libc10_cuda.so, on the built-in list) is
//     refused over it (CUDA_ERROR_OUT_OF_MEMORY: PyTorch frees its cache, asks again, raises);
//   - the library's request that would pass the slack is refused, and so is a large one (64 MiB);
//   - once freed, the caching allocator's request fits again.
// Without the shim nothing is refused (the double alone).
#include "cudacheck.h"

int c10_cuda_alloc(nd_cu_deviceptr *p, size_t n);
int work_alloc(nd_cu_deviceptr *p, size_t n);

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  setenv("FAKECUDA_DEVICES", "1", 0);
  setenv("FAKECUDA_TOTAL", "1073741824", 0);
  CU(cuInit(0));
  nd_cu_context ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CU(cuCtxSetCurrent(ctx));
  int lim = shim();
  int refused = lim ? ND_CUDA_ERROR_OUT_OF_MEMORY : ND_CUDA_SUCCESS;
  nd_cu_deviceptr a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
  CU(work_alloc(&a, 3 * MiB));                  // under the limit
  CU(work_alloc(&b, 2 * MiB));                  // 5 MiB: past the limit, admitted
  CU_EQ(c10_cuda_alloc(&c, 1 * MiB), refused);  // the caching allocator: refused
  CU_EQ(work_alloc(&d, 8 * MiB), refused);      // 13 MiB would pass the limit plus the slack
  CU_EQ(work_alloc(&e, 64 * MiB), refused);     // a large request
  ndmem_device_stats_t s = nd_dev(0);
  if (lim) {
    CHECK_EQ(s.limit_bytes, 4 * MiB);
    CHECK_EQ(s.live_bytes, 5 * MiB);
    CHECK_EQ(s.breaches, 3);
    CHECK_EQ(s.failed, 3);
  }
  printf("admit: workspace 2 MiB %s; caching allocator 1 MiB %s; workspace 8 MiB %s; 64 MiB %s\n",
         b ? "admitted" : "refused", c ? "granted" : "refused", d ? "granted" : "refused",
         e ? "granted" : "refused");
  CU(cuMemFree_v2(a));
  CU(cuMemFree_v2(b));
  if (c) CU(cuMemFree_v2(c));
  if (d) CU(cuMemFree_v2(d));
  if (e) CU(cuMemFree_v2(e));
  CU(c10_cuda_alloc(&f, 1 * MiB)); // room again
  CU(cuMemFree_v2(f));
  return CHECK_DONE();
}
