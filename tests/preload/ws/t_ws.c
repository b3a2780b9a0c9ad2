// SPDX-License-Identifier: MIT
// t_ws: workspaces serve a training-loop program's cyclic tensors, safely.
// Each iteration allocates a forward/backward-shaped schedule of 8 tensors (64 KiB - 2 MiB),
// fills each with a pattern unique to (iteration, tensor) and checks every pattern before the
// tensor is freed, so two live blocks sharing memory would be caught. Modes:
//   marks   explicit ndmem_cycle_begin/end: cycle 1 is learned, every later one is served
//   auto    no marks: the cycles are found in the allocation stream
//   named   ndmem_workspace_enter/leave with two nested named workspaces
//   escape  one tensor of cycle 6 is kept past its cycle: reported once, stays valid
//   guard   (NDMEM_WS_GUARD=1) a stale pointer into a finished cycle is read: the process faults
//   shapes  the shapes change at iteration 20: the plan is learned again, results stay right
//   configure  policies set through ndmem_workspace_configure (not the environment)
//   policy  marks, with the shapes doubling at iteration 20 and an unplanned tensor in cycle 30;
//           prints the statistics and what happened to the unplanned allocation, for
//           t_ws_policies.sh to check under each NDMEM_WS_* setting
#include "../shimcheck.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#define T 8
static const size_t base_size[T] = {65536, 1 << 20, 2 << 20, 131072, 1 << 20, 524288, 98304, 2 << 20};
static size_t scale = 1;

__attribute__((noinline)) static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 512) p[i] = (unsigned char)(seed + i / 512);
  p[n - 1] = (unsigned char)seed;
}
static int check(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 512)
    if (p[i] != (unsigned char)(seed + i / 512)) return 0;
  return p[n - 1] == (unsigned char)seed;
}

static int errors;
static int stale_next;         // guard: remember t0 of the next iteration after it is freed
static unsigned char *stale;
static unsigned char *kept;
static size_t kept_size;
static unsigned kept_seed;

// One iteration: forward allocates t0..t5 in order, backward frees them in reverse with two
// short-lived gradient temporaries (t6, t7) in between.
static void iteration(int it, int keep_one) {
  unsigned char *t[T];
  size_t n[T];
  for (int i = 0; i < T; i++) n[i] = base_size[i] * scale;
  for (int i = 0; i < 6; i++) {
    t[i] = i == 2 ? calloc(1, n[i]) : malloc(n[i]);
    if (i == 2 && (t[i][0] || t[i][n[i] - 1])) errors++; // calloc memory is zero
    fill(t[i], n[i], (unsigned)(it * 31 + i));
  }
  for (int i = 5; i >= 0; i--) {
    int g = i % 2 ? 6 : 7;
    t[g] = malloc(n[g]);
    fill(t[g], n[g], (unsigned)(it * 31 + g));
    if (!check(t[g], n[g], (unsigned)(it * 31 + g))) errors++;
    free(t[g]);
    if (!check(t[i], n[i], (unsigned)(it * 31 + i))) errors++;
    if (stale_next && i == 0) {
      free(t[0]);
      stale = t[0]; // freed: from now on a stale workspace pointer
      stale_next = 0;
      continue;
    }
    if (keep_one && i == 4) {
      kept = t[i];
      kept_size = n[i];
      kept_seed = (unsigned)(it * 31 + i);
      continue;
    }
    free(t[i]);
  }
}

static ndmem_ws_stats_t ws_find(const char *name, int must) {
  ndmem_ws_stats_t s[8];
  memset(s, 0, sizeof s);
  int n = ndmem_ws_stats ? ndmem_ws_stats(s, 8) : 0;
  for (int i = 0; i < n && i < 8; i++)
    if (strcmp(s[i].name, name) == 0) return s[i];
  if (must) {
    fprintf(stderr, "no workspace named %s (%d workspaces)\n", name, n);
    check_failures++;
  }
  memset(s, 0, sizeof s[0]);
  return s[0];
}
#define ws(name) ws_find(name, 1)

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  const char *mode = argc > 1 ? argv[1] : "marks";
  const int iters = 40;
  if (!ndmem_cycle_begin) return fprintf(stderr, "libndmem.so is not loaded\n"), 1;
  if (!strcmp(mode, "marks") || !strcmp(mode, "escape") || !strcmp(mode, "guard")) {
    for (int it = 1; it <= iters; it++) {
      ndmem_cycle_begin();
      iteration(it, !strcmp(mode, "escape") && it == 6);
      ndmem_cycle_end();
      if (!strcmp(mode, "guard") && it == 10) stale_next = 1; // t0 of cycle 11 goes stale
      if (!strcmp(mode, "guard") && it == 11) {
        ndmem_cycle_begin(); // cycle 12: cycle 11's generation is now inaccessible
        fprintf(stderr, "reading a stale workspace pointer\n");
        volatile unsigned char v = stale[0]; // must fault under NDMEM_WS_GUARD=1
        (void)v;
        fprintf(stderr, "the stale read did not fault\n");
        return 1;
      }
    }
    ndmem_ws_stats_t s = ws("cycle");
    CHECK_EQ(s.cycles, iters);
    CHECK_EQ(s.learned_cycles, 1);
    CHECK_EQ(s.relearns, 0);
    if (!strcmp(mode, "marks")) {
      CHECK_EQ(s.hits, (iters - 1) * 12); // 6 tensors + 6 temporaries per served cycle
      CHECK_EQ(s.spills, 0);
      CHECK_EQ(s.escapes, 0);
    } else { // escape: t4 of cycle 6 stays live; its entry is not routed again
      CHECK_EQ(s.escapes, 1);
      CHECK_EQ(s.hits + s.spills, (iters - 1) * 12);
      CHECK(s.spills >= iters - 6); // t4 of cycles 7..40, and whatever shares its range
      CHECK(check(kept, kept_size, kept_seed)); // still valid after 34 more cycles
      CHECK_EQ(s.pinned_bytes, kept_size);
      free(kept);
      CHECK_EQ(ws("cycle").pinned_bytes, 0);
    }
    CHECK(s.arena_bytes >= s.plan_peak_bytes && s.plan_peak_bytes < s.plan_sum_bytes);
  } else if (!strcmp(mode, "policy")) {
    int unplanned_null = -1, unplanned_errno = 0;
    int fixed = argc > 2 && !strcmp(argv[2], "fixed"); // keep the shapes
    for (int it = 1; it <= iters; it++) {
      if (it == 20 && !fixed) scale = 2;
      ndmem_cycle_begin();
      iteration(it, 0);
      if (it == 30) { // a tensor the plan has never seen (another call site and size)
        errno = 0;
        unsigned char *u = malloc(3 << 20);
        unplanned_null = u == NULL;
        unplanned_errno = errno;
        if (u) fill(u, 3 << 20, 99), free(u);
      }
      ndmem_cycle_end();
    }
    ndmem_ws_stats_t s = ws_find("cycle", 0); // none with NDMEM_WORKSPACES=0
    printf("cycles=%llu learned=%llu arena=%llu peak=%llu sum=%llu hits=%llu spills=%llu "
           "relearns=%llu deviations=%llu escapes=%llu unplanned_null=%d unplanned_enomem=%d "
           "errors=%d\n",
           (unsigned long long)s.cycles, (unsigned long long)s.learned_cycles,
           (unsigned long long)s.arena_bytes, (unsigned long long)s.plan_peak_bytes,
           (unsigned long long)s.plan_sum_bytes, (unsigned long long)s.hits,
           (unsigned long long)s.spills, (unsigned long long)s.relearns,
           (unsigned long long)s.deviations, (unsigned long long)s.escapes, unplanned_null,
           unplanned_errno == ENOMEM, errors);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int file_arena = 0;
    while (maps && fgets(line, sizeof line, maps)) file_arena |= strstr(line, "ndmem-ws-") != NULL;
    if (maps) fclose(maps);
    printf("file_arena=%d\n", file_arena);
  } else if (!strcmp(mode, "configure")) {
    CHECK_EQ(ndmem_workspace_configure(NULL, "allocation=strict,max_size=1m,bogus=3"), -1);
    CHECK_EQ(ndmem_workspace_configure("other", "learning=over_time,cycles=2"), 0);
    for (int it = 1; it <= iters; it++) {
      ndmem_cycle_begin();
      iteration(it, 0);
      ndmem_cycle_end();
      if (it <= 10) {
        ndmem_workspace_enter("other");
        iteration(it + 500, 0);
        ndmem_workspace_leave();
      }
    }
    ndmem_ws_stats_t c = ws("cycle"), o = ws("other");
    CHECK(c.arena_bytes <= 1048576 && c.arena_bytes > 0); // strict, clamped to 1 MiB
    CHECK(c.spills >= (uint64_t)iters - 1);                // what does not fit goes to the heap
    CHECK_EQ(o.learned_cycles, 2);                         // over_time, 2 cycles
    CHECK_EQ(o.hits, (10 - 2) * 12);
  } else if (!strcmp(mode, "named")) {
    for (int it = 1; it <= iters; it++) {
      ndmem_workspace_enter("outer");
      iteration(it, 0);
      ndmem_workspace_enter("inner");
      iteration(it + 1000, 0);
      ndmem_workspace_leave();
      ndmem_workspace_leave();
    }
    CHECK_EQ(ws("outer").hits, (iters - 1) * 12);
    CHECK_EQ(ws("inner").hits, (iters - 1) * 12);
  } else if (!strcmp(mode, "auto") || !strcmp(mode, "shapes")) {
    for (int it = 1; it <= iters; it++) {
      if (!strcmp(mode, "shapes") && it == 20) scale = 2;
      iteration(it, 0);
    }
    ndmem_ws_stats_t s = ws("auto");
    // detection takes two periods and the wait for a low-water boundary, learning one cycle
    CHECK(s.hits >= (uint64_t)(iters - (strcmp(mode, "shapes") ? 6 : 14)) * 12);
    CHECK_EQ(s.escapes, 0);
    if (!strcmp(mode, "auto")) CHECK_EQ(s.relearns, 0);
    else CHECK(s.relearns >= 1);
    fprintf(stderr, "auto: hits %llu spills %llu deviations %llu relearns %llu cycles %llu\n",
            (unsigned long long)s.hits, (unsigned long long)s.spills,
            (unsigned long long)s.deviations, (unsigned long long)s.relearns,
            (unsigned long long)s.cycles);
  } else {
    return fprintf(stderr, "unknown mode %s\n", mode), 2;
  }
  CHECK_EQ(errors, 0);
  return CHECK_DONE();
}
