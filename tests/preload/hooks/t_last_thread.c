// SPDX-License-Identifier: MIT
// t_last_thread: a process whose last thread is not its main one ends as it would without ndmem.
// glibc calls exit(0) when the last thread of a process ends; ndmem's own threads (the trace
// writer) must not keep one alive, nor stop the program's atexit handlers from running.
//   t_last_thread             runs both cases below, each bounded (10 s), and checks them
//   t_last_thread main_exit   main starts a worker that allocates 1 MiB (tracked: the writer
//                             starts) and calls pthread_exit; the worker returns last. An atexit
//                             handler with 1 MiB of locals prints "atexit ran" (and whether
//                             SIGINT or SIGTERM was blocked where it ran).
// and in-process: a thread that has not allocated forks; the child allocates 1 MiB and returns
// from that thread, its only one (CPython's test_threading does this); the parent waits for its
// exit status 0. Under the shim, both processes leave a trace (NDMEM_OUTPUT with %p).
#include "../../check.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// Waits at most 10 s for pid; its status, or -1 (then killed) when it did not end.
static int wait_bounded(pid_t pid) {
  for (int i = 0; i < 1000; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return st;
    nap_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

// Run as glibc runs it after the last thread: on a full-size stack (1 MiB of locals here), with
// the program's signal mask (nothing blocked), not on a thread of ndmem's.
static void said(void) {
  volatile char big[1 << 20];
  memset((char *)big, 3, sizeof big);
  sigset_t m;
  pthread_sigmask(SIG_SETMASK, NULL, &m);
  printf("atexit ran%s\n", sigismember(&m, SIGINT) || sigismember(&m, SIGTERM) ? ", signals blocked" : "");
}

// Under the shim, the trace of process pid (NDMEM_OUTPUT's %p) was written.
static int traced(pid_t pid) {
  const char *pat = getenv("NDMEM_OUTPUT"), *pre = getenv("LD_PRELOAD");
  if (!pat || !pre || !strstr(pre, "libndmem")) return 1;
  char path[4096];
  const char *at = strstr(pat, "%p");
  if (!at) return 1;
  snprintf(path, sizeof path, "%.*s%d%s", (int)(at - pat), pat, (int)pid, at + 2);
  return access(path, R_OK) == 0;
}

static void *worker(void *arg) {
  (void)arg;
  sink = malloc(1 << 20);
  memset(sink, 1, 1 << 20);
  nap_ms(300); // main has long left by now
  free(sink);
  return NULL;
}

static int main_exit(void) {
  atexit(said);
  pthread_t th;
  if (pthread_create(&th, NULL, worker, NULL) != 0) return 2;
  pthread_exit(NULL);
}

static void *forker(void *arg) {
  (void)arg;
  pid_t pid = fork();
  if (pid == 0) {
    sink = malloc(1 << 20);
    memset(sink, 2, 1 << 20);
    free(sink);
    return NULL; // the child's only thread ends: glibc's exit(0)
  }
  int st = pid > 0 ? wait_bounded(pid) : -2;
  CHECK(st >= 0); // the fork child of a thread that returned ended within 10 s
  CHECK(st < 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
  // its forking thread had not allocated before the fork: the child's trace is made all the same
  CHECK(pid <= 0 || traced(pid));
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "main_exit")) return main_exit();
  int out[2];
  if (pipe(out) != 0) return 2;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execl("/proc/self/exe", argv[0], "main_exit", (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  int st = wait_bounded(pid);
  char buf[64] = "";
  ssize_t n = read(out[0], buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  close(out[0]);
  CHECK(st >= 0); // main_exit ended within 10 s of its last thread
  CHECK(st < 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
  CHECK_STR(buf, "atexit ran\n");
  CHECK(traced(pid));

  pthread_t th;
  if (pthread_create(&th, NULL, forker, NULL) != 0) return 2;
  pthread_join(th, NULL);
  return CHECK_DONE();
}
