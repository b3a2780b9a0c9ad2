// SPDX-License-Identifier: MIT
// t_unwind_masks: when ndmem skips libunwind's signal masking (interpose/stacks/unwind.c). With
// every block tracked, allocations from call paths the unwinder has not seen make it search for
// their frames' unwind information, which it brackets with sigprocmask. Modes:
//   plain    no handler of the program's: every mask skipped, none made
//   handler  first a SIGUSR1 handler that unwinds with libunwind (libunwsig, which links it):
//            the masks are made, as libunwind makes them without ndmem
//   lookup   first the program looks unw_backtrace up with dlsym: masks made too
//   late     the handler installed after some allocations: skipped before it, made after
// usage: t_unwind_masks MODE (t_unwind_masks.sh reads the summary's `libunwind:` line)
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int unwsig_install(void);

#define NOINLINE __attribute__((noinline))

// Allocations at call paths of growing depth: each level's frames are new to the unwinder.
NOINLINE static void deep(int d) {
  if (d > 0) {
    deep(d - 1);
    __asm__ volatile("" ::: "memory");
    return;
  }
  free(malloc(24));
}
NOINLINE static void a1(void) { free(malloc(32)); }
NOINLINE static void a2(void) { a1(); free(malloc(40)); }
NOINLINE static void a3(void) { a2(); free(malloc(48)); }
NOINLINE static void b1(void) { free(malloc(56)); }
NOINLINE static void b2(void) { b1(); free(malloc(64)); }
NOINLINE static void b3(void) { b2(); free(malloc(72)); }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "plain";
  if (!strcmp(mode, "handler") && unwsig_install() != 0) return 1;
  if (!strcmp(mode, "lookup") && !dlsym(RTLD_DEFAULT, "unw_backtrace")) return 1;
  a3();
  if (!strcmp(mode, "late") && unwsig_install() != 0) return 1;
  b3();
  for (int d = 0; d < 20; d++) deep(d);
  // No signal is sent: the handler's presence is what decides.
  printf("t_unwind_masks %s: done\n", mode);
  return 0;
}
