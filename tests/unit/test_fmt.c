// SPDX-License-Identifier: MIT
// test_fmt: the allocation-free formatter prints integers and human sizes exactly, elides a long
// name in its middle between UTF-8 characters, and truncates an overlong line instead of
// overflowing its buffer; nd_buf_fmt, printf's subset, writes what printf writes.
#include "../check.h"
#include "fmt.h"

static const char *bytes(int64_t v) {
  static nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_bytes(&b, v);
  return nd_buf_cstr(&b);
}

int main(void) {
  CHECK_STR(bytes(0), "0 B");
  CHECK_STR(bytes(1023), "1023 B");
  CHECK_STR(bytes(1024), "1.00 KiB");
  CHECK_STR(bytes(1536), "1.50 KiB");
  CHECK_STR(bytes(1048575), "1024.00 KiB");
  CHECK_STR(bytes(1048576), "1.00 MiB");
  CHECK_STR(bytes(29491808), "28.13 MiB");
  CHECK_STR(bytes(8589934592LL), "8.00 GiB");
  CHECK_STR(bytes(-2048), "-2.00 KiB");
  CHECK_STR(bytes(INT64_MAX), "8.00 EiB");
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_i64(&b, INT64_MIN);
  nd_buf_char(&b, ' ');
  nd_buf_u64(&b, UINT64_MAX);
  nd_buf_char(&b, ' ');
  nd_buf_hex(&b, 0xdeadbeef);
  nd_buf_char(&b, ' ');
  nd_buf_u64_pad(&b, 42, 5);
  CHECK_STR(nd_buf_cstr(&b), "-9223372036854775808 18446744073709551615 0xdeadbeef    42");
  // nd_buf_fmt: each conversion of its subset as printf writes it, the rest as it stands.
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "[%s|%5s|%-5s|%.3s|%.*s|%c|%%]", "ab", "ab", "ab", "abcdef", 2, "xyz", 'q');
  CHECK_STR(nd_buf_cstr(&b), "[ab|   ab|ab   |abc|xy|q|%]");
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "%d %i %u %ld %lld %llu %zu", -7, 42, 4000000000u, -5L, (long long)INT64_MIN,
             (unsigned long long)UINT64_MAX, (size_t)123);
  CHECK_STR(nd_buf_cstr(&b), "-7 42 4000000000 -5 -9223372036854775808 18446744073709551615 123");
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "%4d|%-4d|%04d|%*u|%x|%08llx|%p|%s", -3, 7, -3, 3, 9u, 0xbeefu, 0xabcull,
             (void *)0x1000, (const char *)NULL);
  CHECK_STR(nd_buf_cstr(&b), "  -3|7   |-003|  9|beef|00000abc|0x1000|(null)");
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "peak %s (%lld B)", ND_BYTES(1536), 1536LL);
  CHECK_STR(nd_buf_cstr(&b), "peak 1.50 KiB (1536 B)");
  const char *odd = "a%qb%"; // outside the subset, and a lone % at the end: written as they stand
  nd_buf_reset(&b);
  nd_buf_fmt(&b, odd, 1);
  CHECK_STR(nd_buf_cstr(&b), "a%qb%");
  // Elided names: whole up to max bytes; beyond, head "..." tail in max bytes, never cutting a
  // UTF-8 character (here 2-byte ones: the cut moves to the boundary, so the result is shorter).
  nd_buf_reset(&b);
  nd_buf_elided(&b, "abcdefghij", 10, 10);
  CHECK_STR(nd_buf_cstr(&b), "abcdefghij");
  nd_buf_reset(&b);
  nd_buf_elided(&b, "abcdefghijk", 11, 10);
  CHECK_STR(nd_buf_cstr(&b), "abc...hijk");
  nd_buf_reset(&b);
  const char *u = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"; // six e-acute
  nd_buf_elided(&b, u, 12, 10);
  CHECK_STR(nd_buf_cstr(&b), "\xc3\xa9...\xc3\xa9\xc3\xa9");
  nd_buf_reset(&b);
  for (int i = 0; i < 5000; i++) nd_buf_char(&b, 'x');
  CHECK_EQ(strlen(nd_buf_cstr(&b)), sizeof b.data - 1);
  return CHECK_DONE();
}
