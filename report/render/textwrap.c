// SPDX-License-Identifier: MIT
// textwrap.c: the 80-column stream of ndmemreport's text report (textwrap.h). Lines are kept
// until their '\n', then written broken where a reader expects it: after "; " (a new figure),
// after ", " or before " / ", before " (" or "  [", never between a number and its unit or a
// value and its exact form in parentheses ("28.23 MiB (29606488 B)"), and continued under the
// value of a "  label   value" line, the text of a "== " heading, or the detail indent of a
// "#N" entry. A word wider than the line is never cut.
#include "render/textwrap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct nd_wrap {
  FILE *out;
  char *line; // the line being written, not yet ended
  size_t len, cap;
  bool raw;   // written as it comes (nd_wrap_raw)
  bool oom;   // the line could not be kept: it is written as it comes
};
typedef struct nd_wrap wrap_t;

// Where a wrapped line continues: under the value of "  label   value", under the text of a
// "== " heading, at the indent of an entry's detail lines (6) for a "#N" entry, two columns in
// from a detail line's own indent.
static size_t wrap_indent(const char *s, size_t n) {
  if (n >= 3 && !memcmp(s, "== ", 3)) return 3;
  if (n && s[0] == '#') return 6;
  size_t k = 0;
  while (k < n && s[k] == ' ') k++;
  if (k == 2) {
    for (size_t i = 3; i + 1 < n && i < 40; i++) {
      if (s[i] != ' ' || s[i + 1] != ' ') continue;
      while (i < n && s[i] == ' ') i++;
      return i < n && i <= 40 ? i : 4;
    }
    return 4;
  }
  return k + 2;
}

// Columns of s[0, n): UTF-8 continuation bytes take none.
static size_t wrap_cols(const char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
  return c;
}

// Whether the space at s[i] must not break: after a bare number ("400 blocks", "3.000 s") or
// before an exact value in parentheses ("28.23 MiB (29606488 B)").
static bool wrap_glued(const char *s, size_t n, size_t i) {
  size_t w = i;
  while (w > 0 && s[w - 1] != ' ') w--;
  if (w < i && s[w] == '(') w++;
  if (w < i && s[w] == '~') w++;
  bool number = w < i && s[w] >= '0' && s[w] <= '9';
  for (size_t k = w; number && k < i; k++) number = (s[k] >= '0' && s[k] <= '9') || s[k] == '.';
  if (number) return true;
  if (i + 2 >= n || s[i + 1] != '(') return false;
  size_t k = i + 2 + (s[i + 2] == '~');
  if (k >= n || s[k] < '0' || s[k] > '9') return false;
  for (size_t e = k; e < n && e < i + 24; e++)
    if (s[e] == ')') return true;
  return false;
}

// Writes one line (without its '\n') broken to ND_WRAP_WIDTH. Where to break: a space outside
// parentheses, best after ';' (where the line holds at least a fifth of the width past the
// indent), then after ',' or before " / ", then before '(' or "  [" (two fifths); otherwise the
// last space outside parentheses, or the last space, that fits.
void nd_wrap_line(FILE *o, const char *s, size_t n) {
  size_t indent = wrap_indent(s, n), at = 0;
  bool first = true;
  int depth = 0; // parentheses open at s[at]
  while (at < n) {
    size_t lead = first ? 0 : indent;
    if (lead + wrap_cols(s + at, n - at) > ND_WRAP_WIDTH) {
      size_t best = 0, last = 0, outside = 0, avail = ND_WRAP_WIDTH - indent;
      int best_score = -1, d = depth, last_d = 0, best_d = 0;
      for (size_t i = at; i < n; i++) {
        if (i > at && lead + wrap_cols(s + at, i - at) > ND_WRAP_WIDTH && (last || best_score >= 0))
          break;
        if (s[i] == '(') d++;
        else if (s[i] == ')' && d > 0) d--;
        if (s[i] != ' ' || i == at || s[i - 1] == ' ' || (first && i <= indent) ||
            wrap_glued(s, n, i))
          continue;
        bool fits = lead + wrap_cols(s + at, i - at) <= ND_WRAP_WIDTH;
        if (!fits && !last) { // a word wider than the line: broken after it
          last = i;
          last_d = d;
          break;
        }
        last = i;
        last_d = d;
        if (!d) outside = i;
        int score = d > 0                                           ? 0
                    : s[i - 1] == ';'                               ? 3
                    : s[i - 1] == ',' || (s[i + 1] == '/' && s[i + 2] == ' ') ? 2
                    : s[i + 1] == '(' || (s[i + 1] == ' ' && s[i + 2] == '[') ? 1
                                                                    : 0;
        size_t used = wrap_cols(s + at, i - at) - (first ? indent : 0);
        if (score > 0 && used * 5 >= avail * (score == 3 ? 1 : 2) && score >= best_score) {
          best = i;
          best_score = score;
          best_d = d;
        }
      }
      if (best_score < 0 && outside) {
        best = outside;
        best_d = 0;
      } else if (best_score < 0) {
        best = last;
        best_d = last_d;
      }
      if (best) {
        fprintf(o, "%*s%.*s\n", (int)lead, "", (int)(best - at), s + at);
        at = best;
        depth = best_d;
        while (at < n && s[at] == ' ') at++;
        first = false;
        continue;
      }
    }
    fprintf(o, "%*s%.*s", (int)lead, "", (int)(n - at), s + at);
    break;
  }
  fputc('\n', o);
}

static ssize_t wrap_write(void *cookie, const char *buf, size_t n) {
  wrap_t *w = cookie;
  for (size_t i = 0; i < n; i++) {
    if (w->raw || w->oom) {
      fputc(buf[i], w->out);
      if (buf[i] == '\n') w->oom = false;
      continue;
    }
    if (buf[i] == '\n') {
      nd_wrap_line(w->out, w->line, w->len);
      w->len = 0;
      continue;
    }
    if (w->len == w->cap) {
      size_t cap = w->cap ? w->cap * 2 : 256;
      char *p = realloc(w->line, cap);
      if (!p) { // the rest of this line as it comes
        fwrite(w->line, 1, w->len, w->out);
        fputc(buf[i], w->out);
        w->len = 0;
        w->oom = true;
        continue;
      }
      w->line = p;
      w->cap = cap;
    }
    w->line[w->len++] = buf[i];
  }
  return ferror(w->out) ? -1 : (ssize_t)n;
}

static int wrap_close(void *cookie) {
  wrap_t *w = cookie;
  if (w->len) fwrite(w->line, 1, w->len, w->out); // an unended last line: as it is
  int rc = ferror(w->out) ? EOF : 0;
  free(w->line);
  free(w);
  return rc;
}

FILE *nd_wrap_open(FILE *out, nd_wrap_t **w) {
  wrap_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->out = out;
  static const cookie_io_functions_t io = {.write = wrap_write, .close = wrap_close};
  FILE *f = fopencookie(c, "w", io);
  if (!f) {
    free(c);
    return NULL;
  }
  *w = c;
  return f;
}

void nd_wrap_raw(FILE *f, nd_wrap_t *w, bool raw) {
  if (!w) return;
  fflush(f);
  w->raw = raw;
}
