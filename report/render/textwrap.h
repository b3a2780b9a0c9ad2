// SPDX-License-Identifier: MIT
// textwrap.h: a stdio stream that writes to another with every line wider than ND_WRAP_WIDTH
// columns broken and continued under the value it belongs to (textwrap.c says where), as
// ndmemreport's --help is laid out. Between nd_wrap_raw(.., true) and (.., false) text passes
// as it is: frames, whose function names and paths are copied from the report whole.
#ifndef ND_TEXTWRAP_H
#define ND_TEXTWRAP_H

#include <stdbool.h>
#include <stdio.h>

#define ND_WRAP_WIDTH 80

typedef struct nd_wrap nd_wrap_t;

// The wrapping stream over `out`, its state in *w; NULL when out of memory. fclose flushes
// it (an unended last line as it is) and frees the state; write errors show on `out`.
FILE *nd_wrap_open(FILE *out, nd_wrap_t **w);

// Text written to f from now on passes as it is (raw) or is wrapped again. No-op for w NULL.
void nd_wrap_raw(FILE *f, nd_wrap_t *w, bool raw);

// One line (s[0, n), without its '\n') written to o broken as the stream breaks it.
void nd_wrap_line(FILE *o, const char *s, size_t n);

#endif
