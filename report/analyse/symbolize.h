// SPDX-License-Identifier: MIT
// symbolize.h: offline symbolization of trace instruction pointers with elfutils' libdwfl.
// Each module of the trace is opened (at most once) from its recorded path at its recorded load
// bias; results are cached per IP. A module that cannot be opened, or an IP outside every module,
// still yields a frame (path+offset, or the bare address): symbolization never fails. Python
// frames (trace version 7) are named from their PYCODE records. C++ names are demangled (the C++
// runtime's __cxa_demangle, where ndmemreport was linked with it); a name that does not demangle
// is kept as it is.
#ifndef ND_SYMBOLIZE_H
#define ND_SYMBOLIZE_H

#include "read/trace_read.h"

#include <stdbool.h>
#include <stdint.h>

// A function and a source position in it.
typedef struct nd_loc {
  const char *function; // NULL if unknown; demangled ("ns::Foo::bar(int)") where it could be
  const char *mangled;  // the linkage name `function` was demangled from ("_ZN2ns3Foo3barEi"),
                        // or NULL: `function` is the symbol as it is (C, or not demangled)
  const char *file;     // NULL if unknown
  int line;             // 0 if unknown
} nd_loc_t;

// One recorded frame. When the call (ip - 1) sits in code inlined from other functions, `at` is
// the innermost inlined function and its line, and `inlined_into` lists the functions it was
// inlined into, each at the line of the inlined call, ending with the function that really was
// on the stack (as eu-addr2line -i shows them). A Python frame (trace version 7) has `python`
// set, its code object's qualified name and file in `at` (NULL only when out of memory) with its
// line (0: unknown), and no module, offset or inlining.
typedef struct nd_frame {
  uint64_t ip;        // the return address as recorded (a Python frame: code and line)
  const char *module; // path of the module holding ip, or NULL
  uint64_t offset;    // ip - the module's load bias
  nd_loc_t at;        // the call: function (ELF symbol, or the inlined function) and file:line
  nd_loc_t *inlined_into;
  uint32_t ninlined;
  bool python;
} nd_frame_t; // 72 bytes: a report may hold millions (one per distinct return address)

typedef struct nd_sym nd_sym_t;

// `debuginfo` false: never open a module (every frame prints as path+offset). A trace read on
// (nd_trace_update) may keep its nd_sym_t while no MODULE record was read: frames are cached per
// IP with the module that held it then, and modules by their index in t->mods. nd_sym_free is
// safe after the trace grew or was read again.
nd_sym_t *nd_sym_new(const nd_trace_t *t, bool debuginfo);
// The frame for `ip`; the pointer and its strings live until nd_sym_free. NULL only when out of
// memory.
const nd_frame_t *nd_sym_frame(nd_sym_t *s, uint64_t ip);
void nd_sym_free(nd_sym_t *s);
// Empties the frame cache when it holds more than `max_frames` frames (every pointer
// nd_sym_frame returned before is then invalid); the opened modules are kept. For a caller that
// uses each stack's frames once (merge), so that a trace of millions of distinct return
// addresses does not hold them all.
void nd_sym_trim(nd_sym_t *s, size_t max_frames);

// One module's symbols sorted by address, for lookups with dwfl_module_addrinfo's answers (the
// name of the symbol holding pc, or NULL) without its scan of the whole table on every call.
// nd_symidx_new returns NULL when the table cannot be read or memory runs out; nd_symidx_lookup
// then asks libdwfl. The names live as long as the module's Dwfl. Used by nd_sym_frame; exported
// for test_symidx, which compares the two on real libraries.
struct Dwfl_Module;
typedef struct nd_symidx nd_symidx_t;
nd_symidx_t *nd_symidx_new(struct Dwfl_Module *mod);
const char *nd_symidx_lookup(nd_symidx_t *x, struct Dwfl_Module *mod, uint64_t pc);
void nd_symidx_free(nd_symidx_t *x);

// A source path as a key for comparing frames across runs: `path` with its "." components, empty
// components and "dir/.." pairs taken out, lexically (no file is looked at), into out (cap
// bytes); ".." that climbs past the start of a relative path is kept, past "/" dropped. A path
// Python recorded as given (`python3 run1/../train.py`) compares equal to the same file named
// plainly. Returns out; a path too long for out is copied as it is (cut at cap - 1 bytes).
char *nd_sym_path_norm(char *out, size_t cap, const char *path);

// `name` demangled, in a new malloc'd string: a C++ linkage name ("_Z..."), keeping a symbol
// version ("@@GLIBCXX_3.4") and clone suffixes ("[clone .cold]") as the demangler gives them.
// NULL when `name` is not a C++ name, does not demangle, or this build has no demangler.
char *nd_sym_demangle(const char *name);

#endif
