// SPDX-License-Identifier: MIT
// libdlo: a library loaded with dlopen at run time; its constructor and its functions allocate.
#include <malloc.h>
#include <stdlib.h>

void *dlo_ctor_block;
size_t dlo_ctor_usable;

__attribute__((constructor)) static void dlo_init(void) {
  dlo_ctor_block = malloc(54321);
  dlo_ctor_usable = malloc_usable_size(dlo_ctor_block);
}

void *dlo_alloc(size_t n) { return calloc(1, n); }
void dlo_free(void *p) { free(p); }
void dlo_release_ctor_block(void) { free(dlo_ctor_block); }
