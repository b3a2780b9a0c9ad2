// SPDX-License-Identifier: MIT
// test_names: the frames of ndmem's live lines (interpose/stacks/names.c), exactly: a Python frame is
// "qualname (file.py:LINE)" from the code table (its file's base name; "?" for what the table
// does not have; never the raw marker), a stack shows its first native frames up to the first
// Python frame and then the innermost Python frame (and the program's own innermost one after
// it when that one is library code), a long name keeps its head and tail, and a
// symbol goes through the demangler the shim gives (here a stand-in that knows one name).
#include "../check.h"
#include "stacks/names.h"
#include "trace_format.h"

#include <string.h>

static const char *const quals[] = {"Model.forward", "<module>", "", "f", "ones", "_load",
                                    "dumps"};
static const char *const files[] = {"/srv/job/model.py", "grow.py", "", "/x/",
                                    "/usr/lib/python3/dist-packages/numpy/core/numeric.py",
                                    "<frozen importlib._bootstrap>",
                                    "/root/.pyenv/versions/3.12.1/lib/python3.12/json/__init__.py"};

static int py_code(uint64_t id, const char **q, size_t *ql, const char **f, size_t *fl) {
  if (id >= sizeof quals / sizeof quals[0]) return -1;
  *q = quals[id], *ql = strlen(quals[id]);
  *f = files[id], *fl = strlen(files[id]);
  return 0;
}

static int demangled; // calls of the stand-in demangler
static int demangle(nd_buf_t *b, const char *sym, size_t max) {
  demangled++;
  if (strcmp(sym, "names_target") != 0) return 0;
  const char *d = "demo::Pool::grab(unsigned long)";
  nd_buf_elided(b, d, strlen(d), max);
  return 1;
}

// An exported function of this program (-rdynamic): dladdr names it.
__attribute__((noinline, visibility("default"))) int names_target(int x) { return x * 3 + 1; }
static __attribute__((noinline)) int hidden_fn(int x) { return x * 5 + 2; }

static const char *stack(const uintptr_t *ips, int depth, int native) {
  static nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_stack(&b, ips, depth, native);
  return nd_buf_cstr(&b);
}

static const char *frame(uintptr_t ip) {
  static nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_frame(&b, ip);
  return nd_buf_cstr(&b);
}

int main(void) {
  uintptr_t fwd = (uintptr_t)nd_pyframe(0, 42), mod = (uintptr_t)nd_pyframe(1, 7);

  // Without the shim's namers: a Python frame's line is still said, the names are "?".
  CHECK_STR(frame(fwd), "? (?:42)");
  nd_namers.py_code = py_code;
  CHECK_STR(frame(fwd), "Model.forward (model.py:42)");
  CHECK_STR(frame(mod), "<module> (grow.py:7)");
  CHECK_STR(frame((uintptr_t)nd_pyframe(0, 0)), "Model.forward (model.py)"); // line unknown
  CHECK_STR(frame((uintptr_t)nd_pyframe(2, 3)), "? (?:3)");                  // empty strings
  CHECK_STR(frame((uintptr_t)nd_pyframe(3, 3)), "f (?:3)");                  // a path ending in /
  CHECK_STR(frame((uintptr_t)nd_pyframe(99, 5)), "? (?:5)");                 // not interned

  // Native frames: a symbol of the program, demangled by the namer; a static function has no
  // dynamic symbol: the module and offset; an address in no module.
  uintptr_t at = (uintptr_t)names_target + 4, in_hidden = (uintptr_t)hidden_fn + 4;
  CHECK_STR(frame(at), "names_target+0x4 (test_names)");
  nd_namers.demangle = demangle;
  CHECK_STR(frame(at), "demo::Pool::grab(unsigned long)+0x4 (test_names)");
  CHECK(demangled == 1);
  CHECK(strncmp(frame(in_hidden), "test_names+0x", 13) == 0);
  CHECK(demangled == 1); // no symbol, nothing to demangle
  CHECK_STR(frame(8), "0x8");

  // Stacks: native frames up to the first Python frame, at most `native` of them, then the
  // innermost Python frame; one that begins with a Python frame; one without any.
  uintptr_t s1[] = {at, in_hidden, at, fwd, mod};
  char want[512];
  snprintf(want, sizeof want, "demo::Pool::grab(unsigned long)+0x4 (test_names) <- %s; Python: "
                              "Model.forward (model.py:42)", frame(in_hidden));
  CHECK_STR(stack(s1, 5, 2), want);
  snprintf(want, sizeof want, "demo::Pool::grab(unsigned long)+0x4 (test_names); Python: "
                              "Model.forward (model.py:42)");
  CHECK_STR(stack(s1, 5, 1), want);
  uintptr_t s2[] = {mod, fwd, at};
  CHECK_STR(stack(s2, 3, 3), "Python: <module> (grow.py:7)");
  CHECK_STR(stack(s1, 2, 1), "demo::Pool::grab(unsigned long)+0x4 (test_names)");
  CHECK_STR(stack(s1, 0, 3), "");
  CHECK(strstr(stack(s1, 5, 3), "0x8000") == NULL); // never a raw marker

  // The innermost Python frame in library code (an installed package, the standard library, a
  // frozen module) is followed by the program's own innermost line; all library: that one alone.
  uintptr_t ones = (uintptr_t)nd_pyframe(4, 205), load = (uintptr_t)nd_pyframe(5, 1),
            dumps = (uintptr_t)nd_pyframe(6, 231);
  uintptr_t s3[] = {at, ones, load, dumps, mod, fwd};
  CHECK_STR(stack(s3, 6, 1), "demo::Pool::grab(unsigned long)+0x4 (test_names); Python: "
                             "ones (numeric.py:205) <- <module> (grow.py:7)");
  CHECK_STR(stack(s3, 4, 1), "demo::Pool::grab(unsigned long)+0x4 (test_names); Python: "
                             "ones (numeric.py:205)");
  uintptr_t s4[] = {dumps, fwd};
  CHECK_STR(stack(s4, 2, 2), "Python: dumps (__init__.py:231) <- Model.forward (model.py:42)");
  uintptr_t s5[] = {load, ones};
  CHECK_STR(stack(s5, 2, 2), "Python: _load (<frozen importlib._bootstrap>:1)");

  // Long names keep their head and tail within the limit, cut between UTF-8 characters.
  nd_buf_t b;
  char name[300];
  memset(name, 'a', sizeof name);
  memcpy(name, "ns::", 4);
  memcpy(name + sizeof name - 6, "f(int)", 6);
  nd_buf_reset(&b);
  nd_buf_elided(&b, name, sizeof name, ND_NAME_MAX);
  CHECK_EQ(b.len, ND_NAME_MAX);
  const char *e = nd_buf_cstr(&b);
  CHECK(strncmp(e, "ns::aaa", 7) == 0);
  CHECK(strstr(e, "aaa...aaa") != NULL);
  CHECK(strcmp(e + b.len - 6, "f(int)") == 0);
  return CHECK_DONE();
}
