// SPDX-License-Identifier: MIT
// t_refusal: a process that ends after a refused allocation, each way t_refusal.py checks that
// every format names the end with the request (its size, its line here, how the process ended):
//   segv   the NULL it got is written to: SIGSEGV
//   exit1  it says so and calls exit(1)
//   main3  main returns 3 (the status comes through libc's exit, not the program's call)
//   later  it carries on and exits cleanly 5.3 s later: not tied to the refusal
// The refused request is one 128 MiB malloc made by main itself (run under a 64 MiB maxBytes).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REFUSED (128u << 20)

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  volatile char *p = malloc(REFUSED); // REFUSED_LINE
  if (p) {
    fprintf(stderr, "t_refusal: the 128 MiB request was granted: run it under NDMEM_MAX_BYTES=64m\n");
    return 2;
  }
  if (!strcmp(mode, "segv")) {
    p[4096] = 1; // the program does not check
    return 0;
  }
  if (!strcmp(mode, "exit1")) {
    fputs("t_refusal: out of memory\n", stderr);
    exit(1);
  }
  if (!strcmp(mode, "main3")) return 3;
  if (!strcmp(mode, "later")) {
    usleep(5300 * 1000); // past ND_REFUSAL_NEAR_NS (5 s)
    return 0;
  }
  fprintf(stderr, "usage: t_refusal segv|exit1|main3|later\n");
  return 2;
}
