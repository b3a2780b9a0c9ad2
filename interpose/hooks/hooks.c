// SPDX-License-Identifier: MIT
// hooks.c: every libc name libndmem.so exports, each a one-line forward into the module that
// decides (alloc.c, mmap.c). Nothing else in the library is visible: a test checks `nm -D`.
//
// _FILE_OFFSET_BITS=64 (Meson's default) makes <sys/mman.h> rename mmap to mmap64 by an asm
// label, so defining "mmap" here would define mmap64 twice. Both names are exported explicitly.
#undef _FILE_OFFSET_BITS
#include "runtime/shim.h"

#include "runtime/allocstat.h"
#include "runtime/keys.h"
#include "common/trace_format.h"
#include "threads/threads.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

// RA: the caller's return address, the call site a workspace learns allocations by.
#define RA __builtin_return_address(0)

ND_EXPORT void *malloc(size_t n) { return nd_malloc(n, RA); }
ND_EXPORT void free(void *p) { nd_free(p, NDMEM_FN_FREE); }
ND_EXPORT void *calloc(size_t n, size_t m) { return nd_calloc(n, m, RA); }
ND_EXPORT void *realloc(void *p, size_t n) { return nd_realloc(p, n, RA); }
ND_EXPORT void *reallocarray(void *p, size_t n, size_t m) { return nd_reallocarray(p, n, m, RA); }
ND_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  return nd_posix_memalign(out, align, n, RA);
}
ND_EXPORT void *aligned_alloc(size_t align, size_t n) { return nd_aligned_alloc(align, n, RA); }
ND_EXPORT void *memalign(size_t align, size_t n) { return nd_memalign(align, n, RA); }
ND_EXPORT void *valloc(size_t n) { return nd_valloc(n, RA); }
ND_EXPORT void *pvalloc(size_t n) { return nd_pvalloc(n, RA); }
ND_EXPORT size_t malloc_usable_size(void *p) { return nd_malloc_usable_size(p); }
// The program's malloc_trim goes on to the next one; glibc's gives back the pages inside free
// chunks, which it still counts free, and the allocator's account must say so (allocstat.c).
// Before ndmem has resolved it, nothing was trimmed (0, as when no memory could be released).
ND_EXPORT int malloc_trim(size_t pad) {
  int (*next)(size_t) = nd_real.trim_next;
  return next ? nd_allocstat_trim(next, pad, NULL) : 0;
}

#ifdef ND_HAVE_FREE_SIZED
// C23: the size and alignment are promises the program makes; free needs neither.
ND_EXPORT void free_sized(void *p, size_t n) {
  (void)n;
  nd_free(p, NDMEM_FN_FREE_SIZED);
}
ND_EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  (void)align, (void)n;
  nd_free(p, NDMEM_FN_FREE_ALIGNED_SIZED);
}
#endif

ND_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return nd_mmap(addr, len, prot, flags, fd, off, RA);
}
// Programs built with _FILE_OFFSET_BITS=64 call mmap64; on 64-bit systems it is the same call.
ND_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return nd_mmap(addr, len, prot, flags, fd, off, RA);
}
ND_EXPORT int munmap(void *addr, size_t len) { return nd_munmap(addr, len, RA); }
ND_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
  void *new_addr = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_addr = va_arg(ap, void *);
    va_end(ap);
  }
  return nd_mremap(old, old_len, new_len, flags, new_addr, RA);
}

// exits.c: how the process ends (a trace for _exit and fatal signals) and the dispositions the
// program sees.
ND_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return nd_sigaction(sig, act, old);
}
ND_EXPORT void (*signal(int sig, void (*handler)(int)))(int) { return nd_signal(sig, handler); }
ND_EXPORT void _exit(int status) { nd_exit_now(status); }
ND_EXPORT void _Exit(int status) { nd_exit_now(status); }
ND_EXPORT int pipe2(int fds[2], int flags) { return nd_pipe2(fds, flags, RA); }
// ndmem's descriptors yield to the program's dup2 and dup3 (exits.c).
ND_EXPORT int dup2(int oldfd, int newfd) { return nd_dup2(oldfd, newfd); }
ND_EXPORT int dup3(int oldfd, int newfd, int flags) { return nd_dup3(oldfd, newfd, flags); }
// The program's main starts through ndmem's, which keeps its exit status (exits.c).
int __libc_start_main(nd_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end);
ND_EXPORT int __libc_start_main(nd_main_fn main, int argc, char **argv, void (*init)(void),
                                void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
  return nd_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
}

// exec.c: an exec is recorded before it replaces the process (glibc's execl* and execvp reach
// execve inside libc, unseen: every member of the family is hooked).
ND_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  return nd_execve(path, argv, envp);
}
ND_EXPORT int execv(const char *path, char *const argv[]) { return nd_execv(path, argv); }
ND_EXPORT int execvp(const char *file, char *const argv[]) { return nd_execvp(file, argv); }
ND_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  return nd_execvpe(file, argv, envp);
}
ND_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  return nd_fexecve(fd, argv, envp);
}
ND_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags) {
  return nd_execveat(dirfd, path, argv, envp, flags);
}
#define EXECL(name, fn) \
  ND_EXPORT int name(const char *path, const char *arg, ...) { \
    va_list ap; \
    va_start(ap, arg); \
    int rc = nd_execl(fn, path, arg, ap); \
    va_end(ap); \
    return rc; \
  }
EXECL(execl, ND_EXEC_FN_EXECL)
EXECL(execle, ND_EXEC_FN_EXECLE)
EXECL(execlp, ND_EXEC_FN_EXECLP)

// keys.c: libunwind's key is ndmem's own, so that every key is the program's.
ND_EXPORT int pthread_key_create(pthread_key_t *key, void (*destructor)(void *)) {
  return nd_key_create(key, destructor, RA);
}
// glibc declares the value access(none): GCC then takes passing it on for reading it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
ND_EXPORT int pthread_setspecific(pthread_key_t key, const void *value) {
  return nd_setspecific(key, value);
}
#pragma GCC diagnostic pop

// threads.c: each thread's stack read as it starts, before the program's start routine.
ND_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                             void *arg) {
  return nd_thread_create(th, attr, fn, arg);
}

// threads.c: a thread joined or detached, whose stack glibc keeps for the next thread once it
// ends (the exit scan's ended threads).
ND_EXPORT int pthread_join(pthread_t th, void **ret) { return nd_thread_join(th, ret); }
ND_EXPORT int pthread_tryjoin_np(pthread_t th, void **ret) { return nd_thread_tryjoin(th, ret); }
ND_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime) {
  return nd_thread_timedjoin(th, ret, abstime);
}
ND_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clock,
                                   const struct timespec *abstime) {
  return nd_thread_clockjoin(th, ret, clock, abstime);
}
ND_EXPORT int pthread_detach(pthread_t th) { return nd_thread_detach(th); }

// C++ operator new and delete, every form of the C++17 library (alloc.c, nd_cxx_new: why). The
// nothrow_t and align_val_t arguments are passed as what they are at the ABI level.
#define NEW(name, form) \
  ND_EXPORT void *name(size_t n) { return nd_cxx_new(n, 0, form, RA); }
#define NEW_NT(name, form) \
  ND_EXPORT void *name(size_t n, const void *nt) { (void)nt; return nd_cxx_new(n, 0, form, RA); }
#define NEW_AL(name, form) \
  ND_EXPORT void *name(size_t n, size_t al) { return nd_cxx_new(n, al, form, RA); }
#define NEW_AL_NT(name, form) \
  ND_EXPORT void *name(size_t n, size_t al, const void *nt) { \
    (void)nt; \
    return nd_cxx_new(n, al, form, RA); \
  }
NEW(_Znwm, 0)
NEW(_Znam, ND_NEW_ARRAY)
NEW_NT(_ZnwmRKSt9nothrow_t, ND_NEW_NOTHROW)
NEW_NT(_ZnamRKSt9nothrow_t, ND_NEW_ARRAY | ND_NEW_NOTHROW)
NEW_AL(_ZnwmSt11align_val_t, ND_NEW_ALIGNED)
NEW_AL(_ZnamSt11align_val_t, ND_NEW_ARRAY | ND_NEW_ALIGNED)
NEW_AL_NT(_ZnwmSt11align_val_tRKSt9nothrow_t, ND_NEW_ALIGNED | ND_NEW_NOTHROW)
NEW_AL_NT(_ZnamSt11align_val_tRKSt9nothrow_t, ND_NEW_ARRAY | ND_NEW_ALIGNED | ND_NEW_NOTHROW)

#define U __attribute__((unused))
#define DEL(name, ...) \
  ND_EXPORT void name(void *p, ##__VA_ARGS__) { nd_free(p, NDMEM_FN_FREE); }
DEL(_ZdlPv)
DEL(_ZdaPv)
DEL(_ZdlPvm, size_t n U)
DEL(_ZdaPvm, size_t n U)
DEL(_ZdlPvSt11align_val_t, size_t al U)
DEL(_ZdaPvSt11align_val_t, size_t al U)
DEL(_ZdlPvmSt11align_val_t, size_t n U, size_t al U)
DEL(_ZdaPvmSt11align_val_t, size_t n U, size_t al U)
DEL(_ZdlPvRKSt9nothrow_t, const void *nt U)
DEL(_ZdaPvRKSt9nothrow_t, const void *nt U)
DEL(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t al U, const void *nt U)
DEL(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t al U, const void *nt U)
