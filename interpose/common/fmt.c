// SPDX-License-Identifier: MIT
// fmt.c: fixed-buffer formatting (see fmt.h). Human sizes use binary units with two decimals,
// computed in integers so no floating-point formatting code is involved; sizes users write are
// parsed the same way, in integers.
#include "fmt.h"

#include "os.h"

#include <string.h>

__extension__ typedef unsigned __int128 nd_u128;

void nd_buf_reset(nd_buf_t *b) { b->len = 0; }

void nd_buf_strn(nd_buf_t *b, const char *s, size_t n) {
  for (size_t i = 0; i < n && s[i] && b->len < sizeof b->data - 1; i++) b->data[b->len++] = s[i];
}

void nd_buf_str(nd_buf_t *b, const char *s) { nd_buf_strn(b, s, (size_t)-1); }

void nd_buf_char(nd_buf_t *b, char c) {
  if (b->len < sizeof b->data - 1) b->data[b->len++] = c;
}

static int utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

void nd_buf_elided(nd_buf_t *b, const char *s, size_t n, size_t max) {
  if (n <= max) {
    nd_buf_strn(b, s, n);
    return;
  }
  size_t head = (max - 3) / 2, tail = max - 3 - head;
  while (head && utf8_cont(s[head])) head--; // s[head] is the first byte left out
  size_t from = n - tail;
  while (from < n && utf8_cont(s[from])) from++;
  nd_buf_strn(b, s, head);
  nd_buf_str(b, "...");
  nd_buf_strn(b, s + from, n - from);
}

void nd_buf_u64_pad(nd_buf_t *b, uint64_t v, int width) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (int i = n; i < width; i++) nd_buf_char(b, ' ');
  while (n) nd_buf_char(b, tmp[--n]);
}

void nd_buf_u64(nd_buf_t *b, uint64_t v) { nd_buf_u64_pad(b, v, 0); }

void nd_buf_i64(nd_buf_t *b, int64_t v) {
  if (v < 0) {
    nd_buf_char(b, '-');
    nd_buf_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    nd_buf_u64(b, (uint64_t)v);
  }
}

void nd_buf_hex(nd_buf_t *b, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = digits[v & 15];
    v >>= 4;
  } while (v);
  nd_buf_str(b, "0x");
  while (n) nd_buf_char(b, tmp[--n]);
}

void nd_buf_bytes(nd_buf_t *b, int64_t sv) {
  if (sv < 0) nd_buf_char(b, '-');
  nd_buf_ubytes(b, sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv);
}

void nd_buf_ubytes(nd_buf_t *b, uint64_t v) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (v < 1024) {
    nd_buf_u64(b, v);
    nd_buf_str(b, " B");
    return;
  }
  int u = 0;
  uint64_t div = 1;
  while (u < 6 && v / div >= 1024) {
    div *= 1024;
    u++;
  }
  // two decimals, rounded half up, in integer arithmetic; 1023.999 KiB rounds to 1024.00 KiB
  nd_u128 hundredths = ((nd_u128)v * 100 + div / 2) / div;
  nd_buf_u64(b, (uint64_t)(hundredths / 100));
  nd_buf_char(b, '.');
  nd_buf_u64_pad(b, (uint64_t)(hundredths % 100) / 10, 0);
  nd_buf_u64_pad(b, (uint64_t)(hundredths % 10), 0);
  nd_buf_char(b, ' ');
  nd_buf_str(b, units[u]);
}

const char *nd_bytes_text(char out[ND_BYTES_MAX], int64_t v) {
  nd_buf_t t;
  nd_buf_reset(&t);
  nd_buf_bytes(&t, v);
  size_t n = t.len < ND_BYTES_MAX - 1 ? t.len : ND_BYTES_MAX - 1;
  memcpy(out, t.data, n);
  out[n] = 0;
  return out;
}

static void pad(nd_buf_t *b, int n, char c) {
  while (n-- > 0) nd_buf_char(b, c);
}

// A number's digits (base 10 or 16) with its sign, padded to width.
static void number(nd_buf_t *b, uint64_t v, int neg, int base, int width, int left, int zero) {
  char d[24];
  int n = 0;
  do {
    d[n++] = "0123456789abcdef"[v % (unsigned)base];
    v /= (unsigned)base;
  } while (v);
  int len = n + neg;
  if (!left && !zero) pad(b, width - len, ' ');
  if (neg) nd_buf_char(b, '-');
  if (!left && zero) pad(b, width - len, '0');
  while (n) nd_buf_char(b, d[--n]);
  if (left) pad(b, width - len, ' ');
}

void nd_buf_vfmt(nd_buf_t *b, const char *f, va_list ap) {
  for (; *f; f++) {
    if (*f != '%') {
      nd_buf_char(b, *f);
      continue;
    }
    const char *start = f++;
    int left = 0, zero = 0, width = 0, prec = -1, lng = 0;
    for (; *f == '-' || *f == '0'; f++) *f == '-' ? (left = 1) : (zero = 1);
    if (*f == '*') {
      width = va_arg(ap, int);
      if (width < 0) left = 1, width = -width;
      f++;
    } else {
      while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
    }
    if (*f == '.') {
      f++;
      prec = 0;
      if (*f == '*') prec = va_arg(ap, int), f++;
      else
        while (*f >= '0' && *f <= '9') prec = prec * 10 + (*f++ - '0');
    }
    for (; *f == 'l' || *f == 'z'; f++) lng = *f == 'z' ? 2 : lng + 1;
    switch (*f) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s) s = "(null)";
      size_t n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
      if (!left) pad(b, width - (int)n, ' ');
      nd_buf_strn(b, s, n);
      if (left) pad(b, width - (int)n, ' ');
      break;
    }
    case 'c': nd_buf_char(b, (char)va_arg(ap, int)); break;
    case 'd':
    case 'i': {
      long long v = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
      number(b, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0, 10, width,
             left, zero);
      break;
    }
    case 'u':
    case 'x': {
      unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
                             : lng     ? va_arg(ap, unsigned long)
                                       : va_arg(ap, unsigned);
      number(b, v, 0, *f == 'u' ? 10 : 16, width, left, zero);
      break;
    }
    case 'p': nd_buf_hex(b, (uint64_t)(uintptr_t)va_arg(ap, void *)); break;
    case '%': nd_buf_char(b, '%'); break;
    default: // not a conversion of this subset: written as it stands
      nd_buf_strn(b, start, (size_t)(f - start) + (*f != 0));
      if (!*f) return;
    }
  }
}

void nd_buf_fmt(nd_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  nd_buf_vfmt(b, fmt, ap);
  va_end(ap);
}

void nd_buf_line(nd_buf_t *b, int fd) {
  nd_buf_char(b, '\n');
  nd_buf_flush(b, fd);
}

void nd_buf_flush(nd_buf_t *b, int fd) {
  nd_os_write_all(fd, b->data, b->len);
  b->len = 0;
}

const char *nd_buf_cstr(nd_buf_t *b) {
  b->data[b->len] = 0;
  return b->data;
}

const char *nd_errno_text(int err) {
  const char *s = strerrordesc_np(err);
  return s ? s : "unknown error";
}

void nd_say_path_error(const char *what, const char *path, int err, const char *then) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "ndmem: %s '%.600s': %s; %s", what, path, nd_errno_text(err), then);
  nd_buf_line(&b, 2);
}

// ---------------------------------------------------------------- sizes as users write them

static int size_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int size_ieq(const char *a, const char *b) {
  while (*a && *b && size_lower((unsigned char)*a) == size_lower((unsigned char)*b)) a++, b++;
  return *a == 0 && *b == 0;
}

int nd_parse_size(const char *s, uint64_t percent_base, int64_t *out) {
  // value = whole + frac_num / frac_den, both exact integers; 19 fraction digits at most.
  nd_u128 whole = 0, frac_num = 0, frac_den = 1;
  int digits = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    whole = whole * 10 + (unsigned)(*s - '0');
    if (whole > (nd_u128)INT64_MAX) return -1;
  }
  if (*s == '.') {
    s++;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
      if (frac_den < (nd_u128)1e18) {
        frac_num = frac_num * 10 + (unsigned)(*s - '0');
        frac_den *= 10;
      }
    }
  }
  if (!digits) return -1;
  nd_u128 mul = 1, div = 1;
  if (*s == '%') {
    if (!percent_base || s[1]) return -1;
    mul = percent_base;
    div = 100;
  } else if (*s) {
    static const char *const names[][3] = {
        {"k", "kb", "kib"}, {"m", "mb", "mib"}, {"g", "gb", "gib"}, {"t", "tb", "tib"}};
    int found = size_ieq(s, "b") ? 0 : -1;
    for (int u = 0; u < 4 && found < 0; u++)
      for (int f = 0; f < 3; f++)
        if (size_ieq(s, names[u][f])) found = u + 1;
    if (found < 0) return -1;
    for (int u = 0; u < found; u++) mul *= 1024;
  }
  nd_u128 v = (whole * mul) / div + (frac_num * mul) / (frac_den * div);
  if (v > (nd_u128)INT64_MAX) return -1;
  *out = (int64_t)v;
  return 0;
}
