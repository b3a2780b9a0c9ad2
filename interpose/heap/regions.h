// SPDX-License-Identifier: MIT
// regions.h: the set of tracked anonymous mappings, as sorted disjoint [start, end) ranges.
// munmap and mremap may cover any part of any number of mappings, so the table subtracts ranges
// exactly: a partial unmap trims, an unmap in the middle splits one region into two. Storage is
// ndmem's own pages (grown by doubling); the caller serialises access.
#ifndef ND_REGIONS_H
#define ND_REGIONS_H

#include <stddef.h>
#include <stdint.h>

typedef struct nd_range {
  uintptr_t start, end;
  void *tag; // the caller's (the allocation site); both halves of a split keep it
  uint64_t born, cycle; // when it was mapped (monotonic ns) and the cycle clock then; kept too
  uint64_t untouched; // the caller's: bytes known not to be resident; a removal that leaves part
                      // of the region sets it to 0 (which pages went is not known)
} nd_range_t;

// Called once for each region a removal takes from, with the region as it was before: the bytes
// taken and what became of the region.
enum nd_piece { ND_PIECE_TRIM = 0, ND_PIECE_GONE = 1, ND_PIECE_SPLIT = 2 };
typedef void (*nd_regions_piece_fn)(void *ctx, const nd_range_t *r, uint64_t bytes, int what);

typedef struct nd_regions {
  nd_range_t *v;
  size_t n, cap;
} nd_regions_t;

// Adds [start, end). The range must not overlap a tracked one (remove it first). Returns 0, or -1
// when no memory could be had for the table (the region then goes untracked).
int nd_regions_add(nd_regions_t *t, uintptr_t start, uintptr_t end, void *tag);
// The same with its birth time, cycle and untouched bytes (nd_range_t.born, .cycle, .untouched).
int nd_regions_add_born(nd_regions_t *t, uintptr_t start, uintptr_t end, void *tag, uint64_t born,
                        uint64_t cycle, uint64_t untouched);

// Removes whatever part of [start, end) is tracked. *bytes gets the bytes removed, *gone the
// regions that disappeared entirely and *split the regions created by cutting one in two.
// on_piece (may be NULL) sees each piece taken.
void nd_regions_remove(nd_regions_t *t, uintptr_t start, uintptr_t end, uint64_t *bytes,
                       uint64_t *gone, uint64_t *split, nd_regions_piece_fn on_piece, void *ctx);

uint64_t nd_regions_bytes_in(const nd_regions_t *t, uintptr_t start, uintptr_t end);
uint64_t nd_regions_total(const nd_regions_t *t);

#endif
