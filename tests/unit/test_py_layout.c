// SPDX-License-Identifier: MIT
// test_py_layout: interpose/stacks/py_layout.h (where python.c finds a thread's frames, a frame's code
// and line, a code object's names, a str's characters) agrees with the CPython headers of the
// minor version it is built against (ND_PY_MINOR; Meson builds it once per version whose headers
// it finds, the internal ones included), and, from 3.13, says where the interpreter's own
// _Py_DebugOffsets keeps each of those offsets, which python.c compares at run time.
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif
#if PY_MINOR_VERSION >= 13
#include <internal/pycore_runtime.h>
#endif
#if PY_MINOR_VERSION >= 14
#include <internal/pycore_debug_offsets.h>
#include <internal/pycore_interpframe_structs.h>
#include <internal/pycore_stackref.h>
#endif

#include "../../interpose/stacks/py_layout.h" // by path: the test is built without the shim's include folders

#include <stddef.h>
#include <stdio.h>

static int fails;
#define EQ(what, got, want)                                                                     \
  do {                                                                                          \
    if ((long long)(got) != (long long)(want)) {                                                \
      fprintf(stderr, "3.%d: %s is %lld in py_layout.h, %lld in the headers\n", ND_PY_MINOR, what, \
              (long long)(got), (long long)(want));                                             \
      fails++;                                                                                  \
    }                                                                                           \
  } while (0)
#define NONE(what, got) EQ(what " (none)", got, ND_PY_NO_FIELD)

int main(void) {
  if (PY_MINOR_VERSION != ND_PY_MINOR) {
    fprintf(stderr, "built against 3.%d headers for 3.%d\n", PY_MINOR_VERSION, ND_PY_MINOR);
    return 1;
  }
#ifdef Py_GIL_DISABLED
  fprintf(stderr, "3.%d: these headers are a free-threaded build's: ndmem does not read those\n",
          PY_MINOR_VERSION);
  return 1;
#endif
  const py_layout_t *L = NULL;
  for (size_t i = 0; i < sizeof nd_py_layouts / sizeof nd_py_layouts[0]; i++)
    if (nd_py_layouts[i].minor == PY_MINOR_VERSION) L = &nd_py_layouts[i];
  if (!L) {
    fprintf(stderr, "py_layout.h has no layout for 3.%d\n", PY_MINOR_VERSION);
    return 1;
  }
#if PY_MINOR_VERSION == 10
  EQ("model", L->model, PY_FRAME_OBJECTS);
  EQ("PyThreadState.frame", L->ts_frame, offsetof(PyThreadState, frame));
  NONE("_PyCFrame.current_frame", L->cf_current);
  EQ("frame.f_code", L->fr_code, offsetof(PyFrameObject, f_code));
  EQ("frame.f_back", L->fr_previous, offsetof(PyFrameObject, f_back));
  EQ("frame.f_lasti", L->fr_instr, offsetof(PyFrameObject, f_lasti));
  EQ("sizeof f_lasti", sizeof(((PyFrameObject *)0)->f_lasti), sizeof(int));
  NONE("frame.owner", L->fr_owner);
  NONE("frame.is_entry", L->fr_is_entry);
  EQ("owner_entry", L->owner_entry, -1);
  EQ("code.co_name (3.10 has no co_qualname)", L->co_qualname, offsetof(PyCodeObject, co_name));
  NONE("code._co_firsttraceable", L->co_firsttraceable);
  NONE("code.co_code_adaptive", L->co_code);
#else
  EQ("model", L->model, PY_INTERP_FRAMES);
  EQ("frame.previous", L->fr_previous, offsetof(_PyInterpreterFrame, previous));
  EQ("frame.owner", L->fr_owner, offsetof(_PyInterpreterFrame, owner));
  EQ("FRAME_OWNED_BY_GENERATOR", OWNED_BY_GENERATOR, FRAME_OWNED_BY_GENERATOR);
  EQ("code.co_qualname", L->co_qualname, offsetof(PyCodeObject, co_qualname));
  EQ("code._co_firsttraceable", L->co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
  EQ("code.co_code_adaptive", L->co_code, offsetof(PyCodeObject, co_code_adaptive));
#endif
#if PY_MINOR_VERSION == 11 || PY_MINOR_VERSION == 12
  EQ("PyThreadState.cframe", L->ts_frame, offsetof(PyThreadState, cframe));
  EQ("_PyCFrame.current_frame", L->cf_current, offsetof(_PyCFrame, current_frame));
  EQ("frame.f_code", L->fr_code, offsetof(_PyInterpreterFrame, f_code));
  EQ("frame.prev_instr", L->fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#endif
#if PY_MINOR_VERSION >= 13
  EQ("PyThreadState.current_frame", L->ts_frame, offsetof(PyThreadState, current_frame));
  NONE("_PyCFrame.current_frame", L->cf_current);
  EQ("frame.f_executable", L->fr_code, offsetof(_PyInterpreterFrame, f_executable));
  EQ("frame.instr_ptr", L->fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_MINOR_VERSION == 11
  EQ("frame.is_entry", L->fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
  EQ("owner_entry", L->owner_entry, -1);
#elif PY_MINOR_VERSION == 12 || PY_MINOR_VERSION == 13
  NONE("frame.is_entry", L->fr_is_entry);
  EQ("FRAME_OWNED_BY_CSTACK (the C entry's frame)", L->owner_entry, FRAME_OWNED_BY_CSTACK);
#elif PY_MINOR_VERSION >= 14
  NONE("frame.is_entry", L->fr_is_entry);
  EQ("FRAME_OWNED_BY_INTERPRETER (the C entry's frame)", L->owner_entry, FRAME_OWNED_BY_INTERPRETER);
  EQ("FRAME_OWNED_BY_CSTACK above it", FRAME_OWNED_BY_CSTACK > FRAME_OWNED_BY_INTERPRETER, 1);
#endif
#if PY_MINOR_VERSION >= 14
  EQ("Py_TAG_BITS (f_executable is a _PyStackRef)", L->code_tag, Py_TAG_BITS);
  EQ("sizeof(_PyStackRef)", sizeof(_PyStackRef), 8);
#else
  EQ("no tag bits", L->code_tag, 0);
#endif
  EQ("code.co_firstlineno", L->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  EQ("code.co_filename", L->co_filename, offsetof(PyCodeObject, co_filename));
  EQ("sizeof(PyASCIIObject)", L->str_ascii, sizeof(PyASCIIObject));
  EQ("sizeof(PyCompactUnicodeObject)", L->str_compact, sizeof(PyCompactUnicodeObject));
  EQ("PyObject.ob_type", 8, offsetof(PyObject, ob_type));
  EQ("PyASCIIObject.length", 16, offsetof(PyASCIIObject, length));
  EQ("PyASCIIObject.state", 32, offsetof(PyASCIIObject, state));
  EQ("sizeof(_Py_CODEUNIT)", 2, sizeof(_Py_CODEUNIT));
#if PY_MINOR_VERSION >= 13
  typedef _Py_DebugOffsets D;
  EQ("_PyRuntime.debug_offsets", 0, offsetof(_PyRuntimeState, debug_offsets));
  EQ("debug_offsets.version", L->dbg_version, offsetof(D, version));
  EQ("debug_offsets.free_threaded", L->dbg_free_threaded, offsetof(D, free_threaded));
  EQ("debug thread_state.current_frame", L->dbg[DBG_TS_FRAME], offsetof(D, thread_state.current_frame));
  EQ("debug interpreter_frame.previous", L->dbg[DBG_FR_PREVIOUS], offsetof(D, interpreter_frame.previous));
  EQ("debug interpreter_frame.executable", L->dbg[DBG_FR_CODE], offsetof(D, interpreter_frame.executable));
  EQ("debug interpreter_frame.instr_ptr", L->dbg[DBG_FR_INSTR], offsetof(D, interpreter_frame.instr_ptr));
  EQ("debug interpreter_frame.owner", L->dbg[DBG_FR_OWNER], offsetof(D, interpreter_frame.owner));
  EQ("debug code_object.filename", L->dbg[DBG_CO_FILENAME], offsetof(D, code_object.filename));
  EQ("debug code_object.qualname", L->dbg[DBG_CO_QUALNAME], offsetof(D, code_object.qualname));
  EQ("debug code_object.firstlineno", L->dbg[DBG_CO_FIRSTLINENO], offsetof(D, code_object.firstlineno));
  EQ("debug code_object.co_code_adaptive", L->dbg[DBG_CO_CODE], offsetof(D, code_object.co_code_adaptive));
  EQ("debug unicode_object.asciiobject_size", L->dbg[DBG_STR_ASCII], offsetof(D, unicode_object.asciiobject_size));
#else
  NONE("debug_offsets.version", L->dbg_version);
  for (int i = 0; i < DBG_N; i++) NONE("debug offsets", L->dbg[i]);
#endif
  if (!fails) printf("py_layout.h agrees with the 3.%d headers (%s)\n", PY_MINOR_VERSION, PY_VERSION);
  return fails != 0;
}
