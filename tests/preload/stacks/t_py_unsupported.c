// SPDX-License-Identifier: MIT
// t_py_unsupported: what the shim does in a process whose interpreter it must not read, on any
// machine (no other CPython needed): this program exports what an interpreter exports to say its
// version and build, and allocates tracked blocks. Built four ways: Py_Version 3.15.0 (a version
// ndmem has no layout for); ND_ONLY_GETVERSION: only Py_GetVersion, 3.9.18, as 3.10 and older
// do; ND_FREE_THREADED: 3.14.0 whose PyType_Type has the free-threaded object header (ob_type at
// 24); ND_LAYOUT_DIFFERS: 3.13.0 whose _PyRuntime.debug_offsets (cookie, version, not
// free-threaded) name offsets other than 3.13's. t_py_unsupported.sh checks the one stderr line
// and that the trace's stacks stay native.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), used))

#if defined ND_FREE_THREADED
EXPORT const unsigned long Py_Version = 0x030e00f0; // 3.14.0 final
// ob_tid, ob_flags/ob_mutex/ob_gc_bits/ob_ref_local, ob_ref_shared, ob_type: the type of types
EXPORT void *PyType_Type[8] = {0, 0, 0, PyType_Type};
#elif defined ND_LAYOUT_DIFFERS
EXPORT const unsigned long Py_Version = 0x030d00f0; // 3.13.0 final
EXPORT uint64_t _PyRuntime[128] = {0x7970677562656478ull /* "xdebugpy" */, 0x030d00f0, 0};
#elif !defined ND_ONLY_GETVERSION
EXPORT const unsigned long Py_Version = 0x030f00f0; // 3.15.0 final
#endif
EXPORT const char *Py_GetVersion(void) { return "3.9.18 (main, Jan  1 2024, 00:00:00) [GCC]"; }

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
