// SPDX-License-Identifier: MIT
// fmt.h: a tiny formatter into a fixed buffer, written out with write(2).
// printf can allocate (locale, wide and float conversions), so nothing on a hook path or at exit
// uses it. A line that overflows its buffer is truncated, never split or reallocated.
#ifndef ND_FMT_H
#define ND_FMT_H

#include <stddef.h>
#include <stdint.h>

typedef struct nd_buf {
  char data[1024];
  size_t len;
} nd_buf_t;

void nd_buf_reset(nd_buf_t *b);
void nd_buf_str(nd_buf_t *b, const char *s);
void nd_buf_strn(nd_buf_t *b, const char *s, size_t n);
void nd_buf_char(nd_buf_t *b, char c);
// The n bytes of s (UTF-8), or when longer than max (at least 8), their head and tail joined by
// "..." in max bytes, cut between characters: a long C++ name keeps its scope and its function.
void nd_buf_elided(nd_buf_t *b, const char *s, size_t n, size_t max);
void nd_buf_u64(nd_buf_t *b, uint64_t v);
void nd_buf_i64(nd_buf_t *b, int64_t v);
void nd_buf_u64_pad(nd_buf_t *b, uint64_t v, int width); // right-aligned in width
void nd_buf_hex(nd_buf_t *b, uint64_t v);                // 0x...
void nd_buf_bytes(nd_buf_t *b, int64_t v);               // human: "512 B", "1.50 KiB", "3.21 GiB"
void nd_buf_ubytes(nd_buf_t *b, uint64_t v);             // the same for the whole unsigned range
void nd_buf_flush(nd_buf_t *b, int fd);                  // write and reset
void nd_buf_line(nd_buf_t *b, int fd);                   // end the line, write and reset
const char *nd_buf_cstr(nd_buf_t *b);                    // NUL-terminated view (for tests)
// An errno's description, untranslated: strerror translates through gettext, which takes glibc's
// setlocale lock, and ndmem may run inside setlocale holding it (python.h tells the hang).
const char *nd_errno_text(int err);
// One stderr line about a file: "ndmem: WHAT 'PATH': nd_errno_text(err); THEN".
void nd_say_path_error(const char *what, const char *path, int err, const char *then);

#endif
