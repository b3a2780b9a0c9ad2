// SPDX-License-Identifier: MIT
// t_nofile: run with its soft RLIMIT_NOFILE equal to its hard one (no room above it for ndmem's
// descriptors), it reads its limits and puts a file of its own on each of the 16 numbers just
// below the soft limit with dup2, writes to each before and after a while of allocating (the
// shim's trace flushes, statm readings and metrics files meanwhile), and reads each file back.
// Prints "limit SOFT HARD", then "dup2 N/16", then "files N/16 intact". "list" prints the
// descriptors above 2 open as it starts.
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

// "list": the descriptors above 2 open as the program starts (none are its own).
static int list(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 1;
  struct dirent *e;
  int n = 0;
  printf("open:");
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d))
      printf(" %s", e->d_name), n++;
  printf(" (%d)\n", n);
  closedir(d);
  return 0;
}

// "dup2": dup2 onto stdout and back for 3 s while the shim flushes what it allocates (pytest's
// capture does so around every test); prints "dup2s ok". A dup2 that waited for a flush that waited for it
// stalled 30 s.
static int dup2_loop(void) {
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC), keep = dup(1);
  if (null < 0 || keep < 0) return perror("open"), 1;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long n = 0;
  static void *ring[4096]; // blocks made and freed: each flush has records to write
  do {
    if (dup2(null, 1) != 1 || dup2(keep, 1) != 1) return perror("dup2"), 1;
    free(ring[n % 4096]);
    ring[n % 4096] = malloc(64 + (size_t)(n % 1024));
    n++;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (t.tv_sec - t0.tv_sec < 3);
  printf("dup2s %s\n", n > 1000 ? "ok" : "few");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "list")) return list();
  if (argc > 1 && !strcmp(argv[1], "dup2")) return dup2_loop();
  const char *dir = argc > 1 ? argv[1] : ".";
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
  printf("limit %llu %llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  int top = (int)rl.rlim_cur, ok = 0, intact = 0;
  char path[4096], line[64];
  for (int fd = top - 16; fd < top; fd++) {
    snprintf(path, sizeof path, "%s/f%d", dir, fd);
    int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (f < 0) return 1;
    if (dup2(f, fd) == fd) ok++;
    close(f);
    int n = snprintf(line, sizeof line, "%d before\n", fd);
    if (write(fd, line, (size_t)n) != n) fprintf(stderr, "write to %d failed\n", fd);
  }
  printf("dup2 %d/16\n", ok);
  for (int i = 0; i < 40; i++) { // allocating: readings, flushes, metrics files
    char *p = malloc(1u << 20);
    if (p) memset(p, i, 1u << 20);
    usleep(10000);
    free(p);
  }
  for (int fd = top - 16; fd < top; fd++) {
    int n = snprintf(line, sizeof line, "%d after\n", fd);
    if (write(fd, line, (size_t)n) != n) fprintf(stderr, "write to %d failed\n", fd);
    char want[128], got[256];
    int w = snprintf(want, sizeof want, "%d before\n%d after\n", fd, fd);
    ssize_t g = pread(fd, got, sizeof got, 0);
    if (g == w && !memcmp(got, want, (size_t)w)) intact++;
    else fprintf(stderr, "f%d holds %zd bytes: %.*s\n", fd, g, g > 0 ? (int)g : 0, got);
    close(fd);
  }
  printf("files %d/16 intact\n", intact);
  return ok == 16 && intact == 16 ? 0 : 1;
}
