// SPDX-License-Identifier: MIT
// t_mmap: anonymous mappings are accounted page-exactly through partial munmaps (head, tail,
// hole), mremap growth and moves, MAP_FIXED replacement; file mappings and PROT_NONE
// reservations are not memory and are not counted.
#include "../shimcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
  setvbuf(stderr, NULL, _IONBF, 0);
  const long P = sysconf(_SC_PAGESIZE);
  ndmem_stats_t s0 = THREAD_SNAP();

  char *a = mmap(NULL, 10 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(a != MAP_FAILED);
  ndmem_stats_t s1 = THREAD_SNAP();
  CHECK_EQ(D(s1, s0, MMAP, live_bytes), 10 * P);
  CHECK_EQ(D(s1, s0, MMAP, live_count), 1);
  CHECK_EQ(DCALL(s1, s0, NDMEM_FN_MMAP), 1);

  // an unaligned length still maps whole pages
  char *b = mmap(NULL, 100, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ndmem_stats_t s2 = THREAD_SNAP();
  CHECK_EQ(D(s2, s1, MMAP, live_bytes), P);
  CHECK_EQ(munmap(b, 100), 0);

  // a hole in the middle: pages 3 and 4 go, the mapping becomes two
  CHECK_EQ(munmap(a + 3 * P, 2 * P), 0);
  ndmem_stats_t s3 = THREAD_SNAP();
  CHECK_EQ(D(s3, s1, MMAP, live_bytes), -2 * P);
  CHECK_EQ(D(s3, s1, MMAP, live_count), 1);
  CHECK_EQ(DCALL(s3, s1, NDMEM_FN_MUNMAP), 2);

  // trim the head of the first piece (page 0) and the tail of the second (page 9)
  CHECK_EQ(munmap(a, P), 0);
  CHECK_EQ(munmap(a + 9 * P, P), 0);
  ndmem_stats_t s4 = THREAD_SNAP();
  CHECK_EQ(D(s4, s3, MMAP, live_bytes), -2 * P);
  CHECK_EQ(D(s4, s0, MMAP, live_count), 2); // [1,3) and [5,9)

  // an munmap spanning both pieces and the hole between them
  CHECK_EQ(munmap(a + 2 * P, 4 * P), 0); // pages 2..5: one from each piece
  ndmem_stats_t s5 = THREAD_SNAP();
  CHECK_EQ(D(s5, s4, MMAP, live_bytes), -2 * P);
  CHECK_EQ(D(s5, s0, MMAP, live_count), 2); // [1,2) and [6,9)

  // mremap: grow [6,9) from 3 to 8 pages, allowed to move
  char *c = mremap(a + 6 * P, 3 * P, 8 * P, MREMAP_MAYMOVE);
  CHECK(c != MAP_FAILED);
  c[8 * P - 1] = 1;
  ndmem_stats_t s6 = THREAD_SNAP();
  CHECK_EQ(D(s6, s5, MMAP, live_bytes), 5 * P);
  CHECK_EQ(D(s6, s0, MMAP, live_count), 2);
  CHECK_EQ(DCALL(s6, s5, NDMEM_FN_MREMAP), 1);
  // shrink it in place to 2 pages
  CHECK(mremap(c, 8 * P, 2 * P, 0) == c);
  ndmem_stats_t s7 = THREAD_SNAP();
  CHECK_EQ(D(s7, s6, MMAP, live_bytes), -6 * P);

  // MAP_FIXED over the tracked page [1,2) with a new anonymous page: bytes unchanged
  CHECK(mmap(a + P, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        a + P);
  ndmem_stats_t s8 = THREAD_SNAP();
  CHECK_EQ(D(s8, s7, MMAP, live_bytes), 0);
  CHECK_EQ(D(s8, s0, MMAP, live_count), 2);

  // a file mapping is not anonymous memory ...
  char path[] = "/tmp/ndmem-t_mmap-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  CHECK_EQ(ftruncate(fd, 4 * P), 0);
  char *f = mmap(NULL, 4 * P, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(f != MAP_FAILED);
  // ... and a PROT_NONE reservation is address space, not memory
  char *r = mmap(NULL, 64 * P, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(r != MAP_FAILED);
  ndmem_stats_t s9 = THREAD_SNAP();
  CHECK_EQ(D(s9, s8, MMAP, live_bytes), 0);
  CHECK_EQ(D(s9, s8, MMAP, live_count), 0);
  // a file mapped MAP_FIXED over tracked anonymous memory replaces it: those bytes are gone
  CHECK(mmap(a + P, P, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == a + P);
  ndmem_stats_t s10 = THREAD_SNAP();
  CHECK_EQ(D(s10, s9, MMAP, live_bytes), -P);
  CHECK_EQ(D(s10, s0, MMAP, live_count), 1);
  munmap(a + P, P);
  munmap(f, 4 * P);
  munmap(r, 64 * P);
  close(fd);

  // the last piece goes: everything is back to the start, exactly
  CHECK_EQ(munmap(c, 2 * P), 0);
  ndmem_stats_t s11 = THREAD_SNAP();
  CHECK_EQ(D(s11, s0, MMAP, live_bytes), 0);
  CHECK_EQ(D(s11, s0, MMAP, live_count), 0);
  CHECK_EQ(s11.kind[MMAP].peak_bytes - s0.kind[MMAP].peak_bytes >= 0, 1);

  // failures keep errno and account nothing
  ndmem_stats_t s12 = THREAD_SNAP();
  CHECK(mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED);
  CHECK_EQ(errno, EINVAL);
  ndmem_stats_t s13 = THREAD_SNAP();
  CHECK_EQ(D(s13, s12, MMAP, allocs), 0);
  return CHECK_DONE();
}
