// SPDX-License-Identifier: MIT
// dlsym.h: the exported dlsym's halves (hooks/dlsym.c) and the shim's own lookups.
#ifndef ND_DLSYM_H
#define ND_DLSYM_H

// The next dlsym (libc's), once resolved (atomic), and its resolution.
extern void *(*nd_dlsym_next)(void *, const char *);
void nd_dlsym_resolve(void);
// The filter the exported dlsym asks first (device/fns.c): 1 when *out answers the lookup, 0 to
// forward it to libc's dlsym.
int nd_dlsym_filter(void *handle, const char *name, void **out);
// A lookup of ndmem's own, outside the program's books; clear: leave nothing for dlerror.
void *nd_dlsym_own(void *handle, const char *name, int clear);

#endif
