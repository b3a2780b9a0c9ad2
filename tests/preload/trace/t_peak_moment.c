// SPDX-License-Identifier: MIT
// t_peak_moment: memory live at the process's peak moment, known exactly. Each site is its own
// function (built -O0, not inlined):
//   keep     1 MiB allocated first and kept to exit (it never changes after the moment)
//   alloc_a  32 MiB, freed before the peak: its own peak is 32 MiB, at the peak it holds nothing
//   alloc_b  20 MiB, then alloc_c 20 MiB: live together, the peak (41 MiB with keep); both freed
//            after it (each notes what it held at the moment on its first change after it)
//   alloc_d  8 MiB after the peak, kept to exit: nothing at the moment
// So at the peak: keep 1 MiB, b 20 MiB, c 20 MiB, a and d nothing; their own peaks sum to
// 81 MiB, more than the process ever held.
#include <stdlib.h>
#include <string.h>

#define MIB (1024 * 1024)

static void *volatile sink[8];

__attribute__((noinline)) static void *keep(void) { return malloc(1 * MIB); }
__attribute__((noinline)) static void *alloc_a(void) { return malloc(32 * MIB); }
__attribute__((noinline)) static void *alloc_b(void) { return malloc(20 * MIB); }
__attribute__((noinline)) static void *alloc_c(void) { return malloc(20 * MIB); }
__attribute__((noinline)) static void *alloc_d(void) { return malloc(8 * MIB); }

int main(void) {
  sink[0] = keep();
  sink[1] = alloc_a();
  free(sink[1]);
  sink[2] = alloc_b();
  sink[3] = alloc_c();
  free(sink[2]);
  free(sink[3]);
  sink[4] = alloc_d();
  return sink[0] && sink[4] ? 0 : 1;
}
