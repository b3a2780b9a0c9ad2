// SPDX-License-Identifier: MIT
// place.c: where a site is (place.h): the program's own innermost frame, found by one rule for
// Python and native stacks, and the library frame beside it; both in one line for every format.
#include "analyse/place.h"

#include "analyse/flame.h"

#include <stdlib.h>
#include <string.h>

// A path with a component named `dir` ("/usr/lib/x.so" has "lib").
static bool has_dir(const char *path, const char *dir) {
  size_t n = strlen(dir);
  for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
    if (!strncmp(p + 1, dir, n) && p[1 + n] == '/') return true;
  return false;
}

static bool interpreter(const char *path) {
  const char *b = nd_rep_base_name(path);
  return !strncmp(b, "python", 6) || !strncmp(b, "pypy", 4);
}

bool nd_rep_program_module(const nd_trace_t *t, const char *module) {
  if (!module || !*module) return false;
  if (*t->exe && !strcmp(module, t->exe)) return !interpreter(module);
  static const char *const libdirs[] = {"lib", "lib32", "lib64", "libexec", "site-packages",
                                        "dist-packages"};
  for (size_t i = 0; i < sizeof libdirs / sizeof *libdirs; i++)
    if (has_dir(module, libdirs[i])) return false;
  // No path: the vdso ("linux-vdso.so.1"); the runtimes wherever they lie; an interpreter's
  // binary outside a bin folder
  return strchr(module, '/') && !nd_flame_runtime_module(module) && !interpreter(module);
}

int nd_rep_place(report_t *r, uint32_t stack, nd_rep_place_t *p) {
  const nd_trace_t *t = r->t;
  const nd_stack_t *s = &t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(t, s);
  *p = (nd_rep_place_t){.own_at = -1, .lib_at = -1};
  long py = nd_rep_py_innermost(t, s);
  int best = 0; // of lib_at: 3 a function, 2 a module's offset, 1 an address outside every module
  for (size_t i = 0; i < s->depth; i++) {
    bool is_py = nd_trace_is_pyframe(t, ips[i]);
    if (py >= 0 && !is_py) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    bool own = is_py ? !nd_rep_py_library(f->at.file) : nd_rep_program_module(t, f->module);
    if (own && p->own_at < 0) p->own = f, p->own_at = (long)i;
    if (is_py) {
      if (p->lib_at < 0) p->lib = f, p->lib_at = (long)i;
    } else if (best < 3 && !(f->module && nd_flame_runtime_module(f->module))) {
      int rank = !f->module ? 1 : f->at.function ? 3 : 2;
      if (rank > best) p->lib = f, p->lib_at = (long)i, best = rank;
    }
    if (p->own_at >= 0 && (py >= 0 ? p->lib_at >= 0 : best == 3)) break;
  }
  if (p->lib_at < 0 && s->depth) { // every frame a runtime's: the innermost
    if (!(p->lib = nd_sym_frame(r->sym, ips[0]))) return -1;
    p->lib_at = 0;
  }
  // Beside the program's frame only a frame it called (inner): an outer one named nothing more
  if (p->own && p->lib_at >= p->own_at) p->lib = NULL, p->lib_at = -1;
  return 0;
}

// A Python frame's file:line, or a native frame's where its debugging information gives one.
static bool put_line(sbuf_t *b, const nd_frame_t *f) {
  if (!f->at.file || !*f->at.file) return false;
  const char *file = nd_rep_base_name(f->at.file);
  sb_put(b, file, strlen(file));
  if (f->at.line) sb_fmt(b, ":%d", f->at.line);
  return true;
}

static void put_own(sbuf_t *b, const nd_frame_t *f) {
  const char *fn = f->at.function && *f->at.function ? f->at.function : NULL;
  if (put_line(b, f)) {
    if (fn && strcmp(fn, "<module>")) {
      sb_put(b, " (", 2);
      sb_put(b, fn, strlen(fn));
      sb_put(b, ")", 1);
    }
  } else if (fn) {
    sb_put(b, fn, strlen(fn));
  } else if (f->module) {
    const char *m = nd_rep_base_name(f->module);
    sb_put(b, m, strlen(m));
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  } else { // a Python frame whose code object names no file or function (a garbled trace's)
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  }
}

static void put_lib(sbuf_t *b, const nd_frame_t *f) {
  if (f->python) {
    const char *fn = f->at.function && *f->at.function ? f->at.function : "?";
    sb_put(b, fn, strlen(fn));
    sb_put(b, " (", 2);
    if (!put_line(b, f)) sb_put(b, "?", 1);
    sb_put(b, ")", 1);
  } else if (!f->module && !f->at.function) {
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  } else if (f->at.function) { // (a module-less one: the mark of frames cut at NDMEM_DEPTH)
    sb_put(b, f->at.function, strlen(f->at.function));
  } else {
    const char *m = nd_rep_base_name(f->module);
    sb_put(b, m, strlen(m));
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  }
}

int nd_rep_place_text(sbuf_t *b, const nd_rep_place_t *p) {
  sb_put(b, "", 0);
  if (p->own) put_own(b, p->own);
  if (p->own && p->lib) sb_put(b, ", in ", 5);
  if (p->lib) put_lib(b, p->lib);
  if (!p->own && !p->lib) sb_put(b, "(no frames)", 11);
  if (!b->oom) return 0;
  free(b->p);
  b->p = NULL;
  return -1;
}
