// SPDX-License-Identifier: MIT
// os.h: the few kernel services ndmem's own code uses, as raw system calls.
// Nothing here goes through the hooked libc functions or allocates, so it is safe on every hook
// path, inside fork handlers and before the shim is initialised (jemalloc's malloc_io habit).
#ifndef ND_OS_H
#define ND_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void *nd_os_map(size_t size);                   // anonymous RW pages, or NULL; never the hooked mmap
void nd_os_unmap(void *p, size_t size);
// The first `size` bytes of the file open on fd, mapped read-only and shared (a mapping names its
// file in /proc/PID/maps without holding a descriptor), or NULL; nd_os_unmap gives it back.
void *nd_os_map_file(int fd, size_t size);
// The same in the shape of an allocator with a context (the workspace engine's ws_mem_t): size 0
// maps a page, unmapping NULL does nothing.
void *nd_os_map_ctx(void *ctx, size_t size);
void nd_os_unmap_ctx(void *ctx, void *p, size_t size);
// ndmem's own mappings (nd_os_map's, less what nd_os_unmap took back): *n [lo, hi) ranges, in no
// order. *busy: a thread was changing the table (read it again once it is done); *lost: some did
// not fit in it (not all of ndmem's memory is known). For the reachability scan (reach.c).
const uintptr_t (*nd_os_own(size_t *n, int *busy, int *lost))[2];
// The resident bytes of ndmem's own mappings (mincore over the table above), or -1 when the table
// is being changed (a thread inside nd_os_map: the caller may be a signal handler that
// interrupted it) or not all of it is known. errno kept.
int64_t nd_os_own_resident(void);
// Resident pages of [lo, hi) (page-aligned) by mincore, in bytes; -1 when it cannot be read.
int64_t nd_os_resident_in(uintptr_t lo, uintptr_t hi);
// Gives the pages of [p, p + size) back (page-aligned p): the range stays mapped and reads as
// zeros from then on, so a lock-free reader still holding it reads zeros, never a fault.
void nd_os_release(void *p, size_t size);
void nd_os_write_all(int fd, const char *s, size_t n); // best effort, retries on EINTR/short writes
pid_t nd_os_gettid(void);
pid_t nd_os_getpid(void);
size_t nd_os_page_size(void);
uint64_t nd_os_phys_bytes(void);               // physical RAM in bytes (sysinfo), 0 if unknown
uint64_t nd_os_mono_ns(void);                  // CLOCK_MONOTONIC in nanoseconds
uint64_t nd_os_thread_cpu_ns(void);            // the calling thread's CPU time (0: none)
// When this process was created (by fork or clone; exec keeps it), on the CLOCK_MONOTONIC time
// base, rounded down to the kernel's clock tick; 0 when /proc/self/stat cannot be read.
uint64_t nd_os_process_start_mono_ns(void);
void nd_os_sleep_ms(int64_t ms);               // the whole interval, through EINTR

// Starts fn on a background thread of ndmem's own, once: *started goes from 0 to 1 first (a
// second caller returns 1). Detached, 256 KiB of stack, every signal blocked (the program's
// handlers never run on it). 0, or -1 when the thread could not be created (*started stays 1).
int nd_os_thread_once(int *started, void *(*fn)(void *));
// ndmem's threads running now (atomic; a fork child has none: nd_os_threads_atfork_child).
extern int nd_os_threads;
int nd_os_is_own_thread(pid_t tid); // tid is one of those threads (started since the last fork)
void nd_os_threads_atfork_child(void);
// ndmem's threads created that have not yet said their tid (nd_os_is_own_thread cannot know them).
int nd_os_threads_starting(void);

// The spinlock of ndmem's rare paths (registries, tables): no allocation, fork-safe to reset by
// storing 0, and yields rather than spins hot since its holder may be descheduled.
void nd_spin_lock(int *l);
static inline void nd_spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }
// The same for the two pthread mutexes (trace writer, mmap table).
void nd_os_mutex_lock(void *m); // a pthread_mutex_t
// A thread that writes the final trace from a fatal signal handler or _exit may have interrupted
// itself inside a lock: while nd_os_last_words is set on it, nd_spin_lock and nd_os_mutex_lock
// wait at most ND_OS_LOCK_PATIENCE_NS for a lock and then go on without it (the process is about
// to end; a lock held by another thread is released within that time, one held by this thread
// never would be).
extern __thread int nd_os_last_words __attribute__((tls_model("initial-exec")));
#define ND_OS_LOCK_PATIENCE_NS 300000000ull
// The same, for a lock whose holder counts its work in *progress: the patience starts again
// each time the count moves (a holder that works is not stuck, and a flush of a million sites
// takes longer than the patience), up to ND_OS_PROGRESS_MAX_NS in all. A holder stuck on a lock
// of this thread's stops counting and is given up on as before.
void nd_os_mutex_lock_working(void *m, const uint64_t *progress);
#define ND_OS_PROGRESS_MAX_NS 30000000000ull

// Moves fd out of the range programs manage (they close, scan or dup2 over the low numbers; a
// child's fd scan up to sysconf(_SC_OPEN_MAX) must not see ndmem): to the highest free slot at
// most ND_OS_FD_ROOM above the soft RLIMIT_NOFILE. With `raise_ok` (only while no other thread
// can read or change the limit: at start-up) the soft limit is raised for the dup and restored.
// Where the hard limit leaves no room above (or later), the fd goes to the top ND_OS_FD_RESERVE
// slots below the limit: the limit the program reads stays its own, a dup2/dup3 of the
// program's onto one of them moves ndmem's away first (nd_os_fd_yield), and its owner keeps it
// no longer than one use (nd_os_fd_in_range). Close-on-exec. Returns the new descriptor (fd
// itself when it could not be moved).
#define ND_OS_FD_RESERVE 16
#define ND_OS_FD_ROOM 4096 // how far above the soft limit (at most) ndmem's descriptors go
int nd_os_fd_high(int fd, int raise_ok);
// ndmem's descriptors: every read or write of ndmem's on one (a kept one, or a file opened for one
// use) is made between nd_os_fd_enter and nd_os_fd_leave, and a kept one lives in its owner's
// variable (registered once, by its address: nd_os_fd_own), read after entering.
// nd_os_fd_yield(fd) and nd_os_fd_yield_done() bracket a dup2 or dup3 of the program's onto fd:
// the first waits until no I/O of ndmem's is under way, keeps new I/O out until the second, and
// moves a kept descriptor on fd to a free slot (its owner's variable updated; -1 where none is
// free) and closes fd, so the program's call does what it does without ndmem.
// nd_os_fd_now(fd): for a number a kept descriptor was moved from, where it is now (a copy of
// the number kept elsewhere: libunwind's), else fd.
// Whether fd lies in the range the program manages (below its soft RLIMIT_NOFILE): a scan of its
// descriptors up to sysconf(_SC_OPEN_MAX) meets it. ndmem keeps none there between its uses (no
// room above the limit): it opens the file for each use and closes it after.
int nd_os_fd_in_range(int fd);
void nd_os_fd_own(int *owner);
void nd_os_fd_enter(void);
void nd_os_fd_leave(void);
void nd_os_fd_yield(int fd);
void nd_os_fd_yield_done(void);
int nd_os_fd_now(int fd);
void nd_os_fd_atfork_child(void); // the parent's other threads' I/O is not the child's
// Whether output written to fd next starts a line: a regular file that is empty or ends in '\n'.
// Anything else (a terminal, a pipe) cannot be known: 0.
int nd_os_at_line_start(int fd);
// "/proc/PID/LEAF", or "/proc/PID/LEAF/N" when n >= 0, into out (64 bytes hold any of ndmem's).
void nd_os_proc_path(char *out, size_t cap, pid_t pid, const char *leaf, long n);
// Calls fn(ctx, n) for each entry of the folder at path whose name is a decimal number (a /proc
// listing: tasks, descriptors), without allocating (getdents64 into a stack buffer). fn returns
// nonzero to stop. 0, or -1 when the folder cannot be opened.
int nd_os_each_number(const char *path, int (*fn)(void *ctx, long n), void *ctx);
// The hexadecimal number at *s (an optional 0x first), *s moved past it: /proc's addresses
// and masks.
uint64_t nd_os_hex(const char **s);
// Whether fd is open on the file (dev, ino) it was opened on; a program that closes every
// descriptor may have closed ndmem's and reused the number. errno is kept.
int nd_os_same_file(int fd, dev_t dev, ino_t ino);

#endif
