// SPDX-License-Identifier: MIT
// libnodebug: a library built without debugging information (-g0), as OpenBLAS and libc10 are
// installed: its symbols name its functions, nothing names their files and lines. A report names
// a frame in it by function and module offset (t_fork_merge.py).
#include <stdlib.h>
#include <string.h>

void *nodebug_alloc(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 7, n);
  return p;
}
