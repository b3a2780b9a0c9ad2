// SPDX-License-Identifier: MIT
// names.c: memory kinds and code addresses in ndmem's own stderr lines (names.h). Native frames
// come from the loader's dynamic symbols (dladdr), Python frames from the markers python.c puts
// in stacks (interpose/common/trace_format.h), named from its interned code objects: never the raw marker.
#include "stacks/names.h"

#include "ndmem.h"
#include "common/trace_format.h"

#include <dlfcn.h>
#include <string.h>

nd_namers_t nd_namers;

// A Python frame's qualname and file from the code table; empty where it has none.
static void py_names(uint64_t ip, const char **q, size_t *ql, const char **f, size_t *fl) {
  if (!nd_namers.py_code || nd_namers.py_code(nd_pyframe_code(ip), q, ql, f, fl) != 0)
    *ql = *fl = 0;
}

static int has(const char *s, size_t n, const char *what) {
  size_t k = strlen(what);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(s + i, what, k) == 0) return 1;
  return 0;
}

// Code the program did not write: an installed package, the standard library, a frozen module.
static int py_library(uint64_t ip) {
  const char *q, *f;
  size_t ql, fl;
  py_names(ip, &q, &ql, &f, &fl);
  return (fl > 8 && memcmp(f, "<frozen ", 8) == 0) || has(f, fl, "/site-packages/") ||
         has(f, fl, "/dist-packages/") || has(f, fl, "/lib/python3.") || has(f, fl, "/lib/pypy");
}

// "qualname (file.py:LINE)" as ndmemreport prints a Python frame, with the file's base name (the
// modules of native frames are base names too); "?" for what the code table does not have.
static void py_frame(nd_buf_t *b, uint64_t ip) {
  const char *q = NULL, *f = NULL;
  size_t ql = 0, fl = 0;
  py_names(ip, &q, &ql, &f, &fl);
  if (ql) nd_buf_elided(b, q, ql, ND_PY_QUAL_MAX);
  else nd_buf_char(b, '?');
  nd_buf_str(b, " (");
  size_t base = fl;
  while (base && f[base - 1] != '/') base--;
  if (fl > base) nd_buf_elided(b, f + base, fl - base, ND_PY_FILE_MAX);
  else nd_buf_char(b, '?');
  uint32_t line = nd_pyframe_line(ip);
  if (line) {
    nd_buf_char(b, ':');
    nd_buf_u64(b, line);
  }
  nd_buf_char(b, ')');
}

// From the loader's dynamic symbols: a static function has none, so its module and offset.
void nd_buf_frame(nd_buf_t *b, uintptr_t ip) {
  if (nd_is_pyframe(ip)) {
    py_frame(b, ip);
    return;
  }
  Dl_info info;
  if (!dladdr((void *)ip, &info) || !info.dli_fname) {
    nd_buf_hex(b, ip);
    return;
  }
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  if (info.dli_sname) {
    if (!nd_namers.demangle || !nd_namers.demangle(b, info.dli_sname, ND_NAME_MAX))
      nd_buf_elided(b, info.dli_sname, strlen(info.dli_sname), ND_NAME_MAX);
    nd_buf_str(b, "+");
    nd_buf_hex(b, ip - (uintptr_t)info.dli_saddr);
    nd_buf_str(b, " (");
    nd_buf_str(b, base);
    nd_buf_str(b, ")");
  } else {
    nd_buf_str(b, base);
    nd_buf_str(b, "+");
    nd_buf_hex(b, ip - (uintptr_t)info.dli_fbase);
  }
}

void nd_buf_stack(nd_buf_t *b, const uintptr_t *ips, int depth, int native) {
  int shown = 0, py = -1;
  for (int i = 0; i < depth && py < 0; i++) {
    if (nd_is_pyframe(ips[i])) {
      py = i;
    } else if (ips[i] != ND_FRAME_CUT && shown < native) {
      if (shown++) nd_buf_str(b, " <- ");
      nd_buf_frame(b, ips[i]);
    }
  }
  if (py < 0) return;
  nd_buf_str(b, shown ? "; Python: " : "Python: ");
  nd_buf_frame(b, ips[py]);
  if (!py_library(ips[py])) return;
  for (int i = py + 1; i < depth; i++) // np.ones is Python too: the line that called it
    if (nd_is_pyframe(ips[i]) && !py_library(ips[i])) {
      nd_buf_str(b, " <- ");
      nd_buf_frame(b, ips[i]);
      return;
    }
}
