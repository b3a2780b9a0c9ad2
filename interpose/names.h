// SPDX-License-Identifier: MIT
// names.h: how ndmem's own stderr lines name a memory kind and a code address (the summary, a
// limit's top sites, a site found growing). ndmemreport gives file:line offline; these are what
// the process can say about itself without allocating.
#ifndef ND_NAMES_H
#define ND_NAMES_H

#include "fmt.h"

#include <stdint.h>

const char *nd_fn_name(int fn);               // enum ndmem_fn: "malloc", ..., "mremap"
void nd_buf_kind(nd_buf_t *b, int kind);     // "heap", "mmap", "pinned", "managed", "device3"
void nd_buf_frame(nd_buf_t *b, uintptr_t ip); // "sym+0xOFF (module)" or "module+0xOFF" or "0xIP"

#endif
