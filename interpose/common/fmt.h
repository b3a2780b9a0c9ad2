// SPDX-License-Identifier: MIT
// fmt.h: a tiny formatter into a fixed buffer, written out with write(2), and the parser of sizes
// as users write them (NDMEM_* variables, ndmemreport's size options).
// printf can allocate (locale, wide and float conversions), so nothing on a hook path or at exit
// uses it. A line that overflows its buffer is truncated, never split or reallocated.
#ifndef ND_FMT_H
#define ND_FMT_H

#include <stdarg.h>
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
// printf's subset, without allocating (as mimalloc's _mi_vsnprintf): %s %c %d %i %u %x %p %%,
// the length modifiers l, ll and z, a width (digits or *, '-' to pad on the right, '0' to pad
// numbers with zeros) and a precision for %s (.N or .*: at most N bytes). Anything else is
// written as it stands. Checked by the compiler like printf.
__attribute__((format(printf, 2, 3))) void nd_buf_fmt(nd_buf_t *b, const char *fmt, ...);
void nd_buf_vfmt(nd_buf_t *b, const char *fmt, va_list ap);
// A human size for a %s: nd_bytes_text(ND_BYTES_BUF, v) writes into a buffer that lives until
// the end of the enclosing block ("512 B", "1.50 KiB"; as nd_buf_bytes).
#define ND_BYTES_MAX 24
#define ND_BYTES(v) nd_bytes_text((char[ND_BYTES_MAX]){0}, (v))
const char *nd_bytes_text(char out[ND_BYTES_MAX], int64_t v);
void nd_buf_flush(nd_buf_t *b, int fd);                  // write and reset
void nd_buf_line(nd_buf_t *b, int fd);                   // end the line, write and reset
const char *nd_buf_cstr(nd_buf_t *b);                    // NUL-terminated view (for tests)
// An errno's description, untranslated: strerror translates through gettext, which takes glibc's
// setlocale lock, and ndmem may run inside setlocale holding it (python.h tells the hang).
const char *nd_errno_text(int err);
// One stderr line about a file: "ndmem: WHAT 'PATH': nd_errno_text(err); THEN".
void nd_say_path_error(const char *what, const char *path, int err, const char *then);

// Sizes: "1073741824", "512k", "512KB", "512KiB", "8G", "1.5g", "75%" (of percent_base; an error
// when percent_base is 0). Binary multiples (k = 1024), case-insensitive; fractions round down to a
// whole byte. Overflow past 2^63-1 is an error. 0, or -1 on a bad value (*out untouched).
int nd_parse_size(const char *s, uint64_t percent_base, int64_t *out);

#endif
