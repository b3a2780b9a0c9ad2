// SPDX-License-Identifier: MIT
// t_alloc_family: every malloc-family entry point under the shim keeps its exact semantics
// (alignment, errno, usable size, realloc moves and in-place shrinks, overflow checks, free(NULL))
// and is accounted to the byte: each delta equals the usable size the allocator reports.
#include "../shimcheck.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

static size_t page;

// Allocates through `expr`, checks it is accounted as one block of its usable size and one call
// of fn, then frees it and checks the counters return exactly.
#define ALLOC_ROUNDTRIP(expr, fn, align)                                                          \
  do {                                                                                           \
    ndmem_stats_t b0 = THREAD_SNAP();                                                            \
    void *p_ = (expr);                                                                           \
    ndmem_stats_t b1 = THREAD_SNAP();                                                            \
    CHECK(p_ != NULL);                                                                           \
    CHECK_EQ((uintptr_t)p_ % (align), 0);                                                        \
    size_t u_ = malloc_usable_size(p_);                                                          \
    CHECK_EQ(D(b1, b0, HEAP, live_bytes), u_);                                                   \
    CHECK_EQ(D(b1, b0, HEAP, allocs), 1);                                                        \
    CHECK_EQ(DCALL(b1, b0, fn), 1);                                                              \
    memset(p_, 0xab, u_);                                                                        \
    free(p_);                                                                                    \
    ndmem_stats_t b2 = THREAD_SNAP();                                                            \
    CHECK_EQ(D(b2, b0, HEAP, live_bytes), 0);                                                    \
    CHECK_EQ(D(b2, b1, HEAP, frees), 1);                                                         \
    CHECK_EQ(D(b2, b1, HEAP, free_bytes), u_);                                                   \
  } while (0)

int main(void) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  setvbuf(stderr, NULL, _IONBF, 0);

  ALLOC_ROUNDTRIP(malloc(100), NDMEM_FN_MALLOC, 16);
  ALLOC_ROUNDTRIP(malloc(0), NDMEM_FN_MALLOC, 16); // glibc returns a unique minimum block
  ALLOC_ROUNDTRIP(malloc(1 << 20), NDMEM_FN_MALLOC, 16);   // glibc serves this with mmap
  ALLOC_ROUNDTRIP(calloc(10, 10), NDMEM_FN_CALLOC, 16);
  ALLOC_ROUNDTRIP(aligned_alloc(4096, 8192), NDMEM_FN_ALIGNED_ALLOC, 4096);
  ALLOC_ROUNDTRIP(memalign(256, 100), NDMEM_FN_MEMALIGN, 256);
  ALLOC_ROUNDTRIP(valloc(100), NDMEM_FN_VALLOC, page);
  ALLOC_ROUNDTRIP(pvalloc(100), NDMEM_FN_PVALLOC, page);
  ALLOC_ROUNDTRIP(realloc(NULL, 300), NDMEM_FN_REALLOC, 16);
  ALLOC_ROUNDTRIP(reallocarray(NULL, 7, 9), NDMEM_FN_REALLOCARRAY, 16);

  // calloc zeroes; pvalloc rounds to whole pages
  {
    unsigned char *z = calloc(1000, 3);
    int zero = 1;
    for (int i = 0; i < 3000; i++) zero &= z[i] == 0;
    CHECK(zero);
    free(z);
    void *pv = pvalloc(100);
    CHECK(malloc_usable_size(pv) >= page);
    free(pv);
  }

  // posix_memalign: result via the out pointer, errors via the return value, errno untouched
  {
    ndmem_stats_t b0 = THREAD_SNAP();
    void *p = NULL;
    errno = 1234;
    CHECK_EQ(posix_memalign(&p, 64, 1000), 0);
    CHECK_EQ(errno, 1234);
    CHECK_EQ((uintptr_t)p % 64, 0);
    ndmem_stats_t b1 = THREAD_SNAP();
    CHECK_EQ(D(b1, b0, HEAP, live_bytes), malloc_usable_size(p));
    CHECK_EQ(DCALL(b1, b0, NDMEM_FN_POSIX_MEMALIGN), 1);
    void *q = (void *)1;
    CHECK_EQ(posix_memalign(&q, 3, 10), EINVAL); // not a power of two
    CHECK_EQ(posix_memalign(&q, 4, 10), EINVAL); // not a multiple of sizeof(void *)
    CHECK(q == (void *)1);                       // untouched on error
    CHECK_EQ(errno, 1234);
    free(p);
    ndmem_stats_t b2 = THREAD_SNAP();
    CHECK_EQ(D(b2, b0, HEAP, live_bytes), 0);
    CHECK_EQ(D(b2, b0, HEAP, allocs), 1);
  }

  // realloc: growth moves the accounting to the new usable size, contents survive
  {
    char *p = malloc(100);
    memset(p, 'x', 100);
    size_t u0 = malloc_usable_size(p);
    ndmem_stats_t b0 = THREAD_SNAP();
    char *q = realloc(p, 100000);
    ndmem_stats_t b1 = THREAD_SNAP();
    CHECK(q != NULL);
    int same = 1;
    for (int i = 0; i < 100; i++) same &= q[i] == 'x';
    CHECK(same);
    CHECK_EQ(D(b1, b0, HEAP, live_bytes), (long long)malloc_usable_size(q) - (long long)u0);
    CHECK_EQ(D(b1, b0, HEAP, live_count), 0);
    CHECK_EQ(DCALL(b1, b0, NDMEM_FN_REALLOC), 1);
    // shrinking a heap chunk stays in place with glibc: the same pointer, a smaller usable size
    size_t ubig = malloc_usable_size(q);
    char *r = realloc(q, 5000);
    ndmem_stats_t b2 = THREAD_SNAP();
    CHECK(r == q);
    CHECK_EQ(D(b2, b1, HEAP, live_bytes), (long long)malloc_usable_size(r) - (long long)ubig);
    // realloc(p, 0) frees p and returns NULL (glibc)
    size_t ur = malloc_usable_size(r);
    void *z = realloc(r, 0);
    ndmem_stats_t b3 = THREAD_SNAP();
    CHECK(z == NULL);
    CHECK_EQ(D(b3, b2, HEAP, live_bytes), -(long long)ur);
    CHECK_EQ(D(b3, b2, HEAP, live_count), -1);
  }

  // overflow checks: calloc and reallocarray fail with ENOMEM and account nothing
  {
    volatile size_t half = SIZE_MAX / 2, three = 3, all = SIZE_MAX; // opaque to the compiler
    ndmem_stats_t b0 = THREAD_SNAP();
    errno = 0;
    CHECK(calloc(half, three) == NULL);
    CHECK_EQ(errno, ENOMEM);
    void *p = malloc(64);
    size_t up = malloc_usable_size(p);
    errno = 0;
    void *volatile same = p;
    CHECK(reallocarray(same, half, three) == NULL);
    CHECK_EQ(errno, ENOMEM);
    errno = 0;
    CHECK(malloc(all) == NULL);
    CHECK_EQ(errno, ENOMEM);
    ndmem_stats_t b1 = THREAD_SNAP();
    CHECK_EQ(D(b1, b0, HEAP, live_bytes), up); // p is still live and intact
    CHECK_EQ(D(b1, b0, HEAP, allocs), 1);
    free(p);
  }

  // free(NULL) is a no-op; free and malloc_usable_size leave errno alone
  {
    ndmem_stats_t b0 = THREAD_SNAP();
    errno = 42;
    free(NULL);
    CHECK_EQ(malloc_usable_size(NULL), 0);
    void *p = malloc(10);
    free(p);
    CHECK_EQ(errno, 42);
    ndmem_stats_t b1 = THREAD_SNAP();
    CHECK_EQ(DCALL(b1, b0, NDMEM_FN_FREE), 1);
    CHECK_EQ(D(b1, b0, HEAP, frees), 1);
  }

  // Blocks the byte sampler picks are weighed at malloc and again at free (NDMEM_SAMPLE=1, the
  // second registration: every block is sampled, at many times the sample mean): errno stays.
  {
    void *ps[64];
    errno = 42;
    for (int i = 0; i < 64; i++) ps[i] = malloc(1000 + (size_t)i * 100);
    for (int i = 0; i < 64; i++) free(ps[i]);
    CHECK_EQ(errno, 42);
  }

  // process peak: with one allocating thread it is exact
  {
    ndmem_stats_t b0 = PROC_SNAP();
    void *big = malloc((size_t)512 << 20);
    size_t u = malloc_usable_size(big);
    free(big);
    void *small = malloc(1 << 20);
    ndmem_stats_t b1 = PROC_SNAP();
    CHECK_EQ(b1.kind[HEAP].peak_bytes, b0.kind[HEAP].live_bytes + (long long)u);
    free(small);
  }

  // strdup and friends inside libc allocate through the hooked malloc
  {
    ndmem_stats_t b0 = THREAD_SNAP();
    char *s = strdup("ndmem");
    ndmem_stats_t b1 = THREAD_SNAP();
    CHECK_EQ(D(b1, b0, HEAP, live_bytes), malloc_usable_size(s));
    free(s);
  }
  return CHECK_DONE();
}
