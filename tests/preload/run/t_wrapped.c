// SPDX-License-Identifier: MIT
// t_wrapped: the program a wrapper runs (t_run_wrappers.sh), and a fork child that leaks or not.
// It allocates and frees 64 blocks of 64 KiB (its trace's heap peak is at least 4 MiB, far above
// a wrapper's), keeps 1 MiB to exit, then with "fork-leak" or "fork-free" forks a child that
// allocates 13370 bytes and exits without freeing them, or after freeing them; the parent waits.
// It prints "ok" with the child's exit status.
// usage: t_wrapped [fork-leak|fork-free]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  void *b[64];
  for (int i = 0; i < 64; i++) memset(b[i] = malloc(64 << 10), i, 64 << 10);
  for (int i = 0; i < 64; i++) free(b[i]);
  char *kept = malloc(1 << 20);
  memset(kept, 1, 1 << 20);
  int status = 0;
  if (argc > 1) {
    pid_t p = fork();
    if (p == 0) {
      char *volatile lost = malloc(13370);
      memset(lost, 2, 13370);
      if (!strcmp(argv[1], "fork-free")) free(lost);
      lost = NULL; // nothing points to it at exit: definitely lost (fork-leak)
      exit(0);
    }
    waitpid(p, &status, 0);
  }
  printf("ok %d\n", WEXITSTATUS(status));
  free(kept);
  return 0;
}
