// SPDX-License-Identifier: MIT
// py_layout.h: where CPython 3.10 to 3.14 keep what python.c reads (the thread's current frame,
// a frame's code object, previous frame, instruction and owner, a code object's names and first
// line, a compact str's data), per minor version, on 64-bit targets with the GIL (a free-threaded
// build is told apart at run time and not read). These are the interpreter's internal structures
// (3.10: Include/cpython/frameobject.h, the frame objects themselves; 3.11 on:
// Include/internal/pycore_frame.h, or pycore_interpframe_structs.h in 3.14; Include/cpython/code.h),
// stable within a minor version, different between them. tests/unit/test_py_layout.c asserts every
// offset against the headers of each version it finds; from 3.13 the running interpreter also
// publishes its own offsets (_PyRuntime.debug_offsets), which python.c compares with these before
// it reads a frame, so that a build whose layout differs is said, never misread.
#ifndef ND_PY_LAYOUT_H
#define ND_PY_LAYOUT_H

#include <stddef.h>

#define ND_PY_NO_FIELD ((size_t)-1) // a field the version does not have
enum { OWNED_BY_GENERATOR = 1 };    // FRAME_OWNED_BY_GENERATOR, 3.11 on

enum py_model {
  PY_FRAME_OBJECTS, // 3.10: one evaluator call runs one PyFrameObject (f_back, f_code, f_lasti)
  PY_INTERP_FRAMES, // 3.11 on: one evaluator call runs a chain of _PyInterpreterFrame
};

// _Py_DebugOffsets (3.13 on) fields python.c compares, in this order with the layout's own.
enum py_dbg { DBG_TS_FRAME, DBG_FR_PREVIOUS, DBG_FR_CODE, DBG_FR_INSTR, DBG_FR_OWNER,
              DBG_CO_FILENAME, DBG_CO_QUALNAME, DBG_CO_FIRSTLINENO, DBG_CO_CODE, DBG_STR_ASCII,
              DBG_N };

typedef struct py_layout {
  unsigned minor;
  unsigned model;     // enum py_model
  size_t ts_frame;    // 3.10 PyThreadState.frame, 3.11-3.12 .cframe, 3.13 on .current_frame
  size_t cf_current;  // 3.11-3.12 _PyCFrame.current_frame; else none (ts_frame is the frame)
  size_t fr_code;     // f_code; 3.13 on f_executable (3.14: a _PyStackRef, low bits tagged)
  size_t fr_previous; // 3.10 f_back
  size_t fr_instr;    // 3.10 int f_lasti (code units), 3.11-3.12 prev_instr, 3.13 on instr_ptr
  size_t fr_owner;    // none in 3.10
  size_t fr_is_entry; // 3.11: bool is_entry; else none (3.12 on: the C entry's own frame instead)
  int owner_entry;    // 3.12 on: a frame owned by this or above is the C entry's (not Python); -1
  unsigned code_tag;  // bits of fr_code that tag the reference (3.14: Py_TAG_BITS), cleared
  size_t co_firstlineno, co_filename;
  size_t co_qualname; // 3.10 has no qualified name: co_name
  size_t co_firsttraceable, co_code; // _co_firsttraceable, co_code_adaptive; none in 3.10
  size_t str_ascii, str_compact;     // sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)
  size_t dbg_version, dbg_free_threaded; // in _Py_DebugOffsets (3.13 on), else none
  size_t dbg[DBG_N];                     // where _Py_DebugOffsets keeps each (enum py_dbg)
} py_layout_t;

#define NF ND_PY_NO_FIELD
static const py_layout_t nd_py_layouts[] = {
    {10, PY_FRAME_OBJECTS, 24, NF, 32, 24, 96, NF, NF, -1, 0, 40, 104, 112, NF, NF, 48, 72, NF, NF,
     {NF, NF, NF, NF, NF, NF, NF, NF, NF, NF}},
    {11, PY_INTERP_FRAMES, 56, 8, 32, 48, 56, 69, 68, -1, 0, 72, 112, 128, 168, 184, 48, 72, NF, NF,
     {NF, NF, NF, NF, NF, NF, NF, NF, NF, NF}},
    {12, PY_INTERP_FRAMES, 56, 0, 0, 8, 56, 70, NF, 3, 0, 68, 112, 128, 176, 192, 40, 56, NF, NF,
     {NF, NF, NF, NF, NF, NF, NF, NF, NF, NF}},
    {13, PY_INTERP_FRAMES, 72, NF, 0, 8, 56, 70, NF, 3, 0, 68, 112, 128, 184, 200, 40, 56, 8, 16,
     {184, 232, 240, 248, 264, 280, 296, 312, 344, 560}},
    {14, PY_INTERP_FRAMES, 72, NF, 0, 8, 56, 74, NF, 3, 3, 68, 112, 128, 192, 208, 40, 56, 8, 16,
     {208, 256, 264, 272, 288, 320, 336, 352, 384, 640}},
};
#undef NF

#endif
