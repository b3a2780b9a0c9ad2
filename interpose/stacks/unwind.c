// SPDX-License-Identifier: MIT
// unwind.c: libunwind as ndmem feeds it. libunwind 1.6 (Debian 12) masks every signal around
// each search for a frame's unwind information: around its dl_iterate_phdr, and around the lock
// of its register-state cache (its per-thread cache is compiled out since 1.6, so every step
// takes the global one) - 8 rt_sigprocmask calls for a frame it had not seen, 649 000 in an
// `import torch` with every block tracked. Masking keeps a signal handler that unwinds on the
// same thread from deadlocking on that lock. While ndmem unwinds no handler of ndmem's unwinds
// (a hook entered from a handler finds the thread BUSY and forwards), so where libunwind.so.8
// has no other client in the process the masking is skipped: libunwind's own imports of
// sigprocmask and dl_iterate_phdr are pointed at the functions below (its GOT entries, found
// through its dynamic relocations; no symbol of the program's changes). The second offers the
// objects that answered recently first: a walk costs ~12 ns an object, and torch loads ~200.
//
// Masking matters only where a signal handler may unwind with libunwind.so.8: one that lies in an
// object needing it (glog's failure handler, gperftools' profiler), or any handler once the
// program looked one of libunwind's names up. The handlers are classed again after the program
// installs one (nd_sig_changes, nd_sig_handlers: runtime/exits.c); until that is decided
// libunwind masks as it always did, and one unwind decides once (nd_unw_begin). Not seen: a
// handler installed by a raw system call or by glibc's sigset, sysv_signal and bsd_signal (they
// call its sigaction within libc), a dlvsym of libunwind's names, and a handler in another
// object that calls such an object. Its read, syscall and close are pointed at functions below
// too: libunwind validates memory by writing a byte of it into a pipe of its own (syscall
// SYS_write), whose descriptors ndmem keeps out of the program's way (common/os.h): these make each
// of its calls on them while no dup2 of the program's is under way, on the number the descriptor
// lies at now; where no room is left above the program's range libunwind keeps no pipe at all
// (ND_UNW_NO_PIPE) and each validation writes into a pipe made for it.
#define UNW_LOCAL_ONLY
#include "stacks/unwind.h"
#include "runtime/module.h"
#include "runtime/shim.h"

#include "common/os.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// Function pointers are stored into the GOT as the loader stores them.
#pragma GCC diagnostic ignored "-Wpedantic"


static struct {
  uintptr_t lo, hi;           // libunwind.so.8's PT_LOAD span
  uintptr_t self_lo, self_hi; // ndmem's own
  int patched;
  int io_patched; // libunwind's read, syscall and close go through unw_read, unw_syscall, unw_close
  int shared;   // atomic: the program looked libunwind's names up (never sole again)
  uint64_t masks_skipped, masks_made, searches_recent, searches_walked; // atomic
  uint64_t gated, forks_cut, searches_lockfree;                         // atomic
} unw;

void nd_module_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi) {
  *lo = UINTPTR_MAX;
  *hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
    if (s < *lo) *lo = s;
    if (e > *hi) *hi = e;
  }
}

// ---------------------------------------------------------------- the patched imports

static int quiet_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  if (nd_unw_quiet) {
    __atomic_fetch_add(&unw.masks_skipped, 1, __ATOMIC_RELAXED);
    return 0; // the restore that pairs with it is skipped too (one unwind decides once)
  }
  __atomic_fetch_add(&unw.masks_made, 1, __ATOMIC_RELAXED);
  return sigprocmask(how, set, old);
}

// libunwind's calls on its validation pipe (a number it read before a move of the program's is
// translated; any other descriptor is left as it is). Without a pipe (ND_UNW_NO_PIPE) this
// thread's would-be pipe is emulated exactly: it holds the byte of its last validation until that
// is read, then is empty (EAGAIN, as a non-blocking pipe). libunwind drains it in a loop that
// ends only once errno is not EINTR: a read answering a byte for ever spun there whenever the
// program's errno was EINTR (timeout(1) at exit, after its sigsuspend).
static __thread int unw_pipe_byte __attribute__((tls_model("initial-exec")));
static ssize_t unw_read(int fd, void *buf, size_t n) {
  if (fd == ND_UNW_NO_PIPE) {
    if (n && unw_pipe_byte) {
      unw_pipe_byte = 0;
      *(char *)buf = 0;
      return 1;
    }
    if (!n) return 0;
    errno = EAGAIN; // nd_unw_end gives the program its own errno back
    return -1;
  }
  nd_os_fd_enter();
  ssize_t r = syscall(SYS_read, nd_os_fd_now(fd), buf, n);
  nd_os_fd_leave();
  return r;
}

// libunwind's syscall(SYS_write, pipe, addr, 1): the kernel reads the byte at addr or says EFAULT.
// Its only other calls would go on as they are (on x86-64 and aarch64 the variadic integers come
// in the registers these read).
static long unw_syscall(long n, long a, long b, long c, long d, long e, long f) {
  if (n != SYS_write) return syscall(n, a, b, c, d, e, f);
  nd_os_fd_enter();
  long r;
  if ((int)a == ND_UNW_NO_PIPE) {
    int p[2];
    r = syscall(SYS_pipe2, p, O_CLOEXEC | O_NONBLOCK);
    if (r == 0) {
      r = syscall(SYS_write, p[1], b, c);
      if (r > 0) unw_pipe_byte = 1;
      int err = errno;
      syscall(SYS_close, p[0]);
      syscall(SYS_close, p[1]);
      errno = err;
    }
  } else {
    r = syscall(SYS_write, nd_os_fd_now((int)a), b, c);
  }
  nd_os_fd_leave();
  return r;
}

static int unw_close(int fd) {
  if (fd == ND_UNW_NO_PIPE) return 0;
  nd_os_fd_enter();
  int r = (int)syscall(SYS_close, nd_os_fd_now(fd));
  nd_os_fd_leave();
  return r;
}

int nd_unwind_io_patched(void) { return unw.io_patched == 7; }

// The objects that held the addresses libunwind looked for last, most recent first, as
// dl_iterate_phdr describes them: valid while no object is unloaded (dlpi_subs unchanged), read
// and changed only inside dl_iterate_phdr, which holds the loader's lock (one thread at a time).
#define RECENT 8
static struct {
  unsigned long long adds, subs;
  int n;
  size_t size[RECENT];
  struct dl_phdr_info info[RECENT];
} recent;

typedef int (*phdr_fn)(struct dl_phdr_info *, size_t, void *);
typedef struct search {
  phdr_fn fn;
  void *data;
  int first; // the walk's first object: the loader's counts are read there
  int tried; // recent objects already offered, not offered again
} search_t;

static int was_tried(const search_t *s, const struct dl_phdr_info *info) {
  for (int i = 0; i < s->tried; i++)
    if (recent.info[i].dlpi_phdr == info->dlpi_phdr) return 1;
  return 0;
}

// Puts the object first: from its place in the list (from < RECENT), or new (from RECENT). It is
// copied before the list moves: info may be one of the list's own entries.
static void remember(int from, const struct dl_phdr_info *info, size_t size) {
  if (size > sizeof *info) size = sizeof *info;
  struct dl_phdr_info copy;
  memset(&copy, 0, sizeof copy);
  memcpy(&copy, info, size);
  int last = from < RECENT ? from : RECENT - 1;
  if (from >= RECENT && recent.n < RECENT) last = recent.n++;
  memmove(&recent.info[1], &recent.info[0], (size_t)last * sizeof recent.info[0]);
  memmove(&recent.size[1], &recent.size[0], (size_t)last * sizeof recent.size[0]);
  recent.info[0] = copy;
  recent.size[0] = size;
}

static int search_step(struct dl_phdr_info *info, size_t size, void *ctx) {
  search_t *s = ctx;
  if (s->first) {
    s->first = 0;
    int counts = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
    if (counts && info->dlpi_adds == recent.adds && info->dlpi_subs == recent.subs) {
      for (int i = 0; i < recent.n; i++) {
        struct dl_phdr_info copy = recent.info[i]; // the callee may write: never the kept one
        int r = s->fn(&copy, recent.size[i], s->data);
        if (r) {
          if (i) remember(i, &recent.info[i], recent.size[i]);
          __atomic_fetch_add(&unw.searches_recent, 1, __ATOMIC_RELAXED);
          return r;
        }
      }
      s->tried = recent.n;
    } else {
      recent.n = 0; // an object came or went: its copies may be stale
      recent.adds = counts ? info->dlpi_adds : 0;
      recent.subs = counts ? info->dlpi_subs : ~0ull;
    }
  }
  if (s->tried && was_tried(s, info)) return 0;
  int r = s->fn(info, size, s->data);
  if (r) {
    __atomic_fetch_add(&unw.searches_walked, 1, __ATOMIC_RELAXED);
    remember(RECENT, info, size);
  }
  return r;
}

// The object that holds the address libunwind looks for, without the loader's lock. libunwind
// holds its register-state cache's lock while it looks, and a program's dl_iterate_phdr callback
// that allocates holds the loader's lock while ndmem's hook unwinds: the two orders met, and two
// threads waited for each other for ever. glibc's _dl_find_object (2.35) finds the object
// lock-free; its program headers are read where offset 0 of its file is mapped (its first
// mapping, which every linker starts with the ELF header). libunwind's search data begins with
// the address (its struct dwarf_callback_data); an object that does not answer for it, or a
// libunwind that passes something else, is searched for in the loader's list as before. An
// address in no object (a JIT's code: every Java frame) is in none of the list's either, and is
// answered at once. 1: the callback found it; 0: no object holds the address; -1: not answered.
extern int _dl_find_object(void *address, struct dl_find_object *result) __attribute__((weak));
static int lockfree_search(phdr_fn fn, void *data) {
  struct dl_find_object fo;
  if (!_dl_find_object) return -1;
  if (_dl_find_object((void *)*(const uintptr_t *)data, &fo) != 0) return 0;
  const ElfW(Ehdr) *eh = fo.dlfo_map_start;
  const struct link_map *lm = fo.dlfo_link_map;
  uintptr_t start = (uintptr_t)fo.dlfo_map_start, end = (uintptr_t)fo.dlfo_map_end;
  if (!lm || end - start < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_phentsize != sizeof(ElfW(Phdr)) || !eh->e_phnum || eh->e_phoff > end - start ||
      (end - start - eh->e_phoff) / sizeof(ElfW(Phdr)) < eh->e_phnum)
    return -1;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(start + eh->e_phoff);
  uintptr_t pg = nd_os_page_size();
  int first = 0;
  for (int i = 0; i < eh->e_phnum && !first; i++)
    first = ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 &&
            ((lm->l_addr + ph[i].p_vaddr) & ~(pg - 1)) == start;
  if (!first) return -1;
  struct dl_phdr_info info;
  memset(&info, 0, sizeof info);
  info.dlpi_addr = lm->l_addr;
  info.dlpi_name = lm->l_name;
  info.dlpi_phdr = ph;
  info.dlpi_phnum = eh->e_phnum;
  // Without the loader's counts (the size of an older glibc's description): not asked for here.
  return fn(&info, offsetof(struct dl_phdr_info, dlpi_adds), data) > 0 ? 1 : -1;
}

static int recent_dl_iterate_phdr(phdr_fn fn, void *data) {
  if (!nd_unw_own) return dl_iterate_phdr(fn, data); // the program's own use of libunwind
  int r = lockfree_search(fn, data);
  if (r >= 0) {
    __atomic_fetch_add(&unw.searches_lockfree, 1, __ATOMIC_RELAXED);
    return r;
  }
  if (!nd_unw_quiet) return dl_iterate_phdr(fn, data);
  search_t s = {fn, data, 1, 0};
  return dl_iterate_phdr(search_step, &s);
}

// ---------------------------------------------------------------- patching libunwind's imports

// A dynamic entry's address: glibc relocates them in place where the section is writable.
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v) { return v < base ? v + base : v; }

// The object's dynamic section, or NULL.
static const ElfW(Dyn) *dynamic_of(const struct dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  return NULL;
}

#if defined(__x86_64__)
#define ND_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define ND_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define ND_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define ND_R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

// Points the GOT entry at slot to fn. A page the loader made read-only after relocation (RELRO:
// glibc protects the pages from the segment's start down to the page its end falls in, which
// stays writable) is made writable for the store and read-only again; no other page is touched.
static int put_slot(const struct dl_phdr_info *info, void **slot, void *fn) {
  uintptr_t s = (uintptr_t)slot, pg = nd_os_page_size();
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_GNU_RELRO) continue;
    uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(pg - 1);
    uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(pg - 1);
    if (s < lo || s >= hi) continue;
    uintptr_t a = s & ~(pg - 1);
    if (syscall(SYS_mprotect, a, pg, PROT_READ | PROT_WRITE) != 0) return -1;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    syscall(SYS_mprotect, a, pg, PROT_READ);
    return 0;
  }
  __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  return 0;
}

static int patch_libunwind(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size, (void)ctx;
#if defined(ND_R_JUMP_SLOT)
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  const ElfW(Dyn) *dyn = dynamic_of(info);
  if (lo != unw.lo || hi != unw.hi || !dyn) return 0;
  uintptr_t base = info->dlpi_addr, jmprel = 0, rela = 0, symtab = 0, strtab = 0;
  size_t jmpsz = 0, relasz = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
    case DT_JMPREL: jmprel = dyn_ptr(base, dyn->d_un.d_ptr); break;
    case DT_PLTRELSZ: jmpsz = dyn->d_un.d_val; break;
    case DT_RELA: rela = dyn_ptr(base, dyn->d_un.d_ptr); break;
    case DT_RELASZ: relasz = dyn->d_un.d_val; break;
    case DT_SYMTAB: symtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
    case DT_STRTAB: strtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
    default: break;
    }
  }
  if (!symtab || !strtab) return 1;
  const struct { uintptr_t at; size_t n; } tables[2] = {{jmprel, jmpsz}, {rela, relasz}};
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *r = (const ElfW(Rela) *)tables[t].at;
    for (size_t i = 0; r && i < tables[t].n / sizeof *r; i++) {
      unsigned type = (unsigned)ELF64_R_TYPE(r[i].r_info);
      if (type != ND_R_JUMP_SLOT && type != ND_R_GLOB_DAT) continue;
      const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
      const char *name = (const char *)strtab + sym->st_name;
      void **slot = (void **)(base + r[i].r_offset);
      if (!strcmp(name, "sigprocmask") && !put_slot(info, slot, (void *)quiet_sigprocmask))
        unw.patched |= 1;
      else if (!strcmp(name, "dl_iterate_phdr") &&
               !put_slot(info, slot, (void *)recent_dl_iterate_phdr))
        unw.patched |= 2;
      else if (!strcmp(name, "read") && !put_slot(info, slot, (void *)unw_read))
        unw.io_patched |= 1;
      else if (!strcmp(name, "syscall") && !put_slot(info, slot, (void *)unw_syscall))
        unw.io_patched |= 2;
      else if (!strcmp(name, "close") && !put_slot(info, slot, (void *)unw_close))
        unw.io_patched |= 4;
    }
  }
#endif
  return 1;
}

// ---------------------------------------------------------------- libunwind's other clients

// Whether the object needs libunwind.so.8 (its DT_NEEDED entries), or is it.
static int needs_libunwind(const struct dl_phdr_info *info, uintptr_t lo) {
  if (lo == unw.lo) return 1;
  const ElfW(Dyn) *dyn = dynamic_of(info);
  if (!dyn) return 0;
  uintptr_t strtab = 0;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_STRTAB) strtab = dyn_ptr(info->dlpi_addr, d->d_un.d_ptr);
  if (!strtab) return 0;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_NEEDED && !strncmp((const char *)strtab + d->d_un.d_val, "libunwind.so", 12))
      return 1;
  return 0;
}

// Handler addresses already classed (whether their object needs libunwind): a program installs
// few distinct handlers, often again and again (libcurl ignores SIGPIPE around each call).
#define KNOWN 16
static struct {
  uintptr_t fn[KNOWN];
  uint8_t risky[KNOWN];
  unsigned next;
} known;

typedef struct classing {
  uintptr_t fn;
  int risky;
} classing_t;

// Whether the handler lies in an object that needs libunwind (ctx: classing_t).
static int handler_object(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  classing_t *c = ctx;
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  if (c->fn < lo || c->fn >= hi) return 0;
  c->risky = lo != unw.self_lo && needs_libunwind(info, lo); // ndmem's own handlers never unwind
  return 1;
}

// Whether a handler at fn may unwind with libunwind; called outside libunwind, one thread at a
// time (the decider), with the loader's lock taken as libunwind's own searches take it.
static int risky(uintptr_t fn) {
  for (int i = 0; i < KNOWN; i++)
    if (known.fn[i] == fn) return known.risky[i];
  classing_t c = {fn, 0};
  dl_iterate_phdr(handler_object, &c);
  unsigned k = known.next++ % KNOWN;
  known.fn[k] = fn;
  known.risky[k] = (uint8_t)c.risky; // an address in no object (a JIT's) cannot link libunwind
  return c.risky;
}

// Decides nd_unw_sole where it is undecided, from the handlers the program installed
// (nd_sig_handlers, runtime/exits.c: every sigaction and signal; those set before ndmem started
// were read from the kernel at start-up). One thread decides at a time; a handler installed (or
// a lookup made) while it decides leaves the decision undecided again (-1) for the next unwind.
static int decide(void) {
  int undecided = -1;
  if (!__atomic_compare_exchange_n(&nd_unw_sole, &undecided, 0, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return undecided < 0 ? 0 : undecided; // another thread is deciding: mask meanwhile
  unsigned changes = __atomic_load_n(&nd_sig_changes, __ATOMIC_ACQUIRE);
  __atomic_store_n(&nd_unw_sig_seen, changes, __ATOMIC_RELAXED);
  int sole = unw.patched && !__atomic_load_n(&unw.shared, __ATOMIC_ACQUIRE);
  for (int sig = 1; sole && sig < ND_NSIG; sig++) {
    uintptr_t fn = __atomic_load_n(&nd_sig_handlers[sig], __ATOMIC_ACQUIRE);
    if (fn > 1 && risky(fn)) sole = 0; // not SIG_DFL (0) or SIG_IGN (1)
  }
  // Kept only where nothing moved meanwhile; else undecided again (the next unwind decides).
  int now = __atomic_load_n(&nd_sig_changes, __ATOMIC_ACQUIRE) == changes ? sole : -1;
  if (now == 1 && __atomic_load_n(&unw.shared, __ATOMIC_ACQUIRE)) now = 0;
  __atomic_store_n(&nd_unw_sole, now, __ATOMIC_RELEASE);
  return now == 1;
}

int nd_unwind_sole_now(void) {
  if (__atomic_load_n(&nd_sig_changes, __ATOMIC_ACQUIRE) !=
      __atomic_load_n(&nd_unw_sig_seen, __ATOMIC_RELAXED)) {
    int was = __atomic_load_n(&nd_unw_sole, __ATOMIC_RELAXED);
    if (was >= 0) // decided before the change: undecided now (a decider running keeps its claim)
      __atomic_compare_exchange_n(&nd_unw_sole, &was, -1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
  int sole = __atomic_load_n(&nd_unw_sole, __ATOMIC_ACQUIRE);
  return sole < 0 ? decide() : sole;
}

void nd_unwind_program_lookup(const char *name) {
  if (!name || (strncmp(name, "unw_", 4) && strncmp(name, "_UL", 3) && strncmp(name, "_Ux86", 5) &&
                strncmp(name, "_Uaarch64", 9)))
    return;
  __atomic_store_n(&unw.shared, 1, __ATOMIC_RELEASE);
  __atomic_fetch_add(&nd_sig_changes, 1, __ATOMIC_RELEASE); // a decision made meanwhile is redone
  __atomic_store_n(&nd_unw_sole, 0, __ATOMIC_RELEASE);
}

// The handlers installed before ndmem started (by another library's constructor), read from the
// kernel once; the hooks keep the table from then on.
static void read_handlers(void) {
  for (int sig = 1; sig < ND_NSIG; sig++) {
    struct { uintptr_t handler; unsigned long flags; uintptr_t restorer; uint64_t mask; } k;
    if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof k.mask) == 0)
      __atomic_store_n(&nd_sig_handlers[sig], k.handler, __ATOMIC_RELEASE);
  }
}

// ---------------------------------------------------------------- set-up

typedef struct find { uintptr_t addr, *lo, *hi; } find_t;
static int find_object(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  find_t *f = ctx;
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  if (f->addr < lo || f->addr >= hi) return 0;
  *f->lo = lo, *f->hi = hi;
  return 1;
}

int nd_object_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
  find_t f = {addr, lo, hi};
  *lo = *hi = 0;
  return dl_iterate_phdr(find_object, &f) ? 0 : -1;
}

// libunwind's register-state cache holds 128 frames by default: an unwind that misses its
// per-thread frame cache (a thread's first unwinds, or after the frame cache grew, which empties
// it) then parses the frame's unwind information again. 4096 entries (about 1.5 MiB) hold the
// frames a torch import unwinds through.
#define RS_CACHE 4096

int nd_unwind_init(void) {
  nd_object_of((uintptr_t)&nd_unwind_init, &unw.self_lo, &unw.self_hi);
  nd_object_of((uintptr_t)&unw_backtrace, &unw.lo, &unw.hi);
  nd_unwinder_is(unw.lo, unw.hi);
  if (!unw.hi) return -1;
  dl_iterate_phdr(patch_libunwind, NULL);
  // libunwind initialises at its first use; do it now, while start-up has the process to itself
  // (the descriptors it opens are moved out of the program's range: exits.c, nd_pipe2), and no
  // handler of the program's can run: quietly where it is patched.
  nd_unw_quiet = unw.patched != 0;
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
  unw_set_cache_size(unw_local_addr_space, RS_CACHE, 0);
  void *one[1];
  unw_backtrace(one, 1);
  nd_unw_quiet = 0;
  __atomic_store_n(&unw.masks_skipped, 0, __ATOMIC_RELAXED); // the counts are the run's
  read_handlers();
  nd_unw_sole = -1;
  decide();
  return 0;
}

// ---------------------------------------------------------------- the fork gate (unwind.h)

int nd_unw_inflight, nd_unw_gate;
__thread int nd_unw_own __attribute__((tls_model("initial-exec")));
__thread int nd_unw_errno __attribute__((tls_model("initial-exec")));
static int cut; // this process's parent forked it while an unwind ran: it unwinds no more

void nd_unw_gated(void) { __atomic_fetch_add(&unw.gated, 1, __ATOMIC_RELAXED); }

// First of the fork handlers (the lowest rank): before any lock of ndmem's is taken, since an
// unwind runs under some of them (an mmap's site is interned under the mapping table's lock).
static void atfork_prepare(void) {
  __atomic_store_n(&nd_unw_gate, 1, __ATOMIC_SEQ_CST);
  uint64_t until = 0;
  while (__atomic_load_n(&nd_unw_inflight, __ATOMIC_SEQ_CST) != 0) {
    uint64_t now = nd_os_mono_ns();
    if (!until) until = now + ND_OS_LOCK_PATIENCE_NS;
    if (now >= until) { // stuck on something the forking thread holds: the child goes without
      cut = 1;
      __atomic_fetch_add(&unw.forks_cut, 1, __ATOMIC_RELAXED);
      break;
    }
    sched_yield();
  }
}
static void atfork_parent(void) {
  cut = 0;
  __atomic_store_n(&nd_unw_gate, 0, __ATOMIC_RELEASE);
}
// A fork child's list of recent objects may have been cut mid-move by the fork: it starts empty.
// Its gate opens unless an unwind of the parent's was still running (libunwind's lock may be held).
static void atfork_child(nd_tls_t *t) {
  (void)t;
  recent.n = 0;
  nd_unw_inflight = 0;
  __atomic_store_n(&nd_unw_gate, cut, __ATOMIC_RELEASE);
}
ND_MODULE(nd_unwind_module) = {.name = "unwind", .rank = 5, .atfork_prepare = atfork_prepare,
                               .atfork_parent = atfork_parent, .atfork_child = atfork_child};

void nd_unwind_stats(nd_unwind_stats_t *out) {
  out->masks_skipped = __atomic_load_n(&unw.masks_skipped, __ATOMIC_RELAXED);
  out->masks_made = __atomic_load_n(&unw.masks_made, __ATOMIC_RELAXED);
  out->searches_recent = __atomic_load_n(&unw.searches_recent, __ATOMIC_RELAXED);
  out->searches_walked = __atomic_load_n(&unw.searches_walked, __ATOMIC_RELAXED);
  out->gated = __atomic_load_n(&unw.gated, __ATOMIC_RELAXED);
  out->searches_lockfree = __atomic_load_n(&unw.searches_lockfree, __ATOMIC_RELAXED);
  out->forks_cut = __atomic_load_n(&unw.forks_cut, __ATOMIC_RELAXED);
}
