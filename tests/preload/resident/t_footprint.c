// SPDX-License-Identifier: MIT
// t_footprint: what a program can see of the shim, printed so that t_footprint.sh can compare a
// run under ndmem with one where it only forwards (NDMEM_ENABLED=0): every thread-specific-data
// key (PTHREAD_KEYS_MAX), the descriptors open below 256 and the lowest free one, the signal
// dispositions, the signal mask and glibc's mmap threshold. Threads come and go before and after the keys run out, and
// each allocates blocks large enough to be tracked with their stacks (libunwind's per-thread
// cache is made in each), and uses keys of its own. `t_footprint fork`: a thread that is not the
// main one forks, and the child (whose only thread it is) allocates and exits.
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_key_t keys[PTHREAD_KEYS_MAX + 1];
static int nkeys;

static void churn(void) {
  void *small[64], *large[8];
  for (int i = 0; i < 64; i++) small[i] = malloc(16 + (size_t)i);
  for (int i = 0; i < 8; i++) large[i] = malloc(20000 + (size_t)i * 512);
  for (int i = 0; i < 64; i++) free(small[i]);
  for (int i = 0; i < 8; i++) free(large[i]);
}

static void *worker(void *arg) {
  churn();
  // After the keys ran out: the thread's own values in the program's keys stay its own.
  for (int i = 0; i < nkeys; i += 97) {
    if (pthread_setspecific(keys[i], (char *)arg + i) != 0 || pthread_getspecific(keys[i]) != (char *)arg + i) {
      fprintf(stderr, "t_footprint: key %d does not keep its value\n", i);
      exit(1);
    }
  }
  return NULL;
}

static void threads(int n) {
  pthread_t t[8];
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, worker, (char *)NULL + 4096 * (i + 1)) != 0) exit(1);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static void *forker(void *arg) {
  (void)arg;
  pid_t pid = fork();
  if (pid == 0) {
    churn();
    exit(0);
  }
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) exit(1);
  return NULL;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
  if (f) fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "fork")) {
    pthread_t t;
    if (pthread_create(&t, NULL, forker, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
    return 0;
  }
  threads(4);
  churn();
  while (nkeys <= PTHREAD_KEYS_MAX && pthread_key_create(&keys[nkeys], NULL) == 0) nkeys++;
  printf("keys %d of %d\n", nkeys, PTHREAD_KEYS_MAX);
  threads(4);
  for (int i = 0; i < nkeys; i++) pthread_key_delete(keys[i]);
  nkeys = 0;
  // 200 threads more, each unwinding: what a thread leaves behind would add up (libunwind's frame
  // cache alone is 256 KiB a thread)
  long before = rss_kib();
  for (int i = 0; i < 50; i++) threads(4);
  long grew = rss_kib() - before;
  printf("200 threads more: resident memory %s\n", grew < 8192 ? "steady" : "grew");
  if (grew >= 8192) fprintf(stderr, "t_footprint: resident memory grew by %ld KiB\n", grew);
  // glibc's malloc as the program left it: a 200 KiB block is a mapping of its own (above the
  // mmap threshold, which glibc raises when such a block is freed: nothing of ndmem's may have)
  struct mallinfo2 mi0 = mallinfo2();
  char *volatile big = malloc(200 * 1024); // volatile: the compiler may not drop the pair
  struct mallinfo2 mi1 = mallinfo2();
  printf("a 200 KiB block is %s\n", mi1.hblks == mi0.hblks + 1 ? "a mapping of its own" : "in the heap");
  free(big);
  printf("descriptors open below 256:");
  for (int fd = 0; fd < 256; fd++)
    if (fcntl(fd, F_GETFD) >= 0) printf(" %d", fd);
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  printf("; next %d\n", fd);
  printf("signals not default:");
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL) printf(" %d", sig);
  }
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, NULL, &mask);
  printf("\nsignals blocked:");
  for (int sig = 1; sig < NSIG; sig++)
    if (sigismember(&mask, sig) == 1) printf(" %d", sig);
  printf("\n");
  return 0;
}
