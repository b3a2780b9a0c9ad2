// SPDX-License-Identifier: MIT
// unwind_cost.c: what one stack capture costs exact mode. Times libunwind's fast path
// (unw_backtrace, with the per-thread caching the shim sets) called at a growing depth of
// recursion, its caches warm, and prints the nanoseconds per call and per frame: a fixed part
// (the context and the cursor) and a part per frame (a lookup in libunwind's frame cache and
// two loads). Exact mode pays one capture per allocation. usage: unwind_cost [CALLS]
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// Recurses `depth` frames, then captures `calls` times; returns the frames of one capture.
static __attribute__((noinline)) int capture_at(int depth, long calls) {
  if (depth > 0) {
    int n = capture_at(depth - 1, calls);
    __asm__ volatile("" ::: "memory"); // no tail call: each level is a frame
    return n;
  }
  void *buf[256];
  int n = 0;
  for (long i = 0; i < calls; i++) n = unw_backtrace(buf, 256);
  return n;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 200000;
  if (calls < 1) {
    fprintf(stderr, "unwind_cost: CALLS must be a positive number\n");
    return 2;
  }
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  double first = 0, first_frames = 0;
  printf("frames  ns/call\n");
  for (int depth = 0; depth <= 32; depth += 8) {
    capture_at(depth, 1000); // warm the caches
    double t = now_ns();
    int frames = capture_at(depth, calls);
    double per = (now_ns() - t) / (double)calls;
    printf("%6d  %7.1f\n", frames, per);
    if (depth == 0) first = per, first_frames = frames;
    else if (depth == 32)
      printf("per frame %.1f ns, fixed %.1f ns\n", (per - first) / (frames - first_frames),
             first - first_frames * (per - first) / (frames - first_frames));
  }
  return 0;
}
