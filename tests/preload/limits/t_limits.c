// SPDX-License-Identifier: MIT
// t_limits: NDMEM_MAX_BYTES, NDMEM_MAX_PHYSICAL_BYTES, NDMEM_ON_LIMIT and the watermark, at exact
// boundaries. Modes (t_limits.sh runs each with its environment):
//   boundary fail|warn  every allocating function one byte under, at and over maxBytes (set with
//                       ndmem_limit_set from the exact tracked total and the block's usable size)
//   abort               one allocation over maxBytes: the process stops with SIGABRT
//   env                 maxBytes from the environment (NDMEM_MAX_BYTES=64m): 1 MiB blocks until
//                       the first NULL, which must come exactly when the next block would cross
//   physical            anonymous resident memory: untouched memory and a large file mapping do
//                       not count, touched memory does, noticed within NDMEM_LIMIT_STEP
//   step                a statm file the test writes (NDMEM_TEST_STATM): the reading after exactly
//                       NDMEM_LIMIT_STEP bytes sees the crossing; then maxPhysicalBytes one byte
//                       above, at and below the reading
//   poll                the reading thread notices a crossing without any allocation
//   relief              an idle workspace arena is released and the allocation succeeds
//   threads             4 threads race to the limit: tracked bytes never end above it
//   cgroup              the cgroup limit (NDMEM_TEST_CGROUP_DIR or a real cgroup) gives '%' and
//                       the default watermark; touching past it writes a snapshot
//   touched [whole]     a large mapping counts by the pages touched (NDMEM_MAX_BYTES_MAPPINGS):
//                       nothing when made, exactly what was touched at the next reading; or whole
//   retry KIND          a thread retries a refused request while main joins it (under
//                       NDMEM_ON_LIMIT=fail): `same` the same malloc, `alternate` an mmap then a
//                       malloc (as OpenBLAS), both stopped; `giveup` 12 tries then it gives up,
//                       `smaller` less each time, `waits` until main frees: none stopped
#include "../shimcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static ndmem_limits_t lim(void) {
  ndmem_limits_t l;
  memset(&l, 0, sizeof l);
  l.size = sizeof l;
  if (!ndmem_limits || ndmem_limits(&l) != 0) {
    fprintf(stderr, "libndmem.so is not loaded, or accounting is off\n");
    exit(1);
  }
  return l;
}

static void set(const char *name, long long v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  if (ndmem_limit_set(name, v ? buf : "off") != 0) {
    fprintf(stderr, "ndmem_limit_set(%s, %s) failed\n", name, buf);
    exit(1);
  }
}

// ---------------------------------------------------------------- boundary

enum op { OP_MALLOC, OP_MALLOC_BIG, OP_CALLOC, OP_CALLOC_BIG, OP_REALLOC, OP_REALLOC_BIG,
          OP_POSIX_MEMALIGN, OP_ALIGNED_ALLOC, OP_MEMALIGN, OP_VALLOC, OP_MMAP, OP_MREMAP, OP_N };
static const char *const op_names[] = {"malloc", "malloc 1 MiB", "calloc", "calloc 300 KB",
    "realloc", "realloc 2 MiB", "posix_memalign", "aligned_alloc", "memalign", "valloc", "mmap",
    "mremap"};

static const size_t page = 4096;
static unsigned char *old_block; // realloc / mremap: the block that grows
static size_t old_size;

// Does the operation; returns the new block (NULL, MAP_FAILED -> NULL) and sets *err to the
// error the program sees (errno, or posix_memalign's result).
static void *do_op(int op, int *err) {
  void *p = NULL;
  errno = 0;
  int saved_errno = 12345;
  switch (op) {
  case OP_MALLOC: p = malloc(1000); break;
  case OP_MALLOC_BIG: p = malloc(1 << 20); break;
  case OP_CALLOC: p = calloc(10, 100); break;
  case OP_CALLOC_BIG: p = calloc(1, 300000); break;
  case OP_REALLOC: p = realloc(old_block, 5000); break;
  case OP_REALLOC_BIG: p = realloc(old_block, 2 << 20); break;
  case OP_POSIX_MEMALIGN: {
    errno = saved_errno;
    int rc = posix_memalign(&p, 64, 5000);
    if (errno != saved_errno) fprintf(stderr, "posix_memalign changed errno\n"), check_failures++;
    *err = rc;
    return rc ? NULL : p;
  }
  case OP_ALIGNED_ALLOC: p = aligned_alloc(4096, 8192); break;
  case OP_MEMALIGN: p = memalign(256, 3000); break;
  case OP_VALLOC: p = valloc(10000); break;
  case OP_MMAP:
    p = mmap(NULL, 5 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) p = NULL;
    break;
  case OP_MREMAP:
    p = mremap(old_block, 2 * page, 5 * page, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) p = NULL;
    break;
  }
  *err = p ? 0 : errno;
  return p;
}

static void undo_op(int op, void *p) {
  if (op == OP_MMAP) munmap(p, 5 * page);
  else if (op == OP_MREMAP) munmap(p, 5 * page);
  else free(p);
}

// The block that grows, before each realloc / mremap case: filled with a pattern.
static void prepare(int op) {
  old_block = NULL;
  if (op == OP_REALLOC || op == OP_REALLOC_BIG) old_size = op == OP_REALLOC ? 1000 : 100;
  else if (op == OP_MREMAP) old_size = 2 * page;
  else return;
  if (op == OP_MREMAP)
    old_block = mmap(NULL, old_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  else
    old_block = malloc(old_size);
  for (size_t i = 0; i < old_size; i++) old_block[i] = (unsigned char)(i * 7 + 1);
}

static int intact(const unsigned char *p) {
  for (size_t i = 0; i < old_size; i++)
    if (p[i] != (unsigned char)(i * 7 + 1)) return 0;
  return 1;
}

// The tracked bytes the operation adds, measured with no limit set.
static long long growth_of(int op) {
  set("max_bytes", 0);
  prepare(op);
  long long before = lim().tracked_bytes;
  int err;
  void *p = do_op(op, &err);
  CHECK(p != NULL);
  long long after = lim().tracked_bytes;
  undo_op(op, p);
  return after - before;
}

static int boundary(int warn) {
  printf("boundary (%s)\n", warn ? "warn" : "fail");
  fflush(stdout);
  for (int op = 0; op < OP_N; op++) {
    long long g = growth_of(op);
    if (op == OP_MMAP || op == OP_MREMAP) CHECK_EQ(g, op == OP_MMAP ? 5 * page : 3 * page);
    else CHECK(g > 0);
    for (int d = 1; d >= -1; d--) { // the limit is one byte above, at, one byte below the need
      set("max_bytes", 0);
      prepare(op);
      ndmem_limits_t before = lim();
      set("max_bytes", before.tracked_bytes + g + d);
      int err;
      void *p = do_op(op, &err);
      ndmem_limits_t after = lim();
      int over = d < 0;
      if (!over || warn) {
        if (!p) fprintf(stderr, "%s with limit need%+d failed\n", op_names[op], d);
        CHECK(p != NULL);
        CHECK_EQ(after.tracked_bytes, before.tracked_bytes + g);
        if (p && old_block) CHECK(intact(p));
        CHECK_EQ(after.failed, before.failed);
        CHECK_EQ(after.breaches_bytes, before.breaches_bytes + (over ? 1 : 0));
        if (p) undo_op(op, p);
        else if (old_block) undo_op(op == OP_MREMAP ? OP_MMAP : OP_MALLOC, old_block);
      } else {
        // The program's own ENOMEM handling: the old block (realloc, mremap) is untouched and
        // still its own; the request is tried again smaller or later.
        if (p) fprintf(stderr, "%s with limit need-1 succeeded\n", op_names[op]);
        CHECK(p == NULL);
        CHECK_EQ(err, ENOMEM);
        CHECK_EQ(after.tracked_bytes, before.tracked_bytes);
        CHECK_EQ(after.failed, before.failed + 1);
        CHECK_EQ(after.breaches_bytes, before.breaches_bytes + 1);
        CHECK_EQ(after.reliefs, before.reliefs + 1);
        if (old_block) {
          CHECK(intact(old_block));
          if (op == OP_MREMAP) munmap(old_block, old_size);
          else free(old_block);
        } else if (p) {
          undo_op(op, p);
        }
        set("max_bytes", 0); // and after the limit is lifted, the same call succeeds
        prepare(op);
        p = do_op(op, &err);
        CHECK(p != NULL);
        if (p) undo_op(op, p);
      }
    }
  }
  set("max_bytes", 0);
  ndmem_limits_t l = lim();
  printf("breaches %llu failed %llu reliefs %llu\n", (unsigned long long)l.breaches_bytes,
         (unsigned long long)l.failed, (unsigned long long)l.reliefs);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- abort, env

__attribute__((noinline)) static void *grow_1m(void) { return malloc(1 << 20); }

static int abort_mode(void) {
  void *held[3];
  for (int i = 0; i < 3; i++) held[i] = grow_1m(); // live at the breach: the snapshot shows them
  (void)held;
  ndmem_limits_t l = lim();
  set("max_bytes", l.tracked_bytes + (1 << 20));
  void *keep = grow_1m(); // 1 MiB plus the allocator's header: over by a few bytes
  printf("not reached: %p\n", keep);
  return 1;
}

static int env_mode(long long want_max) {
  ndmem_limits_t l = lim();
  CHECK_EQ(l.max_bytes, want_max);
  void *v[100];
  int n = 0;
  size_t u = 0;
  for (; n < 100; n++) {
    long long before = lim().tracked_bytes;
    v[n] = grow_1m();
    if (!v[n]) {
      // exactly the first block that would cross the limit
      CHECK_EQ(errno, ENOMEM);
      CHECK(before + (long long)u > l.max_bytes);
      break;
    }
    u = malloc_usable_size(v[n]);
    if (want_max) CHECK(lim().tracked_bytes <= l.max_bytes);
  }
  printf("env: %d blocks of 1 MiB under maxBytes %lld MiB\n", n, want_max >> 20);
  if (want_max) CHECK(n > 50 && n < 64);
  else CHECK_EQ(n, 100);
  for (int i = 0; i < n; i++) free(v[i]);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- physical

static long long anon_rss(void) {
  char buf[160];
  int fd = open("/proc/self/statm", O_RDONLY);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  long long size, res, shared;
  if (sscanf(buf, "%lld %lld %lld", &size, &res, &shared) != 3) return -1;
  return (res - shared) * (long long)page;
}

__attribute__((noinline)) static unsigned char *touched(size_t n) {
  unsigned char *p = malloc(n);
  if (p) memset(p, 0x5a, n);
  return p;
}

static int physical_mode(const char *dir) {
  ndmem_limits_t l = lim();
  long long max = l.max_physical_bytes;
  CHECK_EQ(max, 96 << 20);
  // 1. Untouched memory is not resident: a 512 MiB block is fine.
  void *big = malloc(512u << 20);
  CHECK(big != NULL);
  free(big);
  // 2. A 256 MiB file, mapped and read: resident, but file pages (shared) do not count.
  char path[512];
  snprintf(path, sizeof path, "%s/t_limits.file.%d", dir, (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  unlink(path);
  static unsigned char chunk[1 << 20];
  memset(chunk, 7, sizeof chunk);
  for (int i = 0; i < 256; i++) CHECK_EQ(write(fd, chunk, sizeof chunk), sizeof chunk);
  unsigned char *f = mmap(NULL, 256u << 20, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(f != MAP_FAILED);
  unsigned long sum = 0;
  for (size_t i = 0; i < (256u << 20); i += page) sum += f[i];
  CHECK_EQ(sum, 7ul * (256u << 20) / page);
  unsigned char *small = touched(8 << 20);
  CHECK(small != NULL);
  free(small);
  // 3. Touched memory counts: 4 MiB blocks until one fails. Each check reads again after
  // NDMEM_LIMIT_STEP (16 MiB) allocated, so the failure comes at most 16 MiB + one block after
  // the crossing, and never before it.
  unsigned char *v[64];
  int n = 0;
  long long last_ok = 0, at_fail = -1;
  for (; n < 64; n++) {
    long long rss = anon_rss();
    v[n] = touched(4 << 20);
    if (!v[n]) {
      at_fail = rss;
      CHECK_EQ(errno, ENOMEM);
      break;
    }
    last_ok = rss;
  }
  ndmem_limits_t after = lim();
  printf("physical: %d blocks of 4 MiB; resident %lld MiB before the last success, %lld MiB at the "
         "failure (limit 96 MiB, step 16 MiB); shim read %lld MiB\n",
         n, last_ok >> 20, at_fail >> 20, (long long)after.physical_bytes >> 20);
  CHECK(at_fail > max);                          // no failure under the limit
  CHECK(after.physical_bytes > max);
  CHECK(last_ok <= max + (16 << 20) + (4 << 20)); // the bound
  CHECK_EQ(after.breaches_physical, 1);
  CHECK_EQ(after.breaches_bytes, 0);
  for (int i = 0; i < n; i++) free(v[i]);
  munmap(f, 256u << 20);
  close(fd);
  return check_failures ? 1 : 0;
}

// The shim keeps its statm file open and reads it with pread; the test rewrites it in place.
static void rewrite_statm(const char *path, long long anon_bytes) {
  char buf[128];
  int fd = open(path, O_WRONLY | O_TRUNC);
  int n = snprintf(buf, sizeof buf, "%lld %lld 100 10 0 100 0\n", anon_bytes / (long long)page * 2,
                   anon_bytes / (long long)page + 100);
  CHECK_EQ(write(fd, buf, (size_t)n), n);
  close(fd);
}

__attribute__((noinline)) static void *step_block(void) { return malloc(100000); }

static int step_mode(const char *statm) {
  ndmem_limits_t l = lim();
  CHECK_EQ(l.max_physical_bytes, 100 << 20);
  void *warm = step_block(); // the first allocation reads: 4 MiB, under the limit
  CHECK(warm != NULL);
  l = lim();
  CHECK_EQ(l.physical_bytes, 4 << 20);
  rewrite_statm(statm, 117 << 20); // now over, unknown to the shim until its next reading
  l = lim();
  uint64_t s0 = l.since_reading, reads0 = l.physical_reads;
  // The k-th allocation from here reads when the bytes before it reach the step (1 MiB).
  int want = 1;
  while (s0 + (uint64_t)(want - 1) * 100000 < (1u << 20)) want++;
  void *v[64];
  int k = 0;
  while (k < 64 && (v[k] = step_block()) != NULL) k++;
  int failed_at = k + 1;
  printf("step: since the last reading %llu B; failed at allocation %d (expected %d)\n",
         (unsigned long long)s0, failed_at, want);
  CHECK_EQ(failed_at, want);
  CHECK_EQ(errno, ENOMEM);
  l = lim();
  CHECK_EQ(l.physical_reads, reads0 + 2); // the reading that saw it, and relief's re-reading
  CHECK_EQ(l.physical_bytes, 117 << 20);
  CHECK_EQ(l.breaches_physical, 1);
  for (int i = 0; i < k; i++) free(v[i]);
  // The physical limit one byte above, at and one byte below the reading (a new limit is
  // checked against a fresh reading).
  for (int d = 1; d >= -1; d--) {
    set("max_physical_bytes", (117LL << 20) + d);
    void *q = step_block();
    if (d >= 0) {
      CHECK(q != NULL);
      free(q);
    } else {
      CHECK(q == NULL);
      CHECK_EQ(errno, ENOMEM);
    }
  }
  CHECK_EQ(lim().breaches_physical, 2);
  free(warm);
  return check_failures ? 1 : 0;
}

static int poll_mode(const char *statm) {
  void *warm = step_block();
  CHECK(warm != NULL);
  ndmem_limits_t l = lim();
  CHECK_EQ(l.physical_bytes, 4 << 20);
  CHECK_EQ(l.snapshots, 0);
  rewrite_statm(statm, 60 << 20); // past the watermark (50 MiB), under the limit (100 MiB)
  struct timespec ts = {0, 300 * 1000000};
  nanosleep(&ts, NULL); // no allocation meanwhile: the reading thread sees it
  l = lim();
  CHECK_EQ(l.physical_bytes, 60 << 20);
  CHECK_EQ(l.snapshots, 1); // written to the trace by the reading thread
  rewrite_statm(statm, 117 << 20);
  nanosleep(&ts, NULL);
  void *p = step_block(); // the step is 1 GiB: only the reading thread could have noticed
  CHECK(p == NULL);
  CHECK_EQ(errno, ENOMEM);
  l = lim();
  CHECK_EQ(l.breaches_physical, 1);
  printf("poll: watermark snapshot %llu, then the allocation failed on the thread's reading\n",
         (unsigned long long)l.snapshots);
  free(warm);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- relief

// One cycle of a marked workspace: 3 x 8 MiB, each checked before it is freed.
__attribute__((noinline)) static void ws_cycle(int it) {
  ndmem_cycle_begin();
  unsigned char *t[3];
  for (int i = 0; i < 3; i++) {
    t[i] = malloc(8 << 20);
    memset(t[i], it * 3 + i, 8 << 20);
  }
  for (int i = 2; i >= 0; i--) {
    CHECK(t[i][0] == (unsigned char)(it * 3 + i) && t[i][(8 << 20) - 1] == (unsigned char)(it * 3 + i));
    free(t[i]);
  }
  ndmem_cycle_end();
}

static int relief_mode(void) {
  for (int it = 0; it < 6; it++) ws_cycle(it); // learned, then served; afterwards the arena is idle
  ndmem_ws_stats_t ws[4];
  int n = ndmem_ws_stats(ws, 4);
  CHECK_EQ(n, 1);
  long long arena = (long long)ws[0].arena_bytes;
  CHECK(ws[0].hits >= 15);
  CHECK(arena >= 24 << 20);
  ndmem_limits_t l = lim();
  // tracked counts the idle arena; 10 MiB more fits only once it is released
  set("max_bytes", l.tracked_bytes - arena + (16 << 20));
  unsigned char *p = malloc(10 << 20);
  CHECK(p != NULL);
  ndmem_limits_t after = lim();
  CHECK_EQ(after.reliefs, l.reliefs + 1);
  CHECK_EQ(after.relief_bytes, l.relief_bytes + (uint64_t)arena);
  CHECK_EQ(after.breaches_bytes, 0);
  CHECK_EQ(after.failed, 0);
  n = ndmem_ws_stats(ws, 4);
  CHECK_EQ(ws[0].arena_bytes, 0);
  free(p);
  // The workspace maps its arena again when it is used next, and serves the cycle.
  set("max_bytes", 0);
  uint64_t hits = ws[0].hits;
  for (int it = 6; it < 9; it++) ws_cycle(it);
  ndmem_ws_stats(ws, 4);
  printf("relief: released an idle arena of %lld MiB; the workspace served %llu more hits after\n",
         arena >> 20, (unsigned long long)(ws[0].hits - hits));
  CHECK_EQ(ws[0].hits - hits, 9);
  CHECK_EQ((long long)ws[0].arena_bytes, arena);
  CHECK_EQ(ws[0].relearns, 0);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- threads

static void *racer(void *arg) {
  void **v = arg;
  int n = 0;
  while (n < 400 && (v[n] = malloc(1 << 20)) != NULL) n++;
  v[n] = NULL;
  return NULL;
}

static int threads_mode(void) {
  ndmem_limits_t l = lim();
  CHECK_EQ(l.max_bytes, 200 << 20);
  static void *v[4][401];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, racer, v[i]);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  l = lim();
  int total = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; v[i][j]; j++) total++;
  printf("threads: %d blocks of 1 MiB; tracked %lld of maxBytes %lld\n", total,
         (long long)l.tracked_bytes, (long long)l.max_bytes);
  CHECK(l.tracked_bytes <= l.max_bytes); // blocks over 256 KiB reserve: no overshoot together
  CHECK(l.tracked_bytes + 4 * ((1 << 20) + 4096) > l.max_bytes); // and each stopped near it
  CHECK_EQ(l.failed, 4);
  for (int i = 0; i < 4; i++)
    for (int j = 0; v[i][j]; j++) free(v[i][j]);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- cgroup

__attribute__((noinline)) static unsigned char *cgroup_block(void) { return touched(10 << 20); }

static int cgroup_mode(long long cg) {
  ndmem_limits_t l = lim();
  printf("cgroup: limit %lld MiB, RAM %lld MiB, watermark %lld MiB, maxBytes %lld MiB\n",
         (long long)l.cgroup_bytes >> 20, (long long)l.ram_bytes >> 20, (long long)l.warn_at >> 20,
         (long long)l.max_bytes >> 20);
  CHECK_EQ(l.cgroup_bytes, cg);
  CHECK_EQ(l.warn_at, cg / 10 * 9);          // the default watermark: 90 % of the cgroup limit
  CHECK_EQ(l.max_bytes, cg / 2 * 3);          // NDMEM_MAX_BYTES=150%
  unsigned char *v[64];
  int n = 0;
  while (n < 64 && anon_rss() < cg / 100 * 94) v[n++] = cgroup_block();
  struct timespec ts = {0, 300 * 1000000};
  nanosleep(&ts, NULL);
  l = lim();
  CHECK(l.snapshots >= 1);
  printf("cgroup: %d blocks of 10 MiB touched; %llu snapshot(s)\n", n, (unsigned long long)l.snapshots);
  for (int i = 0; i < n; i++) free(v[i]);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- touched

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static int touched_mode(int whole) {
  ndmem_limits_t l = lim();
  CHECK_EQ(l.max_bytes, 16 << 20);
  long long base = l.tracked_bytes;
  unsigned char *m = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (whole) { // NDMEM_MAX_BYTES_MAPPINGS=whole: 64 MiB count whole, over 16 MiB
    CHECK(m == MAP_FAILED && errno == ENOMEM);
    printf("touched (whole): a 64 MiB mapping %s\n", m == MAP_FAILED ? "refused" : "allowed");
    return check_failures ? 1 : 0;
  }
  CHECK(m != MAP_FAILED); // 64 MiB reserved under a 16 MiB limit: none of it touched
  if (m == MAP_FAILED) return 1;
  CHECK_EQ(lim().tracked_bytes, base);
  memset(m, 1, 12 << 20);
  sleep_ms(200); // the reading thread reads the pages (NDMEM_LIMIT_POLL_MS=20)
  CHECK_EQ(lim().tracked_bytes, base + (12 << 20));
  void *p = malloc(8 << 20); // 12 MiB touched + 8 MiB > 16 MiB
  CHECK(p == NULL && errno == ENOMEM);
  munmap(m + (32 << 20), 32 << 20); // a part: the rest counts whole until the next reading
  CHECK_EQ(lim().tracked_bytes, base + (32 << 20));
  sleep_ms(200);
  CHECK_EQ(lim().tracked_bytes, base + (12 << 20));
  munmap(m, 32 << 20);
  p = malloc(8 << 20);
  CHECK(p != NULL);
  printf("touched: 64 MiB mapped counted 0, then the 12 MiB touched; 8 MiB more %s\n",
         p ? "fits once it is unmapped" : "still refused");
  free(p);
  return check_failures ? 1 : 0;
}

// ---------------------------------------------------------------- retry loops

static const char *retry_kind;
static void *retry_main_freed; // `waits`: main frees this after a while

__attribute__((noinline)) static void *retry_request(void) { return malloc(64 << 20); }

static void *retrier(void *arg) {
  (void)arg;
  int tries = 0;
  void *p = NULL;
  if (!strcmp(retry_kind, "same")) {
    while (!(p = retry_request())) tries++; // for ever: the process is stopped
  } else if (!strcmp(retry_kind, "alternate")) {
    for (;;) { // OpenBLAS's blas_memory_alloc: mmap, then malloc, then mmap again
      tries++;
      p = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) break;
      if ((p = retry_request())) break;
    }
  } else if (!strcmp(retry_kind, "giveup")) {
    while (!(p = retry_request()) && ++tries < 12) sleep_ms(50);
  } else if (!strcmp(retry_kind, "smaller")) {
    for (size_t n = 64 << 20; !(p = malloc(n)) && n > (1 << 20); n -= 1 << 20) tries++, sleep_ms(10);
  } else { // waits: the same request every 10 ms until main has freed memory
    while (!(p = malloc(8 << 20))) tries++, sleep_ms(10);
  }
  printf("retry %s: %s after %d refusals\n", retry_kind, p ? "granted" : "gave up", tries);
  free(p);
  return NULL;
}

static int retry_mode(const char *kind) {
  retry_kind = kind;
  if (!strcmp(kind, "waits")) retry_main_freed = malloc(12 << 20);
  set("max_bytes", lim().tracked_bytes + (retry_main_freed ? 4 << 20 : 16 << 20));
  pthread_t th;
  pthread_create(&th, NULL, retrier, NULL);
  if (retry_main_freed) {
    sleep_ms(300);
    free(retry_main_freed);
  }
  pthread_join(th, NULL); // a loop keeps this wait from ending: ndmem stops the process
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  // A fixed mmap threshold: glibc otherwise raises it after the first large free, and a probe
  // block and the block under test would get different usable sizes.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "boundary")) return boundary(argc > 2 && !strcmp(argv[2], "warn"));
  if (!strcmp(mode, "abort")) return abort_mode();
  if (!strcmp(mode, "env")) return env_mode(atoll(argv[2]));
  if (!strcmp(mode, "physical")) return physical_mode(argc > 2 ? argv[2] : "/tmp");
  if (!strcmp(mode, "step")) return step_mode(argv[2]);
  if (!strcmp(mode, "poll")) return poll_mode(argv[2]);
  if (!strcmp(mode, "relief")) return relief_mode();
  if (!strcmp(mode, "threads")) return threads_mode();
  if (!strcmp(mode, "cgroup")) return cgroup_mode(atoll(argv[2]));
  if (!strcmp(mode, "touched")) return touched_mode(argc > 2 && !strcmp(argv[2], "whole"));
  if (!strcmp(mode, "retry") && argc > 2) return retry_mode(argv[2]);
  fprintf(stderr, "usage: t_limits boundary fail|warn | abort | env MAXBYTES | physical DIR | step STATM | "
                  "poll STATM | relief | threads | cgroup BYTES | touched [whole] | retry KIND\n");
  return 2;
}
