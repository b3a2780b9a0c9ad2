// SPDX-License-Identifier: MIT
// test_py_layout: interpose/py_layout.h (where python.c finds a thread's frames, a frame's code
// and line, a code object's names, a str's characters) agrees with the CPython headers of the
// minor version it is built against (ND_PY_MINOR; Meson builds it once per version whose headers
// it finds, the internal ones included).
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>

#include "../../interpose/py_layout.h" // by path: interpose/limits.h would shadow <limits.h>

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

int main(void) {
  if (PY_MINOR_VERSION != ND_PY_MINOR) {
    fprintf(stderr, "built against 3.%d headers for 3.%d\n", PY_MINOR_VERSION, ND_PY_MINOR);
    return 1;
  }
  const py_layout_t *L = NULL;
  for (size_t i = 0; i < sizeof nd_py_layouts / sizeof nd_py_layouts[0]; i++)
    if (nd_py_layouts[i].minor == PY_MINOR_VERSION) L = &nd_py_layouts[i];
  if (!L) {
    fprintf(stderr, "py_layout.h has no layout for 3.%d\n", PY_MINOR_VERSION);
    return 1;
  }
  EQ("PyThreadState.cframe", L->ts_cframe, offsetof(PyThreadState, cframe));
  EQ("_PyCFrame.current_frame", L->cf_current, offsetof(_PyCFrame, current_frame));
  EQ("frame.f_code", L->fr_code, offsetof(_PyInterpreterFrame, f_code));
  EQ("frame.previous", L->fr_previous, offsetof(_PyInterpreterFrame, previous));
  EQ("frame.prev_instr", L->fr_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
  EQ("frame.owner", L->fr_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_MINOR_VERSION == 11
  EQ("frame.is_entry", L->fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
  EQ("owner_cstack", L->owner_cstack, -1);
#else
  EQ("frame.is_entry (none)", L->fr_is_entry, ND_PY_NO_FIELD);
  EQ("FRAME_OWNED_BY_CSTACK", L->owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
  EQ("FRAME_OWNED_BY_GENERATOR", OWNED_BY_GENERATOR, FRAME_OWNED_BY_GENERATOR);
  EQ("code.co_firstlineno", L->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  EQ("code.co_filename", L->co_filename, offsetof(PyCodeObject, co_filename));
  EQ("code.co_qualname", L->co_qualname, offsetof(PyCodeObject, co_qualname));
  EQ("code._co_firsttraceable", L->co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
  EQ("code.co_code_adaptive", L->co_code, offsetof(PyCodeObject, co_code_adaptive));
  EQ("sizeof(PyASCIIObject)", L->str_ascii, sizeof(PyASCIIObject));
  EQ("sizeof(PyCompactUnicodeObject)", L->str_compact, sizeof(PyCompactUnicodeObject));
  EQ("PyObject.ob_type", 8, offsetof(PyObject, ob_type));
  EQ("PyASCIIObject.length", 16, offsetof(PyASCIIObject, length));
  EQ("PyASCIIObject.state", 32, offsetof(PyASCIIObject, state));
  EQ("sizeof(_Py_CODEUNIT)", 2, sizeof(_Py_CODEUNIT));
  if (!fails) printf("py_layout.h agrees with the 3.%d headers (%s)\n", PY_MINOR_VERSION, PY_VERSION);
  return fails != 0;
}
