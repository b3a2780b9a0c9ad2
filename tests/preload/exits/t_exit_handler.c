// SPDX-License-Identifier: MIT
// t_exit_handler: a program whose timer signal's handler calls exit() while the main thread
// allocates and frees in a loop, so the signal often lands inside glibc's malloc, with its arena
// lock held. exit() is not async-signal-safe, but programs do it (a SIGTERM handler that exits)
// and it works without ndmem: nothing in glibc's exit path takes that lock. ndmem's final flush
// runs in that handler, so it must not take the lock either (no allocator query, no failed
// dlsym, whose error message is malloc'd), nor wait for a thread that does. Mode "mapped" first
// maps 64 MiB the hooks never see, so that the gap between resident and tracked memory has moved
// (an allocator query would be due); mode "early" exits after 50 ms, before the writer's first
// flush, so that the final flush is the first: it writes the module map (and once looked for a
// Python interpreter there, by dlsym). t_exit_handler.sh runs each repeatedly under a time limit.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static int mapped;

static void on_alarm(int sig) {
  (void)sig;
  if (mapped) {
    long p = syscall(SYS_mmap, NULL, 64 << 20, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != -1) memset((void *)p, 1, 64 << 20);
  }
  exit(0);
}

int main(int argc, char **argv) {
  mapped = argc > 1 && !strcmp(argv[1], "mapped");
  signal(SIGALRM, on_alarm);
  struct itimerval it = {{0, 0}, {0, argc > 1 && !strcmp(argv[1], "early") ? 50000 : 300000}};
  setitimer(ITIMER_REAL, &it, NULL);
  for (;;) { // above glibc's thread cache, below ndmem's exact tracking: mostly in glibc's lock
    void *volatile p = malloc(5000);
    free(p);
  }
}
