// SPDX-License-Identifier: MIT
// libatfork_first: a library whose constructor registers fork and exit handlers before anything
// else in the process allocates, as OpenBLAS's does. glibc holds the fork handlers' lock while it
// reallocs their list, so the first hook of the process, where ndmem initialises, runs inside it.
#include <pthread.h>
#include <stdlib.h>

static int forks_seen;
static void prepare(void) {}
static void in_child(void) { forks_seen++; }
static void at_exit(void) {}

int atfork_first_children(void) { return forks_seen; }

__attribute__((constructor)) static void atfork_first_init(void) {
  for (int i = 0; i < 40; i++) pthread_atfork(prepare, prepare, in_child); // the list grows
  atexit(at_exit);
}
