// SPDX-License-Identifier: MIT
// names.c: memory kinds and code addresses in ndmem's own stderr lines (names.h).
#include "names.h"

#include "ndmem.h"

#include <dlfcn.h>
#include <string.h>

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

// From the loader's dynamic symbols: a static function has none, so its module and offset.
void nd_buf_frame(nd_buf_t *b, uintptr_t ip) {
  Dl_info info;
  if (!dladdr((void *)ip, &info) || !info.dli_fname) {
    nd_buf_hex(b, ip);
    return;
  }
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  if (info.dli_sname) {
    nd_buf_str(b, info.dli_sname);
    nd_buf_str(b, "+");
    nd_buf_hex(b, ip - (uintptr_t)info.dli_saddr);
    nd_buf_str(b, " (");
    nd_buf_str(b, base);
    nd_buf_str(b, ")");
  } else {
    nd_buf_str(b, base);
    nd_buf_str(b, "+");
    nd_buf_hex(b, ip - (uintptr_t)info.dli_fbase);
  }
}
