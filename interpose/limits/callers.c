// SPDX-License-Identifier: MIT
// callers.c: who is asking for memory (callers.h).
//
// The built-in list, and why each entry is there:
//   libc10.so*          PyTorch's CPU allocator (c10::alloc_cpu, a posix_memalign): a refusal is
//                       PyTorch's RuntimeError "DefaultCPUAllocator: can't allocate memory".
//                       Only its aligned requests: c10's operator new elsewhere runs in
//                       destructors and at exit too, where the std::bad_alloc of a refusal ends
//                       the process (std::terminate)
//   _multiarray_umath*  numpy's data allocator: numpy raises MemoryError
//   libpython3*         CPython's allocators in a shared libpython: MemoryError. On the
//                       process's main thread only: raised in a helper thread of Python's own
//                       it ends that thread alone (multiprocessing's queue feeder drops the batch
//                       it was sending, and a DataLoader waits for it for ever); there they are
//                       admitted within the slack like any library's
//   a python* executable  the same allocators linked into the interpreter itself (Debian's)
//   libc10_cuda.so*     (device memory) PyTorch's CUDA caching allocator: it frees its cached
//                       blocks and asks again, then raises torch.cuda.OutOfMemoryError
// Everything else is admitted over a limit (limits/admit.c): OpenBLAS's gemm_driver buffers, a
// scratch mapping oneDNN's kernels make, glibc's own, a C program's unchecked malloc. Those
// callers would crash or exit on a refusal (OpenBLAS prints "malloc failed in gemm_driver" and
// calls exit(1); oneDNN's scratch mapping refused ended a torch job by SIGSEGV).
//
// The pass-through objects (skipped to find the code asking): ndmem, libc (libc.so*,
// libpthread.so*, libdl.so*, librt.so*), the C++ runtime and its unwinder (libstdc++.so*,
// libgcc_s.so*, libc++.so*, libc++abi.so*), and for device memory the CUDA runtime and driver
// (libcudart*, libcuda.so*). A frame of the loader's (ld-linux*, ld.so*) anywhere on the way
// makes a request admitted (nd_caller_class).
//
// Inside a hook nothing here may take a lock the hook's caller may hold: the loader's list is read
// with dl_iterate_phdr (its lock is recursive, and no lock of ndmem's is held across it), names
// are compared in place (no dladdr, no allocation), a stack is unwound only when the hook's caller
// is a pass-through object. Each object's class is kept in a small table (objects are few) under a
// leaf spinlock held only to read or write it; the table is emptied when the loader's count of
// unloaded objects moves (an address may then belong to another object).
#include "limits/callers.h"

#include "common/os.h"
#include "runtime/shim.h"
#include "stacks/unwind.h"

#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

enum {
  O_PASS_HOST = 1,    // passes host requests on
  O_PASS_DEV = 2,     // passes device requests on
  O_RUNTIME_HOST = 4, // a runtime's host allocator
  O_RUNTIME_DEV = 8,  // a runtime's device allocator
  O_NAMED = 16,       // NDMEM_LIMIT_REFUSE names it
  O_EXCLUDED = 32,    // NDMEM_LIMIT_REFUSE takes it out (-NAME)
  O_LOADER = 64,      // the dynamic loader
  O_RUNTIME_ALIGNED = 128, // a runtime's host allocator, for aligned requests only
  O_RUNTIME_MAIN = 256,    // a runtime's host allocator, on the process's main thread only
};

static const char *const pass_host[] = {"libc.so*",       "libpthread.so*", "libdl.so*",
                                        "librt.so*",      "libstdc++.so*",  "libgcc_s.so*",
                                        "libc++.so*",     "libc++abi.so*"};
static const char *const loader[] = {"ld-linux*", "ld.so*", "ld64.so*"};
static const char *const pass_dev[] = {"libcudart*", "libcuda.so*"};
static const struct {
  const char *pat;
  int flag;
} runtimes[] = {{"libc10.so*", O_RUNTIME_ALIGNED},
                {"_multiarray_umath*", O_RUNTIME_HOST},
                {"libpython3*", O_RUNTIME_MAIN},
                {"libc10_cuda.so*", O_RUNTIME_DEV}};

#define CACHE 128 // objects classed and kept
#define FRAMES 96 // frames unwound to find the code asking, and the loader further out

static struct {
  char refuse[ND_CONFIG_PATH_MAX]; // NDMEM_LIMIT_REFUSE
  char exe[4096];                  // the main executable's path
  uintptr_t self_lo, self_hi;      // ndmem's own
  int lock;                        // the table (a leaf)
  unsigned long long subs;         // the loader's count of unloaded objects the table is valid for
  unsigned n, next;
  struct {
    uintptr_t lo, hi;
    uint16_t flags;
  } v[CACHE];
} cs;

int nd_callers_glob(const char *pat, const char *name) {
  const char *star = NULL, *back = NULL;
  while (*name) {
    if (*pat == '*') {
      star = ++pat;
      back = name;
    } else if (*pat && (*pat == '?' || *pat == *name)) {
      pat++, name++;
    } else if (star) {
      pat = star;
      name = ++back;
    } else {
      return 0;
    }
  }
  while (*pat == '*') pat++;
  return !*pat;
}

static const char *base_of(const char *path) {
  const char *b = path;
  for (const char *p = path; *p; p++)
    if (*p == '/') b = p + 1;
  return b;
}

// One NDMEM_LIMIT_REFUSE entry [s, s + n) against an object: '%exe' the main executable; with a
// '/', its path; else its file name.
static int entry_matches(const char *s, size_t n, const char *path, int exe) {
  char pat[256];
  if (!n || n >= sizeof pat) return 0;
  memcpy(pat, s, n);
  pat[n] = 0;
  if (!strcmp(pat, "%exe")) return exe;
  return nd_callers_glob(pat, memchr(pat, '/', n) ? path : base_of(path));
}

// The flags of the object at path (exe: the main executable).
static uint16_t classify(const char *path, int exe) {
  const char *name = base_of(path);
  uint16_t f = 0;
  for (size_t i = 0; i < sizeof pass_host / sizeof *pass_host; i++)
    if (nd_callers_glob(pass_host[i], name)) f |= O_PASS_HOST | O_PASS_DEV;
  for (size_t i = 0; i < sizeof pass_dev / sizeof *pass_dev; i++)
    if (nd_callers_glob(pass_dev[i], name)) f |= O_PASS_DEV;
  for (size_t i = 0; i < sizeof loader / sizeof *loader; i++)
    if (nd_callers_glob(loader[i], name)) f |= O_LOADER;
  for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++)
    if (nd_callers_glob(runtimes[i].pat, name)) f |= (uint16_t)runtimes[i].flag;
  if (exe && nd_callers_glob("python*", name)) f |= O_RUNTIME_MAIN;
  for (const char *p = cs.refuse; *p;) {
    while (*p == ',' || *p == ' ') p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    size_t n = (size_t)(e - p);
    while (n && p[n - 1] == ' ') n--;
    if (n && *p == '-') {
      if (entry_matches(p + 1, n - 1, path, exe)) f |= O_EXCLUDED;
    } else if (entry_matches(p, n, path, exe)) {
      f |= O_NAMED;
    }
    p = e;
  }
  return f;
}

// ---------------------------------------------------------------- the loader's list

static int first_entry(struct dl_phdr_info *info, size_t size, void *ctx) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *(unsigned long long *)ctx = info->dlpi_subs;
  return 1;
}

typedef struct find {
  uintptr_t addr, lo, hi;
  uint16_t flags;
  int first, found;
} find_t;

static int find_step(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  find_t *f = ctx;
  int first = f->first;
  f->first = 0;
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  if (f->addr < lo || f->addr >= hi) return 0;
  // The main executable comes first, with no name of its own.
  int exe = first || !info->dlpi_name || !info->dlpi_name[0];
  f->lo = lo, f->hi = hi;
  f->flags = classify(exe ? cs.exe : info->dlpi_name, exe);
  f->found = 1;
  return 1;
}

// The flags of the object holding addr (-1: none holds it, as JIT code).
static int object_flags(uintptr_t addr) {
  if (addr >= cs.self_lo && addr < cs.self_hi) return O_PASS_HOST | O_PASS_DEV;
  nd_spin_lock(&cs.lock);
  for (unsigned i = 0; i < cs.n; i++)
    if (addr >= cs.v[i].lo && addr < cs.v[i].hi) {
      int f = cs.v[i].flags;
      nd_spin_unlock(&cs.lock);
      return f;
    }
  nd_spin_unlock(&cs.lock);
  find_t f = {addr, 0, 0, 0, 1, 0};
  dl_iterate_phdr(find_step, &f); // no lock of ndmem's held
  if (!f.found) return -1;
  nd_spin_lock(&cs.lock);
  unsigned k = cs.n < CACHE ? cs.n++ : cs.next++ % CACHE;
  cs.v[k].lo = f.lo, cs.v[k].hi = f.hi, cs.v[k].flags = f.flags;
  nd_spin_unlock(&cs.lock);
  return f.flags;
}

// The class of a frame's object: -1 when it passes requests on, -2 for the loader's.
static int frame_class(uintptr_t ip, int ask) {
  int f = object_flags(ip - 1); // a return address: the call is before it
  int device = ask == ND_ASK_DEVICE;
  if (f < 0) return ND_CALLER_OTHER;
  if (f & O_LOADER) return -2;
  if (f & (device ? O_PASS_DEV : O_PASS_HOST)) return -1;
  if (f & O_EXCLUDED) return ND_CALLER_OTHER;
  if (f & O_NAMED) return ND_CALLER_NAMED;
  if (f & (device ? O_RUNTIME_DEV : O_RUNTIME_HOST)) return ND_CALLER_RUNTIME;
  if ((f & O_RUNTIME_ALIGNED) && ask == ND_ASK_ALIGNED) return ND_CALLER_RUNTIME;
  if ((f & O_RUNTIME_MAIN) && !device && nd_os_gettid() == getpid()) return ND_CALLER_RUNTIME;
  return ND_CALLER_OTHER;
}

// The loader's frames: the request is made while an object is loaded (its constructors run, the
// loader's own work), wherever the code asking lies. A static constructor cannot take a
// refusal: an exception that leaves it ends the process (libtorch's and c10's operator
// registrations under `import torch` were refused so, then std::terminate), and a failed
// atexit() registration is a silent loss. So such a request is admitted: the first frame of the
// loader's, searched for as far as FRAMES reach, ends the search (class OTHER, the code asking
// kept where it was found).
int nd_caller_class(uintptr_t ra, int ask, uintptr_t *ip) {
  unsigned long long subs = 0;
  dl_iterate_phdr(first_entry, &subs);
  if (subs != __atomic_load_n(&cs.subs, __ATOMIC_RELAXED)) { // an object went: classed again
    nd_spin_lock(&cs.lock);
    cs.n = cs.next = 0;
    cs.subs = subs;
    nd_spin_unlock(&cs.lock);
  }
  *ip = ra;
  int c = ra ? frame_class(ra, ask) : -1;
  if (c == ND_CALLER_OTHER || c == -2) return ND_CALLER_OTHER; // no stack needed
  uintptr_t frames[FRAMES];
  int n = nd_backtrace((void **)frames, FRAMES), i = 0;
  if (c < 0) { // ra passes it on: the code asking is further out
    *ip = 0;
    for (; i < n && frames[i] && c == -1; i++) c = frame_class(frames[i], ask);
    if (c == -2 || c < 0) return ND_CALLER_OTHER; // the loader's work, or no frame found
    *ip = frames[i - 1];
    if (c == ND_CALLER_OTHER) return c;
  } else {
    // A runtime's or a named object's: its own frame, then whether the loader is further out.
    while (i < n && frames[i] && frames[i] != ra) i++;
    i = i < n ? i + 1 : 0;
  }
  for (; i < n && frames[i]; i++)
    if (frame_class(frames[i], ask) == -2) return ND_CALLER_OTHER;
  return c;
}

const char *nd_caller_words(int cls) {
  return cls == ND_CALLER_RUNTIME ? "the runtime's allocator"
         : cls == ND_CALLER_NAMED ? "named by NDMEM_LIMIT_REFUSE"
                                  : "a library's or the program's code";
}

void nd_callers_setup(const char *refuse) {
  size_t n = strlen(refuse);
  if (n >= sizeof cs.refuse) n = sizeof cs.refuse - 1;
  memcpy(cs.refuse, refuse, n);
  cs.refuse[n] = 0;
  ssize_t k = readlink("/proc/self/exe", cs.exe, sizeof cs.exe - 1);
  cs.exe[k > 0 ? k : 0] = 0;
  nd_object_of((uintptr_t)&nd_caller_class, &cs.self_lo, &cs.self_hi);
  cs.subs = 0;
  dl_iterate_phdr(first_entry, &cs.subs);
  cs.n = cs.next = 0;
}

void nd_callers_atfork_child(void) { cs.lock = 0; }
