// SPDX-License-Identifier: MIT
// callers.h: who is asking for memory, as a limit needs to know it (limits/callers.c).
//
// A limit refuses a request only where the program can take the refusal: in a tensor runtime's
// allocator, which turns it into the runtime's own exception, or in code the user names
// (NDMEM_LIMIT_REFUSE). "The code asking" is the first frame of the request's stack outside the
// objects that only pass a request on: ndmem itself, the C library and the loader, the C++
// runtime and its unwinder library (their own functions forward: std::string's growth, a
// strdup), and for device memory the CUDA runtime and driver (PyTorch's caching allocator calls
// cudaMalloc in libcudart, which calls the driver ndmem hooks). That frame's loaded object gives
// the class: a built-in list (each entry with its reason), extended or cut by NDMEM_LIMIT_REFUSE.
#ifndef ND_LIMITS_CALLERS_H
#define ND_LIMITS_CALLERS_H

#include <stdint.h>

enum nd_caller {
  ND_CALLER_OTHER = 0,   // a library's or the program's own code: its requests are admitted
  ND_CALLER_RUNTIME = 1, // a tensor runtime's allocator (the built-in list)
  ND_CALLER_NAMED = 2,   // an object NDMEM_LIMIT_REFUSE names
};

// What is asked for: host memory, host memory aligned (posix_memalign, memalign, aligned_alloc:
// PyTorch's CPU allocator asks so), device memory.
enum nd_ask { ND_ASK_HOST = 0, ND_ASK_ALIGNED = 1, ND_ASK_DEVICE = 2 };

// The class of the code asking for the request being made on this thread (inside a hook): ra is
// the hook's caller (0: unknown), ask what it asks for (enum nd_ask). *ip gets the asking frame's
// address (0 where no frame outside the pass-through objects was found: class OTHER). Takes no
// lock across a call; the loader's list is read with dl_iterate_phdr (its lock is recursive); a
// stack is unwound only when ra lies in a pass-through object or a refusable one.
int nd_caller_class(uintptr_t ra, int ask, uintptr_t *ip);

// The words of a class for a line ("the runtime's allocator", "named by NDMEM_LIMIT_REFUSE").
const char *nd_caller_words(int cls);

// Read once at start-up, before any hook classifies (limits.c's setup): NDMEM_LIMIT_REFUSE's
// list, and the main executable's path (its name decides the built-in python* entry).
void nd_callers_setup(const char *refuse);
// A fork child's: the table's lock may have been held by a thread that did not survive.
void nd_callers_atfork_child(void);

// Glob match, '*' and '?' only (exposed for the unit tests): 1 when name matches pat.
int nd_callers_glob(const char *pat, const char *name);

#endif
