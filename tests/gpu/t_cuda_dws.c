// SPDX-License-Identifier: MIT
// t_cuda_dws: device workspaces keep a program's results exact while they reuse its memory. Each
// step of a training-like loop allocates an input x and an output y, queues a copy into x and a
// slow kernel y = x + 1 (the double runs it 2 ms after its stream reaches it), frees x while
// that kernel may not have read it yet, allocates z (in a planned workspace: x's range) and
// queues a kernel that fills z with garbage; then reads y back and checks every element. A range
// handed out while the slow kernel can still read it corrupts y. Modes:
//   single      everything on the legacy default stream, cuMemAlloc/cuMemFree
//   blocking    the copy and slow kernel on stream A, the fill on stream B (both blocking)
//   nonblocking the same with CU_STREAM_NON_BLOCKING streams
//   async       cuMemAllocAsync/cuMemFreeAsync: x and y on A, z on B
//   async_same  stream-ordered, everything on A (reuse in stream order needs no wait)
//   fork        single, then a fork: the child's device workspace starts empty, the parent's
//               goes on serving
//   threads     4 threads, each with its own two blocking streams, run the blocking steps at
//               once (one device workspace for all: whatever it makes of the mixed stream,
//               results stay exact and nothing hangs)
// It prints one line of what happened ("steps= reused= bad=" and, under the shim, the
// workspace's statistics) for t_cuda_dws.sh, and checks what it knows exactly itself: under a
// planned workspace z takes x's range every step once planned, every allocation of those steps
// is an arena hit (under a plan, z at x's offset; ND4J's circular arena moves on and comes back
// to a range a lap later), and the driver sees no allocation or free call in them. Exit status: 0, 1 when
// a check failed, 3 when results were corrupted (t_cuda_dws.sh expects it of a broken ndmem).
#include "cudacheck.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define N (64 * 1024) // floats per buffer: 256 KiB
#define STEPS 40
#define DELAY_US 2000

static __thread nd_cu_stream A, B;
static int async_mode;
static __thread float *in, *out;

static nd_cu_deviceptr alloc(nd_cu_stream s) {
  nd_cu_deviceptr p = 0;
  if (async_mode) CU(cuMemAllocAsync(&p, N * sizeof(float), s));
  else CU(cuMemAlloc_v2(&p, N * sizeof(float)));
  return p;
}

static void release(nd_cu_deviceptr p, nd_cu_stream s) {
  if (async_mode) CU(cuMemFreeAsync(p, s));
  else CU(cuMemFree_v2(p));
}

static int step(int i, long long *bad);
#define THREADS 4
static nd_cu_context ctx0;

static void *thread_main(void *arg) {
  long long *bad = arg;
  CU(cuCtxSetCurrent(ctx0));
  in = malloc(N * sizeof(float));
  out = malloc(N * sizeof(float));
  CU(cuStreamCreate(&A, 0));
  CU(cuStreamCreate(&B, 0));
  for (int i = 0; i < 20; i++) step(i, bad);
  CU(cuStreamDestroy_v2(A));
  CU(cuStreamDestroy_v2(B));
  free(in);
  free(out);
  return NULL;
}

static long long calls(void) {
  return async_mode ? fakecuda_calls("cuMemAllocAsync") + fakecuda_calls("cuMemFreeAsync")
                    : fakecuda_calls("cuMemAlloc") + fakecuda_calls("cuMemFree");
}

static ndmem_device_ws_stats_t ws_stats(void) {
  ndmem_device_ws_stats_t s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  if (shim() && ndmem_device_ws_stats(0, &s) != 0) {
    fprintf(stderr, "ndmem_device_ws_stats failed\n");
    exit(1);
  }
  return s;
}

// One step; 1 when z reused x's range. *bad counts wrong elements of y.
static int step(int i, long long *bad) {
  for (int j = 0; j < N; j++) in[j] = (float)(i * 1000 + j % 1000);
  nd_cu_deviceptr y = alloc(A), x = alloc(A);
  CU(cuMemcpyHtoDAsync_v2(x, in, N * sizeof(float), A));
  CU(fakecuda_launch(A, FAKECUDA_ADD, y, x, N, 1, DELAY_US));
  release(x, A);
  nd_cu_deviceptr z = alloc(B);
  CU(fakecuda_launch(B, FAKECUDA_FILL, z, 0, N, 0x7f7f7f7fu, 0));
  CU(cuMemcpyDtoHAsync_v2(out, y, N * sizeof(float), A));
  CU(cuStreamSynchronize(A));
  CU(cuStreamSynchronize(B));
  for (int j = 0; j < N; j++) *bad += out[j] != in[j] + 1;
  release(y, A);
  release(z, B);
  if (async_mode) CU(cuCtxSynchronize());
  return z == x;
}

int main(int argc, char **argv) {
  require_shim_if_asked(argc, argv);
  const char *mode = argc > 1 ? argv[1] : "single";
  int fork_mode = strcmp(mode, "fork") == 0;
  CU(cuInit(0));
  nd_cu_context ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CU(cuCtxSetCurrent(ctx));
  ctx0 = ctx;
  in = malloc(N * sizeof(float));
  out = malloc(N * sizeof(float));
  if (!strcmp(mode, "threads")) {
    pthread_t th[THREADS];
    long long tbad[THREADS] = {0}, all = 0;
    for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, thread_main, &tbad[t]) == 0);
    for (int t = 0; t < THREADS; t++) {
      pthread_join(th[t], NULL);
      all += tbad[t];
    }
    ndmem_device_ws_stats_t s = ws_stats();
    printf("mode=threads steps=%d bad=%lld hits=%llu\n", THREADS * 20, all, (unsigned long long)s.hits);
    CHECK_EQ(fakecuda_faults(), 0);
    if (check_failures) return CHECK_DONE();
    return all ? 3 : 0;
  }
  A = B = NULL;
  if (!strcmp(mode, "blocking") || !strcmp(mode, "async")) {
    CU(cuStreamCreate(&A, 0));
    CU(cuStreamCreate(&B, 0));
  } else if (!strcmp(mode, "nonblocking")) {
    CU(cuStreamCreate(&A, FK_CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&B, FK_CU_STREAM_NON_BLOCKING));
  } else if (!strcmp(mode, "async_same")) {
    CU(cuStreamCreate(&A, 0));
    B = A;
  } else if (strcmp(mode, "single") && !fork_mode) {
    fprintf(stderr, "t_cuda_dws: unknown mode %s\n", mode);
    return 2;
  }
  async_mode = !strncmp(mode, "async", 5);

  long long bad = 0;
  int reused = 0, served = 0;
  for (int i = 0; i < STEPS; i++) {
    ndmem_device_ws_stats_t before = ws_stats();
    long long calls_before = calls();
    int r = step(i, &bad);
    ndmem_device_ws_stats_t after = ws_stats();
    reused += r;
    // Under a workspace, once a step is served from the plan, every later one is: its three
    // allocations and three frees are the arena's, z takes x's range, and the driver is not
    // called to allocate or free (but for ndmem's one cuMemAlloc of the arena).
    if (shim() && (served || after.hits > before.hits)) {
      served++;
      CHECK_EQ(after.hits - before.hits, 3);
      CHECK_EQ(after.frees - before.frees, 3);
      if (after.mode == 3) CHECK(r); // a plan puts z at x's offset (ND4J's bump arena does not)
      CHECK_EQ(calls() - calls_before, async_mode ? 0 : after.arena_allocs - before.arena_allocs);
    }
    if (fork_mode && i == STEPS / 2) {
      fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) { // the child: nothing of the parent's workspace is its own
        ndmem_device_ws_stats_t c = ws_stats();
        ndmem_device_stats_t ds = nd_dev(0);
        int ok = c.hits == 0 && c.arena_bytes == 0 && c.frees == 0 && ds.live_bytes == 0 &&
                 ds.arena_bytes == 0;
        if (shim() && !ok)
          fprintf(stderr, "child: hits %llu arena %llu live %lld\n", (unsigned long long)c.hits,
                  (unsigned long long)c.arena_bytes, (long long)ds.live_bytes);
        _exit(shim() && !ok ? 1 : 0);
      }
      int st = 0;
      CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
  }
  ndmem_device_ws_stats_t s = ws_stats();
  printf("mode=%s steps=%d reused=%d served=%d bad=%lld", mode, STEPS, reused, served, bad);
  if (shim())
    printf(" enabled=%u mode=%u sync=%u streams=%u hits=%llu frees=%llu spills=%llu arena=%llu "
           "peak=%llu sum=%llu ctx_syncs=%llu fences=%llu host_waits=%llu stream_waits=%llu "
           "fallbacks=%llu arena_allocs=%llu",
           s.enabled, s.mode, s.sync, s.streams, (unsigned long long)s.hits,
           (unsigned long long)s.frees, (unsigned long long)s.spills,
           (unsigned long long)s.arena_bytes, (unsigned long long)s.plan_peak_bytes,
           (unsigned long long)s.plan_sum_bytes, (unsigned long long)s.ctx_syncs,
           (unsigned long long)s.fences, (unsigned long long)s.host_waits,
           (unsigned long long)s.stream_waits, (unsigned long long)s.fallbacks,
           (unsigned long long)s.arena_allocs);
  printf("\n");
  if (shim()) {
    CHECK_EQ(s.hits, 3 * served);
    // the device's books count what reached the driver: the arena, not the blocks it served
    ndmem_device_stats_t ds = nd_dev(0);
    CHECK_EQ(ds.allocs, fakecuda_calls("cuMemAlloc") + fakecuda_calls("cuMemAllocAsync"));
    CHECK_EQ(ds.arena_bytes, (long long)s.arena_bytes);
  }
  CHECK_EQ(fakecuda_faults(), 0);
  if (check_failures) return CHECK_DONE();
  return bad ? 3 : 0;
}
