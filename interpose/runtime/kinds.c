// SPDX-License-Identifier: MIT
// kinds.c: the names ndmem's stderr lines give a memory kind and a hooked function (the summary,
// a limit's breach, a site found growing), as the report names them.
#include "runtime/kinds.h"

#include "ndmem.h"

const char *nd_fn_name(int fn) {
  static const char *const names[NDMEM_FN_COUNT] = {
      "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
      "valloc", "pvalloc", "free", "free_sized", "free_aligned_sized", "mmap", "munmap", "mremap"};
  return fn >= 0 && fn < NDMEM_FN_COUNT ? names[fn] : "?";
}

void nd_buf_kind(nd_buf_t *b, int kind) {
  static const char *const names[NDMEM_KIND_DEVICE0] = {"heap", "mmap", "pinned", "managed"};
  if (kind < NDMEM_KIND_DEVICE0) {
    nd_buf_str(b, names[kind]);
    return;
  }
  nd_buf_str(b, "device");
  nd_buf_u64(b, (uint64_t)(kind - NDMEM_KIND_DEVICE0));
}
