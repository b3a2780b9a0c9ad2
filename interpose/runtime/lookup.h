// SPDX-License-Identifier: MIT
// lookup.h: the next dlsym and the shim's own lookups (runtime/lookup.c).
#ifndef ND_LOOKUP_H
#define ND_LOOKUP_H

// The next dlsym (libc's), once resolved (atomic), and its resolution.
extern void *(*nd_dlsym_next)(void *, const char *);
void nd_dlsym_resolve(void);
// A lookup of ndmem's own, outside the program's books; clear: leave nothing for dlerror.
void *nd_dlsym_own(void *handle, const char *name, int clear);

#endif
