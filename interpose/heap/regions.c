// SPDX-License-Identifier: MIT
// regions.c: sorted range table for anonymous mappings (see regions.h). Programs hold few
// anonymous mappings (allocators map large blocks internally, out of sight of the hooks), so a
// sorted array with binary search and memmove is both compact and fast here.
#include "heap/regions.h"

#include "common/os.h"

#include <string.h>

// first index whose end > addr
static size_t lower_bound(const nd_regions_t *t, uintptr_t addr) {
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->v[mid].end <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int reserve(nd_regions_t *t, size_t need) {
  if (need <= t->cap) return 0;
  size_t cap = t->cap ? t->cap * 2 : 256;
  while (cap < need) cap *= 2;
  nd_range_t *v = nd_os_map(cap * sizeof *v);
  if (!v) return -1;
  if (t->n) memcpy(v, t->v, t->n * sizeof *v);
  if (t->v) nd_os_unmap(t->v, t->cap * sizeof *v);
  t->v = v;
  t->cap = cap;
  return 0;
}

static void insert_at(nd_regions_t *t, size_t i, const nd_range_t *r) {
  memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof t->v[0]);
  t->v[i] = *r;
  t->n++;
}

int nd_regions_add_born(nd_regions_t *t, uintptr_t start, uintptr_t end, void *tag, uint64_t born,
                        uint64_t cycle, uint64_t untouched) {
  if (start >= end) return 0;
  if (reserve(t, t->n + 1)) return -1;
  nd_range_t r = {start, end, tag, born, cycle, untouched};
  insert_at(t, lower_bound(t, start), &r);
  return 0;
}

int nd_regions_add(nd_regions_t *t, uintptr_t start, uintptr_t end, void *tag) {
  return nd_regions_add_born(t, start, end, tag, 0, 0, 0);
}

void nd_regions_remove(nd_regions_t *t, uintptr_t start, uintptr_t end, uint64_t *bytes,
                       uint64_t *gone, uint64_t *split, nd_regions_piece_fn on_piece, void *ctx) {
  *bytes = *gone = *split = 0;
  if (start >= end) return;
  size_t i = lower_bound(t, start);
  while (i < t->n && t->v[i].start < end) {
    nd_range_t *r = &t->v[i];
    uintptr_t lo = r->start > start ? r->start : start;
    uintptr_t hi = r->end < end ? r->end : end;
    *bytes += hi - lo;
    if (lo == r->start && hi == r->end) { // whole region
      if (on_piece) on_piece(ctx, r, hi - lo, ND_PIECE_GONE);
      memmove(r, r + 1, (t->n - i - 1) * sizeof *r);
      t->n--;
      (*gone)++;
      continue;
    }
    nd_range_t was = *r;
    r->untouched = 0; // part of it stays: which of its pages were untouched is not known
    if (lo > r->start && hi < r->end) { // middle: split in two
      nd_range_t tail = *r; // keeps the tag, birth time and cycle (r may move in reserve)
      tail.start = hi;
      r->end = lo;
      if (reserve(t, t->n + 1) == 0) {
        insert_at(t, i + 1, &tail);
        (*split)++;
        if (on_piece) on_piece(ctx, &was, hi - lo, ND_PIECE_SPLIT);
      } else {
        // No memory for the table: forget the tail rather than mis-account it as unmapped.
        *bytes += tail.end - hi;
        if (on_piece) on_piece(ctx, &was, tail.end - lo, ND_PIECE_TRIM);
      }
      return;
    }
    if (on_piece) on_piece(ctx, &was, hi - lo, ND_PIECE_TRIM);
    if (lo == r->start) r->start = hi; // head trimmed
    else r->end = lo;                  // tail trimmed
    i++;
  }
}

uint64_t nd_regions_bytes_in(const nd_regions_t *t, uintptr_t start, uintptr_t end) {
  uint64_t sum = 0;
  for (size_t i = lower_bound(t, start); i < t->n && t->v[i].start < end; i++) {
    uintptr_t lo = t->v[i].start > start ? t->v[i].start : start;
    uintptr_t hi = t->v[i].end < end ? t->v[i].end : end;
    sum += hi - lo;
  }
  return sum;
}

uint64_t nd_regions_total(const nd_regions_t *t) {
  uint64_t sum = 0;
  for (size_t i = 0; i < t->n; i++) sum += t->v[i].end - t->v[i].start;
  return sum;
}
