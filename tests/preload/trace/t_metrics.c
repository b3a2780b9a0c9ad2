// SPDX-License-Identifier: MIT
// t_metrics: a program t_metrics.py runs under the shim with NDMEM_METRICS set. It moves through
// phases the driver paces over stdin, saying each on stdout, so the driver reads the metrics file
// while it runs: "0" (baseline), "1 N BYTES" (N heap blocks live, BYTES their usable sizes),
// "2" (all freed). With the argument "fork" it forks a child that allocates, waits for it, and
// ends. Only read(2)/write(2) for I/O: stdio's buffers would be heap blocks of their
// own between the driver's readings.
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 10
#define SIZE 40000 // tracked exactly (>= 8 KiB), below the workspace minimum and mmap threshold

static void say(const char *s) {
  size_t n = strlen(s);
  if (write(1, s, n) != (ssize_t)n) _exit(3);
}

static void wait_line(void) {
  char c;
  for (;;) {
    ssize_t r = read(0, &c, 1);
    if (r <= 0 || c == '\n') return;
  }
}

static void say_u(unsigned long v) {
  char buf[32];
  int i = sizeof buf;
  buf[--i] = 0;
  do buf[--i] = (char)('0' + v % 10); while ((v /= 10) && i);
  say(buf + i);
}

static int forking(void) {
  void *a = malloc(20000);
  usleep(200000); // flushes in the parent
  pid_t c = fork();
  if (c == 0) {
    void *b = malloc(30000); // the child's first allocation: its own accounting begins
    usleep(200000);
    free(b);
    _exit(0);
  }
  if (c < 0 || waitpid(c, NULL, 0) != c) return 2;
  free(a);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "fork")) return forking();
  void *warm = malloc(16384); // a tracked block starts the trace's writer thread
  free(warm);
  say("0\n");
  wait_line();
  void *p[N];
  unsigned long usable = 0;
  for (int i = 0; i < N; i++) {
    p[i] = malloc(SIZE);
    if (!p[i]) return 2;
    memset(p[i], i, SIZE);
    usable += malloc_usable_size(p[i]);
  }
  say("1 ");
  say_u(N);
  say(" ");
  say_u(usable);
  say("\n");
  wait_line();
  for (int i = 0; i < N; i++) free(p[i]);
  say("2\n");
  wait_line();
  return 0;
}
