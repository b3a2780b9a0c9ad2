// SPDX-License-Identifier: MIT
// demangle.h: C++ names in ndmem's own stderr lines, demangled by the C++ runtime the process
// has loaded itself (demangle.c); names.c asks through nd_namers.
#ifndef ND_DEMANGLE_H
#define ND_DEMANGLE_H

#include "fmt.h"

#include <stddef.h>

// Appends the C++ symbol sym ("_Z...") demangled, at most max bytes (nd_buf_elided): 1, or 0 with
// nothing appended: not a C++ name, no C++ runtime loaded, or a thread writing its last words
// (a fatal signal's or _exit's final flush), where nothing may allocate. Never call it from a
// signal handler: the runtime's demangler allocates (forwarded to the next allocator, off the
// program's books).
int nd_demangle(nd_buf_t *b, const char *sym, size_t max);
void nd_demangle_atfork_child(void); // a thread that was looking did not come along

#endif
