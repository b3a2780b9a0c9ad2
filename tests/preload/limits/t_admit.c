// SPDX-License-Identifier: MIT
// t_admit: a limit refuses a request only where the program can take the refusal; a library's
// unchecked requests over it are admitted, counted, within the slack. The program links libadmit
// (small unchecked mallocs, a scratch mapping, a checked malloc). Each mode sets maxBytes (or reads
// a simulated resident memory) at exactly the tracked total, so every request crosses the limit,
// and prints what t_admit.sh compares with the summary and ndmemreport. Modes:
//   bytes          the library's 100 blocks of 1000 B and a 256 KiB scratch mapping are admitted
//                  (tracked past the limit by exactly their bytes, no breach), the program's own
//                  checked 128 MiB malloc is refused (NULL, ENOMEM; a large request)
//   refuse P L     who is refused under NDMEM_LIMIT_REFUSE: the program's own malloc(1000) (P)
//                  and the library's checked one (L), each `refused` or `admitted`
//   slack S        NDMEM_LIMIT_SLACK=S (bytes, or N%): the library's checked 4 KiB blocks are
//                  admitted until the next would take tracked past the limit plus S: that one is
//                  refused, and tracked never stood past it
//   physical STATM maxPhysicalBytes 100 MiB, slack 8 MiB, resident memory read from the file
//                  STATM: over the limit the library's requests are admitted (a fresh 128 MiB
//                  mapping too: none of it is resident, so it adds nothing to the slack), the
//                  program's 128 MiB malloc is refused; the library's request that would add
//                  more than the slack past the limit is refused; once a reading is back under
//                  the limit, the slack is whole again
#include "../shimcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

void admit_small(int n, size_t size);
void *admit_scratch(size_t size);
void admit_unmap(void *p, size_t size);
void *admit_reserve(size_t size);
void *admit_try(size_t size);
void admit_free_all(void);

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
  if (ndmem_limit_set(name, buf) != 0) {
    fprintf(stderr, "ndmem_limit_set(%s, %s) failed\n", name, buf);
    exit(1);
  }
}

// The allocator's usable size for a request of n bytes.
static long long usable(size_t n) {
  void *p = malloc(n);
  long long u = (long long)malloc_usable_size(p);
  free(p);
  return u;
}

// The program's own checked request.
__attribute__((noinline)) static void *own_request(size_t n) { return malloc(n); }

static int bytes_mode(void) {
  long long u = usable(1000);
  long long max = lim().tracked_bytes;
  set("max_bytes", max); // at the limit: every request from here crosses it
  admit_small(100, 1000);
  ndmem_limits_t l = lim();
  CHECK_EQ(l.tracked_bytes, max + 100 * u);
  void *scratch = admit_scratch(256 << 10);
  l = lim();
  CHECK_EQ(l.tracked_bytes, max + 100 * u + (256 << 10));
  CHECK_EQ(l.breaches_bytes, 0);
  CHECK_EQ(l.failed, 0);
  errno = 0;
  void *big = own_request(128u << 20);
  int err = errno;
  l = lim();
  CHECK(big == NULL);
  CHECK_EQ(err, ENOMEM);
  CHECK_EQ(l.breaches_bytes, 1);
  CHECK_EQ(l.failed, 1);
  printf("bytes: admitted %d requests, %lld B, past the limit by %lld B; own 128 MiB %s\n", 101,
         100 * u + (256 << 10), l.tracked_bytes - max, big ? "granted" : "refused (ENOMEM)");
  admit_unmap(scratch, 256 << 10);
  admit_free_all();
  return check_failures ? 1 : 0;
}

static int refuse_mode(const char *want_prog, const char *want_lib) {
  set("max_bytes", lim().tracked_bytes);
  void *p = own_request(1000);
  void *q = admit_try(1000);
  printf("refuse: program %s, library %s\n", p ? "admitted" : "refused", q ? "admitted" : "refused");
  CHECK(!strcmp(p ? "admitted" : "refused", want_prog));
  CHECK(!strcmp(q ? "admitted" : "refused", want_lib));
  free(p);
  free(q);
  return check_failures ? 1 : 0;
}

static int slack_mode(const char *arg) {
  long long u = usable(4096);
  unsigned char *ballast = own_request(10 << 20); // the program's own: a limit of some size
  memset(ballast, 1, 10 << 20);
  long long max = lim().tracked_bytes;
  set("max_bytes", max);
  size_t n = strlen(arg);
  long long slack = arg[n - 1] == '%' ? max * atoll(arg) / 100 : atoll(arg);
  static void *v[100000];
  int k = 0;
  long long worst = 0;
  while (k < 100000 && (v[k] = admit_try(4096)) != NULL) {
    long long over = lim().tracked_bytes - max;
    if (over > worst) worst = over;
    k++;
  }
  ndmem_limits_t l = lim();
  printf("slack: %d blocks of 4 KiB admitted (%lld B), the next refused; at most %lld B past the "
         "limit, slack %lld B\n",
         k, k * u, worst, slack);
  CHECK_EQ(k, slack / u);          // exactly those that fit within the slack
  CHECK(worst <= slack);           // never past it
  CHECK_EQ(worst, k * u);
  CHECK_EQ(l.breaches_bytes, 1);   // the refusal past the slack
  CHECK_EQ(l.failed, 1);
  for (int i = 0; i < k; i++) free(v[i]); // oldest first: glibc trims its heap's top once
  free(ballast);
  return check_failures ? 1 : 0;
}

// The shim keeps its statm file open and reads it with pread; the test rewrites it in place, and
// sets the physical limit again, which has it read afresh at the next request.
static void statm_at(const char *path, long long anon) {
  char buf[128];
  int fd = open(path, O_WRONLY | O_TRUNC);
  long long page = 4096;
  int n = snprintf(buf, sizeof buf, "%lld %lld 100 10 0 100 0\n", anon / page * 2, anon / page + 100);
  CHECK_EQ(write(fd, buf, (size_t)n), n);
  close(fd);
  set("max_physical_bytes", 100 << 20);
}

static int physical_mode(const char *statm) {
  CHECK_EQ(lim().max_physical_bytes, 100 << 20);
  statm_at(statm, 101ll << 20); // 1 MiB over the limit
  admit_small(10, 1000);
  void *q = admit_try(1000);
  void *r = admit_reserve(128u << 20); // fresh: none of it resident
  errno = 0;
  void *big = own_request(128u << 20);
  int err = errno;
  CHECK(q != NULL);
  CHECK(r != NULL);
  CHECK(big == NULL);
  CHECK_EQ(err, ENOMEM);
  statm_at(statm, 101ll << 20); // read again (nothing was allocated since the last reading)
  void *q2 = admit_try(8 << 20); // 11000 B admitted past the limit + 8 MiB > the slack
  CHECK(q2 == NULL);
  statm_at(statm, 99ll << 20); // under the limit: read at the next request, the slack whole again
  void *q3 = admit_try(1000);
  statm_at(statm, 105ll << 20);
  void *q4 = admit_try(8 << 20); // 8 MiB: within the slack
  CHECK(q3 != NULL);
  CHECK(q4 != NULL);
  ndmem_limits_t l = lim();
  CHECK_EQ(l.breaches_physical, 2);
  CHECK_EQ(l.failed, 2);
  printf("physical: admitted 13 requests (10 blocks, 2 checked, a fresh 128 MiB mapping); own 128 "
         "MiB %s; 8 MiB past the slack %s; after a reading under the limit, 8 MiB %s\n",
         big ? "granted" : "refused", q2 ? "granted" : "refused", q4 ? "admitted" : "refused");
  statm_at(statm, 50ll << 20);
  if (r) admit_unmap(r, 128u << 20);
  free(q);
  free(q3);
  free(q4);
  admit_free_all();
  return check_failures ? 1 : 0;
}

void *volatile held;

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  // A fixed mmap threshold: the usable sizes probed are those of the blocks under test.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  held = malloc(4000); // tracked is never 0 (a limit of 0 is none)
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "bytes")) return bytes_mode();
  if (!strcmp(mode, "refuse") && argc > 3) return refuse_mode(argv[2], argv[3]);
  if (!strcmp(mode, "slack") && argc > 2) return slack_mode(argv[2]);
  if (!strcmp(mode, "physical") && argc > 2) return physical_mode(argv[2]);
  fprintf(stderr, "usage: t_admit bytes | refuse PROG LIB | slack BYTES|N%% | physical STATM\n");
  return 2;
}
