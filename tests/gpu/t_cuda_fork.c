// SPDX-License-Identifier: MIT
// t_cuda_fork: a fork child initialises CUDA itself (a child may not use its parent's CUDA),
// allocates 2 MiB of device memory and exits without freeing it; the parent then uses device
// memory of its own. Each process's accounting holds only its own blocks, and each has its own
// trace (NDMEM_OUTPUT with %p): the child's shows the 2 MiB live at exit at the line marked
// LEAK, the parent's does not (t_cuda_fork.sh reads both). Prints "parent PID child PID".
#include "cudacheck.h"

#include <sys/wait.h>
#include <unistd.h>

static void use_device0(void) {
  nd_cu_context ctx = NULL;
  CU(cuInit(0));
  CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CU(cuCtxSetCurrent(ctx));
}

static int child(void) {
  use_device0();
  nd_cu_deviceptr p = 0;
  CU(cuMemAlloc_v2(&p, 2 * MiB)); // LEAK:child
  unsigned long long live = 0, calls = 0;
  fakecuda_counts(0, &live, &calls);
  CHECK_EQ(live, 2 * MiB);
  CHECK_EQ(calls, 1);
  if (shim()) {
    ndmem_device_stats_t d = nd_dev(0);
    CHECK_EQ(d.live_bytes, 2 * MiB);
    CHECK_EQ(d.allocs, 1);
    CHECK_EQ(d.frees, 0);
  }
  return CHECK_DONE(); // exit() without freeing
}

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  require_shim_if_asked(argc, argv);
  setenv("FAKECUDA_DEVICES", "1", 0);
  setenv("FAKECUDA_TOTAL", "1073741824", 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) exit(child());
  CHECK(pid > 0);
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  use_device0();
  nd_cu_deviceptr p = 0;
  CU(cuMemAlloc_v2(&p, 1 * MiB)); // TEMP:parent
  unsigned long long live = 0, calls = 0;
  fakecuda_counts(0, &live, &calls);
  CHECK_EQ(live, 1 * MiB); // the child's 2 MiB were the child's
  CHECK_EQ(calls, 1);
  if (shim()) {
    ndmem_device_stats_t d = nd_dev(0);
    CHECK_EQ(d.live_bytes, 1 * MiB);
    CHECK_EQ(d.peak_bytes, 1 * MiB);
    CHECK_EQ(d.allocs, 1);
  }
  CU(cuMemFree_v2(p));
  if (shim()) {
    ndmem_device_stats_t d = nd_dev(0);
    CHECK_EQ(d.live_bytes, 0);
    CHECK_EQ(d.frees, 1);
  }
  printf("parent %d child %d\n", (int)getpid(), (int)pid);
  return CHECK_DONE();
}
