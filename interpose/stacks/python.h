// SPDX-License-Identifier: MIT
// python.h: the Python frames behind a tracked allocation (python.c): CPython 3.10 to 3.14
// found at start-up (or when the module map changes), frames read into the stack in place of
// the evaluator's, code objects written as PYCODE records.
#ifndef ND_PYTHON_H
#define ND_PYTHON_H

#include "account/sites.h"
#include "common/trace_format.h"

#include <stdint.h>

// Looks for the interpreter (once; again after nd_py_modules_changed) and says once if it is of
// an unsupported version. Only the trace's flushes look, holding the trace lock, which fork waits
// for: the writer thread's when it starts (at the first tracked block) and when the module map
// changed (an embedding program may dlopen libpython), and the last flush of a normal exit. Never from a hook: a lookup that finds nothing
// leaves its message to dlerror, which translates it through gettext, which takes glibc's
// setlocale lock; a hook can run inside setlocale holding that lock for writing, and the read
// lock then fails with EDEADLK and gettext's unlock releases setlocale's own lock (the next
// setlocale hung: an exact-mode run of any program that sets its locale twice, and bash).
// Never during initialisation either: the message would come from the bootstrap pool.
void nd_py_detect(void);
void nd_py_setup(void); // at start-up: NDMEM_PYTHON=0 decides at once (no look-up)
void nd_py_modules_changed(void);
int nd_py_state(void);   // enum nd_python_state
// The stack of n native frames ips (innermost first, ndmem's own removed) with the calling
// thread's Python frames, into out (room for ND_STACK_MAX): each evaluator frame becomes the
// Python frames it ran, the interpreter's other frames go, at most NDMEM_DEPTH native frames are
// kept, and the thread's Python frames beyond them (past NDMEM_DEPTH, or where the unwinder
// stopped) follow ND_FRAME_CUT, up to NDMEM_PY_DEPTH Python frames in all. Returns the count, or
// -1 when the thread runs no Python (ips stand as they are).
// depth: the native frames kept. trail (or NULL): the frame records read, for the replay
// (stacks/replay.h); its n is -2 where the process runs no interpreter.
struct nd_py_trail;
int nd_py_rewrite(const uintptr_t *ips, int n, int depth, uintptr_t *out, struct nd_py_trail *trail);

typedef void (*nd_py_record_fn)(void *ctx, const nd_rec_pycode_t *r, const char *strings);
void nd_py_write_pending(nd_py_record_fn rec, void *ctx); // PYCODE records not yet written
void nd_py_mark_unwritten(void);                          // a fork child's new trace
void nd_py_record(nd_rec_python_t *r);                    // the PYTHON record now

// The qualname and file of the code object a Python frame names (nd_pyframe_code), UTF-8 and not
// NUL-terminated, valid for the life of the process: 0, or -1 for an id not interned. No
// allocation, no lock. For ndmem's own lines.
int nd_py_code_names(uint64_t id, const char **qualname, size_t *qlen, const char **filename,
                     size_t *flen);

// PyLong_Type of the interpreter found (CPython 3.10 or later, not free-threaded), and its minor
// version, for the reachability scan (reach.c): an int object can hold an address (PyTorch's
// `_cdata` handles). NULL: none found.
const void *nd_py_long_type(unsigned *minor);

#endif
