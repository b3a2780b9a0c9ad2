// SPDX-License-Identifier: MIT
// t_rank: a process for the trace header's job fields (t_rank_header.sh): it keeps a tracked
// block, prints "pid PID ppid PPID", and with "fork" forks a child that allocates on its own,
// prints "child PID" and ends with _exit(0), as a DataLoader worker does.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  char *keep = malloc(64 << 10); // tracked exactly (NDMEM_TRACK_MIN is 8 KiB)
  if (!keep) return 1;
  memset(keep, 1, 64 << 10);
  printf("pid %d ppid %d\n", (int)getpid(), (int)getppid());
  fflush(stdout);
  if (argc > 1 && !strcmp(argv[1], "fork")) {
    pid_t c = fork();
    if (c < 0) return 1;
    if (c == 0) {
      char *p = malloc(128 << 10);
      if (p) memset(p, 2, 128 << 10);
      printf("child %d\n", (int)getpid());
      fflush(stdout);
      _exit(p ? 0 : 1);
    }
    int st;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
  }
  free(keep);
  return 0;
}
