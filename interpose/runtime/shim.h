// SPDX-License-Identifier: MIT
// shim.h: private interface of libndmem.so's interposer, grouped by the file that defines it.
//
// Life cycle (jemalloc-style explicit states): UNINIT -> INITIALIZING -> READY -> SHUTDOWN. The
// first intercepted call on any thread, or the library constructor, initialises. Per thread, one
// TLS byte says what a hook does:
//   NEW      first call on this thread: set up (maybe initialise), then decide
//   COUNT    account the call (the fast path)
//   BUSY     inside ndmem or inside the real allocator: forward, do not account (re-entry guard;
//            also keeps an allocator's own mmaps, e.g. jemalloc's, out of the mmap counters)
//   FORWARD  accounting is off for this thread or process: forward
//   INIT     this thread is initialising: serve memory from the static bootstrap pool
//   DEAD     the thread's state was torn down (late TLS destructors): account atomically
//   FORKED   the thread that forked, in the child: its first call creates the child's trace, then
//            COUNT
//   EXITING  the thread's TLS destructor (keys.c) ran: its next free is glibc's record of that
//            destructor, which ndmem allocated uncounted; forwarded, then exit_mode
#ifndef ND_SHIM_H
#define ND_SHIM_H

#include "runtime/config.h"
#include "account/counters.h"

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define ND_LIKELY(x) __builtin_expect(!!(x), 1)
#define ND_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ND_EXPORT __attribute__((visibility("default")))
#define ND_NOINLINE __attribute__((noinline))
#define ND_INLINE static inline __attribute__((always_inline))

enum nd_state { ND_UNINIT = 0, ND_INITIALIZING, ND_READY, ND_SHUTDOWN };
enum nd_tmode {
  ND_T_NEW = 0, ND_T_COUNT, ND_T_BUSY, ND_T_FORWARD, ND_T_INIT, ND_T_DEAD, ND_T_FORKED, ND_T_EXITING
};
// Which process this is: the one the user started, or a child of a process under ndmem.
enum nd_child { ND_ROOT = 0, ND_EXEC_CHILD, ND_FORK_CHILD };

#define ND_RETRY_KEYS 4
typedef struct nd_tls {
  unsigned char mode;
  unsigned char exit_mode; // the mode after EXITING
  nd_shard_t *shard;
  int64_t sample_left; // bytes until the next sampled small block (INT64_MAX: never)
  uint64_t rng;        // the sampler's xorshift state
  void *ws;            // workspace state (ws.c), created at the first routed allocation
  uint64_t lim_acc;    // limits: bytes allocated since this thread last added to the total
  // limits: the requests (function, size, caller) refused on this thread since its last request
  // granted on the checked path (a retry loop may alternate, as OpenBLAS's mmap and malloc do),
  // when the first was refused and how many refusals there were (0: none since)
  uint64_t retry_key[ND_RETRY_KEYS];
  uint64_t retry_t0, retry_n;
} nd_tls_t;

extern __thread nd_tls_t nd_tls __attribute__((tls_model("initial-exec")));

// The next allocator's functions. Members the next allocator does not provide itself (found in
// another object than its malloc) point at ndmem's equivalents built from the ones it has.
typedef int (*nd_main_fn)(int, char **, char **);
typedef int (*nd_start_main_fn)(nd_main_fn main, int argc, char **argv, void (*init)(void),
                                void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
typedef struct nd_real {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*usable)(void *);
  void *(*mmap)(void *, size_t, int, int, int, off_t);
  int (*munmap)(void *, size_t);
  void *(*mremap)(void *, size_t, size_t, int, ...);
  int (*trim)(size_t); // the next allocator's malloc_trim; NULL when it has none of its own
  int (*trim_next)(size_t); // the next malloc_trim whoever defines it: the program's calls go there
  // Not allocator functions: the next definitions of the other names ndmem exports (exits.c).
  int (*sigaction)(int, const struct sigaction *, struct sigaction *);
  void (*(*signal)(int, void (*)(int)))(int);
  void (*exit_)(int) __attribute__((noreturn)); // _exit
  int (*pipe2)(int *, int);
  nd_start_main_fn start_main; // __libc_start_main
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
  int is_glibc; // the next allocator is glibc's malloc
} nd_real_t;

// init.c
extern nd_real_t nd_real;
extern nd_config_t nd_cfg;
extern int nd_state;
int nd_thread_prepare(nd_tls_t *t); // settles a NEW thread; returns the mode to act on
void nd_fallback(nd_tls_t *t, int fb);
void *nd_boot_alloc(size_t size, size_t align);
size_t nd_boot_usable(const void *p);
uint64_t nd_boot_take_count(void); // blocks the pool served (once: then 0)
int nd_resolve_next(void); // resolve.c: 0, 1 (accounting impossible), -1 (none)
// libunwind's text, found at start-up (nd_sites_init); whether a return address lies in it (the
// hooks leave libunwind's own calls, made inside ndmem, out of the program's books).
void nd_unwinder_is(uintptr_t lo, uintptr_t hi);
int nd_unwinder_owns(const void *ra);
// Whether the calling thread is inside a call of ndmem's into libunwind during which libunwind's
// signal masking is skipped, and whether no signal handler may unwind with libunwind (1; 0: one
// may; -1: not decided since a handler was installed). stacks/unwind.c decides and explains both.
extern __thread int nd_unw_quiet __attribute__((tls_model("initial-exec")));
extern int nd_unw_sole; // atomic
extern char nd_boot_pool[];
#define ND_BOOT_POOL_SIZE (256 * 1024)
ND_INLINE int nd_boot_owns(const void *p) {
  return (size_t)((const char *)p - nd_boot_pool) < ND_BOOT_POOL_SIZE;
}
// summary.c: ndmem's remarks and its summary at exit
void nd_print_summary(int fd);
void nd_warn_line(const char *line, void *ctx); // a remark, unless this process is quiet
void nd_summary_open(void);           // keep a copy of stderr for the summary
void nd_summary_end(int how, int code); // the end's lines and the summary
void nd_summary_atfork_child(void);
// An exec the shim cannot follow (follow: enum nd_exec_follow), about to be made (err 0: the
// exec's line and the summary, the last this image says) or failed (err: one line).
void nd_summary_exec(const char *path, int follow, int err);
// The end of accounting, once: final trace flush and summary. how: enum nd_exit_how
// (trace_format.h); code: the exit status (-1: a normal exit's not known) or the signal.
void nd_finish(int how, int code);
// Set by nd_finish where the ending thread was inside ndmem (a handler that interrupted a hook
// called _exit): the unwinder and the loader may be mid-change on this very thread.
extern int nd_finish_inside;
// When the end began (nd_finish; 0 before): the EXIT record's time, and what the exit line's
// "N s after a refused request" counts to, so that the summary and the report say the same.
extern uint64_t nd_end_ns;
int nd_accounting_on(void);
extern int nd_child; // enum nd_child
extern int nd_parent_unread; // ND_EXEC_CHILD only by assumption: the parent could not be read
int nd_prints_summary(void); // this process prints its summary (the one the user started)
int nd_quiet(void);          // a child: ndmem's own remarks stay out of its stderr

// alloc.c
// ra: the caller's return address (the workspace symbol of a routed allocation)
void *nd_malloc(size_t n, void *ra);
void *nd_calloc(size_t n, size_t m, void *ra);
void *nd_realloc(void *p, size_t n, void *ra);
void *nd_reallocarray(void *p, size_t n, size_t m, void *ra);
int nd_posix_memalign(void **out, size_t align, size_t n, void *ra);
void *nd_aligned_alloc(size_t align, size_t n, void *ra);
void *nd_memalign(size_t align, size_t n, void *ra);
void *nd_valloc(size_t n, void *ra);
void *nd_pvalloc(size_t n, void *ra);
void nd_free(void *p, int fn);
size_t nd_malloc_usable_size(void *p);
// C++ operator new (hooks.c exports every form): form = ND_NEW_ARRAY | ND_NEW_ALIGNED |
// ND_NEW_NOTHROW; align 0 for the unaligned forms. operator delete is nd_free.
enum { ND_NEW_ARRAY = 1, ND_NEW_ALIGNED = 2, ND_NEW_NOTHROW = 4 };
void *nd_cxx_new(size_t n, size_t align, int form, void *ra);
int nd_synth_posix_memalign(void **out, size_t align, size_t n);
void *nd_synth_aligned_alloc(size_t align, size_t n);
void *nd_synth_memalign(size_t align, size_t n);
void *nd_synth_valloc(size_t n);
void *nd_synth_pvalloc(size_t n);

// exits.c: a trace and a summary for every way the process ends (see the file)
// From ndmem's threads after each nap: exit(0) when no thread of the program's is left (exits.c).
void nd_exit_if_alone(void);
// Handlers the program installed through these: counted before and after each (atomic), and each
// signal's handler as the program last set it (0 SIG_DFL, 1 SIG_IGN; atomic). stacks/unwind.c
// reads both (which handlers may unwind with libunwind), and keeps nd_unw_sig_seen: the count it
// decided at.
#define ND_NSIG 65
extern unsigned nd_sig_changes, nd_unw_sig_seen;
extern uintptr_t nd_sig_handlers[ND_NSIG];
// No handler may unwind with libunwind, as decided since the last handler was installed.
static inline int nd_unw_sole_decided(void) {
  return __atomic_load_n(&nd_unw_sole, __ATOMIC_ACQUIRE) == 1 &&
         __atomic_load_n(&nd_sig_changes, __ATOMIC_ACQUIRE) ==
             __atomic_load_n(&nd_unw_sig_seen, __ATOMIC_RELAXED);
}
int nd_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void (*nd_signal(int sig, void (*handler)(int)))(int);
__attribute__((noreturn)) void nd_exit_now(int status); // _exit, _Exit
int nd_pipe2(int *fds, int flags, void *ra); // ra: the caller (libunwind's call is refused)
int nd_dup2(int oldfd, int newfd);            // ndmem's kept descriptor on newfd moves first
int nd_dup3(int oldfd, int newfd, int flags);
// __libc_start_main: main is called through ndmem's, which registers the handler that keeps the
// exit status (nd_exit_status) as main starts.
int nd_start_main(nd_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                  void (*rtld_fini)(void), void *stack_end);
// The status exit() was called with (or main returned), low 8 bits; -1 before (or not known: a
// process whose main the shim did not see start).
extern int nd_exit_status;

// exec.c: an exec is recorded before it is made (what, and whether the shim follows it), and a
// failed one leaves the process as it was. The hooks of the family, each a forward.
void nd_exec_resolve(void *(*sym)(const char *));
int nd_execve(const char *path, char *const argv[], char *const envp[]);
int nd_execv(const char *path, char *const argv[]);
int nd_execvp(const char *file, char *const argv[]);
int nd_execvpe(const char *file, char *const argv[], char *const envp[]);
int nd_fexecve(int fd, char *const argv[], char *const envp[]);
int nd_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags);
// execl, execle, execlp: the list (up to its NULL; execle's envp after it) is read from `ap`.
int nd_execl(int fn, const char *path, const char *arg, va_list ap);

// mmap.c
void *nd_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void *ra);
int nd_munmap(void *addr, size_t len, void *ra); // ra: the caller (libunwind's own is not counted)
void *nd_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr, void *ra);
struct nd_range;
struct nd_site;
void nd_mmap_each_live(void (*fn)(void *ctx, const struct nd_range *r), void *ctx);
// The same with every other thread stopped (reach.c): -1 (and no call) when one holds the table.
int nd_mmap_each_live_stopped(void (*fn)(void *ctx, const struct nd_range *r), void *ctx);
// Reads which pages of every tracked mapping are resident (mincore; the trace's RSS record): fn
// sees each mapping with untouched bytes, its allocation site (NULL: none of this process's, a
// fork child's inherited one) and those bytes; the untouched total, or -1 when the table was busy
// (not waited for: the caller may be a signal handler's last flush). Large mappings' untouched
// bytes are kept for maxBytes as the limits' own reading keeps them.
int64_t nd_mmap_read_touched(void (*fn)(void *ctx, struct nd_site *site, uint64_t untouched),
                             void *ctx);
// The program's anonymous mappings as it made them, whatever their protection (a PROT_NONE
// reservation too): a MAP_FIXED mapping inside one is a part of it, not one of its own. For the
// scan at exit (reach.c: a pointer into one reaches the tracked mappings inside); -1 where a
// stopped thread held the table.
int nd_mmap_each_reserved_stopped(void (*fn)(void *ctx, uintptr_t lo, uintptr_t hi), void *ctx);

#endif
