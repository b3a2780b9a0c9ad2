// SPDX-License-Identifier: MIT
// check.h: the assertion macros every test program uses. A failed check prints file:line, the
// expression and both values, and the test exits 1 at the end (so one run shows every failure).
#ifndef ND_CHECK_H
#define ND_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                  \
      check_failures++;                                                                          \
    }                                                                                            \
  } while (0)

#define CHECK_EQ(a, b)                                                                           \
  do {                                                                                           \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                              \
    if (check_a_ != check_b_) {                                                                  \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
              #a, #b, check_a_, check_b_);                                                       \
      check_failures++;                                                                          \
    }                                                                                            \
  } while (0)

#define CHECK_STR(a, b)                                                                          \
  do {                                                                                           \
    const char *check_a_ = (a), *check_b_ = (b);                                                 \
    if (strcmp(check_a_, check_b_) != 0) {                                                       \
      fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  got:  '%s'\n  want: '%s'\n", __FILE__,     \
              __LINE__, #a, check_a_, check_b_);                                                 \
      check_failures++;                                                                          \
    }                                                                                            \
  } while (0)

#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

#endif
