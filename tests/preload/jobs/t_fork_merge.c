// SPDX-License-Identifier: MIT
// t_fork_merge: a parent and two fork workers, the truth for t_fork_merge.py. The parent makes
// 2101473 bytes through libnodebug's nodebug_alloc (no debugging information) before it forks;
// worker 1 makes and frees 65536 bytes of its own and ends with _exit(0), the inherited block
// untouched; worker 2 frees the inherited block, makes and frees 40000 bytes of its own at the
// same call site, and ends with exit(0). The parent waits for both and keeps its block to its
// exit ("keep") or frees it first ("free"). Nothing else is allocated: no stdio.
// usage: t_fork_merge keep|free
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *nodebug_alloc(size_t n);

__attribute__((noinline)) static void own_work(size_t n) {
  char *p = malloc(n);
  if (p) memset(p, 1, n);
  free(p);
}

static pid_t worker(char *inherited, size_t n, int free_inherited, int underscore) {
  pid_t p = fork();
  if (p) return p;
  if (free_inherited) free(inherited);
  own_work(n);
  if (underscore) _exit(0);
  exit(0);
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "keep") && strcmp(argv[1], "free"))) return 2;
  char *kept = nodebug_alloc(2101473);
  if (!kept) return 1;
  pid_t a = worker(kept, 65536, 0, 1);
  int st = 0, ok = a > 0 && waitpid(a, &st, 0) == a && WIFEXITED(st) && !WEXITSTATUS(st);
  pid_t b = worker(kept, 40000, 1, 0);
  ok = ok && b > 0 && waitpid(b, &st, 0) == b && WIFEXITED(st) && !WEXITSTATUS(st);
  if (!strcmp(argv[1], "free")) free(kept);
  return ok ? 0 : 1;
}
