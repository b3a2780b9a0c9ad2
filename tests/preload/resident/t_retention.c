// SPDX-License-Identifier: MIT
// t_retention: resident memory grows by a known amount while the tracked bytes stay flat, for
// three known reasons; t_retention.py reads the report's verdict on each.
//   allocator  glibc keeps what the program freed: ROUNDS blocks are written and kept (a spike of
//              live memory), a small pin is taken above them, then they are freed: one hole
//              below the pin that glibc can neither trim nor give back (the mmap threshold is
//              fixed above the blocks so that they come from the heap). glibc then holds the
//              blocks' bytes free until the pin goes at the end (the hole merges with the top
//              and is trimmed: the memory is given back before exit).
//   untracked  the same growth from memory the hooks never see (mmap by raw system call).
//   flat       the same work, each round's block freed before the next: no lasting growth.
//   trimmed    the allocator case, then the program's malloc_trim(0) gives the hole's pages back
//              (glibc still counts them free), then RAW_AFTER_TRIM blocks by raw mmap: the
//              growth is not the allocator's, though its free bytes are as high as before.
// A still phase first (the report's reference is a third of the run in), the rounds, then a
// hold for flushes that read the allocator after the frees; nothing but trimmed's pin is live at
// exit (--fail-on-leak must not fail on retention). The end-* modes end at once by exit, _exit or a
// fatal signal: the final flush never asks the allocator.
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 8
#define BLOCK (20u << 20) // a round's block (t_retention.py knows both)
#define RAW_AFTER_TRIM 10 // blocks mapped after the trim: a plateau above the one before it

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {}
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: t_retention allocator|untracked|flat|end-*\n"), 2;
  const char *mode = argv[1];
  // The last words: a block, then the end at once (run with a flush interval longer than the
  // run, the final flush is the only one). No final flush asks the allocator: this thread may
  // have been inside it (a fatal signal, or exit from a signal handler).
  if (!strncmp(mode, "end-", 4)) {
    char *p = malloc(1 << 20);
    if (!p) return 1;
    memset(p, 1, 1 << 20);
    if (!strcmp(mode, "end-signal")) raise(SIGTERM);
    if (!strcmp(mode, "end-_exit")) _exit(0);
    free(p);
    return 0;
  }
  int trimmed = !strcmp(mode, "trimmed");
  int alloc = !strcmp(mode, "allocator") || trimmed, raw = !strcmp(mode, "untracked");
  if (!alloc && !raw && strcmp(mode, "flat")) return fprintf(stderr, "unknown mode\n"), 2;
  // Blocks of 20 MiB from the heap, not from mmap (dynamic threshold off): 32 MiB is glibc's
  // largest threshold on 64-bit.
  if (alloc && mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return fprintf(stderr, "mallopt\n"), 1;
  // A buffer of the program's own from the start, to its end (ndmem's writer thread, which
  // flushes the trace while the program runs, starts at the first tracked block).
  char *own = malloc(64 << 10);
  if (!own) return perror("malloc"), 1;
  memset(own, 1, 64 << 10);
  char *blocks[ROUNDS];
  // The still phase is over half the run (the rounds fault in 160 MiB, 0.4-1 s): the reference, a
  // third of the run in, stays before the rounds however slow the page faults.
  pause_ms(trimmed ? 2500 : 1500); // trimmed runs longer: its reference stays before the rounds
  for (int i = 0; i < ROUNDS; i++) {
    size_t n = BLOCK;
    if (raw) {
      long p = syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
      if (p == -1) return perror("mmap"), 1;
      memset((void *)p, 1, n); // resident, never unmapped: the process holds it to the end
    } else {
      blocks[i] = malloc(n);
      if (!blocks[i]) return perror("malloc"), 1;
      memset(blocks[i], 1, n);
      if (!alloc) free(blocks[i]);
    }
    pause_ms(50);
  }
  // 100 KiB: larger than any free chunk the start-up left, so it comes from the top, above the
  // blocks (a small one would be carved from a free chunk below them).
  char *pin = alloc ? malloc(100 << 10) : NULL;
  if (alloc)
    for (int i = 0; i < ROUNDS; i++) free(blocks[i]);
  pause_ms(400);
  if (trimmed) {
    malloc_trim(0); // the hole's pages go back to the system; glibc still counts them free
    pause_ms(200);
    for (int i = 0; i < RAW_AFTER_TRIM; i++) {
      long p = syscall(SYS_mmap, NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
      if (p == -1) return perror("mmap"), 1;
      memset((void *)p, 1, BLOCK);
      pause_ms(50);
    }
    pause_ms(400);
    // The pin stays to the end: once it went, the hole would merge with the top and an answer
    // would lower the bound to what glibc then holds (correct, but no longer the trim's).
    free(own);
    return 0;
  }
  free(pin);
  pause_ms(200); // the writer asks again: the hole merged with the top and was given back
  free(own);
  return 0;
}
