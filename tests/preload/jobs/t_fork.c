// SPDX-License-Identifier: MIT
// t_fork: a fork child starts from the parent's live state and keeps its own accounting: what
// the child allocates never shows in the parent and vice versa. An exec'd child with the shim
// still in LD_PRELOAD is accounted by its own shim. With NDMEM_FOLLOW_FORK=0 ("nofollow") the
// child is not accounted at all.
#include "../shimcheck.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_child(int nofollow, const ndmem_stats_t *at_fork, pid_t parent) {
  if (nofollow) {
    ndmem_stats_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    CHECK_EQ(ndmem_stats(&s, NDMEM_SCOPE_PROCESS), -1);
    void *p = malloc(1000); // still works, just not accounted
    CHECK(p != NULL);
    free(p);
    return CHECK_DONE();
  }
  ndmem_stats_t c0 = PROC_SNAP();
  CHECK(c0.tid == getpid() && c0.tid != parent);
  CHECK_EQ(c0.kind[HEAP].live_bytes, at_fork->kind[HEAP].live_bytes);
  CHECK_EQ(c0.kind[HEAP].live_count, at_fork->kind[HEAP].live_count);
  void *q = malloc(2 << 20);
  ndmem_stats_t c1 = PROC_SNAP();
  CHECK_EQ(D(c1, c0, HEAP, live_bytes), malloc_usable_size(q));
  free(q);
  return CHECK_DONE();
}

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
    ndmem_stats_t s0 = PROC_SNAP(); // the exec'd image has its own shim
    void *p = malloc(4000);
    ndmem_stats_t s1 = PROC_SNAP();
    CHECK_EQ(s1.tid, getpid());
    CHECK_EQ(D(s1, s0, HEAP, live_bytes), malloc_usable_size(p));
    free(p);
    return CHECK_DONE();
  }
  int nofollow = argc > 1 && strcmp(argv[1], "nofollow") == 0;
  void *p = malloc(1 << 20);
  ndmem_stats_t at_fork = PROC_SNAP();
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(run_child(nofollow, &at_fork, parent));
  CHECK(pid > 0);
  // parent allocates while the child runs; the child's 2 MiB never shows here
  void *r = malloc(3 << 20);
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ndmem_stats_t p1 = PROC_SNAP();
  CHECK_EQ(D(p1, at_fork, HEAP, live_bytes), malloc_usable_size(r));
  free(r);
  free(p);

  if (!nofollow) { // fork + exec of ourselves: the shim follows through LD_PRELOAD
    pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
      _exit(99);
    }
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return CHECK_DONE();
}
