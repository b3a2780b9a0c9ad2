// SPDX-License-Identifier: MIT
// init.c: the shim's life cycle: initialisation, the rooms' modules (module.h) and their order,
// per-thread setup and teardown, fork handlers, and the end (nd_finish). The state it sets up is
// in state.c, the next allocator in resolve.c, what is said on stderr in summary.c.
//
// Initialisation is light (symbol look-ups, reading environ) so it is safe to run from the first
// intercepted call, which may come from another library's constructor before ours has run; while
// it runs, that thread's allocations come from the bootstrap pool (state.c).
#include "runtime/shim.h"

#include "common/os.h"
#include "runtime/allocstat.h"
#include "runtime/keys.h"
#include "runtime/module.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static int nd_accounting; // the process accounts (config, fork policy)
static pid_t nd_init_tid;

// ---------------------------------------------------------------- per-thread state

// The thread's TLS destructor (keys.c): after it, the thread's calls are a late thread's (DEAD).
// A fork child's thread that was not its parent's main thread is its own process's main thread
// now: its teardown is the exit, as for any main thread. Either way glibc then frees its record
// of the destructor (EXITING: not the program's block).
static void thread_exit(void *arg) {
  (void)arg;
  nd_tls_t *t = &nd_tls;
  t->exit_mode = t->mode;
  if (nd_os_gettid() != nd_os_getpid() && t->shard) {
    t->mode = ND_T_BUSY; // libunwind's cache goes back with munmaps of its own
    int n;
    const nd_module_t *const *m = nd_modules(&n);
    for (int i = 0; i < n; i++)
      if (m[i]->thread_exit) m[i]->thread_exit(t);
    nd_shard_t *s = t->shard;
    t->shard = NULL;
    nd_shard_release(s);
    t->exit_mode = ND_T_DEAD;
  }
  t->mode = ND_T_EXITING;
}

// ---------------------------------------------------------------- modules

// Every room's module (module.h), found in the section the linker gathers them in, sorted once.
extern const nd_module_t __start_nd_modules[] __attribute__((visibility("hidden")));
extern const nd_module_t __stop_nd_modules[] __attribute__((visibility("hidden")));
#define ND_MODULES_MAX 32
static const nd_module_t *by_order[ND_MODULES_MAX], *by_rank[ND_MODULES_MAX];
static int nmodules = -1;

static void sort_modules(const nd_module_t **v, int n, int rank) {
  for (int i = 1; i < n; i++) { // insertion sort, stable: a handful of modules
    const nd_module_t *m = v[i];
    int k = rank ? m->rank : m->order, j = i;
    for (; j > 0 && (rank ? v[j - 1]->rank : v[j - 1]->order) > k; j--) v[j] = v[j - 1];
    v[j] = m;
  }
}

// Sorted at initialisation, while one thread runs (and again by nobody: the set is fixed at link).
static void find_modules(void) {
  int n = 0;
  for (const nd_module_t *m = __start_nd_modules; m < __stop_nd_modules && n < ND_MODULES_MAX; m++)
    by_order[n] = by_rank[n] = m, n++;
  sort_modules(by_order, n, 0);
  sort_modules(by_rank, n, 1);
  nmodules = n;
}

const nd_module_t *const *nd_modules(int *n) {
  *n = nmodules > 0 ? nmodules : 0;
  return by_order;
}

void nd_modules_write_records(nd_record_fn rec, void *ctx) {
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->write_records) by_order[i]->write_records(rec, ctx);
}

void nd_modules_flush(void) {
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->flush) by_order[i]->flush();
}

void nd_modules_exec(const struct nd_rec_exec *r, const char *path) {
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->exec) by_order[i]->exec(r, path);
}

uint64_t nd_modules_relieve(void) {
  uint64_t bytes = 0;
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->relieve) bytes += by_order[i]->relieve();
  return bytes;
}

int nd_modules_writing(void) {
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->writing && by_order[i]->writing()) return 1;
  return 0;
}

// Lock order, everywhere (the modules' ranks): the unwinds' fork gate (5, stacks/unwind.c: closed
// first, since unwinds run under the locks below) < trace writer (20) < mmap table (30) < CUDA
// books (40) < site stripes and the sites' outer frames (50) < block stripes (60) < counters (70)
// < workspace tables (80) < libunwind's cache pool (90, unwcache.c), a leaf that an unwind takes
// under any of the others. (An mmap interns its site while holding the table lock; the writer
// reads the table at exit.) Modules without a lock rank where their child handler must run:
// resident memory's descriptors (25) before the trace's; limits (15), exits (14), demangling (13),
// Python frames (12) and the thread start records (11) after it.
// Their orders (setup, summary lines, records, thread starts and ends): heap 0 (glibc's headers,
// before any other setup), trace 1, track 2, keys 5, python 6, limits 10, ws 20, cuda 30,
// demangle 35 (the live lines' namers), exits 40 (the signal handlers, last).
static void atfork_prepare(void) {
  for (int i = 0; i < nmodules; i++)
    if (by_rank[i]->atfork_prepare) by_rank[i]->atfork_prepare();
}
static void atfork_parent(void) {
  for (int i = nmodules - 1; i >= 0; i--)
    if (by_rank[i]->atfork_parent) by_rank[i]->atfork_parent();
}
static int finish_state; // 0, 1 (being written), 2 (written)
static int finish_tid;   // the thread writing the end

static void atfork_child(void) {
  nd_tls_t *t = &nd_tls;
  // A thread of the parent's that was ending it (nd_finish) is not in the child, whose end is
  // its own: a multiprocessing pool's thread forks a worker while the main thread exits.
  finish_state = 0, finish_tid = 0;
  nd_os_threads_atfork_child(); // the parent's threads are not the child's
  nd_os_fd_atfork_child();
  for (int i = nmodules - 1; i >= 0; i--)
    if (by_rank[i]->atfork_child) by_rank[i]->atfork_child(t);
  nd_child = ND_FORK_CHILD;
  nd_summary_atfork_child();
  if (!nd_cfg.follow_fork) {
    nd_accounting = 0;
    if (t->mode == ND_T_COUNT) t->mode = ND_T_FORWARD;
  } else if (t->mode == ND_T_COUNT || t->mode == ND_T_NEW) {
    // The first call creates the child's trace (nd_thread_prepare); a forking thread that had
    // not allocated before (no shard yet) is then made a counting thread as any new one is.
    t->mode = ND_T_FORKED;
  }
}

// Whether the parent process runs under ndmem: its environment (as it was exec'd) preloads
// libndmem. Then this process is a child the user did not start directly (a subprocess, a shell
// command of a traced script): it keeps its accounting and trace, but prints no summary into the
// stderr its parent may be reading.
int nd_parent_unread;
static int parent_traced(void) {
  char path[64], buf[4096], entry[512];
  nd_os_proc_path(path, sizeof path, getppid(), "environ", -1);
  int saved = errno, found = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  // A parent this process may not look at (another user: a child that dropped privileges), or
  // one already gone (multiprocessing's resource tracker outlives the process that started it),
  // is taken as under ndmem: a child kept quiet loses nothing, a parent's stderr could.
  if (fd < 0 && (errno == EACCES || errno == EPERM || errno == ESRCH || errno == ENOENT))
    found = nd_parent_unread = 1; // the trace's header then claims no origin
  size_t n = 0; // bytes of the current entry kept (its first sizeof entry - 1)
  ssize_t got;
  while (fd >= 0 && !found && (got = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < got && !found; i++) {
      if (buf[i]) {
        if (n < sizeof entry - 1) entry[n++] = buf[i];
        continue;
      }
      entry[n] = 0;
      found = strncmp(entry, "LD_PRELOAD=", 11) == 0 && strstr(entry, "libndmem") != NULL;
      n = 0;
    }
  }
  if (fd >= 0) close(fd);
  errno = saved;
  return found;
}

static void initialize(nd_tls_t *t) {
  unsigned char saved = t->mode;
  t->mode = ND_T_INIT;
  nd_init_tid = nd_os_gettid();
  int secure = getauxval(AT_SECURE) != 0;
  nd_child = parent_traced() ? ND_EXEC_CHILD : ND_ROOT;
  nd_cfg.summary_children = 0; // until the settings are read: a child is quiet
  nd_config_load(&nd_cfg, environ, secure, nd_warn_line, NULL);
  if (nd_cfg.limits_strict && nd_cfg.unread_limits) {
    // The job asked to be capped and the cap cannot be read: it does not start (config.h).
    nd_warn_line("ndmem: NDMEM_LIMITS_STRICT=1: a job whose limit cannot be read (above) is not "
              "started (exit status 2)",
              NULL);
    syscall(SYS_exit_group, 2);
  }
  if (nd_cfg.config_strict && nd_cfg.bad_values) {
    nd_warn_line("ndmem: NDMEM_CONFIG_STRICT=1: a job whose settings cannot be read (above) is not "
              "started (exit status 2)",
              NULL);
    syscall(SYS_exit_group, 2);
  }
  if (nd_cfg.config_strict == 2) syscall(SYS_exit_group, 0); // the settings' check alone
  int rc = nd_resolve_next();
  if (rc < 0) {
    // Nothing to forward to: this cannot run a program. Say so and stop.
    nd_warn_line("ndmem: cannot resolve the next allocator (dlsym RTLD_NEXT failed); aborting", NULL);
    syscall(SYS_exit_group, 127);
  }
  nd_accounting = rc == 0 && nd_cfg.enabled;
  if (nd_accounting && nd_prints_summary()) nd_summary_open();
  find_modules();
  for (int i = 0; nd_accounting && i < nmodules; i++)
    if (by_order[i]->setup) by_order[i]->setup(secure ? NULL : environ);
  t->mode = saved;
  __atomic_store_n(&nd_state, ND_READY, __ATOMIC_RELEASE);
}

static void ensure_init(nd_tls_t *t) {
  int st = __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE);
  if (ND_LIKELY(st >= ND_READY)) return;
  if (st == ND_UNINIT) {
    int expect = ND_UNINIT;
    if (__atomic_compare_exchange_n(&nd_state, &expect, ND_INITIALIZING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      initialize(t);
      return;
    }
  }
  if (t->mode == ND_T_INIT) return; // our own initialisation calling back in: caller uses the pool
  while (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_INITIALIZING) sched_yield();
}

int nd_thread_prepare(nd_tls_t *t) {
  if (ND_UNLIKELY(t->mode == ND_T_FORKED)) {
    t->mode = ND_T_BUSY;
    for (int i = 0; i < nmodules; i++) // a fork child allocates before it can start a thread
      if (by_order[i]->forked) by_order[i]->forked();
    t->mode = t->shard ? ND_T_COUNT : ND_T_NEW;
    if (t->shard) return t->mode;
  }
  if (t->mode != ND_T_NEW) return t->mode;
  ensure_init(t);
  if (t->mode != ND_T_NEW) return t->mode; // INIT (recursion) or set meanwhile
  if (!nd_accounting || __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_SHUTDOWN) {
    t->mode = ND_T_FORWARD;
    return t->mode;
  }
  // What registering the thread's teardown allocates is ndmem's, not the program's. First, before
  // any lock of ndmem's is held: glibc takes its loader lock for it.
  t->mode = ND_T_BUSY;
  nd_keys_thread_atexit(thread_exit, NULL);
  nd_shard_t *s = nd_shard_acquire(nd_os_gettid());
  if (!s) {
    t->mode = ND_T_FORWARD;
    return t->mode;
  }
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->thread_init) by_order[i]->thread_init(t);
  if (nd_os_gettid() == nd_init_tid) s->fallbacks[NDMEM_FB_BOOTSTRAP] += nd_boot_take_count();
  t->shard = s;
  t->mode = ND_T_COUNT;
  return t->mode;
}

void nd_fallback(nd_tls_t *t, int fb) {
  if (t->shard) ND_BUMP(t->shard->fallbacks[fb], 1);
  else nd_late_fallback(fb);
}

// glibc's pthread_atfork holds the fork handlers' lock while it reallocs their list. Called from
// the initialisation, which runs inside whichever hook comes first, it could be inside that very
// realloc (a library whose constructor registers fork handlers before anything else allocates:
// OpenBLAS's does) and wait for its own caller for ever. ndmem's constructor registers them,
// outside every hook; a library's constructor that forks before it leaves a child that is not
// told it is one (none is known to).
static void fork_handlers(void) {
  static int registered;
  if (!nd_accounting || registered) return;
  registered = 1;
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

__attribute__((constructor)) static void nd_ctor(void) {
  nd_thread_prepare(&nd_tls);
  fork_handlers();
}

// As a preloaded library ndmem is initialised before the program's libraries and so finalised
// after them: the summary sees their exit-time frees. Afterwards this thread only forwards; other
// threads still running keep counting into ndmem's own pages, which are never unmapped.
__attribute__((destructor)) static void nd_dtor(void) {
  nd_tls_t *t = &nd_tls;
  if (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY) return;
  unsigned char saved = t->mode;
  for (int i = 0; i < nmodules; i++)
    if (by_order[i]->exit_wait) by_order[i]->exit_wait();
  nd_finish(ND_EXIT_NORMAL, __atomic_load_n(&nd_exit_status, __ATOMIC_ACQUIRE));
  t->mode = saved == ND_T_COUNT ? ND_T_FORWARD : saved;
}

// The end of accounting, once: the final trace flush (live blocks, EXIT, END) and the summary. From
// exit (the destructor), NDMEM_ON_LIMIT=abort, _exit, or a fatal signal (exits.c); the last two
// may have interrupted this thread inside ndmem, so locks are waited for a bounded time
// (nd_os_last_words). A second caller waits (bounded) for the first to finish and returns.
void nd_finish(int how, int code) {
  nd_tls_t *t = &nd_tls;
  int expect = 0;
  if (!__atomic_compare_exchange_n(&finish_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    // The first is this thread, interrupted (a fatal signal during an _exit's flush): it cannot
    // finish while this waits.
    if (__atomic_load_n(&finish_tid, __ATOMIC_ACQUIRE) == nd_os_gettid()) return;
    // The first may wait for a writer's flush that works (nd_os_mutex_lock_working) as long as it
    // does.
    uint64_t until = nd_os_mono_ns() + ND_OS_PROGRESS_MAX_NS + 2 * ND_OS_LOCK_PATIENCE_NS;
    while (__atomic_load_n(&finish_state, __ATOMIC_ACQUIRE) != 2 && nd_os_mono_ns() < until)
      sched_yield();
    return;
  }
  __atomic_store_n(&finish_tid, nd_os_gettid(), __ATOMIC_RELEASE);
  // No signal interrupts the end's writing (a pool's SIGTERM to a worker in its _exit): one that
  // comes meanwhile is taken after it, or never where the process ends in _exit.
  sigset_t all, mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &mask);
  unsigned char saved = t->mode;
  int last = nd_os_last_words;
  t->mode = ND_T_BUSY;
  // A thread that was inside ndmem (exit from a signal handler that interrupted a hook) may hold
  // one of its locks too.
  nd_os_last_words = how == ND_EXIT_UNDERSCORE || how == ND_EXIT_SIGNAL || saved == ND_T_BUSY;
  nd_finish_inside = saved == ND_T_BUSY;
  nd_end_ns = nd_os_mono_ns();
  if (nd_accounting) {
    if (t->shard)
      for (int i = 0; i < NDMEM_KIND_COUNT; i++) nd_shard_publish(t->shard, i);
    for (int i = 0; i < nmodules; i++)
      if (by_order[i]->finish) by_order[i]->finish(how, code);
    if (nd_prints_summary()) nd_summary_end(how, code);
  }
  __atomic_store_n(&nd_state, ND_SHUTDOWN, __ATOMIC_RELEASE);
  __atomic_store_n(&finish_state, 2, __ATOMIC_RELEASE);
  nd_os_last_words = last;
  t->mode = saved;
  if (how != ND_EXIT_UNDERSCORE) pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

int nd_accounting_on(void) { return nd_accounting; }
