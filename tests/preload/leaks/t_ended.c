// SPDX-License-Identifier: MIT
// t_ended: blocks whose truth at exit is known, where threads ended before it and memory was
// committed inside reservations; one case per argument (t_ended.py checks ndmem's classes of the
// blocks each END:<name> line allocates, and memcheck's where it tracks them: heap blocks):
//   stacks        8 threads each keep a block only in a local and end (joined): 8 lost
//   tls           a thread keeps a block in a __thread variable and ends: lost
//   tsd           a thread keeps a block as a thread-specific value (no destructor), ends: lost
//   retval        20 threads return a block each, and the joiner drops it: 20 lost
//   arg           20 threads are given a block each, keep it in a local and end: 20 lost
//   detached      a detached thread keeps a block in a local and ends: lost
//   reuse         a thread keeps a block in a local and ends (lost); the next one starts on its
//                 stack (glibc's cache) and keeps another in a local while main exits: reachable
//   live          a thread keeps a block in a local while main exits: reachable
//   starting      50 threads are each given a block, which each keeps in a local while it
//                 waits; main exits at once, whether or not they have started: all reachable
//                 (a thread not started yet has its argument only in ndmem's start record)
//   unjoined      a thread keeps a block in a local (lost) and returns another, and ends; main
//                 exits without joining it: a join could still take the second (reachable)
//   reserve       a 64 MiB PROT_NONE reservation (its base in a global), 1 MiB committed inside
//                 with MAP_FIXED: reachable
//   reserve_lost  the same with the base dropped: lost
//   fixed_inside  an 8 MiB mapping (its base in a global), 1 MiB mapped over its middle with
//                 MAP_FIXED: all three pieces reachable
//   filemap       a private writable file mapping holds the only pointer to a block: reachable
// Thread stacks are 64 KiB, so that glibc keeps every ended one for the next thread.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

void *volatile keep_global;
static pthread_attr_t attr;
static pthread_barrier_t barrier;
static pthread_key_t key_dtor, key_plain;
__thread void *tls_block; // not static: the compiler keeps the store
static int pipefd[2];
static volatile int started;
static volatile pid_t detached_tid;

__attribute__((noinline)) static void scrub(void) { // the dead frames below main: no stale copies
  volatile char buf[16384];
  memset((char *)buf, 0, sizeof buf);
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg) {
  if (pthread_create(t, &attr, fn, arg)) abort();
}

static void *stacks(void *arg) {
  void *volatile p = malloc(1000 + (size_t)arg); // END:stacks
  (void)p;
  pthread_barrier_wait(&barrier); // all 8 alive at once: 8 stacks
  return NULL;
}

static void dtor(void *v) { (void)v; }
static void *tls(void *arg) {
  tls_block = malloc(1337); // END:tls
  pthread_setspecific(key_dtor, (void *)1);
  return arg;
}

static void *tsd(void *arg) {
  pthread_setspecific(key_plain, malloc(1500)); // END:tsd
  return arg;
}

static void *retval(void *arg) {
  (void)arg;
  return malloc(100); // END:retval
}

static void *keep_arg(void *arg) {
  void *volatile p = arg;
  (void)p;
  return NULL;
}
__attribute__((noinline)) static void give(pthread_t *t) {
  start(t, keep_arg, calloc(1, 100)); // END:arg (zeroed: no stale pointer in it)
}

static void *detached(void *arg) {
  void *volatile p = malloc(700); // END:detached
  (void)p, (void)arg;
  detached_tid = (pid_t)syscall(SYS_gettid);
  return NULL;
}

static void *first(void *arg) {
  void *volatile p = malloc(600); // END:reuse_first
  (void)p;
  return arg;
}
static void *hold(void *arg) {
  void *volatile p = malloc((size_t)arg); // END:hold
  started = 1;
  char c;
  while (read(pipefd[0], &c, 1) < 0) {
  }
  return (void *)p;
}

static void *wait_with(void *arg) {
  void *volatile p = arg;
  char c;
  while (read(pipefd[0], &c, 1) < 0) {
  }
  return (void *)p;
}

static void *unjoined(void *arg) {
  void *volatile p = malloc(444); // END:unjoined_local
  (void)p, (void)arg;
  detached_tid = (pid_t)syscall(SYS_gettid);
  return malloc(333); // END:unjoined_result
}

static void *map(void *addr, size_t len, int prot, int flags) {
  void *p = mmap(addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) abort();
  return p;
}

__attribute__((noinline)) static void reserve(int keep) {
  char *base = map(NULL, 64 << 20, PROT_NONE, MAP_NORESERVE); // END:reservation
  if (keep) keep_global = base;
  char *c = map(base + (4 << 20), 1 << 20, PROT_READ | PROT_WRITE, MAP_FIXED); // END:commit
  memset(c, 1, 1 << 20);
}

__attribute__((noinline)) static void fixed_inside(void) {
  char *base = map(NULL, 8 << 20, PROT_READ | PROT_WRITE, 0); // END:outer
  keep_global = base;
  char *c = map(base + (2 << 20), 1 << 20, PROT_READ | PROT_WRITE, MAP_FIXED); // END:inner
  memset(c, 1, 1 << 20);
}

__attribute__((noinline)) static void filemap(void) {
  char path[] = "/tmp/t_ended.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 8192)) abort();
  unlink(path);
  void **m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) abort();
  close(fd);
  m[1000] = malloc(444); // END:filemap
}

static void gone(pid_t tid) { // a thread's end, past its last instruction
  while (syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH) usleep(1000);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  pthread_key_create(&key_dtor, dtor);
  pthread_key_create(&key_plain, NULL);
  if (pipe(pipefd)) return 1;
  pthread_t t[20];
  if (!strcmp(c, "stacks")) {
    pthread_barrier_init(&barrier, NULL, 8);
    for (long i = 0; i < 8; i++) start(&t[i], stacks, (void *)i);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  } else if (!strcmp(c, "tls") || !strcmp(c, "tsd")) {
    start(&t[0], c[1] == 'l' ? tls : tsd, NULL);
    pthread_join(t[0], NULL);
  } else if (!strcmp(c, "retval")) {
    for (int i = 0; i < 20; i++) start(&t[i], retval, NULL);
    for (int i = 0; i < 20; i++) pthread_join(t[i], NULL);
  } else if (!strcmp(c, "arg")) {
    for (int i = 0; i < 20; i++) give(&t[i]);
    for (int i = 0; i < 20; i++) pthread_join(t[i], NULL);
  } else if (!strcmp(c, "detached")) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    start(&t[0], detached, NULL);
    while (!detached_tid) usleep(1000);
    gone(detached_tid);
  } else if (!strcmp(c, "reuse")) {
    start(&t[0], first, NULL);
    pthread_join(t[0], NULL);
    start(&t[1], hold, (void *)800);
    while (!started) usleep(1000);
  } else if (!strcmp(c, "live")) {
    start(&t[0], hold, (void *)900);
    while (!started) usleep(1000);
  } else if (!strcmp(c, "starting")) {
    pthread_t many[50];
    for (int i = 0; i < 50; i++) start(&many[i], wait_with, malloc(222)); // END:starting
  } else if (!strcmp(c, "unjoined")) {
    start(&t[0], unjoined, NULL);
    while (!detached_tid) usleep(1000);
    gone(detached_tid);
  } else if (!strcmp(c, "reserve") || !strcmp(c, "reserve_lost")) {
    reserve(c[7] == 0);
  } else if (!strcmp(c, "fixed_inside")) {
    fixed_inside();
  } else if (!strcmp(c, "filemap")) {
    filemap();
  } else {
    fprintf(stderr, "t_ended: unknown case '%s'\n", c);
    return 2;
  }
  scrub();
  return 0;
}
