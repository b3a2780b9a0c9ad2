// SPDX-License-Identifier: MIT
// exec.c: what an exec leaves. An exec replaces the process's image and nothing of ndmem's runs
// in that image after it, so before the exec is made the process's figures are flushed with an
// EXEC record: the program, and whether the shim follows it into the new image (its environment
// preloads the shim, the program is dynamically linked, of the shim's class and machine, not
// set-user-ID). Where the shim cannot follow, that record ends the process's trace, and the process
// the user started says so on stderr with its summary, which it would otherwise never print. A
// failed exec leaves the process as it was: errno as the exec set it, a second EXEC record with
// it, the trace going on.
//
// Which calls: glibc's execv, execl, execle, execlp, execvp, execvpe and fexecve reach the kernel
// through execve inside libc, not through the PLT, so each is hooked itself, as are execve and
// execveat. posix_spawn (and system and popen, built on it) is not: its child is a new process that
// runs none of the caller's code between its clone and its exec, and the caller's trace goes on. A
// vfork child shares its parent's memory, ndmem's state with it: its exec is only forwarded. So is
// an exec from a fork child that never allocated: it has no trace ("a fork that only execs leaves
// nothing", trace.c).
#include "runtime/shim.h"

#include "common/fmt.h"
#include "common/os.h"
#include "common/trace_format.h"
#include "runtime/module.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static struct {
  execve_fn execve, execvpe;
  execv_fn execv, execvp;
  fexecve_fn fexecve;
  execveat_fn execveat;
  pid_t pid; // the process ndmem set up (a vfork child has another pid and the same memory)
} ex;

#define FN(type, p) ((type)(uintptr_t)(p))
void nd_exec_resolve(void *(*sym)(const char *)) {
  ex.execve = FN(execve_fn, sym("execve"));
  ex.execv = FN(execv_fn, sym("execv"));
  ex.execvp = FN(execv_fn, sym("execvp"));
  ex.execvpe = FN(execve_fn, sym("execvpe"));
  ex.fexecve = FN(fexecve_fn, sym("fexecve"));
  ex.execveat = FN(execveat_fn, sym("execveat"));
}

// ---------------------------------------------------------------- does the shim follow it?

// The environment the new image starts with preloads the shim (the loader reads the first
// LD_PRELOAD, as getenv does).
static int env_preloads(char *const envp[]) {
  for (char *const *e = envp; e && *e; e++)
    if (!strncmp(*e, "LD_PRELOAD=", 11)) return strstr(*e + 11, "libndmem") != NULL;
  return 0;
}

#if defined(__x86_64__)
#define OWN_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define OWN_MACHINE EM_AARCH64
#endif
#define OWN_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

static int inspect_fd(int fd, int depth);

// A script: the interpreter its "#!" line names (the kernel follows up to 4 of them).
static int inspect_script(const unsigned char *h, size_t n, int depth) {
  size_t i = 2, j;
  while (i < n && (h[i] == ' ' || h[i] == '\t')) i++;
  for (j = i; j < n && h[j] != ' ' && h[j] != '\t' && h[j] != '\n' && h[j]; j++) {
  }
  if (j == i || j >= n || depth >= 4) return ND_EXEC_UNKNOWN;
  char interp[256];
  if (j - i >= sizeof interp) return ND_EXEC_UNKNOWN;
  memcpy(interp, h + i, j - i);
  interp[j - i] = 0;
  int fd = open(interp, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return ND_EXEC_UNKNOWN;
  int r = inspect_fd(fd, depth + 1);
  close(fd);
  return r;
}

// What the loader makes of the program in fd (enum nd_exec_follow), as far as its file tells:
// set-user-ID where that takes effect, a script's interpreter, an ELF's class and machine, and
// whether it names a loader (PT_INTERP; a static or static-pie program has none).
static int inspect_fd(int fd, int depth) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return ND_EXEC_UNKNOWN;
  struct statvfs vfs;
  if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
      ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
    if (fstatvfs(fd, &vfs) != 0 || !(vfs.f_flag & ST_NOSUID)) return ND_EXEC_SECURE;
  }
  unsigned char h[256];
  ssize_t n = pread(fd, h, sizeof h, 0);
  if (n >= 2 && h[0] == '#' && h[1] == '!') return inspect_script(h, (size_t)n, depth);
  if (n < (ssize_t)sizeof(ElfW(Ehdr)) || memcmp(h, ELFMAG, SELFMAG)) return ND_EXEC_UNKNOWN;
  if (h[EI_CLASS] != OWN_CLASS) return ND_EXEC_FOREIGN;
  ElfW(Ehdr) e;
  memcpy(&e, h, sizeof e);
#ifdef OWN_MACHINE
  if (e.e_machine != OWN_MACHINE) return ND_EXEC_FOREIGN;
#endif
  if (e.e_phentsize != sizeof(ElfW(Phdr)) || !e.e_phnum) return ND_EXEC_UNKNOWN;
  for (unsigned i = 0; i < e.e_phnum && i < 256; i++) {
    ElfW(Phdr) p;
    if (pread(fd, &p, sizeof p, (off_t)(e.e_phoff + (uint64_t)i * sizeof p)) != (ssize_t)sizeof p)
      return ND_EXEC_UNKNOWN;
    if (p.p_type == PT_INTERP) return ND_EXEC_FOLLOWED;
  }
  return ND_EXEC_STATIC;
}

// The program as the record names it: the file's own path where it could be opened (absolute,
// through /proc/self/fd), else as given. out holds ND_EXEC_PATH_MAX + 1.
static void name_of(int fd, const char *given, char *out) {
  ssize_t n = -1;
  if (fd >= 0) {
    char link[64];
    nd_os_proc_path(link, sizeof link, nd_os_getpid(), "fd", fd);
    n = readlink(link, out, ND_EXEC_PATH_MAX);
  }
  if (n <= 0 || out[0] != '/') {
    n = 0;
    while (given && given[n] && n < ND_EXEC_PATH_MAX) out[n] = given[n], n++;
  }
  out[n] = 0;
}

// execvp's file: itself where it has a '/', else the first regular, executable file of that name
// in PATH (glibc's search: the calling process's PATH, "/bin:/usr/bin" without one). out holds
// PATH_MAX; NULL when none is found.
static const char *search(const char *file, char *out, size_t cap) {
  if (!file || !*file) return NULL;
  if (strchr(file, '/')) return file;
  const char *path = getenv("PATH");
  if (!path) path = "/bin:/usr/bin";
  size_t fl = strlen(file);
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t dl = end ? (size_t)(end - p) : strlen(p);
    if (dl + 1 + fl + 1 <= cap) {
      size_t k = 0;
      if (dl) memcpy(out, p, dl), k = dl, out[k++] = '/';
      memcpy(out + k, file, fl + 1);
      struct stat st;
      if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return out;
    }
    if (!end) return NULL;
    p = end;
  }
}

// ---------------------------------------------------------------- recording

typedef struct exec_call {
  nd_rec_exec_t rec;
  char path[ND_EXEC_PATH_MAX + 1];
  sigset_t mask; // the program's, put back before the exec itself
  int on;        // recorded: a failure is recorded too
  int said;      // said on stderr with the summary: a failure is said too
} exec_call_t;

static int traced_here(void) {
  nd_tls_t *t = &nd_tls;
  return __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_READY && nd_accounting_on() &&
         (t->mode == ND_T_COUNT || t->mode == ND_T_NEW || t->mode == ND_T_FORKED) &&
         nd_os_getpid() == ex.pid;
}

// Before the exec: what it is (the program in fd, or at `given`; envp its environment), recorded
// with everything up to now, with no signal taken meanwhile (a handler's exit would wait for the
// flush this thread holds). fd: the program opened, or -1.
static void before(exec_call_t *c, int fn, int fd, const char *given, char *const envp[]) {
  c->on = 0;
  if (!traced_here()) return;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  int saved = errno;
  int follow = !env_preloads(envp) ? ND_EXEC_NO_PRELOAD : fd >= 0 ? inspect_fd(fd, 0) : ND_EXEC_UNKNOWN;
  name_of(fd, given, c->path);
  memset(&c->rec, 0, sizeof c->rec);
  c->rec.tid = (uint32_t)nd_os_gettid();
  c->rec.follow = (uint16_t)follow;
  c->rec.fn = (uint16_t)fn;
  c->rec.path_len = (uint32_t)strlen(c->path);
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &c->mask);
  c->rec.mono_ns = nd_os_mono_ns();
  nd_modules_exec(&c->rec, c->path);
  // Said where the exec will most likely be made: a program that could not even be opened (one
  // that does not exist) fails, and the process goes on without a word from ndmem.
  c->said = fd >= 0 && follow != ND_EXEC_FOLLOWED && follow != ND_EXEC_UNKNOWN && nd_prints_summary();
  if (c->said) nd_summary_exec(c->path, follow, 0);
  pthread_sigmask(SIG_SETMASK, &c->mask, NULL);
  c->on = 1;
  t->mode = mode;
  errno = saved;
}

// After an exec that returned (failed): the process goes on as it was, its trace too.
static int after(exec_call_t *c, int rc) {
  if (!c->on) return rc;
  int err = errno;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  c->rec.err = err ? err : EINVAL;
  c->rec.mono_ns = nd_os_mono_ns();
  nd_modules_exec(&c->rec, c->path);
  if (c->said) nd_summary_exec(c->path, c->rec.follow, err);
  pthread_sigmask(SIG_SETMASK, &c->mask, NULL);
  t->mode = mode;
  errno = err;
  return rc;
}

static int open_program(const char *path) {
  return path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;
}

static void close_program(int fd) {
  if (fd >= 0) close(fd);
}

// ---------------------------------------------------------------- the hooks

static int missing(void) {
  errno = ENOSYS;
  return -1;
}

// An exec by path (execve, execv; execl and execle build on these).
static int exec_path(int fn, const char *path, char *const argv[], char *const envp[]) {
  if (ND_UNLIKELY(!ex.execve)) nd_thread_prepare(&nd_tls);
  if (!ex.execve) return missing();
  exec_call_t c;
  c.on = 0;
  if (traced_here()) {
    int saved = errno, fd = open_program(path);
    before(&c, fn, fd, path, envp);
    close_program(fd);
    errno = saved;
  }
  return after(&c, ex.execve(path, argv, envp));
}

// An exec that searches PATH (execvp, execvpe; execlp builds on execvp).
static int exec_search(int fn, const char *file, char *const argv[], char *const envp[]) {
  if (ND_UNLIKELY(!ex.execvp)) nd_thread_prepare(&nd_tls);
  if (!ex.execvp || (fn == ND_EXEC_FN_EXECVPE && !ex.execvpe)) return missing();
  exec_call_t c;
  c.on = 0;
  if (traced_here()) {
    char found[4096];
    int saved = errno;
    const char *at = search(file, found, sizeof found);
    int fd = open_program(at);
    before(&c, fn, fd, at ? at : file, envp);
    close_program(fd);
    errno = saved;
  }
  int rc = fn == ND_EXEC_FN_EXECVPE ? ex.execvpe(file, argv, envp) : ex.execvp(file, argv);
  return after(&c, rc);
}

int nd_execve(const char *path, char *const argv[], char *const envp[]) {
  return exec_path(ND_EXEC_FN_EXECVE, path, argv, envp);
}

int nd_execv(const char *path, char *const argv[]) {
  return exec_path(ND_EXEC_FN_EXECV, path, argv, environ);
}

int nd_execvp(const char *file, char *const argv[]) {
  return exec_search(ND_EXEC_FN_EXECVP, file, argv, environ);
}

int nd_execvpe(const char *file, char *const argv[], char *const envp[]) {
  return exec_search(ND_EXEC_FN_EXECVPE, file, argv, envp);
}

int nd_fexecve(int fd, char *const argv[], char *const envp[]) {
  if (ND_UNLIKELY(!ex.fexecve)) nd_thread_prepare(&nd_tls);
  if (!ex.fexecve) return missing();
  exec_call_t c;
  c.on = 0;
  if (traced_here()) before(&c, ND_EXEC_FN_FEXECVE, fd, NULL, envp);
  return after(&c, ex.fexecve(fd, argv, envp));
}

int nd_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
  if (ND_UNLIKELY(!ex.execveat)) nd_thread_prepare(&nd_tls);
  if (!ex.execveat) return missing();
  exec_call_t c;
  c.on = 0;
  if (traced_here()) {
    int saved = errno, empty = path && !*path && (flags & AT_EMPTY_PATH);
    int fd = empty ? dirfd
             : path ? openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                                             (flags & AT_SYMLINK_NOFOLLOW ? O_NOFOLLOW : 0))
                    : -1;
    before(&c, ND_EXEC_FN_EXECVEAT, fd, path, envp);
    if (!empty) close_program(fd);
    errno = saved;
  }
  return after(&c, ex.execveat(dirfd, path, argv, envp, flags));
}

// execl, execle, execlp: the list as glibc builds it (its length counted first, on the stack).
int nd_execl(int fn, const char *path, const char *arg, va_list ap) {
  va_list count;
  va_copy(count, ap);
  size_t argc = 1;
  while (arg && va_arg(count, const char *)) argc++;
  va_end(count);
  if (argc >= 1u << 20) { // glibc's bound is INT_MAX; a stack array this long would not fit
    errno = E2BIG;
    return -1;
  }
  const char *argv[argc + 1];
  argv[0] = arg;
  for (size_t i = 1; i <= argc; i++) argv[i] = arg ? va_arg(ap, const char *) : NULL;
  argv[argc] = NULL;
  char *const *envp = fn == ND_EXEC_FN_EXECLE ? va_arg(ap, char *const *) : environ;
  if (fn == ND_EXEC_FN_EXECLP) return exec_search(fn, path, (char *const *)argv, environ);
  return exec_path(fn, path, (char *const *)argv, envp);
}

static void setup(char *const *envp) {
  (void)envp;
  ex.pid = nd_os_getpid();
}

static void atfork_child(nd_tls_t *t) {
  (void)t;
  ex.pid = nd_os_getpid();
}

ND_MODULE(nd_exec_module) = {.name = "exec", .rank = 14, .order = 45, .setup = setup,
                             .atfork_child = atfork_child};
