// SPDX-License-Identifier: MIT
// os.c: raw system calls for ndmem's own needs (see os.h). errno is preserved by every function
// here: they run inside the program's malloc/mmap calls, whose errno contract must stay exact.
#include "os.h"

#include "fmt.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------- ndmem's own mappings
//
// Every mapping nd_os_map made and nd_os_unmap has not taken back, as [lo, hi) ranges, so that
// the reachability scan at exit (reach.c) never reads ndmem's tables as the program's memory: the
// live-block table holds the address of every block, and read as a root it would make them all
// reachable. Adjacent ranges are joined (the kernel hands out new mappings next to the last);
// an unmap trims or splits the range holding it. The table is its own mapping, entry 0 (never
// released). Updates take a spinlock; the scan reads it with every other thread stopped, and an
// update caught half-done (reach.c checks own_lock first) is waited out by stopping again.
#define OWN_CAP 65536
static struct {
  int lock;
  uint32_t n;
  int lost; // a range that did not fit: the scan cannot know all of ndmem's memory
  uintptr_t (*v)[2];
} own;

static void *raw_map(size_t size) {
  void *p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void own_add(uintptr_t lo, uintptr_t hi) {
  nd_spin_lock(&own.lock);
  if (!own.v) {
    own.v = raw_map(OWN_CAP * sizeof *own.v);
    if (!own.v) {
      own.lost = 1;
      nd_spin_unlock(&own.lock);
      return;
    }
    own.v[0][0] = (uintptr_t)own.v;
    own.v[0][1] = (uintptr_t)own.v + OWN_CAP * sizeof *own.v;
    __atomic_store_n(&own.n, 1, __ATOMIC_RELEASE);
  }
  // The last few entries: where the kernel put the mappings made just before.
  for (uint32_t i = own.n > 8 ? own.n - 8 : 1; i < own.n; i++) {
    if (own.v[i][0] == hi) {
      own.v[i][0] = lo;
      goto out;
    }
    if (own.v[i][1] == lo) {
      own.v[i][1] = hi;
      goto out;
    }
  }
  if (own.n == OWN_CAP) {
    own.lost = 1;
  } else {
    own.v[own.n][0] = lo;
    own.v[own.n][1] = hi;
    __atomic_store_n(&own.n, own.n + 1, __ATOMIC_RELEASE); // the entry before the count
  }
out:
  nd_spin_unlock(&own.lock);
}

static void own_remove(uintptr_t lo, uintptr_t hi) {
  nd_spin_lock(&own.lock);
  for (uint32_t i = 1; i < own.n; i++) {
    uintptr_t a = own.v[i][0], b = own.v[i][1];
    if (lo >= b || hi <= a) continue;
    if (lo <= a && hi >= b) { // whole: the last entry takes its place
      own.v[i][0] = own.v[own.n - 1][0];
      own.v[i][1] = own.v[own.n - 1][1];
      __atomic_store_n(&own.n, own.n - 1, __ATOMIC_RELEASE);
      i--;
    } else if (lo <= a) {
      own.v[i][0] = hi;
    } else if (hi >= b) {
      own.v[i][1] = lo;
    } else if (own.n < OWN_CAP) { // the middle: split
      own.v[own.n][0] = hi;
      own.v[own.n][1] = b;
      own.v[i][1] = lo;
      __atomic_store_n(&own.n, own.n + 1, __ATOMIC_RELEASE);
    } else {
      own.v[i][1] = lo; // the upper part is forgotten: the scan may read it as a root
    }
  }
  nd_spin_unlock(&own.lock);
}

static size_t page_round(size_t size) {
  size_t pg = nd_os_page_size();
  return (size + pg - 1) & ~(pg - 1);
}

void *nd_os_map(size_t size) {
  int saved = errno;
  void *p = raw_map(size);
  if (p) own_add((uintptr_t)p, (uintptr_t)p + page_round(size));
  errno = saved;
  return p;
}

void *nd_os_map_file(int fd, size_t size) {
  int saved = errno;
  void *p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) p = NULL;
  if (p) own_add((uintptr_t)p, (uintptr_t)p + page_round(size));
  errno = saved;
  return p;
}

void nd_os_unmap(void *p, size_t size) {
  int saved = errno;
  own_remove((uintptr_t)p, (uintptr_t)p + page_round(size));
  syscall(SYS_munmap, p, size);
  errno = saved;
}

void *nd_os_map_ctx(void *ctx, size_t size) {
  (void)ctx;
  return nd_os_map(size ? size : 1);
}

void nd_os_unmap_ctx(void *ctx, void *p, size_t size) {
  (void)ctx;
  if (p) nd_os_unmap(p, size ? size : 1);
}

const uintptr_t (*nd_os_own(size_t *n, int *busy, int *lost))[2] {
  *busy = __atomic_load_n(&own.lock, __ATOMIC_ACQUIRE) != 0;
  *lost = own.lost;
  *n = __atomic_load_n(&own.n, __ATOMIC_ACQUIRE);
  return (const uintptr_t(*)[2])own.v;
}

int64_t nd_os_resident_in(uintptr_t lo, uintptr_t hi) {
  size_t page = nd_os_page_size();
  unsigned char vec[4096];
  int64_t resident = 0;
  for (uintptr_t a = lo; a < hi;) {
    size_t pages = (hi - a + page - 1) / page;
    if (pages > sizeof vec) pages = sizeof vec;
    if (syscall(SYS_mincore, a, pages * page, vec) != 0) return -1;
    for (size_t k = 0; k < pages; k++) resident += vec[k] & 1;
    a += pages * page;
  }
  return resident * (int64_t)page;
}

int64_t nd_os_own_resident(void) {
  int expect = 0, saved = errno;
  // Taken only when free: a signal handler's flush may have interrupted an update.
  if (!__atomic_compare_exchange_n(&own.lock, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return -1;
  int64_t sum = own.lost ? -1 : 0;
  for (uint32_t i = 0; sum >= 0 && i < own.n; i++) {
    int64_t r = nd_os_resident_in(own.v[i][0], own.v[i][1]);
    sum = r < 0 ? -1 : sum + r;
  }
  nd_spin_unlock(&own.lock);
  errno = saved;
  return sum;
}

void nd_os_release(void *p, size_t size) {
  int saved = errno;
  syscall(SYS_madvise, p, size, MADV_DONTNEED);
  errno = saved;
}

// A write to a pipe whose reader is gone raises SIGPIPE: ndmem's own lines must not end (or, with
// ndmem's fatal-signal handler, re-enter) the program. SIGPIPE is blocked for the write and one
// it raised is taken back off the thread before the mask is restored.
void nd_os_write_all(int fd, const char *s, size_t n) {
  int saved = errno;
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigpending(&pending);
  int was_pending = sigismember(&pending, SIGPIPE);
  while (n > 0) {
    long w = syscall(SYS_write, fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;
    }
    s += w;
    n -= (size_t)w;
  }
  if (!was_pending && !sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = saved;
}

pid_t nd_os_gettid(void) { return (pid_t)syscall(SYS_gettid); }
pid_t nd_os_getpid(void) { return (pid_t)syscall(SYS_getpid); }

size_t nd_os_page_size(void) {
  static size_t page;
  if (!page) {
    long v = sysconf(_SC_PAGESIZE);
    page = v > 0 ? (size_t)v : 4096;
  }
  return page;
}

uint64_t nd_os_phys_bytes(void) {
  struct sysinfo si;
  int saved = errno;
  uint64_t r = 0;
  if (sysinfo(&si) == 0) r = (uint64_t)si.totalram * si.mem_unit;
  errno = saved;
  return r;
}

uint64_t nd_os_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t nd_os_thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// /proc/self/stat's starttime (field 22, clock ticks since boot on CLOCK_BOOTTIME) moved to the
// monotonic clock by the two clocks' current difference (the time the machine was suspended).
uint64_t nd_os_process_start_mono_ns(void) {
  int saved = errno;
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  long tick = sysconf(_SC_CLK_TCK);
  errno = saved;
  if (n <= 0 || tick <= 0) return 0;
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); // the command name may hold spaces and parentheses
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  if (!p || p[1] < '0' || p[1] > '9') return 0;
  uint64_t ticks = 0;
  for (p++; *p >= '0' && *p <= '9'; p++) ticks = ticks * 10 + (uint64_t)(*p - '0');
  struct timespec mono, boot; // the later reading second: no suspension reads as a few ns, not < 0
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_BOOTTIME, &boot);
  int64_t suspended = ((int64_t)boot.tv_sec - (int64_t)mono.tv_sec) * 1000000000ll +
                      (int64_t)boot.tv_nsec - (int64_t)mono.tv_nsec;
  uint64_t start = ticks * (1000000000ull / (uint64_t)tick);
  if (suspended < 0) suspended = 0;
  return start > (uint64_t)suspended ? start - (uint64_t)suspended : 0;
}

void nd_os_sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  int saved = errno;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  errno = saved;
}

int nd_os_threads;

// Each start routine's slot (one per started flag: the trace writer, the limits poller).
#define OWN_MAX 8
static void *(*own_fns[OWN_MAX])(void *);
static int own_n;

static pid_t own_tids[OWN_MAX]; // each routine's thread, once it runs
static int own_starting;        // threads created that have not said their tid yet (atomic)

int nd_os_threads_starting(void) { return __atomic_load_n(&own_starting, __ATOMIC_ACQUIRE); }

int nd_os_is_own_thread(pid_t tid) {
  for (int i = 0; i < OWN_MAX; i++)
    if (__atomic_load_n(&own_tids[i], __ATOMIC_ACQUIRE) == tid) return 1;
  return 0;
}

// Counted while it runs its routine only: the count is never above the threads of ndmem's that
// the kernel sees (nd_exit_if_alone).

static void *own_thread(void *slot) {
  __atomic_store_n(&own_tids[(uintptr_t)slot], nd_os_gettid(), __ATOMIC_RELEASE);
  __atomic_fetch_sub(&own_starting, 1, __ATOMIC_ACQ_REL);
  __atomic_fetch_add(&nd_os_threads, 1, __ATOMIC_ACQ_REL);
  void *r = own_fns[(uintptr_t)slot](NULL);
  __atomic_fetch_sub(&nd_os_threads, 1, __ATOMIC_RELEASE);
  return r;
}

void nd_os_threads_atfork_child(void) {
  nd_os_threads = 0;
  own_starting = 0;
  own.lock = 0; // its holder is not in the child
  memset(own_tids, 0, sizeof own_tids);
}

int nd_os_thread_once(int *started, void *(*fn)(void *)) {
  int expect = 0;
  if (!__atomic_compare_exchange_n(started, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 1;
  int slot = 0; // the routine's slot: found (a fork child starts its writer again), or a new one
  while (slot < __atomic_load_n(&own_n, __ATOMIC_ACQUIRE) && own_fns[slot] != fn) slot++;
  if (slot == __atomic_load_n(&own_n, __ATOMIC_ACQUIRE)) {
    slot = __atomic_fetch_add(&own_n, 1, __ATOMIC_ACQ_REL);
    if (slot >= OWN_MAX) return -1;
    own_fns[slot] = fn;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); // the thread inherits a full mask
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t th;
  __atomic_store_n(&own_tids[slot], 0, __ATOMIC_RELEASE);
  __atomic_fetch_add(&own_starting, 1, __ATOMIC_ACQ_REL);
  int rc = pthread_create(&th, &attr, own_thread, (void *)(uintptr_t)slot) == 0 ? 0 : -1;
  if (rc != 0) __atomic_fetch_sub(&own_starting, 1, __ATOMIC_ACQ_REL);
  pthread_attr_destroy(&attr);
  // Until it has said its tid (first thing), the thread could be taken for the program's: the
  // exit scan (scan/stopworld.c), the one reader of own_tids, waits for it
  // (nd_os_threads_starting), so its creator, a program thread, does not.
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

__thread int nd_os_last_words __attribute__((tls_model("initial-exec")));

// Contended path only: the clock is read once the lock was found taken.
static int out_of_patience(uint64_t *deadline) {
  if (!nd_os_last_words) return 0;
  uint64_t now = nd_os_mono_ns();
  if (!*deadline) *deadline = now + ND_OS_LOCK_PATIENCE_NS;
  return now > *deadline;
}

void nd_spin_lock(int *l) {
  uint64_t deadline = 0;
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
    if (out_of_patience(&deadline)) return;
    sched_yield();
  }
}

void nd_os_mutex_lock(void *m) { nd_os_mutex_lock_working(m, NULL); }

void nd_os_mutex_lock_working(void *m, const uint64_t *progress) {
  if (!nd_os_last_words) {
    pthread_mutex_lock(m);
    return;
  }
  uint64_t deadline = 0, until = 0, seen = progress ? __atomic_load_n(progress, __ATOMIC_RELAXED) : 0;
  while (pthread_mutex_trylock(m) != 0) {
    if (progress && deadline) {
      uint64_t now = __atomic_load_n(progress, __ATOMIC_RELAXED);
      if (!until) until = nd_os_mono_ns() + ND_OS_PROGRESS_MAX_NS;
      if (now != seen && nd_os_mono_ns() < until) seen = now, deadline = 0; // still working
    }
    if (out_of_patience(&deadline)) return;
    sched_yield();
  }
}

// The highest free descriptor below `top` and at least `floor`, or -1 (the soft limit must allow
// top - 1).
static int free_below(int top, int floor) {
  for (int t = top - 1; t >= floor; t--)
    if (fcntl(t, F_GETFD) < 0 && errno == EBADF) return t;
  return -1;
}

// The soft RLIMIT_NOFILE as an int, or -1 (none, or beyond an int).
static int soft_nofile(struct rlimit *rl) {
  if (getrlimit(RLIMIT_NOFILE, rl) != 0 || rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur > INT32_MAX)
    return -1;
  return (int)rl->rlim_cur;
}

int nd_os_fd_high(int fd, int raise_ok) {
  if (fd < 0) return fd;
  int saved = errno, nfd = -1;
  struct rlimit rl;
  int cur = soft_nofile(&rl);
  if (cur < 0) {
    errno = saved;
    return fd;
  }
  if (raise_ok && (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur)) {
    // Above the soft limit, at the top of up to ND_OS_FD_ROOM slots the hard limit leaves: no scan
    // up to the limit sees it, and neither does a check of the numbers just above it (a program
    // that lowered its limit may have left descriptors there: CPython's
    // test_close_fds_when_max_fd_is_lowered looks for exactly those). The kernel's table grows
    // to the top, so the room is bounded (4096 slots: 32 KiB).
    rlim_t top = rl.rlim_cur + ND_OS_FD_ROOM;
    if (rl.rlim_max != RLIM_INFINITY && top > rl.rlim_max) top = rl.rlim_max;
    struct rlimit up = {top, rl.rlim_max};
    if (top <= INT32_MAX && setrlimit(RLIMIT_NOFILE, &up) == 0) {
      int t = free_below((int)top, cur);
      if (t >= 0) nfd = (int)syscall(SYS_dup3, fd, t, O_CLOEXEC);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  // Else the top ND_OS_FD_RESERVE slots below the limit, which the program reads unchanged (it
  // meets EMFILE that much earlier); a dup2 of its onto one of them moves ndmem's first
  // (nd_os_fd_yield).
  if (nfd < 0 && cur >= 256) {
    int t = free_below(cur, cur - ND_OS_FD_RESERVE);
    if (t >= 0) nfd = (int)syscall(SYS_dup3, fd, t, O_CLOEXEC);
    // the program holds them all (or moved ndmem's away): the lowest free above its fourfold
    if (nfd < 0 && fd < cur - 4 * ND_OS_FD_RESERVE)
      nfd = fcntl(fd, F_DUPFD_CLOEXEC, cur - 4 * ND_OS_FD_RESERVE);
  }
  if (nfd >= 0) {
    close(fd);
    fd = nfd;
  }
  errno = saved;
  return fd;
}

int nd_os_fd_in_range(int fd) {
  struct rlimit rl;
  int saved = errno, cur = soft_nofile(&rl);
  errno = saved;
  return fd >= 0 && (cur < 0 || fd < cur);
}

// ---------------------------------------------------------------- ndmem's kept descriptors
//
// The owners' variables, the number each held before its last move (+1; 0: none), ndmem's I/O
// on its descriptors under way (users), and a dup2 of the program's under way (moving). ndmem's
// users enter before they read their variable (or open a file for one use) and leave after their
// last call on it; a program's dup2 or dup3 waits until none is inside, keeps them out until its
// call is made (nd_os_fd_yield_done) and first moves a kept descriptor on the number it asked
// for, so no read or write of ndmem's ever reaches the descriptor the program puts there, and no
// descriptor ndmem opens meanwhile takes that number. One at a time (the table's lock). A thread
// inside (a signal handler of the program's that interrupted ndmem's I/O and calls dup2) cannot
// wait for itself: its call goes on (inside counts it).
#define KEPT_MAX 16
static struct {
  int lock;
  int *slot[KEPT_MAX];
  int was[KEPT_MAX];
  unsigned users, moving; // atomic
} kept;
static __thread unsigned kept_inside;
static __thread int kept_moving_here; // this thread is between nd_os_fd_yield and _done

// Registration takes a lock of its own, a leaf: its callers are inside (nd_os_fd_enter), and a
// move holds kept.lock while it waits for them to leave (the writer registering its trace at a
// flush while the program's dup2 waited for that flush stalled both for ND_OS_PROGRESS_MAX_NS:
// pytest's capture, 30 s). An owner registered already takes no lock at all.
static int kept_reg_lock;
void nd_os_fd_own(int *owner) {
  if (kept_moving_here) return; // (never: ndmem keeps no descriptor inside a program's dup2)
  for (int i = 0; i < KEPT_MAX; i++)
    if (__atomic_load_n(&kept.slot[i], __ATOMIC_ACQUIRE) == owner) return;
  while (__atomic_exchange_n(&kept_reg_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
  int free_at = -1;
  for (int i = 0; i < KEPT_MAX; i++) {
    if (kept.slot[i] == owner) free_at = -2, i = KEPT_MAX;
    else if (!kept.slot[i] && free_at == -1) free_at = i;
  }
  if (free_at >= 0) {
    __atomic_store_n(&kept.was[free_at], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&kept.slot[free_at], owner, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&kept_reg_lock, 0, __ATOMIC_RELEASE);
}

void nd_os_fd_enter(void) {
  if (kept_inside++ || kept_moving_here) { // never waits for a move that waits for it
    __atomic_add_fetch(&kept.users, 1, __ATOMIC_SEQ_CST);
    return;
  }
  for (;;) {
    __atomic_add_fetch(&kept.users, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&kept.moving, __ATOMIC_SEQ_CST)) return;
    __atomic_sub_fetch(&kept.users, 1, __ATOMIC_SEQ_CST);
    // (the last words of a process that a signal stopped inside a move do not wait for it)
    while (__atomic_load_n(&kept.moving, __ATOMIC_ACQUIRE) && !nd_os_last_words) sched_yield();
    if (nd_os_last_words) {
      __atomic_add_fetch(&kept.users, 1, __ATOMIC_SEQ_CST);
      return;
    }
  }
}

void nd_os_fd_atfork_child(void) {
  __atomic_store_n(&kept.users, kept_inside, __ATOMIC_RELAXED); // the forking thread's alone
  __atomic_store_n(&kept.moving, kept_moving_here ? 1 : 0, __ATOMIC_RELAXED);
  kept.lock = kept_moving_here ? 1 : 0;
  kept_reg_lock = 0;
}

void nd_os_fd_leave(void) {
  kept_inside--;
  __atomic_sub_fetch(&kept.users, 1, __ATOMIC_RELEASE);
}

int nd_os_fd_now(int fd) {
  for (int i = 0; fd >= 0 && i < KEPT_MAX; i++) {
    int *s = __atomic_load_n(&kept.slot[i], __ATOMIC_ACQUIRE);
    if (s && __atomic_load_n(&kept.was[i], __ATOMIC_ACQUIRE) == fd + 1)
      return __atomic_load_n(s, __ATOMIC_ACQUIRE);
  }
  return fd;
}

void nd_os_fd_yield(int fd) {
  if (kept_moving_here++) return; // a handler of this thread's inside its own dup2: nothing more
  struct rlimit rl;
  int saved = errno, cur = soft_nofile(&rl), moved = 0;
  while (__atomic_exchange_n(&kept.lock, 1, __ATOMIC_ACQUIRE)) sched_yield(); // one at a time
  __atomic_store_n(&kept.moving, 1, __ATOMIC_SEQ_CST);
  // ndmem's I/O ends (a flush of a million sites takes seconds): waited for, within bounds
  uint64_t until = nd_os_mono_ns() + ND_OS_PROGRESS_MAX_NS;
  while (__atomic_load_n(&kept.users, __ATOMIC_SEQ_CST) > kept_inside && nd_os_mono_ns() < until)
    sched_yield();
  for (int i = 0; fd >= 3 && i < KEPT_MAX; i++) { // (ndmem keeps none of 0, 1 and 2)
    if (!kept.slot[i] || __atomic_load_n(kept.slot[i], __ATOMIC_ACQUIRE) != fd) continue;
    // The lowest free slot of the reserve (never one the program holds), else none: its owner
    // opens it again where it can (the trace), or goes without.
    int floor = cur > 4 * ND_OS_FD_RESERVE ? cur - 4 * ND_OS_FD_RESERVE : 3;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    __atomic_store_n(kept.slot[i], nfd, __ATOMIC_RELEASE);
    __atomic_store_n(&kept.was[i], fd + 1, __ATOMIC_RELEASE);
    moved = 1;
  }
  if (moved) syscall(SYS_close, fd);
  errno = saved;
}

void nd_os_fd_yield_done(void) {
  if (--kept_moving_here) return;
  __atomic_store_n(&kept.moving, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&kept.lock, 0, __ATOMIC_RELEASE);
}

int nd_os_at_line_start(int fd) {
  int saved = errno, r = 0;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char c = 0;
    r = st.st_size == 0 || (pread(fd, &c, 1, st.st_size - 1) == 1 && c == '\n');
  }
  errno = saved;
  return r;
}

uint64_t nd_os_hex(const char **s) {
  const char *c = *s;
  if (c[0] == '0' && (c[1] | 32) == 'x') c += 2;
  uint64_t v = 0;
  for (;; c++) {
    unsigned d = *c >= '0' && *c <= '9' ? (unsigned)(*c - '0') : (unsigned)((*c | 32) - 'a') + 10;
    if (d > 15) break;
    v = v * 16 + d;
  }
  *s = c;
  return v;
}

int nd_os_each_number(const char *path, int (*fn)(void *ctx, long n), void *ctx) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  long got;
  int stop = 0;
  while (!stop && (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
    for (long off = 0; off < got && !stop;) {
      struct {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[];
      } *d = (void *)(buf + off);
      off += d->reclen;
      long n = 0;
      const char *c = d->name;
      if (*c < '0' || *c > '9') continue;
      while (*c >= '0' && *c <= '9') n = n * 10 + (*c++ - '0');
      stop = fn(ctx, n);
    }
  }
  syscall(SYS_close, fd);
  return 0;
}

void nd_os_proc_path(char *out, size_t cap, pid_t pid, const char *leaf, long n) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "/proc/%d/%s", (int)pid, leaf);
  if (n >= 0) nd_buf_fmt(&b, "/%ld", n);
  size_t k = b.len < cap ? b.len : cap - 1;
  memcpy(out, b.data, k);
  out[k] = 0;
}

int nd_os_same_file(int fd, dev_t dev, ino_t ino) {
  struct stat st;
  int saved = errno;
  int same = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
  errno = saved;
  return same;
}
