// SPDX-License-Identifier: MIT
// fuzz_reader: a libFuzzer target for the trace reader and every ndmemreport view. An input is a
// trace file as is: it goes into a memfd (nothing is written to disk) and nd_report_main() reads
// it by /proc/self/fd/N as text, JSON, workspaces, limits and brief reports, with --no-symbols.
// Beyond sanitizer reports it aborts, so that libFuzzer keeps the input, when a report breaks
// ndmemreport's contract (see LLVMFuzzerTestOneInput). A custom mutator knows the records.
// Long runs and artifacts: docs/tests.md, Fuzzing.
#include "ndmemreport.h"
#include "trace_format.h"
#include "fuzz_verdict.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// ---------------------------------------------------------------- a strict JSON syntax check

typedef struct js {
  const unsigned char *p, *end;
} js_t;

static void js_ws(js_t *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
    j->p++;
}

static bool js_lit(js_t *j, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, s, n)) return false;
  j->p += n;
  return true;
}

static bool js_digits(js_t *j) {
  const unsigned char *s = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  return j->p > s;
}

static bool js_number(js_t *j) {
  if (j->p < j->end && *j->p == '-') j->p++;
  if (j->p < j->end && *j->p == '0') j->p++;
  else if (!js_digits(j)) return false;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!js_digits(j)) return false;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (!js_digits(j)) return false;
  }
  return true;
}

// A string: escapes as RFC 8259 has them, no raw control bytes, valid UTF-8 only.
static bool js_string(js_t *j) {
  if (j->p >= j->end || *j->p != '"') return false;
  j->p++;
  while (j->p < j->end) {
    unsigned c = *j->p++;
    if (c == '"') return true;
    if (c < 0x20) return false;
    if (c == '\\') {
      if (j->p >= j->end) return false;
      c = *j->p++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++, j->p++)
          if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p) return false;
      } else if (!c || !strchr("\"\\/bfnrt", (int)c)) {
        return false;
      }
      continue;
    }
    if (c < 0x80) continue;
    int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xc2 && c <= 0xdf;
    if (!n || j->end - j->p < n) return false;
    uint32_t cp = c & (0x3fu >> n);
    for (int i = 0; i < n; i++) {
      if ((j->p[i] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (j->p[i] & 0x3fu);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    j->p += n;
  }
  return false;
}

static bool js_value(js_t *j, int depth) {
  if (depth > 64) return false;
  js_ws(j);
  if (j->p >= j->end) return false;
  unsigned char c = *j->p;
  if (c == '{' || c == '[') {
    unsigned char close = c == '{' ? '}' : ']';
    j->p++;
    js_ws(j);
    if (j->p < j->end && *j->p == close) {
      j->p++;
      return true;
    }
    for (;;) {
      if (c == '{') {
        js_ws(j);
        if (!js_string(j)) return false;
        js_ws(j);
        if (j->p >= j->end || *j->p++ != ':') return false;
      }
      if (!js_value(j, depth + 1)) return false;
      js_ws(j);
      if (j->p >= j->end) return false;
      if (*j->p == close) {
        j->p++;
        return true;
      }
      if (*j->p++ != ',') return false;
    }
  }
  if (c == '"') return js_string(j);
  if (c == 't') return js_lit(j, "true");
  if (c == 'f') return js_lit(j, "false");
  if (c == 'n') return js_lit(j, "null");
  return js_number(j);
}

// One JSON object and nothing but white space after it; NULL, or where it went wrong.
static const char *json_error(const char *s, size_t n) {
  js_t j = {(const unsigned char *)s, (const unsigned char *)s + n};
  js_ws(&j);
  if (j.p >= j.end || *j.p != '{') return s;
  if (!js_value(&j, 0)) return (const char *)j.p;
  js_ws(&j);
  return j.p == j.end ? NULL : (const char *)j.p;
}

// ---------------------------------------------------------------- a record-aware mutator

// libFuzzer's byte-level mutations seldom put one exact value into one field of one record (a
// SITE's kind at 20, a BREACH's function at 15). Half of the mutations here walk the records
// and change a field of one (a boundary value, the value +/- 1, or the same field of another
// record), a record header (tag, size), or whole records (drop, repeat, move); the other half are
// libFuzzer's own.
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define MAX_RECS 4096

static uint64_t mut_rng;

static uint64_t mut_next(void) { // xorshift64*
  mut_rng ^= mut_rng >> 12;
  mut_rng ^= mut_rng << 25;
  mut_rng ^= mut_rng >> 27;
  return mut_rng * 0x2545f4914f6cdd1dull;
}
static size_t mut_below(size_t n) { return n ? (size_t)(mut_next() % n) : 0; }

// Offsets of the whole records in data (a header size from the header when it is plausible) and,
// in *end, where the last one ends.
static size_t mut_records(const uint8_t *d, size_t n, size_t *off, size_t *end) {
  uint32_t hs = 384, rs;
  if (n >= 16) memcpy(&hs, d + 12, 4);
  if (hs < 384 || hs > n) hs = 384;
  size_t k = 0, o = hs;
  while (k < MAX_RECS && o + 8 <= n) {
    memcpy(&rs, d + o + 4, 4);
    if (rs > n - o - 8) break;
    off[k++] = o;
    o += 8 + (size_t)rs;
  }
  *end = o;
  return k;
}

static size_t rec_len(const uint8_t *d, size_t o) {
  uint32_t rs;
  memcpy(&rs, d + o + 4, 4);
  return 8 + (size_t)rs;
}

static const uint64_t mut_values[] = {
    0, 1, 2, 3, 7, 8, 13, 14, 15, 16, 19, 20, 21, 31, 32, 33, 63, 64, 127, 128, 129, 255, 256,
    1023, 1024, 1025, 4096, 0x7fff, 0x8000, 0xffff, 0x10000, 0x100000, 0x100001, 0x7fffffff,
    0x80000000, 0xfffffffe, 0xffffffff, 0x100000000, 0x7fffffffffffffff, 0x8000000000000000,
    0xfffffffffffffffe, 0xffffffffffffffff};
#define NVALUES (sizeof mut_values / sizeof *mut_values)

// A field of a record: 2, 4 or 8 bytes at an offset of its payload aligned to that width.
static bool mut_field(uint8_t *d, const size_t *off, size_t k) {
  size_t o = off[mut_below(k)], plen = rec_len(d, o) - 8, w = (size_t)2 << mut_below(3);
  if (plen < w) return false;
  size_t at = o + 8 + mut_below(plen / w) * w;
  uint64_t v = 0;
  memcpy(&v, d + at, w);
  switch (mut_below(4)) {
  case 0: v = mut_values[mut_below(NVALUES)]; break;
  case 1: v += mut_below(2) ? 1 : (uint64_t)-1; break;
  case 2: { // the same field of another record (an id, a kind, a size)
    size_t o2 = off[mut_below(k)];
    if (rec_len(d, o2) < at - o + w) return false;
    memcpy(&v, d + o2 + (at - o), w);
    break;
  }
  default: v = mut_values[mut_below(NVALUES)] + mut_below(3) - 1; break;
  }
  memcpy(d + at, &v, w);
  return true;
}

// A record header: another tag (the payload stays), or a size one off or of another record.
static bool mut_header(uint8_t *d, const size_t *off, size_t k) {
  size_t o = off[mut_below(k)];
  if (mut_below(2)) {
    uint16_t tag = (uint16_t)mut_below(ND_REC_TAG_MAX + 1); // every tag, and 2 unknown (0, MAX)
    memcpy(d + o, &tag, 2);
  } else {
    uint32_t rs;
    memcpy(&rs, d + o + 4, 4);
    size_t r = mut_below(3);
    if (r == 0) rs++;
    else if (r == 1) rs--;
    else memcpy(&rs, d + off[mut_below(k)] + 4, 4);
    memcpy(d + o + 4, &rs, 4);
  }
  return true;
}

// Whole records: drop one, or put a copy of one before another (or at the end), or move one.
static size_t mut_records_op(uint8_t *d, size_t n, size_t max, const size_t *off, size_t k,
                             size_t end) {
  static uint8_t tmp[1 << 20];
  size_t i = mut_below(k), li = rec_len(d, off[i]);
  size_t j = mut_below(k + 1), at = j < k ? off[j] : end;
  int op = (int)mut_below(3);
  if (li > sizeof tmp) return 0;
  memcpy(tmp, d + off[i], li);
  if (op == 0 || op == 2) { // drop record i
    memmove(d + off[i], d + off[i] + li, n - off[i] - li);
    n -= li;
    if (at > off[i]) at = at >= off[i] + li ? at - li : off[i];
    if (op == 0) return n;
  }
  if (n + li > max) return 0;
  memmove(d + at + li, d + at, n - at);
  memcpy(d + at, tmp, li);
  return n + li;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed) {
  mut_rng = 0x9e3779b97f4a7c15ull ^ seed;
  mut_next();
  static size_t off[MAX_RECS];
  size_t end, k = mut_below(2) ? mut_records(data, size, off, &end) : 0;
  if (k) {
    int r = (int)mut_below(8);
    if (r < 5 && mut_field(data, off, k)) return size;
    if (r == 5 && mut_header(data, off, k)) return size;
    if (r > 5) {
      size_t n = mut_records_op(data, size, max_size, off, k, end);
      if (n) return n;
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

// ---------------------------------------------------------------- the target

static int memfd = -1;
static char path[64];

// The views each input is reported in; the first is the full text report, the second the full
// JSON report.
static const struct view {
  bool json, fail_on_leak;
  const char *args[8];
} views[] = {
    {false, true, {"--fail-on-leak", NULL}},
    {true, false, {"--format", "json", "--top", "3", NULL}},
    {false, false, {"--workspaces", "--limits", "--top", "2", "--frames", "2", NULL}},
    {true, false, {"--workspaces", "--format=json", "--brief", NULL}},
    {true, false, {"--limits", "--format", "json", NULL}},
    {false, false, {"--brief", NULL}},
};
#define NVIEWS (sizeof views / sizeof *views)

static _Noreturn void broken(const char *view, const char *what, const char *out, size_t olen,
                             const char *err, size_t elen) {
  fprintf(stderr, "fuzz_reader: ndmemreport --no-symbols %s: %s\n", view, what);
  fprintf(stderr, "--- stderr (%zu bytes):\n%.*s\n--- stdout (%zu bytes, first 4000):\n%.*s\n",
          elen, (int)(elen > 4000 ? 4000 : elen), err, olen, (int)(olen > 4000 ? 4000 : olen),
          out);
  abort(); // libFuzzer keeps the input as a crash artifact
}

// A text report prints the trace's strings with control bytes escaped: none may be raw.
static bool raw_control(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  }
  return false;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  memfd = memfd_create("fuzz_reader", MFD_CLOEXEC);
  if (memfd < 0) {
    perror("fuzz_reader: memfd_create");
    abort();
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
  if (access(path, R_OK)) {
    perror("fuzz_reader: /proc/self/fd (is /proc mounted?)");
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size)) {
    perror("fuzz_reader: writing the memfd");
    abort();
  }
  int first_rc = -1;
  bool text_truncated = false;
  for (size_t v = 0; v < NVIEWS; v++) {
    char *argv[16], desc[200] = "";
    int argc = 0;
    argv[argc++] = "ndmemreport";
    argv[argc++] = "--no-symbols"; // module paths from the input are never opened
    bool json = views[v].json, fail_on_leak = views[v].fail_on_leak;
    for (const char *const *a = views[v].args; *a; a++) {
      argv[argc++] = (char *)*a;
      size_t l = strlen(desc);
      snprintf(desc + l, sizeof desc - l, "%s ", *a);
    }
    argv[argc++] = path;
    argv[argc] = NULL;
    strncat(desc, "FILE", sizeof desc - strlen(desc) - 1);

    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    FILE *o = open_memstream(&out, &olen), *e = open_memstream(&err, &elen);
    if (!o || !e) abort();
    int rc = nd_report_main(argc, argv, o, e);
    fclose(o);
    fclose(e);

    // The contract: 0, 1 or 3 (unchecked; only with --fail-on-leak), or 2; 2 with exactly one
    // "ndmemreport: " line on stderr, 3 with one "unchecked" line for each thing not checked;
    // nothing on stderr otherwise; the same verdict on the trace in every view.
    const char *nl = memchr(err, '\n', elen);
    if (rc != 0 && rc != 2 && !((rc == 1 || rc == 3) && fail_on_leak))
      broken(desc, "unexpected exit status", out, olen, err, elen);
    if (rc == 2 && (!nl || nl != err + elen - 1 || strncmp(err, "ndmemreport: ", 13)))
      broken(desc, "exit 2 without exactly one 'ndmemreport: ' line", out, olen, err, elen);
    if (rc == 3 && !unchecked_lines(err, elen))
      broken(desc, "exit 3 without one or two 'ndmemreport: ...: unchecked: ' lines", out, olen,
             err, elen);
    if (rc != 2 && rc != 3 && elen) broken(desc, "output on stderr", out, olen, err, elen);
    if (first_rc >= 0 && (rc == 2) != (first_rc == 2))
      broken(desc, "the views disagree on whether the trace is valid", out, olen, err, elen);
    if (first_rc < 0) first_rc = rc;
    if (rc != 2 && json) {
      const char *at = json_error(out, olen);
      if (at) {
        char what[96];
        snprintf(what, sizeof what, "invalid JSON at byte %zu", (size_t)(at - out));
        broken(desc, what, out, olen, err, elen);
      }
      // The first JSON view is the full report: "truncated" as the text report's trace line.
      if (v == 1 && (strstr(out, "\"truncated\": true, \"read_to\"") != NULL) != text_truncated)
        broken(desc, "JSON and text disagree on whether the trace is truncated", out, olen, err,
               elen);
    }
    if (rc != 2 && !json && raw_control(out, olen))
      broken(desc, "a raw control byte in the text report", out, olen, err, elen);
    if (rc != 2 && v == 0) text_truncated = strstr(out, "\n  trace       TRUNCATED: ") != NULL;
    free(out);
    free(err);
  }
  return 0;
}
