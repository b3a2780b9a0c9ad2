// SPDX-License-Identifier: MIT
// t_exits: programs that end in every way a program ends, and that look at what ndmem could make
// visible to them. Run by t_exits.sh, which checks each trace and what the program saw.
//   t_exits segv|abort|_exit|sleep   allocate 3 x 100000 B (KEEP_LINE), print "pid N", then crash,
//                                    abort, _exit(3), or wait to be killed
//   t_exits forkexit                 a fork child allocates 200000 B (CHILD_LINE) and _exit(4)s
//   t_exits sigview                  the signal dispositions read as the program set them
//   t_exits fds                      lists the descriptors below sysconf(_SC_OPEN_MAX)
//   t_exits noeol                    writes "strawberry" to stderr, no newline
//   t_exits spawn DIR [WHERE]        runs `t_exits noeol` in DIR with its stderr on a pipe and
//                                    checks it reads exactly "strawberry" (having moved to WHERE)
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[3];

static void allocate(void) {
  for (int i = 0; i < 3; i++) keep[i] = malloc(100000); // KEEP_LINE
  for (int i = 0; i < 3; i++) memset(keep[i], i, 100000);
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
}

static int failures;
#define EXPECT(cond, ...)                                                                         \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                        \
      fprintf(stderr, __VA_ARGS__);                                                               \
      fputc('\n', stderr);                                                                        \
      failures++;                                                                                 \
    }                                                                                             \
  } while (0)

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 // what glibc adds on x86_64; read back by sigaction
#endif

static int caught;
static void on_signal(int sig) { caught = sig; }
static void on_siginfo(int sig, siginfo_t *si, void *uc) {
  (void)si, (void)uc;
  caught = sig;
}

// What a program reads back is what it set, and its own handlers run, whatever ndmem installed.
static int sigview(void) {
  static const int sigs[] = {SIGSEGV, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGBUS};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    memset(&old, 0xff, sizeof old);
    EXPECT(sigaction(sigs[i], NULL, &old) == 0, "sigaction query %d", sigs[i]);
    EXPECT(old.sa_handler == SIG_DFL, "signal %d does not read SIG_DFL", sigs[i]);
    EXPECT(old.sa_flags == 0, "signal %d reads flags %#x", sigs[i], (unsigned)old.sa_flags);
  }
  // signal(): the previous disposition, the program's handler runs, SIG_IGN ignores
  EXPECT(signal(SIGTERM, on_signal) == SIG_DFL, "signal() did not return SIG_DFL");
  raise(SIGTERM);
  EXPECT(caught == SIGTERM, "the program's SIGTERM handler did not run");
  EXPECT(signal(SIGTERM, SIG_IGN) == on_signal, "signal() did not return the handler");
  raise(SIGTERM); // ignored
  EXPECT(signal(SIGTERM, SIG_DFL) == SIG_IGN, "signal() did not return SIG_IGN");
  struct sigaction now;
  EXPECT(sigaction(SIGTERM, NULL, &now) == 0 && now.sa_handler == SIG_DFL &&
             (now.sa_flags & ~SA_RESTORER) == SA_RESTART && sigismember(&now.sa_mask, SIGTERM),
         "after signal(SIGTERM, SIG_DFL): flags %#x", (unsigned)now.sa_flags);
  // sigaction with flags and a mask: read back as set
  struct sigaction set, back;
  memset(&set, 0, sizeof set);
  set.sa_handler = SIG_DFL;
  set.sa_flags = SA_NODEFER | SA_RESETHAND;
  sigemptyset(&set.sa_mask);
  sigaddset(&set.sa_mask, SIGUSR1);
  EXPECT(sigaction(SIGHUP, &set, NULL) == 0, "sigaction set SIGHUP");
  EXPECT(sigaction(SIGHUP, NULL, &back) == 0 && back.sa_handler == SIG_DFL &&
             (back.sa_flags & (SA_NODEFER | SA_RESETHAND)) == (SA_NODEFER | SA_RESETHAND) &&
             sigismember(&back.sa_mask, SIGUSR1),
         "SIGHUP read back differently");
  // a SA_SIGINFO handler installed and read back
  set.sa_flags = SA_SIGINFO;
  set.sa_sigaction = on_siginfo;
  EXPECT(sigaction(SIGINT, &set, &back) == 0 && back.sa_handler == SIG_DFL, "SIGINT handler");
  raise(SIGINT);
  EXPECT(caught == SIGINT, "the program's SIGINT handler did not run");
  EXPECT(sigaction(SIGKILL, &set, NULL) == -1, "SIGKILL accepted a handler");
  return failures ? 1 : 0;
}

// Prints the descriptors in the program's range (below sysconf(_SC_OPEN_MAX)); t_exits.sh compares
// the list with the same run without ndmem (a test runner may pass descriptors of its own).
static int fds(void) {
  long max = sysconf(_SC_OPEN_MAX);
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 1;
  struct dirent *e;
  while ((e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d) || fd >= max) continue;
    printf("%d ", fd);
  }
  closedir(d);
  printf("below %ld\n", max);
  return 0;
}

static int spawn(const char *self, const char *dir) {
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    if (chdir(dir) != 0) _exit(126);
    execl(self, self, "noeol", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[4096];
  size_t len = 0;
  ssize_t n;
  while ((n = read(p[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
  buf[len] = 0;
  int st;
  waitpid(pid, &st, 0);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  EXPECT(strcmp(buf, "strawberry") == 0, "the child's stderr read \"%s\"", buf);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "segv")) {
    allocate();
    *(volatile int *)(uintptr_t)8 = 1;
  } else if (!strcmp(mode, "abort")) {
    allocate();
    abort();
  } else if (!strcmp(mode, "_exit")) {
    allocate();
    _exit(3);
  } else if (!strcmp(mode, "sleep")) {
    allocate();
    for (;;) pause();
  } else if (!strcmp(mode, "forkexit")) {
    pid_t pid = fork();
    if (pid == 0) {
      void *p = malloc(200000); // CHILD_LINE
      memset(p, 1, 200000);
      _exit(4);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 4 ? 0 : 1;
  } else if (!strcmp(mode, "sigview")) {
    return sigview();
  } else if (!strcmp(mode, "fds")) {
    return fds();
  } else if (!strcmp(mode, "noeol")) {
    fputs("strawberry", stderr);
    return 0;
  } else if (!strcmp(mode, "spawn") && argc > 2) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    if (argc > 3 && chdir(argv[3]) != 0) return 1; // the parent moves first: its trace stays
    return spawn(self, argv[2]);
  }
  fprintf(stderr, "usage: t_exits segv|abort|_exit|sleep|forkexit|sigview|fds|noeol|spawn DIR\n");
  return 2;
}
