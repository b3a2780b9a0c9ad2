// SPDX-License-Identifier: MIT
// t_exec: a process that keeps a 3 MiB block (KEEP_LINE) and then execs, each way t_exec.sh
// checks its trace for:
//   static PATH  execv a statically linked program with the environment kept (it exits 7)
//   cleared      execle /bin/true with an empty environment
//   lp           clearenv, then execlp "true" (found in the default PATH)
//   fail         execv a file that does not exist: -1, errno ENOENT, and the process goes on
//   self         execv itself with the environment kept: the shim follows, the new image ("after")
//                allocates 2 MiB (AFTER_LINE) and exits 0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep(size_t n) {
  char *p = malloc(n); // KEEP_LINE
  if (p) memset(p, 1, n);
  return p;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "self") && argc > 2 && !strcmp(argv[2], "after")) {
    char *q = malloc(2u << 20); // AFTER_LINE
    if (q) memset(q, 2, 2u << 20);
    printf("after %d\n", (int)getpid());
    free(q);
    return 0;
  }
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  volatile char *kept = keep(3u << 20);
  (void)kept;
  if (!strcmp(mode, "static") && argc > 2) {
    char *const args[] = {argv[2], "7", NULL};
    execv(argv[2], args);
  } else if (!strcmp(mode, "cleared")) {
    char *const none[] = {NULL};
    execle("/bin/true", "true", (char *)NULL, none);
  } else if (!strcmp(mode, "lp")) {
    clearenv();
    execlp("true", "true", (char *)NULL);
  } else if (!strcmp(mode, "fail")) {
    char *const args[] = {"missing", NULL};
    errno = 0;
    int rc = execv("/nonexistent/t_exec-missing", args);
    printf("execv %d errno %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
    char *q = malloc(1u << 20);
    if (q) memset(q, 3, 1u << 20);
    free(q);
    return 0;
  } else if (!strcmp(mode, "self")) {
    char *const args[] = {argv[0], "self", "after", NULL};
    execv("/proc/self/exe", args);
  } else {
    fprintf(stderr, "usage: t_exec static PATH | cleared | lp | fail | self\n");
    return 2;
  }
  perror("t_exec: exec");
  return 1;
}
