// SPDX-License-Identifier: MIT
// lookup.c: the next dlsym (libc's, which the exported stub in hooks/dlsym.c jumps to) and the
// lookups the shim's rooms make themselves (the driver's functions, CPython's and the C++
// runtime's symbols), outside the program's books.
#include "runtime/lookup.h"
#include "runtime/shim.h"

#include <dlfcn.h>

// dlsym's object pointers are function pointers (POSIX requires the conversion to work).
#pragma GCC diagnostic ignored "-Wpedantic"

void *(*nd_dlsym_next)(void *, const char *);

void nd_dlsym_resolve(void) {
  void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); // aarch64's first version
  __atomic_store_n(&nd_dlsym_next, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
}

// ndmem's own lookups (not the program's): out of the program's books (BUSY mode: glibc
// allocates a failed lookup's message, which the program's heap counters must not see).
// `clear`: a lookup on one of the program's threads (its own dlsym and cuGetProcAddress calls,
// which are hooked) also leaves nothing for that thread's dlerror: glibc frees the message at the
// second dlerror that reads it, both here. The first dlerror translates the message through
// gettext, which takes glibc's setlocale lock and reads the environment: never from a malloc or
// mmap hook (a hook may run inside setlocale holding that lock: python.h), never from ndmem's
// threads (a shell replaces `environ` as it likes; bash crashed in gettext's getenv). On those
// threads a failed lookup's message stays in the thread's own dlerror state, which nothing reads.
void *nd_dlsym_own(void *handle, const char *name, int clear) {
  if (!__atomic_load_n(&nd_dlsym_next, __ATOMIC_ACQUIRE)) nd_dlsym_resolve();
  if (!nd_dlsym_next) return NULL;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  void *r = nd_dlsym_next(handle, name);
  if (!r && clear) {
    dlerror();
    dlerror();
  }
  if (mode == ND_T_COUNT) t->mode = mode;
  return r;
}

