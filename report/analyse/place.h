// SPDX-License-Identifier: MIT
// place.h: where a site is, as every format names it (place.c): the program's own innermost
// frame first, and beside it the library frame that made the allocation, so that a tensor kept
// by train.py:46 through torch's relu reads "train.py:46, in relu (functional.py:1457)".
#ifndef ND_PLACE_H
#define ND_PLACE_H

#include "analyse/analyse.h"

#include <stdbool.h>

// The program's own frames (one rule for text, JSON and HTML):
//   - a Python frame whose file is not library code (nd_rep_py_library: an installed package,
//     the standard library, a frozen module);
//   - in a stack without a Python frame, a native frame of the main executable unless that is an
//     interpreter (python*, pypy*: its frames are the runtime's), or of a shared object that lies
//     in no library folder: no component of its path is lib, lib32, lib64 or libexec, nor
//     site-packages or dist-packages, and it is not one of the C and C++ runtimes
//     (nd_flame_runtime_module). Installed libraries (/usr/lib/..., a conda env's lib/) are not
//     the program's; a library the program built beside itself (build/libmodel.so) is.
// A stack with a Python frame is placed by its Python frames alone (the native frames below the
// innermost are the interpreter's and its extensions').
bool nd_rep_program_module(const nd_trace_t *t, const char *module);

// A site's place: `own` the program's innermost frame (NULL: none in the stack); `lib` the frame
// the site is otherwise named by, where it is not `own`: the innermost Python frame, else the
// innermost native frame outside the C and C++ runtimes with a function name (else with a
// module, else any: the HTML legend's rule), or NULL. Indices into the stack's frames; -1 none.
typedef struct nd_rep_place {
  const nd_frame_t *own, *lib;
  long own_at, lib_at;
} nd_rep_place_t;
int nd_rep_place(report_t *r, uint32_t stack, nd_rep_place_t *p); // -1 when out of memory

// The place in one line, appended to b (files by their base names):
//   own and lib      "train.py:46 (Net.forward), in relu (functional.py:1457)"
//   own only         "train.py:46 (Net.forward)"; "train.py:14" at a module's top level
//   lib only         "relu (functional.py:1457)", "c10::alloc_cpu(unsigned long)"
// The program's frame leads with its file:line (a native one without a file: its function, or
// module+0xOFF); the library frame is named as the HTML legend names a site (function
// (file:line) for Python; a native function without its file, or module+0xOFF, or 0xIP).
// "(no frames)" for an empty stack. -1 when out of memory (b freed).
int nd_rep_place_text(sbuf_t *b, const nd_rep_place_t *p);

#endif
