// SPDX-License-Identifier: MIT
// py_layout.h: where CPython 3.11 and 3.12 keep what python.c reads (the thread's current frame,
// a frame's code object, previous frame, last instruction and owner, a code object's names and
// first line, a compact str's data), per minor version, on 64-bit targets. These are the
// interpreter's internal structures (Include/internal/pycore_frame.h, Include/cpython/code.h):
// stable within a minor version, different between them. tests/unit/test_py_layout.c asserts
// every offset against the headers of each version it finds.
#ifndef ND_PY_LAYOUT_H
#define ND_PY_LAYOUT_H

#include <stddef.h>

#define ND_PY_NO_FIELD ((size_t)-1) // a field the version does not have
enum { OWNED_BY_GENERATOR = 1 }; // FRAME_OWNED_BY_GENERATOR, both versions

typedef struct py_layout {
  unsigned minor;
  size_t ts_cframe;       // PyThreadState.cframe
  size_t cf_current;      // _PyCFrame.current_frame
  size_t fr_code, fr_previous, fr_prev_instr, fr_owner;
  size_t fr_is_entry;     // 3.11: bool is_entry; 3.12: none (a CSTACK-owned shim frame instead)
  int owner_cstack;       // FRAME_OWNED_BY_CSTACK, or -1
  size_t co_firstlineno, co_filename, co_qualname, co_firsttraceable, co_code;
  size_t str_ascii, str_compact; // sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)
} py_layout_t;

static const py_layout_t nd_py_layouts[] = {
    {11, 56, 8, 32, 48, 56, 69, 68, -1, 72, 112, 128, 168, 184, 48, 72},
    {12, 56, 0, 0, 8, 56, 70, ND_PY_NO_FIELD, 3, 68, 112, 128, 176, 192, 40, 56},
};

#endif
