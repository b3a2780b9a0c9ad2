// SPDX-License-Identifier: MIT
// resolve.c: the libraries ndmem sits between: libunwind's text, and the next allocator
// (dlsym(RTLD_NEXT)): its malloc family, and the functions it lacks synthesised from the ones it
// has (below), so LD_PRELOAD="libndmem.so libjemalloc.so.2" chains to jemalloc.
#include "runtime/shim.h"

#include "runtime/allocstat.h"
#include "runtime/keys.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static void *next_sym(const char *name) { return dlsym(RTLD_NEXT, name); }

// POSIX guarantees dlsym's object pointers convert to function pointers; ISO C does not.
#define FN(type, p) (__extension__(type)(p))

// A function belongs to the next allocator when it lives in the same object as its malloc;
// otherwise (jemalloc has no pvalloc, so RTLD_NEXT finds glibc's) calling it would hand the
// program a block from another heap that the allocator's free cannot take back.
static int same_object(void *fn, const void *base) {
  Dl_info info;
  return fn && dladdr(fn, &info) && info.dli_fbase == base;
}

static uintptr_t unw_lo, unw_hi;
void nd_unwinder_is(uintptr_t lo, uintptr_t hi) { unw_lo = lo, unw_hi = hi; }
__thread int nd_unw_quiet __attribute__((tls_model("initial-exec")));
int nd_unw_sole = -1;
unsigned nd_unw_sig_seen;
int nd_unwinder_owns(const void *ra) { return (uintptr_t)ra >= unw_lo && (uintptr_t)ra < unw_hi; }

int nd_resolve_next(void) {
  nd_real.malloc = FN(void *(*)(size_t), next_sym("malloc"));
  nd_real.free = FN(void (*)(void *), next_sym("free"));
  nd_real.calloc = FN(void *(*)(size_t, size_t), next_sym("calloc"));
  nd_real.realloc = FN(void *(*)(void *, size_t), next_sym("realloc"));
  nd_real.usable = FN(size_t(*)(void *), next_sym("malloc_usable_size"));
  nd_real.mmap = FN(void *(*)(void *, size_t, int, int, int, off_t), next_sym("mmap"));
  nd_real.munmap = FN(int (*)(void *, size_t), next_sym("munmap"));
  nd_real.mremap = FN(void *(*)(void *, size_t, size_t, int, ...), next_sym("mremap"));
  if (!nd_real.malloc || !nd_real.free || !nd_real.calloc || !nd_real.realloc || !nd_real.mmap ||
      !nd_real.munmap || !nd_real.mremap)
    return -1;

  Dl_info info;
  const void *base = dladdr(FN(void *, nd_real.malloc), &info) ? info.dli_fbase : NULL;
  nd_real.is_glibc = base && info.dli_fname && strstr(info.dli_fname, "/libc.so") != NULL;
  void *f;
  f = next_sym("posix_memalign");
  nd_real.posix_memalign =
      same_object(f, base) ? FN(int (*)(void **, size_t, size_t), f) : nd_synth_posix_memalign;
  f = next_sym("aligned_alloc");
  nd_real.aligned_alloc = same_object(f, base) ? FN(void *(*)(size_t, size_t), f) : nd_synth_aligned_alloc;
  f = next_sym("memalign");
  nd_real.memalign = same_object(f, base) ? FN(void *(*)(size_t, size_t), f) : nd_synth_memalign;
  f = next_sym("valloc");
  nd_real.valloc = same_object(f, base) ? FN(void *(*)(size_t), f) : nd_synth_valloc;
  f = next_sym("pvalloc");
  nd_real.pvalloc = same_object(f, base) ? FN(void *(*)(size_t), f) : nd_synth_pvalloc;
  nd_real.sigaction = FN(int (*)(int, const struct sigaction *, struct sigaction *), next_sym("sigaction"));
  nd_real.signal = FN(void (*(*)(int, void (*)(int)))(int), next_sym("signal"));
  nd_real.exit_ = FN(__typeof__(nd_real.exit_), next_sym("_exit"));
  nd_real.pipe2 = FN(int (*)(int *, int), next_sym("pipe2"));
  nd_real.start_main = FN(nd_start_main_fn, next_sym("__libc_start_main"));
  nd_real.dup2 = FN(int (*)(int, int), next_sym("dup2"));
  nd_real.dup3 = FN(int (*)(int, int, int), next_sym("dup3"));
  nd_exec_resolve(next_sym);
  nd_allocstat_resolve(FN(void *, nd_real.malloc)); // whose free bytes a flush asks (allocstat.c)
  nd_keys_resolve(next_sym);
  f = next_sym("malloc_trim"); // relief for workspaces and limits; another heap's would not help
  nd_real.trim = same_object(f, base) ? FN(int (*)(size_t), f) : NULL;
  nd_real.trim_next = FN(int (*)(size_t), f);

  // Without malloc_usable_size (in the allocator itself) nothing can be accounted exactly, and
  // without an aligned allocator of its own the synthesised ones would recurse.
  if (!same_object(FN(void *, nd_real.usable), base) ||
      (nd_real.posix_memalign == nd_synth_posix_memalign &&
       nd_real.memalign == nd_synth_memalign)) {
    nd_warn_line("ndmem: the next allocator lacks malloc_usable_size or an aligned allocation "
              "function; accounting is off, calls are forwarded",
              NULL);
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------- synthesised members
// Used only when the next allocator lacks a function (resolve, above). Each is built from the
// allocator's own posix_memalign or memalign, with glibc's argument handling, and counted as a
// fallback.

static void *aligned_via_family(size_t align, size_t n) {
  nd_fallback(&nd_tls, NDMEM_FB_SYNTHESIZED);
  if (nd_real.memalign != nd_synth_memalign) return nd_real.memalign(align, n);
  void *p = NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  int rc = nd_real.posix_memalign(&p, align, n);
  if (rc) errno = rc;
  return rc ? NULL : p;
}

// glibc memalign: alignments below the minimum are raised, non-powers of two rounded up, and an
// alignment above SIZE_MAX/2+1 is EINVAL.
void *nd_synth_memalign(size_t align, size_t n) {
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  if (align & (align - 1)) {
    size_t a = 1;
    while (a < align) a <<= 1;
    align = a;
  }
  return aligned_via_family(align, n);
}

void *nd_synth_aligned_alloc(size_t align, size_t n) { return nd_synth_memalign(align, n); }

void *nd_synth_valloc(size_t n) { return nd_synth_memalign((size_t)sysconf(_SC_PAGESIZE), n); }

void *nd_synth_pvalloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (n > SIZE_MAX - page) {
    errno = ENOMEM;
    return NULL;
  }
  size_t rounded = n ? (n + page - 1) & ~(page - 1) : page;
  return nd_synth_memalign(page, rounded);
}

int nd_synth_posix_memalign(void **out, size_t align, size_t n) {
  if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
  int saved = errno;
  nd_fallback(&nd_tls, NDMEM_FB_SYNTHESIZED);
  void *p = nd_real.memalign(align, n);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
