// SPDX-License-Identifier: MIT
// test_regions: the mapping table subtracts ranges exactly (head, tail, middle split, spans over
// several regions and gaps), and a randomised run of 20000 add/remove operations agrees byte for
// byte with a page-bitmap model.
#include "../check.h"
#include "heap/regions.h"

#define PG 4096u

int main(void) {
  nd_regions_t t = {0};
  uint64_t bytes, gone, split;
  CHECK_EQ(nd_regions_add(&t, 10 * PG, 20 * PG, NULL), 0);
  nd_regions_remove(&t, 12 * PG, 14 * PG, &bytes, &gone, &split, NULL, NULL); // middle
  CHECK(bytes == 2 * PG && gone == 0 && split == 1 && t.n == 2);
  nd_regions_remove(&t, 8 * PG, 11 * PG, &bytes, &gone, &split, NULL, NULL); // head, from before it
  CHECK(bytes == PG && gone == 0 && split == 0);
  nd_regions_remove(&t, 19 * PG, 30 * PG, &bytes, &gone, &split, NULL, NULL); // tail, past the end
  CHECK(bytes == PG && gone == 0 && split == 0);
  CHECK_EQ(nd_regions_total(&t), 6 * PG); // [11,12) [14,19)
  CHECK_EQ(nd_regions_bytes_in(&t, 0, 100 * PG), 6 * PG);
  CHECK_EQ(nd_regions_bytes_in(&t, 11 * PG, 15 * PG), 2 * PG);
  nd_regions_remove(&t, 11 * PG, 15 * PG, &bytes, &gone, &split, NULL, NULL); // spans a gap
  CHECK(bytes == 2 * PG && gone == 1 && split == 0 && t.n == 1);
  nd_regions_remove(&t, 0, 100 * PG, &bytes, &gone, &split, NULL, NULL);
  CHECK(bytes == 4 * PG && gone == 1 && t.n == 0);
  nd_regions_remove(&t, 0, 100 * PG, &bytes, &gone, &split, NULL, NULL); // nothing there
  CHECK(bytes == 0 && gone == 0 && split == 0);

  enum { PAGES = 4096 };
  static unsigned char model[PAGES];
  unsigned x = 12345;
  for (int op = 0; op < 20000; op++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    unsigned s = x % PAGES, len = 1 + (x >> 12) % 64;
    if (s + len > PAGES) len = PAGES - s;
    if (x & 0x80000000u) { // add: clear the range first as the shim does for MAP_FIXED
      nd_regions_remove(&t, (uintptr_t)s * PG, (uintptr_t)(s + len) * PG, &bytes, &gone, &split, NULL, NULL);
      uint64_t want = 0;
      for (unsigned i = s; i < s + len; i++) want += model[i], model[i] = 1;
      CHECK_EQ(bytes, want * PG);
      CHECK_EQ(nd_regions_add(&t, (uintptr_t)s * PG, (uintptr_t)(s + len) * PG, NULL), 0);
    } else {
      nd_regions_remove(&t, (uintptr_t)s * PG, (uintptr_t)(s + len) * PG, &bytes, &gone, &split, NULL, NULL);
      uint64_t want = 0;
      for (unsigned i = s; i < s + len; i++) want += model[i], model[i] = 0;
      CHECK_EQ(bytes, want * PG);
    }
    if (check_failures) break;
  }
  uint64_t total = 0;
  for (int i = 0; i < PAGES; i++) total += model[i];
  CHECK_EQ(nd_regions_total(&t), total * PG);
  for (size_t i = 1; i < t.n; i++) CHECK(t.v[i - 1].end <= t.v[i].start); // sorted, disjoint
  // growth: a thousand more disjoint regions beyond the first table allocation (256 entries)
  size_t n0 = t.n;
  uint64_t t0 = nd_regions_total(&t);
  for (uintptr_t i = 0; i < 1000; i++)
    CHECK_EQ(nd_regions_add(&t, (PAGES + 2 * i) * (uintptr_t)PG, (PAGES + 2 * i + 1) * (uintptr_t)PG, NULL), 0);
  CHECK_EQ(t.n, n0 + 1000);
  CHECK_EQ(nd_regions_total(&t), t0 + 1000 * PG);
  nd_regions_remove(&t, (uintptr_t)PAGES * PG, (uintptr_t)(PAGES + 2000) * PG, &bytes, &gone, &split, NULL, NULL);
  CHECK(bytes == 1000 * PG && gone == 1000 && split == 0 && t.n == n0);
  return CHECK_DONE();
}
