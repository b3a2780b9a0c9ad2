// SPDX-License-Identifier: MIT
// sbuf.h: a growable NUL-terminated string for ndmemreport's parts that build names before
// printing them (collapsed stacks' frame names, merge's per-site frame identities). An append
// that cannot grow the string sets `oom`, which sticks; the caller frees `p`.
#ifndef ND_SBUF_H
#define ND_SBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf_t;

void sb_put(sbuf_t *b, const char *s, size_t n);
// printf-style append of at most 1023 bytes (longer output is cut there)
void sb_fmt(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
