// SPDX-License-Identifier: MIT
// libtrimcount: a pass-through allocator preloaded after libndmem.so, so that it is ndmem's "next
// allocator": every function forwards to glibc's heap, and malloc_trim is counted. At exit it
// prints "malloc_trim calls N" to stderr. Used by t_trim to count the trims ndmem asks for.
// glibc's __libc_* entry points are used where dlsym itself would allocate.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static unsigned long trims;

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { return __libc_memalign(a, n); }
void *valloc(size_t n) { return __libc_valloc(n); }
void *pvalloc(size_t n) { return __libc_pvalloc(n); }
int posix_memalign(void **out, size_t a, size_t n) {
  void *p = __libc_memalign(a, n);
  if (!p) return 12; // ENOMEM (alignments are valid in the test)
  *out = p;
  return 0;
}
size_t malloc_usable_size(void *p) {
  static size_t (*f)(void *);
  if (!f) f = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
  return f(p);
}
int malloc_trim(size_t pad) {
  static int (*f)(size_t);
  if (!f) f = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
  __atomic_fetch_add(&trims, 1, __ATOMIC_RELAXED);
  return f(pad);
}

__attribute__((destructor)) static void report(void) {
  char line[64];
  int n = snprintf(line, sizeof line, "malloc_trim calls %lu\n", trims);
  if (write(2, line, (size_t)n) < 0) return;
}
