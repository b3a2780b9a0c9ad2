// SPDX-License-Identifier: MIT
// exits.c: a trace and a summary for every way a process ends, without the program seeing it.
//
// exit() and a return from main reach ndmem's destructor (init.c). The other ends are caught here:
// _exit/_Exit (Python's os._exit ends every multiprocessing fork worker) by hooking them, and a
// fatal signal whose disposition is the default (SIGSEGV, abort's SIGABRT, kill's SIGTERM, ...)
// by a handler of ndmem's own that writes the final trace and summary, puts the default back and
// re-raises, so the process ends exactly as it would have (same signal, same core dump).
//
// The handler must stay invisible: programs query and set these dispositions (CPython installs
// its SIGINT handler only where it finds SIG_DFL; its tests compare the previous handlers). So
// sigaction and signal are hooked and answer from a virtual table: where ndmem's handler stands
// in for SIG_DFL, the program reads SIG_DFL with the flags and mask it last set; a program's own
// handler or SIG_IGN replaces ndmem's for real, and setting SIG_DFL again puts ndmem's back.
// Whatever bypasses the hooks (sysv_signal, a raw rt_sigaction) is noticed at the next call by
// comparing the real disposition with the table. A vfork child (it shares the parent's memory
// but not its pid) changes nothing here.
#include "runtime/shim.h"
#include "runtime/module.h"

#include "common/os.h"
#include "account/sites.h"
#include "runtime/sysmem.h"
#include "stacks/unwind.h"
#include "common/trace_format.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

// Signals whose default action ends the process and that are worth a last trace. (SIGKILL and
// SIGSTOP cannot be caught; SIGALRM, SIGUSR1/2, SIGPROF and SIGVTALRM are left alone: programs
// and profilers use them as events.)
static const int fatal_sigs[] = {SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,  SIGABRT, SIGSYS,  SIGTRAP,
                                 SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGXCPU, SIGXFSZ, SIGPIPE};
#define NSIGS 65

static struct {
  int on;
  pid_t pid;  // this process (a vfork child has another pid and the same memory)
  int lock;   // the table; taken with every signal blocked (a handler may call sigaction)
  uint8_t fatal[NSIGS];
  uint8_t owned[NSIGS];             // ndmem's handler is installed and stands in for SIG_DFL
  struct sigaction view[NSIGS];     // what the program set (and reads back) for an owned signal
} signals;

// The last thread's end (nd_exit_if_alone): the program's signal mask at start-up, when the check
// last ran and how many checks in a row found no thread of the program's, and whether it acted.
static struct {
  sigset_t mask;
  uint64_t last_ns;
  int streak, done; // atomic
} last_thread;

static void fatal_handler(int sig, siginfo_t *si, void *uc);

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (ND_UNLIKELY(!nd_real.sigaction)) nd_thread_prepare(&nd_tls);
  if (!nd_real.sigaction) {
    errno = ENOSYS;
    return -1;
  }
  return nd_real.sigaction(sig, act, old);
}

static int ours(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == fatal_handler;
}

static int is_default(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) ? sa->sa_sigaction == NULL : sa->sa_handler == SIG_DFL;
}

// Installs ndmem's handler for sig (the table lock held).
static int install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fatal_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigfillset(&sa.sa_mask); // nothing else runs on this thread while the trace is written
  return real_sigaction(sig, &sa, NULL);
}

// The signal's disposition is SIG_DFL (just set, or found at start-up): keep what the kernel
// reads back for it (glibc adds SA_RESTORER: the program must read exactly what it would without
// ndmem) and put ndmem's handler in its place. The table lock is held.
static void take(int sig) {
  struct sigaction cur;
  if (real_sigaction(sig, NULL, &cur) != 0 || !is_default(&cur) || install(sig) != 0) return;
  signals.owned[sig] = 1;
  signals.view[sig] = cur;
}

static void table_lock(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
  nd_spin_lock(&signals.lock);
}

static void table_unlock(const sigset_t *old) {
  nd_spin_unlock(&signals.lock);
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int managed(int sig) {
  return signals.on && sig > 0 && sig < NSIGS && signals.fatal[sig] &&
         nd_os_getpid() == signals.pid;
}

static void setup(char *const *envp) {
  (void)envp;
  signals.pid = nd_os_getpid();
  pthread_sigmask(SIG_SETMASK, NULL, &last_thread.mask); // the program's, at start-up
  sigset_t old;
  table_lock(&old);
  for (size_t i = 0; i < sizeof fatal_sigs / sizeof fatal_sigs[0]; i++) {
    signals.fatal[fatal_sigs[i]] = 1;
    take(fatal_sigs[i]); // only where the disposition is the default (not ignored or handled)
  }
  table_unlock(&old);
  signals.on = 1;
}

static void atfork_child(nd_tls_t *t) {
  (void)t;
  signals.pid = nd_os_getpid();
  nd_exit_status = -1; // forked from an exit handler: the child's exit is its own
  // the child's threads are its own to count
  last_thread.last_ns = 0, last_thread.streak = 0, last_thread.done = 0;
}

static void *ends(void *arg) {
  (void)arg;
  exit(0);
}

// glibc ends the process with exit(0) when its last thread ends, returning from its start
// routine or in pthread_exit (the main thread's too). It counts ndmem's threads among its own, so
// when the program's last thread ended while one of them ran, it only left, and nothing would end
// the process: a fork child whose forking thread was not the main one and returned, a program
// whose main thread called pthread_exit before its last worker ended. When two checks 100 ms
// apart find no thread but ndmem's, exit(0) is called in that thread's place, on a thread made
// for it as the program makes one (the default stack, the program's signal mask at start-up: not
// ndmem's thread, whose mask blocks every signal and whose stack is small): the program's atexit
// handlers and destructors run, then ndmem's final flush, as they would have. ndmem's own count is
// read first and only grows once a thread of its runs (nd_os_threads): never above the truth.
void nd_exit_if_alone(void) {
  uint64_t now = nd_os_mono_ns(), last = __atomic_load_n(&last_thread.last_ns, __ATOMIC_ACQUIRE);
  // The writer and the poller may both ask: one check at most every 100 ms.
  if (__atomic_load_n(&last_thread.done, __ATOMIC_ACQUIRE) || now - last < 100000000ull ||
      !__atomic_compare_exchange_n(&last_thread.last_ns, &last, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return;
  int own = __atomic_load_n(&nd_os_threads, __ATOMIC_ACQUIRE), n = nd_threads_self();
  if (n <= 0 || n > own) {
    __atomic_store_n(&last_thread.streak, 0, __ATOMIC_RELAXED);
    return;
  }
  if (__atomic_add_fetch(&last_thread.streak, 1, __ATOMIC_ACQ_REL) < 2) return;
  if (__atomic_exchange_n(&last_thread.done, 1, __ATOMIC_ACQ_REL)) return;
  sigset_t old;
  pthread_sigmask(SIG_SETMASK, &last_thread.mask, &old); // the new thread's, inherited
  pthread_t th;
  if (pthread_create(&th, NULL, ends, NULL) != 0) { // no thread: exit here, with the mask
    nd_tls.mode = ND_T_NEW;
    exit(0);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  for (;;) nd_os_sleep_ms(1000); // the exit ends this thread with the process
}

// Handlers the program installed, counted (atomic) before and after each, and each signal's
// latest: libunwind's signal masking is decided again after each (stacks/unwind.c), and a
// decision that read the handlers while one was being installed is not kept.
unsigned nd_sig_changes;
uintptr_t nd_sig_handlers[ND_NSIG];

static void handler_set(int sig, void (*fn)(int)) {
  if (sig > 0 && sig < ND_NSIG)
    __atomic_store_n(&nd_sig_handlers[sig], (uintptr_t)fn, __ATOMIC_RELEASE);
}

static int sigaction_of(int sig, const struct sigaction *act, struct sigaction *old);
int nd_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!act) return sigaction_of(sig, act, old);
  __atomic_fetch_add(&nd_sig_changes, 1, __ATOMIC_RELEASE);
  int rc = sigaction_of(sig, act, old), err = errno;
  if (rc == 0) handler_set(sig, act->sa_handler); // sa_sigaction shares its storage
  __atomic_fetch_add(&nd_sig_changes, 1, __ATOMIC_RELEASE);
  errno = err;
  return rc;
}

static int sigaction_of(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!managed(sig)) return real_sigaction(sig, act, old);
  sigset_t mask;
  table_lock(&mask);
  if (signals.owned[sig]) { // still ours for real? (sysv_signal or a raw syscall may have replaced it)
    struct sigaction cur;
    if (real_sigaction(sig, NULL, &cur) == 0 && !ours(&cur)) signals.owned[sig] = 0;
  }
  int rc = 0;
  if (signals.owned[sig]) {
    struct sigaction prev = signals.view[sig];
    if (act && (rc = real_sigaction(sig, act, NULL)) == 0) {
      signals.owned[sig] = 0;
      if (is_default(act)) take(sig); // SIG_DFL again: ndmem's handler stands in for it
    }
    if (rc == 0 && old) *old = prev;
  } else {
    rc = real_sigaction(sig, act, old);
    if (rc == 0 && act && is_default(act)) take(sig);
  }
  int err = errno;
  table_unlock(&mask);
  errno = err;
  return rc;
}

// What signal() returns for a previous action: its handler (glibc returns sa_handler, which shares
// its storage with sa_sigaction).
static void (*old_handler(const struct sigaction *sa))(int) { return sa->sa_handler; }

// glibc's signal(): BSD semantics (SA_RESTART unless siginterrupt() said otherwise, the signal
// itself masked in its handler). For the signals ndmem manages it is built on the sigaction
// above; a handler is installed by the real signal() so that siginterrupt's choice still holds.
static void (*signal_of(int sig, void (*handler)(int)))(int);
void (*nd_signal(int sig, void (*handler)(int)))(int) {
  __atomic_fetch_add(&nd_sig_changes, 1, __ATOMIC_RELEASE);
  void (*r)(int) = signal_of(sig, handler);
  int err = errno;
  if (r != SIG_ERR) handler_set(sig, handler);
  __atomic_fetch_add(&nd_sig_changes, 1, __ATOMIC_RELEASE);
  errno = err;
  return r;
}

static void (*signal_of(int sig, void (*handler)(int)))(int) {
  if (!managed(sig) || handler == SIG_ERR) {
    if (ND_UNLIKELY(!nd_real.signal)) nd_thread_prepare(&nd_tls);
    if (!nd_real.signal) return errno = ENOSYS, SIG_ERR;
    return nd_real.signal(sig, handler);
  }
  if (handler == SIG_DFL) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    if (nd_sigaction(sig, &sa, &old) != 0) return SIG_ERR;
    return old_handler(&old);
  }
  struct sigaction prev;
  if (nd_sigaction(sig, NULL, &prev) != 0) return SIG_ERR; // the program's view of the old one
  sigset_t mask;
  table_lock(&mask);
  void (*r)(int) = nd_real.signal(sig, handler);
  if (r != SIG_ERR) signals.owned[sig] = 0;
  int err = errno;
  table_unlock(&mask);
  errno = err;
  if (r == SIG_ERR) return SIG_ERR;
  return old_handler(&prev);
}

// The final trace, on this thread, if this is the process ndmem set up (not a vfork child) and
// it is still accounting.
static void last_words(int how, int code) {
  if (nd_os_getpid() != signals.pid || __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY) return;
  unsigned char m = nd_tls.mode;
  if (m == ND_T_INIT) return; // inside initialisation: nothing to write yet
  nd_finish(how, code);
}

static void fatal_handler(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int saved = errno;
  last_words(ND_EXIT_SIGNAL, sig);
  // The program's disposition is SIG_DFL (ndmem's handler only stands in for it): put it back.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  real_sigaction(sig, &dfl, NULL);
  if (sig < NSIGS) signals.owned[sig] = 0;
  // A fault (si_code > 0) of these four happens again when the instruction is retried on return,
  // now with the default action, and the core dump shows the real place. Anything else (kill,
  // raise, abort, int3, seccomp) is sent again to this thread: delivered once the handler returns.
  int fault = si && si->si_code > 0 && si->si_code != SI_KERNEL &&
              (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
  if (!fault) syscall(SYS_tgkill, (long)nd_os_getpid(), (long)nd_os_gettid(), (long)sig);
  errno = saved;
}

void nd_exit_now(int status) {
  last_words(ND_EXIT_UNDERSCORE, status);
  if (!nd_real.exit_) nd_thread_prepare(&nd_tls);
  if (nd_real.exit_) nd_real.exit_(status);
  for (;;) syscall(SYS_exit_group, (long)status);
}

// ---------------------------------------------------------------- the exit status

// exit() runs the handlers registered with atexit and on_exit, the latest first, and only then
// the loader's _dl_fini, which runs ndmem's destructor (init.c): the status is gone by then. A
// handler registered as main starts (after glibc registered _dl_fini, before the program registers
// any) is run with it by every exit of the process: exit() from any thread or library, a return
// from main. __libc_start_main is hooked for that moment alone: it starts the program's main
// through nd_main, which registers the handler (as ndmem's own: its allocation is not the
// program's) and calls main on, a tail call, so that main's caller is libc's as without ndmem.
int nd_exit_status = -1;
static nd_main_fn program_main;

static void keep_status(int status, void *arg) {
  (void)arg;
  __atomic_store_n(&nd_exit_status, status & 0xff, __ATOMIC_RELEASE); // what the parent gets
}

static int nd_main(int argc, char **argv, char **envp) {
  nd_tls_t *t = &nd_tls;
  if (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_READY && nd_accounting_on()) {
    unsigned char m = t->mode;
    t->mode = ND_T_BUSY;
    on_exit(keep_status, NULL);
    t->mode = m;
  }
  return program_main(argc, argv, envp);
}

int nd_start_main(nd_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                  void (*rtld_fini)(void), void *stack_end) {
  if (ND_UNLIKELY(!nd_real.start_main)) nd_thread_prepare(&nd_tls);
  nd_start_main_fn real = nd_real.start_main;
  if (!real) { // never resolved (the shim could not set up): found now, or the program cannot run
    real = (nd_start_main_fn)(uintptr_t)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) syscall(SYS_exit_group, 127);
  }
  program_main = main;
  return real(nd_main, argc, argv, init, fini, rtld_fini, stack_end);
}

// libunwind opens a pipe when it initialises (to validate memory through write(2)); it would be
// a pair of ndmem's descriptors in the program's low range. Its ends are moved out of that range
// (nd_os_fd_high) before libunwind stores them, and kept in libunwind's variables (a dup2 of the
// program's onto one moves it: common/os.h). sites.c initialises libunwind during ndmem's own
// start-up, while the process has one thread, so the soft descriptor limit may be raised for it.
int nd_pipe2(int *fds, int flags, void *ra) {
  if (ND_UNLIKELY(!nd_real.pipe2)) nd_thread_prepare(&nd_tls);
  int rc = nd_real.pipe2 ? nd_real.pipe2(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
  if (ND_UNLIKELY(rc == 0 && nd_unwinder_owns(ra))) {
    int early = __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_INITIALIZING;
    nd_os_fd_enter();
    fds[0] = nd_os_fd_high(fds[0], early);
    fds[1] = nd_os_fd_high(fds[1], early);
    if (nd_os_fd_in_range(fds[0]) || nd_os_fd_in_range(fds[1])) {
      // Not kept where the program's scans meet it (no room above its limit): libunwind's calls
      // on it go through ndmem's (stacks/unwind.c), which make a pipe for each validation; or,
      // where they could not be pointed there, none: its memory validation then finds nothing
      // readable (an unwind that needs it, through code without unwind information, stops there).
      syscall(SYS_close, fds[0]);
      syscall(SYS_close, fds[1]);
      if (nd_unwind_io_patched()) {
        fds[0] = fds[1] = ND_UNW_NO_PIPE;
      } else {
        fds[0] = fds[1] = -1;
        rc = -1;
        errno = EMFILE;
      }
    } else if (nd_unwinder_owns(fds)) { // the numbers live in libunwind's variables: kept there
      nd_os_fd_own(&fds[0]);
      nd_os_fd_own(&fds[1]);
    }
    nd_os_fd_leave();
  }
  return rc;
}

// A dup2 or dup3 of the program's is made while no read or write of ndmem's is under way, and
// one of ndmem's kept descriptors on its number is moved away first (common/os.h), so that the
// call does what it does without ndmem: the limit the program reads is its own, and where it leaves
// no room above it ndmem's descriptors are opened for each use in the program's range. Not in a
// vfork child: its descriptor table is its own, the owners' variables are its parent's.
static int real_dup2(int oldfd, int newfd) {
  if (nd_real.dup2) return nd_real.dup2(oldfd, newfd);
#ifdef SYS_dup2
  return (int)syscall(SYS_dup2, oldfd, newfd);
#else
  return oldfd == newfd ? (fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd)
                        : (int)syscall(SYS_dup3, oldfd, newfd, 0);
#endif
}

int nd_dup2(int oldfd, int newfd) {
  if (ND_UNLIKELY(!nd_real.dup2)) nd_thread_prepare(&nd_tls);
  if (oldfd == newfd || signals.pid != nd_os_getpid()) return real_dup2(oldfd, newfd);
  nd_os_fd_yield(newfd);
  int rc = real_dup2(oldfd, newfd), err = errno;
  nd_os_fd_yield_done();
  errno = err;
  return rc;
}

int nd_dup3(int oldfd, int newfd, int flags) {
  if (ND_UNLIKELY(!nd_real.dup3)) nd_thread_prepare(&nd_tls);
  if (oldfd != newfd && signals.pid == nd_os_getpid()) nd_os_fd_yield(newfd);
  else return nd_real.dup3 ? nd_real.dup3(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
  int rc = nd_real.dup3 ? nd_real.dup3(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
  int err = errno;
  nd_os_fd_yield_done();
  errno = err;
  return rc;
}

ND_MODULE(nd_exits_module) = {.name = "exits", .rank = 14, .order = 40, .setup = setup,
                              .atfork_child = atfork_child};
