// SPDX-License-Identifier: MIT
// unwind.h: libunwind as ndmem feeds it (stacks/unwind.c): set up once, its system calls skipped
// while ndmem itself unwinds, its searches for the object holding an address shortened.
#ifndef ND_UNWIND_H
#define ND_UNWIND_H

#include "runtime/shim.h" // nd_sig_changes

#include <errno.h>
#include <stdint.h>

int unw_backtrace(void **buffer, int size); // libunwind's (libunwind-common.h)

struct dl_phdr_info;
// [lo, hi) spanned by a loaded object's PT_LOAD segments (hi == 0: none)
void nd_module_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);
// The PT_LOAD span of the loaded object that holds addr: 0, or -1 (none: lo, hi 0).
int nd_object_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

// nd_unw_quiet (the calling thread is inside one of ndmem's own unwinds during which libunwind's
// signal masking may be skipped: set by nd_unw_begin) and nd_unw_sole (no signal handler may
// unwind with libunwind.so.8: 1 none may, 0 one may, -1 not decided since a handler was
// installed) live in runtime/ (shim.h), whose thread teardown calls libunwind too.
int nd_unwind_sole_now(void); // nd_unw_sole, decided again where a handler was installed since

// libunwind's set-up, once at start-up: its caching, its register-state cache's size, the
// patches of its imports (unwind.c), its first unwind (which opens its descriptors while
// start-up has the process to itself). 0, or -1 when libunwind is not found.
int nd_unwind_init(void);
// libunwind's read, syscall and close were pointed at ndmem's (its validation pipe is then kept
// out of the program's way like ndmem's own descriptors: common/os.h); ND_UNW_NO_PIPE stands for
// a pipe it does not keep (no room above the program's range).
int nd_unwind_io_patched(void);
#define ND_UNW_NO_PIPE (-2)
// The fork gate. libunwind takes a lock of its own (its register-state cache's) at every step, and
// a fork child whose parent had a thread inside libunwind at the fork would wait for it at its
// first unwind, for ever. The fork's first handler (unwind.c) closes the gate and waits for the
// unwinds in flight to end; an unwind that would start meanwhile is not made (its capture has no
// frames: counted), and one still running after ND_OS_LOCK_PATIENCE_NS leaves the child without
// unwinds (counted too). Counted in and out by every unwind: two atomic adds beside its ~100 ns a
// frame.
extern int nd_unw_inflight, nd_unw_gate; // atomic; the gate: 0 open, 1 a fork is prepared
// The calling thread is inside an unwind of ndmem's: libunwind's searches for an object are
// answered without the loader's lock where they can be (unwind.c).
extern __thread int nd_unw_own __attribute__((tls_model("initial-exec")));
// The program's errno at the unwind's start, given back at its end: libunwind's reads, writes and
// lookups set it (a free must leave it alone).
extern __thread int nd_unw_errno __attribute__((tls_model("initial-exec")));
void nd_unw_gated(void);
// An unwind of ndmem's own starts (0; -1: the gate is closed, unwind nothing) and ends: the
// thread's flag follows whether a handler may unwind with libunwind, decided once for the whole
// unwind so that a masking libunwind skipped is never restored (nor the reverse).
static inline int nd_unw_begin(void) {
  __atomic_fetch_add(&nd_unw_inflight, 1, __ATOMIC_SEQ_CST);
  if (__builtin_expect(__atomic_load_n(&nd_unw_gate, __ATOMIC_SEQ_CST) != 0, 0)) {
    __atomic_fetch_sub(&nd_unw_inflight, 1, __ATOMIC_RELEASE);
    nd_unw_gated();
    return -1;
  }
  nd_unw_own = 1;
  nd_unw_errno = errno;
  nd_unw_quiet = __builtin_expect(nd_unw_sole_decided(), 1) ? 1 : nd_unwind_sole_now();
  return 0;
}
static inline void nd_unw_end(void) {
  errno = nd_unw_errno;
  nd_unw_quiet = 0;
  nd_unw_own = 0;
  __atomic_fetch_sub(&nd_unw_inflight, 1, __ATOMIC_RELEASE);
}
// unw_backtrace inside nd_unw_begin/nd_unw_end (0 frames while the gate is closed).
static inline __attribute__((always_inline)) int nd_backtrace(void **buf, int n) {
  if (nd_unw_begin() != 0) return 0;
  int r = unw_backtrace(buf, n);
  nd_unw_end();
  return r;
}
// The program looked up one of libunwind's names (hooks/dlsym.c): it may unwind itself, from a
// signal handler too, so libunwind keeps its masking from now on.
void nd_unwind_program_lookup(const char *name);

// What the patches did, for the summary and the tests: libunwind's calls of sigprocmask skipped
// and made, and its object searches (answered by a recent object, or by a full walk).
typedef struct nd_unwind_stats {
  uint64_t masks_skipped, masks_made, searches_recent, searches_walked;
  uint64_t searches_lockfree; // answered by _dl_find_object, without the loader's lock
  uint64_t gated;     // unwinds not made while a fork was being prepared (or after, in a child
                      // whose parent's unwind did not end in time)
  uint64_t forks_cut; // forks that went on with an unwind still running (the child unwinds no more)
} nd_unwind_stats_t;
void nd_unwind_stats(nd_unwind_stats_t *out);

#endif
