// SPDX-License-Identifier: MIT
// fuzz_verdict.h: what the two fuzzers (fuzz_reader.c, fuzz_trace.c) accept as ndmemreport's
// "unchecked" verdict.
#ifndef ND_FUZZ_VERDICT_H
#define ND_FUZZ_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

// Whether `err` is what an exit status 3 (unchecked) prints: a line for each thing the verdict
// could not check (heap blocks with no record, growth in sampled blocks), one or two, each
// "ndmemreport: FILE: --fail-on-...: unchecked: ...".
static inline bool unchecked_lines(const char *err, size_t elen) {
  size_t lines = 0;
  for (const char *p = err, *end = err + elen; p < end; lines++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || strncmp(p, "ndmemreport: ", 13) || !memmem(p, (size_t)(nl - p), ": unchecked: ", 13))
      return false;
    p = nl + 1;
  }
  return lines >= 1 && lines <= 2;
}

#endif
