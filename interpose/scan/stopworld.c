// SPDX-License-Identifier: MIT
// stopworld.c: the program's other threads held still while the reachability scan reads
// (stopworld.h, reach.c).
//
// Each is sent a free real-time signal (rt_tgsigqueueinfo: the handler knows the request by its
// value) whose handler saves its registers and stack pointer and waits on a futex until it is
// let go, as the Boehm collector stops threads on Linux; ptrace, LeakSanitizer's way, needs a
// tracer process and is forbidden by many containers' seccomp profiles and by Yama. A thread
// caught inside one of ndmem's hooks (a block counted and not yet in the table) returns at once
// and is asked again until it is caught outside. A thread with every signal blocked never stops:
// seen blocking it while waiting in a system call twice, 10 ms apart, it is left (its stack
// pointer is the one the kernel shows). The handler stays installed after the scan: a thread
// that had the signal blocked takes it later and returns, where SIG_DFL would end the process.
// Nothing here allocates or takes a lock: raw system calls and one raw mapping.
#include "scan/stopworld.h"

#include "common/os.h"
#include "runtime/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_THREADS 65536

static struct {
  nd_thr_t *thr; // MAX_THREADS entries, one raw mapping (never unmapped: a late handler reads it)
  size_t nt;
  int sig;
  pid_t pid;
  uint64_t gen;      // the stop request (the handler ignores another's)
  uint32_t resumed;  // futex word: the request whose threads may go
  int active;
} stop;

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  syscall(SYS_nanosleep, &ts, NULL);
}

static void stop_handler(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  if (!si || si->si_code != SI_QUEUE || si->si_pid != stop.pid) return;
  uintptr_t v = (uintptr_t)si->si_value.sival_ptr;
  uint64_t gen = v >> 24;
  size_t idx = v & 0xffffff;
  if (!__atomic_load_n(&stop.active, __ATOMIC_ACQUIRE) || gen != stop.gen || idx >= stop.nt) return;
  int saved = errno;
  nd_thr_t *t = &stop.thr[idx];
  // Inside one of ndmem's hooks (between the allocator and the tables): not a moment to be
  // held at, with a block counted and not yet in the table; the scan asks again.
  if (nd_tls.mode == ND_T_BUSY) {
    __atomic_store_n(&t->state, ND_THR_BUSY, __ATOMIC_RELEASE);
    errno = saved;
    return;
  }
  ucontext_t *uc = ucv;
#if defined(__x86_64__)
  for (int i = 0; i < NGREG && i < ND_STOP_REGS; i++) t->regs[i] = (uint64_t)uc->uc_mcontext.gregs[i];
  t->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  // A pointer kept only in a vector register (a compiler's spill, memcpy's) is held too, as
  // LeakSanitizer holds it (memcheck reads none).
  if (uc->uc_mcontext.fpregs)
    memcpy(&t->regs[NGREG], uc->uc_mcontext.fpregs->_xmm, (ND_STOP_REGS - NGREG) * 8 < 256 ? (ND_STOP_REGS - NGREG) * 8 : 256);
#elif defined(__aarch64__)
  for (int i = 0; i < 31 && i < ND_STOP_REGS; i++) t->regs[i] = uc->uc_mcontext.regs[i];
  t->sp = (uintptr_t)uc->uc_mcontext.sp;
#else
  memcpy(t->regs, &uc->uc_mcontext, sizeof t->regs < sizeof uc->uc_mcontext ? sizeof t->regs
                                                                              : sizeof uc->uc_mcontext);
  t->sp = (uintptr_t)&uc; // this handler's frame: the stack above it is read
#endif
  t->tls = (uintptr_t)&nd_tls;
  __atomic_store_n(&t->state, ND_THR_HELD, __ATOMIC_RELEASE);
  for (;;) {
    uint32_t r = __atomic_load_n(&stop.resumed, __ATOMIC_ACQUIRE);
    if (r == (uint32_t)gen) break;
    syscall(SYS_futex, &stop.resumed, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
  }
  // Let go late (the scan waited 1 s for it and went on), this entry may already be a later
  // stop's: only this thread's own held state is changed, never another's or a fresh ask.
  int held = ND_THR_HELD;
  if (t->tid == (pid_t)nd_os_gettid())
    __atomic_compare_exchange_n(&t->state, &held, ND_THR_LET_GO, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
  errno = saved;
}

// A real-time signal nobody handles, from the top (glibc keeps the lowest for itself).
static int pick_signal(void) {
  for (int s = SIGRTMAX; s > SIGRTMAX - 8 && s > SIGRTMIN; s--) {
    struct sigaction old;
    if (nd_real.sigaction(s, NULL, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL : old.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = stop_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    if (nd_real.sigaction(s, &sa, NULL) == 0) return s;
  }
  return 0;
}

static int known(pid_t tid) {
  for (size_t i = 0; i < stop.nt; i++)
    if (stop.thr[i].tid == tid) return 1;
  return 0;
}

static int ask(size_t idx) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = stop.sig;
  si.si_code = SI_QUEUE;
  si.si_pid = stop.pid;
  si.si_uid = (uid_t)syscall(SYS_getuid);
  si.si_value.sival_ptr = (void *)(uintptr_t)(stop.gen << 24 | idx);
  return (int)syscall(SYS_rt_tgsigqueueinfo, stop.pid, stop.thr[idx].tid, stop.sig, &si);
}

struct asking {
  pid_t self;
  int added;
};

static int ask_one(void *ctx, long n) {
  struct asking *a = ctx;
  pid_t tid = (pid_t)n;
  if (tid == a->self || nd_os_is_own_thread(tid) || known(tid) || stop.nt >= MAX_THREADS) return 0;
  stop.thr[stop.nt] = (nd_thr_t){.tid = tid};
  __atomic_store_n(&stop.nt, stop.nt + 1, __ATOMIC_RELEASE);
  if (ask(stop.nt - 1) != 0) stop.thr[stop.nt - 1].state = ND_THR_GONE;
  a->added++;
  return 0;
}

// Asks every thread of the program's to stop; returns the number asked (new ones this round).
static int ask_all(pid_t self) {
  struct asking a = {self, 0};
  return nd_os_each_number("/proc/self/task", ask_one, &a) < 0 ? -1 : a.added;
}

// /proc/self/task/T/<leaf> into buf, NUL-terminated: its length, or 0.
static size_t task_file(pid_t tid, const char *leaf, char *buf, size_t cap) {
  char path[64];
  nd_os_proc_path(path, sizeof path - 16, stop.pid, "task", tid);
  size_t len = strlen(path);
  path[len] = '/';
  memcpy(path + len + 1, leaf, strlen(leaf) + 1);
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  long n = syscall(SYS_read, fd, buf, cap - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  return (size_t)n;
}

// Whether a thread blocks the stop signal: the SigBlk mask of /proc/self/task/T/status.
static int blocks_signal(pid_t tid) {
  char buf[2048];
  const char *c = task_file(tid, "status", buf, sizeof buf) ? strstr(buf, "SigBlk:") : NULL;
  if (!c) return 0;
  for (c += 7; *c == ' ' || *c == '\t'; c++) {
  }
  return (int)(nd_os_hex(&c) >> (stop.sig - 1) & 1);
}

void nd_stop_world(pid_t self) {
  stop.pid = nd_os_getpid();
  stop.gen++;
  stop.nt = 0;
  __atomic_store_n(&stop.active, 1, __ATOMIC_RELEASE);
  // A thread of ndmem's own that has not said its tid yet (a loaded machine has not run it since
  // it was made) would be taken for the program's and never stop: its start is waited for, 2 s
  // at the most.
  for (uint64_t until = nd_os_mono_ns() + 2000000000ull;
       nd_os_threads_starting() > 0 && nd_os_mono_ns() < until;)
    nap_us(100);
  for (int round = 0; round < 16 && ask_all(self) > 0; round++) {
  }
  uint64_t until = nd_os_mono_ns() + 500000000ull, check = 0;
  for (;;) {
    int waiting = 0;
    for (size_t i = 0; i < stop.nt; i++) {
      int st = __atomic_load_n(&stop.thr[i].state, __ATOMIC_ACQUIRE);
      if (st == ND_THR_BUSY) { // it was inside ndmem: asked again until it is caught outside
        __atomic_store_n(&stop.thr[i].state, ND_THR_ASKED, __ATOMIC_RELEASE);
        if (ask(i) != 0) stop.thr[i].state = ND_THR_GONE;
        st = stop.thr[i].state;
      }
      waiting += st == ND_THR_ASKED;
    }
    if (!waiting) break;
    uint64_t now = nd_os_mono_ns();
    if (now > until) break;
    if (now > check) { // gone meanwhile, or blocking the signal (it would never stop)?
      for (size_t i = 0; i < stop.nt; i++) {
        nd_thr_t *t = &stop.thr[i];
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != ND_THR_ASKED) continue;
        // Blocking the signal for good: seen blocking it while waiting in a system call twice,
        // 10 ms apart (a thread inside a handler or pthread_create blocks it for a moment).
        if (syscall(SYS_tgkill, stop.pid, t->tid, 0) != 0) t->state = ND_THR_GONE;
        else if (blocks_signal(t->tid) && nd_stop_waiting_sp(t->tid)) t->blocked++;
        else t->blocked = 0;
        if (t->blocked >= 2) t->state = ND_THR_BLOCKS;
      }
      check = now + 10000000;
    }
    nap_us(50);
  }
}

void nd_stop_let_go(void) {
  __atomic_store_n(&stop.active, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&stop.resumed, (uint32_t)stop.gen, __ATOMIC_RELEASE);
  syscall(SYS_futex, &stop.resumed, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
  uint64_t until = nd_os_mono_ns() + 1000000000ull;
  for (size_t i = 0; i < stop.nt; i++)
    while (__atomic_load_n(&stop.thr[i].state, __ATOMIC_ACQUIRE) == ND_THR_HELD &&
           nd_os_mono_ns() < until)
      nap_us(20);
}

// The stack pointer of a thread that did not stop, where it waits in a system call: the
// second-to-last field of /proc/self/task/T/syscall ("running": none).
uintptr_t nd_stop_waiting_sp(pid_t tid) {
  char buf[256];
  if (!task_file(tid, "syscall", buf, sizeof buf) || buf[0] < '0' || buf[0] > '9') return 0;
  char *f[10];
  int k = 0;
  for (char *c = buf; *c && k < 10;) {
    while (*c == ' ' || *c == '\n') c++;
    if (!*c) break;
    f[k++] = c;
    while (*c && *c != ' ' && *c != '\n') c++;
  }
  if (k < 3) return 0;
  const char *c = f[k - 2];
  return (uintptr_t)nd_os_hex(&c);
}

int nd_stop_setup(void) {
  if (!stop.thr) {
    void *p = (void *)syscall(SYS_mmap, NULL, MAX_THREADS * sizeof *stop.thr, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return -1;
    stop.thr = p;
  }
  if (!stop.sig && nd_real.sigaction) stop.sig = pick_signal();
  return stop.sig ? 0 : -2;
}

nd_thr_t *nd_stop_threads(size_t *n) {
  *n = stop.nt;
  return stop.thr;
}

void nd_stop_table(uintptr_t *lo, uintptr_t *hi) {
  *lo = (uintptr_t)stop.thr;
  *hi = stop.thr ? (uintptr_t)stop.thr + MAX_THREADS * sizeof *stop.thr : 0;
}
