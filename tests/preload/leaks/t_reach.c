// SPDX-License-Identifier: MIT
// t_reach: blocks whose reachability at exit is known, one case per argument (t_reach.sh checks
// the classes ndmem's scan gives them, as memcheck gives them):
//   global    a block only a global points to: still reachable
//   lose      a block nothing points to (definitely lost, 64 B, line LOST) and its child
//             (indirectly lost, 100 B, line CHILD)
//   interior  a block only a pointer into its middle reaches: possibly lost (300 B)
//   cycle     two blocks pointing at each other and nothing else: one definitely lost, one
//             indirectly lost (48 B each)
//   register  another thread holds the only pointer in a register while main exits: reachable
//   stack     another thread, blocked in read(2), holds it in a local: reachable
//   tls       another thread holds it in a __thread variable: reachable
//   deep      exit() from a nested call while main's own local holds it: reachable
//   fork      a fork child loses a block of its own (definitely lost, 72 B) and ends in _exit;
//             the parent's block it inherited is its parent's
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct node {
  struct node *next;
  char pad[40];
};

void *volatile keep_global;
static char *volatile interior;
static volatile int started;
static int pipefd[2];

__attribute__((noinline)) static void scrub(void) { // the dead frames below main: no stale copies
  volatile char buf[8192];
  memset((char *)buf, 0, sizeof buf);
}

__attribute__((noinline)) static void lose(void) {
  void **parent = malloc(64); // LOST
  parent[0] = malloc(100);    // CHILD
  memset(parent[0], 1, 100);
  parent[1] = NULL;
  __asm__ volatile("" : : "r"(parent) : "memory");
}

__attribute__((noinline)) static void cycle(void) {
  struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  a->next = b;
  b->next = a;
  __asm__ volatile("" : : "r"(a) : "memory");
}

static void *hold_in_register(void *arg) {
  (void)arg;
#if defined(__x86_64__)
  register void *p __asm__("r12") = malloc(4096);
  started = 1;
  for (;;) __asm__ volatile("" : "+r"(p));
#else
  void *volatile p = malloc(4096);
  started = 1;
  for (;;) pause();
#endif
  return NULL;
}

static void *hold_on_stack(void *arg) {
  (void)arg;
  void *volatile p = malloc(8192);
  started = 1;
  char c;
  while (read(pipefd[0], &c, 1) < 0) {
  }
  return (void *)p;
}

static __thread void *tls_block;
static void *hold_in_tls(void *arg) {
  (void)arg;
  tls_block = malloc(2048);
  started = 1;
  for (;;) pause();
  return NULL;
}

__attribute__((noinline)) static void deep(int n) {
  if (n) deep(n - 1);
  else exit(0);
}

static void start(void *(*fn)(void *)) {
  pthread_t th;
  pthread_create(&th, NULL, fn, NULL);
  while (!started) usleep(1000);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "global")) keep_global = malloc(1000);
  if (!strcmp(c, "lose")) lose();
  if (!strcmp(c, "interior")) interior = (char *)malloc(300) + 16;
  if (!strcmp(c, "cycle")) cycle();
  if (!strcmp(c, "register")) start(hold_in_register);
  if (!strcmp(c, "stack")) {
    if (pipe(pipefd)) return 1;
    start(hold_on_stack);
  }
  if (!strcmp(c, "tls")) start(hold_in_tls);
  if (!strcmp(c, "deep")) {
    void *volatile mine = malloc(512);
    deep(8);
    return mine != NULL;
  }
  if (!strcmp(c, "fork")) {
    keep_global = malloc(1000);
    pid_t pid = fork();
    if (pid == 0) {
      void *volatile lost = malloc(72);
      lost = NULL;
      scrub();
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
  }
  scrub();
  return 0;
}
