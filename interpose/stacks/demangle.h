// SPDX-License-Identifier: MIT
// demangle.h: C++ names in ndmem's own stderr lines, demangled by the C++ runtime the process
// has loaded itself (demangle.c); names.c asks through nd_namers.
#ifndef ND_DEMANGLE_H
#define ND_DEMANGLE_H

#include "common/fmt.h"

#include <stddef.h>

// Appends the C++ symbol sym ("_Z...") demangled, at most max bytes (nd_buf_elided): 1, or 0 with
// nothing appended: not a C++ name, no C++ runtime loaded, or a thread writing its last words
// (a fatal signal's or _exit's final flush), where nothing may allocate. Never call it from a
// signal handler: the runtime's demangler allocates (forwarded to the next allocator, off the
// program's books).
int nd_demangle(nd_buf_t *b, const char *sym, size_t max);
// The C++ runtime the process loaded (libstdc++, else LLVM's libc++, else its libc++abi), found in
// the loader's list by name and opened by that path with RTLD_NOLOAD, so nothing loads and no
// look-up fails (a failure leaves a message for dlerror, which translates it through gettext and
// the setlocale lock a hook may run under); NULL when none is. *llvm: it is one of LLVM's. The
// handle is kept by the caller: it holds the runtime, so what is found in it stays valid.
void *nd_cxx_runtime(int *llvm);

#endif
