// SPDX-License-Identifier: MIT
// units.c: numbers as every format prints them (render.h): sizes as the shim prints them, the
// start time, ratios, percentages of a limit, seconds, Python's version.
#include "render/render.h"

#include "fmt.h"

#include <time.h>

const char *nd_rep_human(char *out, size_t n, uint64_t v) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_ubytes(&b, v);
  snprintf(out, n, "%s", nd_buf_cstr(&b));
  return out;
}

void nd_rep_format_start(char *out, size_t n, uint64_t realtime_ns) {
  time_t sec = (time_t)(realtime_ns / 1000000000u);
  struct tm tm;
  if (!gmtime_r(&sec, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
    snprintf(out, n, "?");
}

// sum / peak to two decimals, rounded half up ("4.00"), or "n/a" for a zero peak.
void nd_rep_format_pct(char *out, size_t n, uint64_t v, uint64_t limit) {
  u128 m = (u128)v * 1000 / (limit ? limit : 1);
  if (m > (u128)UINT64_MAX) m = UINT64_MAX;
  snprintf(out, n, "%llu.%u %%", (unsigned long long)(m / 10), (unsigned)(m % 10));
}

void nd_rep_print_secs(FILE *o, uint64_t ns) {
  fprintf(o, "%llu.%03llu s", (unsigned long long)(ns / 1000000000u),
          (unsigned long long)(ns % 1000000000u / 1000000u));
}

void nd_rep_format_ratio(char *out, size_t n, uint64_t sum, uint64_t peak) {
  if (!peak) {
    snprintf(out, n, "n/a");
    return;
  }
  u128 h = ((u128)sum * 100 + peak / 2) / peak;
  snprintf(out, n, "%llu.%02u", (unsigned long long)(h / 100), (unsigned)(h % 100));
}

// PY_VERSION_HEX: major, minor, micro, then the release level (0xA alpha, 0xB beta, 0xC release
// candidate, 0xF final) and serial in the low byte.
void nd_rep_format_pyversion(char *out, size_t n, uint32_t hex) {
  if (!hex) {
    snprintf(out, n, "?");
    return;
  }
  unsigned level = hex >> 4 & 0xf, serial = hex & 0xf;
  const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : NULL;
  int k = snprintf(out, n, "%u.%u.%u", hex >> 24, hex >> 16 & 0xff, hex >> 8 & 0xff);
  if (tag && k >= 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, "%s%u", tag, serial);
}
