// SPDX-License-Identifier: MIT
// t_locale: a program that sets its locale again and again, as shells do (bash for every LC_*
// assignment), and forks children that set theirs while ndmem's writer thread runs in the parent.
// Under the shim with every block tracked, the blocks setlocale allocates are tracked inside
// setlocale, which holds glibc's locale lock for writing: nothing ndmem does there may take that
// lock (a gettext call did, and the second setlocale hung for ever). t_launch_stress.sh runs it
// in exec chains; alone it prints "ok FORKS" and exits 0.
// usage: t_locale [FORKS]
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int cycle_locales(void) {
  for (int i = 0; i < 3; i++)
    if (!setlocale(LC_ALL, "C") || !setlocale(LC_ALL, "")) return -1;
  return 0;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 0;
  if (cycle_locales() != 0) {
    fprintf(stderr, "setlocale failed\n");
    return 1;
  }
  // Tracked blocks (at least the default NDMEM_TRACK_MIN) start the writer thread.
  for (int i = 0; i < 8; i++) {
    volatile char *p = malloc(64 << 10);
    if (!p) return 1;
    memset((char *)p, i, 64 << 10);
    free((char *)p);
  }
  for (int i = 0; i < forks; i++) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) _exit(cycle_locales() == 0 ? 0 : 1);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "child %d failed\n", i);
      return 1;
    }
    usleep(1000); // the writer's flushes fall between forks too
  }
  printf("ok %d\n", forks);
  return 0;
}
