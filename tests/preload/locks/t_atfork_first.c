// SPDX-License-Identifier: MIT
// t_atfork_first: a program whose first allocation is a library constructor's pthread_atfork
// (libatfork_first.c). It forks once: the child allocates, sees the library's handlers run, and
// exits 0; the parent prints "ok" when the child did. Run by t_atfork_first.sh under a watchdog.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int atfork_first_children(void);

int main(void) {
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    char *volatile p = malloc(100000); // tracked at every setting: the child writes a trace
    free(p);
    _exit(atfork_first_children() == 40 ? 0 : 3);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "child: status %d\n", st);
    return 1;
  }
  puts("ok");
  return 0;
}
