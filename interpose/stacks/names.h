// SPDX-License-Identifier: MIT
// names.h: how ndmem's own stderr lines name a memory kind and a code address (the summary, a
// limit's top sites, a site found growing). ndmemreport gives file:line offline; these are what
// the process can say about itself without allocating: the loader's symbol, demangled by the
// C++ runtime the process has loaded, and a Python frame as its qualname and line.
#ifndef ND_NAMES_H
#define ND_NAMES_H

#include "common/fmt.h"
#include "runtime/kinds.h" // the kinds' and functions' names

#include <stddef.h>
#include <stdint.h>

// What this core cannot know by itself, given by the shim at start-up (init.c). NULL members:
// a Python frame reads "? (?:LINE)", a symbol is printed as the loader has it.
typedef struct nd_namers {
  // The qualname and file of a Python frame's code object (python.c: nd_py_code_names).
  int (*py_code)(uint64_t id, const char **qualname, size_t *qlen, const char **filename,
                 size_t *flen);
  // Appends the C++ symbol sym demangled, as nd_buf_elided(max) would: 1, or 0 with nothing
  // appended (demangle.c: nd_demangle).
  int (*demangle)(nd_buf_t *b, const char *sym, size_t max);
} nd_namers_t;
extern nd_namers_t nd_namers;

#define ND_NAME_MAX 120    // a native function's name; longer ones keep head and tail
#define ND_PY_QUAL_MAX 80  // a Python frame's qualname
#define ND_PY_FILE_MAX 60  // its file's base name

// One frame: "function+0xOFF (module)" (demangled), "module+0xOFF" (no symbol: a static
// function), "0xIP" (no module), a Python frame "qualname (file.py:LINE)" (its file's base name).
void nd_buf_frame(nd_buf_t *b, uintptr_t ip);
// A stack in one line: its first `native` frames up to the first Python frame, joined by " <- ",
// then, where the stack has a Python frame, "; Python: " and the innermost one ("Python: ..."
// alone when that frame comes first); when that one is library code (an installed package, the
// standard library, a frozen module: np.ones is Python), " <- " and the innermost Python frame of
// the program's own code after it, where there is one. Nothing for an empty stack.
void nd_buf_stack(nd_buf_t *b, const uintptr_t *ips, int depth, int native);

#endif
