// SPDX-License-Identifier: MIT
// escape.c: text from a trace made safe for each output (render.h): a terminal's line (control
// bytes as \xNN), a JSON string (strict UTF-8), HTML and SVG (escaped, strict UTF-8). A trace may
// name anything: a path, a host, a function are bytes the report must never pass through raw.
#include "render/render.h"

#include <stdint.h>
#include <string.h>

// ---------------------------------------------------------------- a terminal's line

void nd_rep_no_controls(char *s) {
  for (unsigned char *c = (unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f) *c = '?';
}

// Text from the trace (paths, host names) with control bytes shown as \xNN.
void nd_rep_print_text(FILE *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f) fprintf(o, "\\x%02x", *p);
    else fputc(*p, o);
  }
}

// ---------------------------------------------------------------- JSON

int nd_rep_utf8_len(const unsigned char *p, uint32_t *cp) {
  unsigned c = p[0];
  int n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4
                                                                                            : 0;
  *cp = c;
  if (n <= 1) return n;
  *cp = c & (0x7fu >> n);
  for (int i = 1; i < n; i++) { // a NUL ends the string before any byte past it is read
    if ((p[i] & 0xc0) != 0x80) return 0;
    *cp = *cp << 6 | (p[i] & 0x3f);
  }
  static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (*cp < least[n] || (*cp >= 0xd800 && *cp <= 0xdfff) || *cp > 0x10ffff) return 0;
  return n;
}

// JSON string: escapes, and valid UTF-8 only (an invalid byte becomes U+FFFD).
void nd_rep_json_str(FILE *o, const char *s) {
  if (!s) {
    fputs("null", o);
    return;
  }
  fputc('"', o);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', o);
      fputc((int)c, o);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(o, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      fputc((int)c, o);
      p++;
    } else {
      uint32_t cp;
      int n = nd_rep_utf8_len(p, &cp);
      if (n) {
        fwrite(p, 1, (size_t)n, o);
        p += n;
      } else {
        fputs("\\ufffd", o);
        p++;
      }
    }
  }
  fputc('"', o);
}

// ---------------------------------------------------------------- HTML and SVG

// Text from the trace, HTML-escaped. What HTML calls a parse error in its input stream is shown
// as \xNN per byte (as text shows control bytes), never raw: control characters (C0, DEL, C1),
// noncharacters, and bytes that are not well-formed UTF-8. The page is then strict UTF-8 and
// parses as XML would.
void nd_html_esc(FILE *o, const char *s) { nd_html_esc_chars(o, s, SIZE_MAX); }

// The character at p: its bytes (*n, at least 1) and whether it is shown as \xNN per byte.
static bool html_bad(const unsigned char *p, int *n) {
  uint32_t cp;
  int k = nd_rep_utf8_len(p, &cp);
  *n = k ? k : 1;
  return !k || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xfdd0 && cp <= 0xfdef) ||
         (cp & 0xfffe) == 0xfffe;
}

// Widths count what is shown: a character, or 4 for each byte shown as \xNN.
void nd_html_esc_chars(FILE *o, const char *s, size_t max) {
  size_t chars = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int n;
    bool bad = html_bad(p, &n);
    size_t w = bad ? 4 * (size_t)n : 1;
    if (max != SIZE_MAX && chars + w > max) {
      fputs("..", o);
      return;
    }
    chars += w;
    if (bad) {
      for (int i = 0; i < n; i++) fprintf(o, "\\x%02x", p[i]);
      p += n;
      continue;
    }
    switch (*p) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fwrite(p, 1, (size_t)n, o);
    }
    p += n;
  }
}

size_t nd_html_chars(const char *s) {
  size_t chars = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int n;
    chars += html_bad(p, &n) ? 4 * (size_t)n : 1;
    p += n;
  }
  return chars;
}

