// SPDX-License-Identifier: MIT
// demangle.c: C++ names for ndmem's live stderr lines (a limit's top sites, a growing site), by
// the __cxa_demangle of the C++ runtime the process loaded itself: ndmem links none and never
// loads one into a process that has none (a C program's lines keep the loader's names).
//
// These lines are written where a hook runs, which can be inside glibc's setlocale with its lock
// held: dlerror() and strerror() translate through gettext, which takes that lock (ndmem once
// deadlocked so). So nothing here may fail in a way that leaves a message: the runtime is found
// in the loader's own list (dl_iterate_phdr), its handle taken by that exact path with
// RTLD_NOLOAD (no load can happen), and __cxa_demangle looked up in it, where it is defined.
// The handle is kept: it holds the runtime, so the function found stays valid (libstdc++ is not
// unloadable anyway: glibc marks an object with STB_GNU_UNIQUE symbols NODELETE).
#include "stacks/demangle.h"
#include "runtime/module.h"

#include "common/os.h"
#include "runtime/shim.h"
#include "runtime/lookup.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

// Function pointers travel as void *, as dlsym hands them out.
#pragma GCC diagnostic ignored "-Wpedantic"

typedef char *(*cxa_demangle_t)(const char *mangled, char *out, size_t *len, int *status);

static struct {
  cxa_demangle_t fn;             // atomic: once found, for good
  int looking;                   // atomic: the one thread that looks; others go without
  int looked;                    // a look ran, at the generation below (the looking thread's)
  unsigned long long adds, subs; // the loader's map generation at the last look
} cxa;

// The C++ runtimes by preference: LLVM's libc++ before its libc++abi, whose scope does not reach
// libc++ (its std::__1 functions) while libc++'s reaches libc++abi (__cxa_demangle). A runtime
// linked statically into the program is not found: its names stay as the loader has them.
static const char *const runtimes[] = {"libstdc++.so", "libc++.so", "libc++abi.so"};
#define RUNTIMES (sizeof runtimes / sizeof runtimes[0])

typedef struct found {
  char path[4096]; // the best runtime's path, copied out of the walk ("": none)
  size_t rank;     // its index in runtimes
} found_t;

static int find_runtime(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  found_t *f = ctx;
  const char *name = info->dlpi_name;
  if (!name || !*name) return 0;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  size_t len = strlen(name);
  for (size_t i = 0; i < RUNTIMES && i < f->rank; i++)
    if (strncmp(base, runtimes[i], strlen(runtimes[i])) == 0 && len < sizeof f->path) {
      memcpy(f->path, name, len + 1);
      f->rank = i;
    }
  return f->rank == 0; // libstdc++: none better
}

void *nd_cxx_runtime(int *llvm) {
  found_t f = {"", RUNTIMES};
  dl_iterate_phdr(find_runtime, &f); // dlopen after the walk, never inside it (see demangler)
  *llvm = f.rank > 0 && f.rank < RUNTIMES;
  return f.path[0] ? dlopen(f.path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
}

// The loader's counters of objects added and removed (the first entry carries them); 0, 0 where
// glibc does not give them: then every line looks again.
static int generation(struct dl_phdr_info *info, size_t size, void *ctx) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    unsigned long long *g = ctx;
    g[0] = info->dlpi_adds;
    g[1] = info->dlpi_subs;
  }
  return 1;
}

// The runtime's demangler, looked for again only when the loader's map changed since the last
// look. dlopen runs after the walk, never inside it: dl_iterate_phdr holds the loader's write
// lock, and another thread inside dlopen, holding the load lock, may be waiting for it. The look
// holds no lock of its own across the loader's calls (a thread inside dlopen whose constructor
// allocates past a limit could wait for it): a second thread goes without a demangler meanwhile.
// The loader's locks taken here are the ones dladdr (every frame of these lines) and libunwind
// (every captured stack) take already.
// A successful dlopen or dlsym clears a dlerror message pending on this thread (glibc): that can
// happen once, when the runtime is found.
static cxa_demangle_t demangler(void) {
  cxa_demangle_t fn = __atomic_load_n(&cxa.fn, __ATOMIC_ACQUIRE);
  if (fn || __atomic_exchange_n(&cxa.looking, 1, __ATOMIC_ACQUIRE)) return fn;
  unsigned long long g[2] = {0, 0};
  dl_iterate_phdr(generation, g);
  if (!cxa.looked || g[0] != cxa.adds || g[1] != cxa.subs || (!g[0] && !g[1])) {
    cxa.looked = 1;
    cxa.adds = g[0];
    cxa.subs = g[1];
    int llvm;
    void *h = nd_cxx_runtime(&llvm);
    if (h) fn = (cxa_demangle_t)nd_dlsym_own(h, "__cxa_demangle", 0); // it is there
    if (fn) __atomic_store_n(&cxa.fn, fn, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&cxa.looking, 0, __ATOMIC_RELEASE);
  return fn;
}

int nd_demangle(nd_buf_t *b, const char *sym, size_t max) {
  if (sym[0] != '_' || sym[1] != 'Z' || nd_os_last_words ||
      __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY)
    return 0;
  // Inside ndmem: what the loader and the demangler allocate goes to the next allocator
  // unaccounted, and the result goes back to it.
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  int status = -1;
  cxa_demangle_t fn = demangler();
  char *s = fn ? fn(sym, NULL, NULL, &status) : NULL;
  if (s && status == 0) nd_buf_elided(b, s, strlen(s), max);
  if (s) nd_real.free(s);
  t->mode = mode;
  return s && status == 0;
}

static void atfork_child(nd_tls_t *t) { (void)t, cxa.looking = 0; }

#include "stacks/names.h"
#include "stacks/python.h"

// The live lines' frames (names.h): Python's code names, C++ names demangled.
static void setup(char *const *envp) {
  (void)envp;
  nd_namers = (nd_namers_t){nd_py_code_names, nd_demangle};
}

ND_MODULE(nd_demangle_module) = {.name = "demangle", .rank = 13, .order = 35, .setup = setup,
                                 .atfork_child = atfork_child};
