// SPDX-License-Identifier: MIT
// kinds.h: names of memory kinds and hooked functions (runtime/kinds.c).
#ifndef ND_KINDS_H
#define ND_KINDS_H

#include "common/fmt.h"

const char *nd_fn_name(int fn);          // enum ndmem_fn: "malloc", ..., "mremap"
void nd_buf_kind(nd_buf_t *b, int kind); // "heap", "mmap", "pinned", "managed", "device3"

#endif
