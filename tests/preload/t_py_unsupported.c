// SPDX-License-Identifier: MIT
// t_py_unsupported: what the shim does in a process whose interpreter it cannot read, on any
// machine (no other CPython needed): this program exports what an interpreter exports to say its
// version — Py_Version (3.11 and later) as 3.13.0, or (built with ND_ONLY_GETVERSION) only
// Py_GetVersion, as 3.10 and older do — and allocates tracked blocks. t_py_unsupported.sh checks the one stderr
// line and that the trace's stacks stay native.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), used))

#ifndef ND_ONLY_GETVERSION
EXPORT const unsigned long Py_Version = 0x030d00f0; // 3.13.0 final
#endif
EXPORT const char *Py_GetVersion(void) { return "3.10.13 (main, Jan  1 2024, 00:00:00) [GCC]"; }

int main(int argc, char **argv) {
  (void)argv;
  volatile char *keep[4];
  for (int i = 0; i < 4; i++) {
    keep[i] = malloc(100000); // tracked (>= NDMEM_TRACK_MIN): its stack is read for Python frames
    memset((char *)keep[i], i, 100000);
  }
  printf("allocated %d\n", argc);
  for (int i = 0; i < 4; i++) free((void *)keep[i]);
  return 0;
}
