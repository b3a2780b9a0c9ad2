// SPDX-License-Identifier: MIT
// reach.c: the reachability scan at exit, LeakSanitizer's and memcheck's judgement of the memory
// live at exit, for an unmodified program.
//
// At exit (and at _exit: a fork worker's end) every live tracked block is a node. The roots are
// the program's memory that is not a node: the writable segments of every loaded object, every
// other readable and writable private mapping of the program (memcheck reads all of them;
// LeakSanitizer only the loaded objects', which calls blocks kept by a program's own mmap'd
// arenas lost), every thread's stack from its stack pointer up (static TLS and the thread
// descriptor lie at its top) and every thread's registers. Each aligned word of the roots that
// points into a node marks it; marked nodes are read in turn. The classes follow memcheck's
// (mc_leakcheck.c): *reachable* (a chain of pointers to blocks' starts from a root), *possibly
// lost* (reached, but only through a pointer into a block's middle somewhere on the way),
// *definitely lost* (nothing points to it but blocks it leads to), *indirectly lost* (reached
// only from a definitely lost block; a cycle of lost blocks has one definitely lost, the first
// by address).
//
// Never read, never roots: ndmem's own memory (its mappings, nd_os_own; its segments; each
// thread's nd_tls), device memory (device, pinned and managed blocks are not classed: the
// driver's tables point at each), shared and device-file mappings, the part of each stack below its stack pointer (dead frames), and pages
// never resident (untouched memory reads as zeros; a page swapped out is read). Where every live
// heap block has a record (ndmem run --exact: the heap's live count equals the table's), the
// allocator's other memory holds nothing of the program's: glibc's main heap, its other arenas'
// heaps and its mmapped chunks are left unread, as memcheck leaves freed memory unread (a freed
// block may still hold a pointer to a lost one). Otherwise that memory is read as roots around
// the nodes: an untracked small block may hold the only pointer to a tracked one, so a block is
// called lost only when no untracked memory points to it either (fewer finds, never a false one).
//
// The other threads are held still while the scan reads and until the trace's blocks are written
// (stopworld.c: a signal whose handler saves the thread's registers and waits), so the BLOCK
// records are the tables at the scan's moment. A thread stopped inside ndmem's own tables (a
// half-inserted block) makes the scan let everyone go and try again (20 times). A thread with
// every signal blocked does not stop: its stack is read from the stack pointer the kernel shows,
// its registers are not read, and the SCAN record counts it. While any thread runs so (one
// caught inside ndmem's hooks at every ask for half a second counts too), memory is copied a page
// at a time before it is read, and a page it unmapped meanwhile is skipped instead of faulting. A blocking call that a signal
// interrupts and that is never restarted (sleep, select, epoll_wait) returns EINTR in the other
// threads, as under any stop-the-world collector; the process is ending.
//
// Nothing here allocates or takes a lock a stopped thread may hold: raw system calls, raw
// mappings (holes in the roots themselves), a radix sort.
#include "scan/reach.h"
#include "stacks/unwind.h"

#include "runtime/allocstat.h"
#include "runtime/config.h"
#include "account/counters.h"
#include "device/cuda_hooks.h"
#include "common/os.h"
#include "stacks/python.h"
#include "heap/regions.h"
#include "runtime/shim.h"
#include "account/sites.h"
#include "scan/stopworld.h"
#include "threads/threads.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { ST_UNREACHED = 0, ST_REACHABLE, ST_POSSIBLE, ST_INDIRECT, ST_LEADER };

typedef struct node {
  uintptr_t lo;
  uint64_t size;
  uint64_t born;
  uint8_t state;
  uint8_t chunk; // a glibc chunk: `next` is where the chunk after it begins
  uint8_t from;  // enum nd_reach_from: which table it is of (its BLOCK record)
  uint8_t pad;
  uint32_t group; // the reservation it lies in (index + 1; 0: none)
  uintptr_t next;
  nd_site_t *site;
  uint64_t cycle;
} node_t;

typedef struct range {
  uintptr_t lo, hi;
} range_t;

// A reservation or mapping of the program's with tracked mappings inside it that are not the
// whole of it (mmap.c's nd_mmap_each_reserved_stopped): a pointer anywhere into it reaches each,
// as a pointer into a block reaches the block. Its members are the MAPS nodes in [first, last)
// whose group is this one.
typedef struct group {
  range_t r;
  size_t first, last;
  uint8_t level;   // what a pointer has done to its members so far: 1 possibly, 2 reachable
  size_t clique;   // the clique's leader + 1 whose phase marked its members
} group_t;

#define RED_ZONE 128 // below the stack pointer, the x86-64 ABI's leaf functions keep data
#define GLIBC_HEAP_MAX (64ull << 20) // a glibc arena heap's size and alignment (64-bit)
#define MAX_BUFS 64

static struct {
  node_t *v;
  size_t n, cap;
  uintptr_t *los; // the nodes' addresses alone, for find's binary search (NULL: read from v)
  uintptr_t *top; // every TOP_STEP-th of them (top[k] = los[k * TOP_STEP]): the search's start
  size_t ntop;
  node_t *cont; // never classed: nodes that held others (an allocator's mappings), device blocks
  size_t ncont, ccap;
  range_t *holes;
  size_t nh, hcap;
  range_t *maps; // readable mappings (for reading nodes), sorted by address
  size_t nm, mcap;
  uint32_t *stk;
  size_t sn, scap;
  nd_thr_t *thr; // the other threads (stopworld.c), from the latest stop
  size_t nt;
  char *text;
  size_t tlen, tcap;
  range_t bufs[MAX_BUFS]; // the scan's own mappings: holes
  size_t nbufs;
  uintptr_t min, span; // the nodes' [min, min + span)
  uintptr_t heap_lo, heap_hi; // [heap]
  range_t self_seg[8]; // libndmem's writable segments
  size_t nself;
  range_t *elf; // every loaded object's writable segments
  size_t nelf, ecap;
  int pm_fd, oom, phase;
  uint64_t py_long; // PyLong_Type (0: no interpreter)
  unsigned py_minor;
  size_t leader;
  int done, held;
  // Threads that did not stop run while the scan reads: memory is then copied before it is read
  // (read_words), and what was unmapped meanwhile is skipped.
  int careful;
  pid_t pid;
  uint64_t page[512]; // the copy of one page
  uint64_t t0; // when the threads were stopped
  pid_t self;  // the thread that scans
  range_t *resv; // the program's reservations (mmap.c), sorted
  size_t nr, rcap;
  group_t *g; // those with tracked mappings inside that are not the whole of it
  size_t ng, gcap;
  uintptr_t gmin, gspan;
  uintptr_t *dtv; // ended threads' thread vectors (glibc's calloc'd memory its stack cache keeps)
  size_t ndtv, dcap;
  nd_rec_scan_t rec;
} graph;

// The first of n sorted, disjoint ranges that ends after a (n when none does): v's elements are
// `elem` bytes each, a range_t first (holes, readable mappings, reservations).
static size_t ending_after(const void *v, size_t n, size_t elem, uintptr_t a) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (((const range_t *)(const void *)((const char *)v + m * elem))->hi <= a) lo = m + 1;
    else hi = m;
  }
  return lo;
}

// ---------------------------------------------------------------- the scan's own memory

static void *raw_map(size_t size) {
  void *p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (graph.nbufs < MAX_BUFS) graph.bufs[graph.nbufs++] = (range_t){(uintptr_t)p, (uintptr_t)p + size};
  else graph.oom = 1; // a buffer that is not a hole could be read as a root
  return p;
}

// Grows an array to hold `need` elements (the old one stays mapped: it may be in the maps read).
static int grow(void **v, size_t *cap, size_t elem, size_t need) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  void *nv = raw_map(c * elem);
  if (!nv) {
    graph.oom = 1;
    return -1;
  }
  if (*v) memcpy(nv, *v, *cap * elem);
  *v = nv;
  *cap = c;
  return 0;
}

static void add_hole(uintptr_t lo, uintptr_t hi) {
  if (lo >= hi || grow((void **)&graph.holes, &graph.hcap, sizeof *graph.holes, graph.nh + 1)) return;
  graph.holes[graph.nh++] = (range_t){lo, hi};
}

// ---------------------------------------------------------------- sorting (no qsort: it mallocs)

static void radix_sort(void *v, size_t n, size_t elem, void *tmp) {
  // LSD on the first word of each element (an address: 48 bits), 16 bits per pass.
  static uint32_t count[65536];
  char *a = v, *b = tmp;
  for (int shift = 0; shift < 48; shift += 16) {
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) count[(*(uintptr_t *)(a + i * elem) >> shift) & 0xffff]++;
    uint32_t sum = 0;
    for (size_t k = 0; k < 65536; k++) {
      uint32_t c = count[k];
      count[k] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) {
      size_t k = (*(uintptr_t *)(a + i * elem) >> shift) & 0xffff;
      memcpy(b + (size_t)count[k]++ * elem, a + i * elem, elem);
    }
    char *t = a;
    a = b;
    b = t;
  }
  if (a != v) memcpy(v, a, n * elem); // 3 passes: the result is in tmp
}

static int sort_ranges(range_t *v, size_t *n) {
  range_t *tmp = raw_map(*n * sizeof *v + 1);
  if (!tmp) return -1;
  radix_sort(v, *n, sizeof *v, tmp);
  size_t k = 0; // merge overlapping and adjacent ranges
  for (size_t i = 0; i < *n; i++) {
    if (k && v[i].lo <= v[k - 1].hi) {
      if (v[i].hi > v[k - 1].hi) v[k - 1].hi = v[i].hi;
    } else {
      v[k++] = v[i];
    }
  }
  *n = k;
  return 0;
}

// ---------------------------------------------------------------- nodes

static void add_node(uintptr_t lo, uint64_t size, uint64_t born, int from, nd_site_t *site,
                     uint64_t cycle) {
  if (grow((void **)&graph.v, &graph.cap, sizeof *graph.v, graph.n + 1)) return;
  graph.v[graph.n++] = (node_t){.lo = lo, .size = size, .born = born, .state = ST_UNREACHED,
                        .from = (uint8_t)from, .site = site, .cycle = cycle};
}

static int is_heap(const node_t *n) {
  return n->from == ND_REACH_FROM_BLOCKS && n->site->kind == NDMEM_KIND_HEAP;
}

static void node_block(void *ctx, const nd_block_t *b) {
  (void)ctx;
  add_node(b->addr, b->size, b->mono_ns, ND_REACH_FROM_BLOCKS, b->site, b->cycle);
}
static void node_region(void *ctx, const nd_range_t *r) {
  (void)ctx;
  if (r->tag) add_node(r->start, r->end - r->start, r->born, ND_REACH_FROM_MAPS, r->tag, r->cycle);
}
// Device, pinned and managed blocks are not classed: the driver keeps every allocation in its own
// tables, so each would read as reachable whatever the program did. They are written unclassed.
static void node_resv(void *ctx, uintptr_t lo, uintptr_t hi) {
  (void)ctx;
  if (grow((void **)&graph.resv, &graph.rcap, sizeof *graph.resv, graph.nr + 1)) return;
  graph.resv[graph.nr++] = (range_t){lo, hi};
}
static void node_device(void *ctx, const nd_cuda_block_t *b) {
  (void)ctx;
  if (grow((void **)&graph.cont, &graph.ccap, sizeof *graph.cont, graph.ncont + 1)) return;
  graph.cont[graph.ncont++] = (node_t){.lo = (uintptr_t)b->key, .size = b->size, .born = b->born,
                               .from = ND_REACH_FROM_DEVICE, .site = b->site, .cycle = b->cycle};
}

static uint64_t extent(const node_t *n) { return n->size ? n->size : 1; }

// The node holding address a, or SIZE_MAX. Every word read that falls in the nodes' span asks
// (a heap's words are mostly such pointers): the search runs over the addresses alone, 8 bytes
// a node where the nodes are 40 and more, first over every TOP_STEP-th (an `import torch`'s
// 50 000 nodes: 6 KiB, in the first-level cache), then within the TOP_STEP after it, so that its
// steps stay in the caches.
#define TOP_STEP 64
static inline size_t find(uintptr_t a) {
  size_t lo = 0, hi = graph.n;
  const uintptr_t *los = graph.los;
  if (graph.top) { // made only with los
    size_t tl = 0, th = graph.ntop;
    while (th - tl > 1) {
      size_t mid = (tl + th) / 2;
      if (graph.top[mid] <= a) tl = mid;
      else th = mid;
    }
    lo = tl * TOP_STEP;
    hi = lo + TOP_STEP < graph.n ? lo + TOP_STEP : graph.n;
  }
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if ((los ? los[mid] : graph.v[mid].lo) <= a) lo = mid;
    else hi = mid;
  }
  return a >= graph.v[lo].lo && a - graph.v[lo].lo < extent(&graph.v[lo]) ? lo : SIZE_MAX;
}

// Sorts the nodes; one that holds others (an allocator's mapping, e.g. jemalloc's extents made
// with the hooked mmap) is the allocator's memory, not a block: it leaves the nodes.
static int sort_nodes(void) {
  node_t *tmp = raw_map(graph.n * sizeof *graph.v + 1);
  if (!tmp) return -1;
  radix_sort(graph.v, graph.n, sizeof *graph.v, tmp);
  size_t k = 0;
  for (size_t i = 0; i < graph.n; i++) {
    node_t *n = &graph.v[i];
    if (k && n->lo < graph.v[k - 1].lo + extent(&graph.v[k - 1])) {
      node_t *prev = &graph.v[k - 1];
      if (n->lo + extent(n) <= prev->lo + extent(prev) && extent(n) < extent(prev)) {
        if (!grow((void **)&graph.cont, &graph.ccap, sizeof *graph.cont, graph.ncont + 1)) graph.cont[graph.ncont++] = *prev;
        *prev = *n; // prev held n: an allocator's memory, not a block
      } // else two blocks that overlap otherwise: the second is left out
      continue;
    }
    graph.v[k++] = *n;
  }
  graph.n = k;
  graph.los = raw_map(graph.n * sizeof *graph.los + 1);
  for (size_t i = 0; graph.los && i < graph.n; i++) graph.los[i] = graph.v[i].lo;
  graph.ntop = (graph.n + TOP_STEP - 1) / TOP_STEP;
  graph.top = graph.los && graph.ntop ? raw_map(graph.ntop * sizeof *graph.top) : NULL;
  for (size_t k = 0; graph.top && k < graph.ntop; k++) graph.top[k] = graph.los[k * TOP_STEP];
  graph.min = graph.n ? graph.v[0].lo : 0;
  graph.span = graph.n ? graph.v[graph.n - 1].lo + extent(&graph.v[graph.n - 1]) - graph.min : 0;
  return 0;
}

// ---------------------------------------------------------------- marking

static void push(size_t i) {
  if (grow((void **)&graph.stk, &graph.scap, sizeof *graph.stk, graph.sn + 1)) return;
  graph.stk[graph.sn++] = (uint32_t)i;
}

enum { PH_ROOT, PH_DEFINITE, PH_POSSIBLE, PH_CLIQUE };

static __attribute__((noinline, cold)) void hit_group(size_t g, int exact);

// The reservation holding address a, or SIZE_MAX.
static size_t find_group(uintptr_t a) {
  size_t k = ending_after(graph.g, graph.ng, sizeof *graph.g, a);
  return k < graph.ng && a >= graph.g[k].r.lo ? k : SIZE_MAX;
}

// A word outside every node, in a reservation's span (rare: kept out of hit's inlined path).
static __attribute__((noinline, cold)) void hit_outside(uint64_t w) {
  size_t g = find_group((uintptr_t)w);
  if (g != SIZE_MAX) hit_group(g, w == graph.g[g].r.lo);
}

static inline __attribute__((always_inline)) void mark(size_t i, uint64_t w);
// Every word read asks: inlined into the reading loops, as the node search is.
static inline __attribute__((always_inline)) void hit(uint64_t w) {
  if (w - graph.min < graph.span) {
    size_t i = find((uintptr_t)w);
    if (i != SIZE_MAX) {
      if (__builtin_expect(graph.v[i].group != 0, 0)) hit_group(graph.v[i].group - 1, w == graph.v[i].lo);
      else mark(i, w);
      return;
    }
  }
  if (__builtin_expect(graph.ng != 0, 0) && w - graph.gmin < graph.gspan) hit_outside(w);
}

static inline __attribute__((always_inline)) void mark(size_t i, uint64_t w) {
  node_t *n = &graph.v[i];
  switch (graph.phase) {
  case PH_ROOT:
  case PH_DEFINITE:
    if (w == n->lo) {
      if (n->state != ST_REACHABLE) {
        n->state = ST_REACHABLE;
        push(i);
      }
      return;
    }
    __attribute__((fallthrough)); // an interior pointer
  case PH_POSSIBLE:
    // glibc's free lists and its top chunk point at chunk headers: the one after a block may lie
    // in the block's last bytes (a request that uses the next chunk's prev_size word).
    if (n->chunk && w == n->next) return;
    if (n->state == ST_UNREACHED) {
      n->state = ST_POSSIBLE;
      push(i);
    }
    return;
  case PH_CLIQUE:
    if (i == graph.leader) return;
    if (n->state == ST_UNREACHED) {
      n->state = ST_INDIRECT;
      push(i);
    } else if (n->state == ST_LEADER) {
      n->state = ST_INDIRECT; // an earlier clique's leader: what it leads to is marked already
    }
    return;
  }
}

// A pointer into a reservation: exact (its start or a member's) in a root or a reachable block
// reaches every member; any other possibly; from a lost block, each is indirectly lost (but the
// clique's leader). Once per reservation and level, once per clique.
static __attribute__((noinline, cold)) void hit_group(size_t g, int exact) {
  group_t *G = &graph.g[g];
  if (graph.phase == PH_CLIQUE) {
    if (G->clique == graph.leader + 1) return;
    G->clique = graph.leader + 1;
  } else {
    uint8_t level = exact && graph.phase != PH_POSSIBLE ? 2 : 1;
    if (G->level >= level) return;
    G->level = level;
  }
  // Each member as if pointed to at its start, or into it (a mapping is no glibc chunk).
  for (size_t i = G->first; i < G->last; i++)
    if (graph.v[i].group == g + 1) mark(i, G->level == 2 ? graph.v[i].lo : graph.v[i].lo + 1);
}

// The reservations with tracked mappings inside that are not the whole of them (after
// sort_nodes): their members get the group.
static void make_groups(void) {
  graph.ng = 0;
  for (size_t r = 0; r < graph.nr; r++) {
    uintptr_t lo = graph.resv[r].lo, hi = graph.resv[r].hi;
    size_t a = 0, b = graph.n; // the first node at or after lo
    while (a < b) {
      size_t m = (a + b) / 2;
      if (graph.v[m].lo < lo) a = m + 1;
      else b = m;
    }
    size_t members = 0, last = a, only = SIZE_MAX;
    for (size_t i = a; i < graph.n && graph.v[i].lo < hi; i++) {
      const node_t *n = &graph.v[i];
      if (n->from != ND_REACH_FROM_MAPS || n->lo + n->size > hi) continue;
      members++, only = i, last = i + 1;
    }
    if (!members || (members == 1 && graph.v[only].lo == lo && graph.v[only].lo + graph.v[only].size == hi))
      continue;
    if (graph.ng >= UINT32_MAX - 1 ||
        grow((void **)&graph.g, &graph.gcap, sizeof *graph.g, graph.ng + 1))
      return;
    graph.g[graph.ng] = (group_t){.r = {lo, hi}, .first = a, .last = last};
    for (size_t i = a; i < last; i++) {
      node_t *n = &graph.v[i];
      if (n->from == ND_REACH_FROM_MAPS && n->lo + n->size <= hi) {
        n->group = (uint32_t)graph.ng + 1;
        graph.rec.reserved_maps++;
      }
    }
    graph.ng++;
  }
  graph.gmin = graph.ng ? graph.g[0].r.lo : 0;
  graph.gspan = graph.ng ? graph.g[graph.ng - 1].r.hi - graph.gmin : 0;
}

static void hit_word(uint64_t w) { hit(w); } // hit, where a function is wanted

// A CPython int whose value is an address is a pointer too: PyTorch keeps its storages' and
// tensors' addresses in ints (`_cdata`, the weak references of its shared-memory cache), and no
// word of memory holds them whole (30-bit digits). Where the word read is PyLong_Type (an int's
// ob_type), the size and digits after it are read: 3.10 and 3.11 keep the digit count in
// ob_size, 3.12 on in lv_tag (count << 3 | sign; 0 is positive). A dead int's memory keeps its
// type and digits; its reference count does not survive (pymalloc's free list writes its first
// word): only an int whose count is a count (1 to 2^40: an immortal one's too) is read.
static void py_int(const uint64_t *p, uintptr_t lo, uintptr_t hi) {
  if ((uintptr_t)(p - 1) < lo || (uintptr_t)(p + 3) > hi) return;
  if (p[-1] - 1 >= (1ull << 40) - 1) return;
  uint64_t size = p[1], n;
  if (graph.py_minor >= 12) {
    if (size & 3) return; // zero or negative
    n = size >> 3;
  } else {
    n = size;
  }
  if (n < 1 || n > 3 || (uintptr_t)((const char *)(p + 2) + 4 * n) > hi) return;
  const uint32_t *d = (const uint32_t *)(p + 2);
  uint64_t v = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (d[i] >> 30) return;
    v |= (uint64_t)d[i] << (30 * i);
  }
  hit(v);
}

static void read_words_in(uintptr_t lo, uintptr_t hi) {
  for (const uint64_t *p = (const uint64_t *)lo; (uintptr_t)(p + 1) <= hi; p++) {
    if (__builtin_expect(*p == graph.py_long && graph.py_long, 0)) py_int(p, lo, hi);
    hit(*p);
  }
}

// A thread the stop did not hold (inside ndmem's hooks every time it was asked for half a second,
// or blocking the signal) may unmap what the scan reads: a mapping, a freed mmapped chunk, a
// trimmed heap, its own stack as it ends. Then each page is copied first by process_vm_readv on
// the process itself, which fails on a page no longer mapped where a read would fault; such a
// page is skipped (counted with the pages never resident). A Python int across a page's end is
// not read so.
static void read_words(uintptr_t lo, uintptr_t hi) {
  lo = (lo + 7) & ~(uintptr_t)7;
  if (__builtin_expect(!graph.careful, 1)) {
    read_words_in(lo, hi);
    return;
  }
  for (uintptr_t a = lo; a + 8 <= hi;) {
    uintptr_t b = (a & ~(uintptr_t)4095) + 4096;
    if (b > hi) b = hi;
    struct iovec l = {graph.page, b - a}, r = {(void *)a, b - a};
    if (syscall(SYS_process_vm_readv, graph.pid, &l, 1ul, &r, 1ul, 0ul) == (long)(b - a))
      read_words_in((uintptr_t)graph.page, (uintptr_t)graph.page + (b - a));
    else
      graph.rec.skipped_bytes += b - a;
    a = b;
  }
}

// Reads [lo, hi) as words, skipping pages never resident (mincore; a page swapped out is read,
// /proc/self/pagemap tells which). `bytes` gets what was read.
static void scan(uintptr_t lo, uintptr_t hi, uint64_t *bytes) {
  if (hi <= lo) return;
  if (hi - lo < 65536) {
    read_words(lo, hi);
    *bytes += hi - lo;
    return;
  }
  const uintptr_t pg = 4096, win = 512;
  unsigned char vec[512];
  for (uintptr_t w = lo & ~(pg - 1); w < hi; w += win * pg) {
    uintptr_t we = w + win * pg < hi ? w + win * pg : (hi + pg - 1) & ~(pg - 1);
    size_t np = (we - w) / pg;
    if (syscall(SYS_mincore, w, we - w, vec) != 0) memset(vec, 1, np);
    uint64_t pm[512];
    int have_pm = -1;
    for (size_t k = 0; k < np; k++) {
      uintptr_t a = w + k * pg, b = a + pg;
      if (a < lo) a = lo;
      if (b > hi) b = hi;
      if (!(vec[k] & 1)) {
        if (have_pm < 0)
          have_pm = graph.pm_fd >= 0 && syscall(SYS_pread64, graph.pm_fd, pm, np * 8, (w / pg) * 8) ==
                                        (long)(np * 8);
        if (have_pm && !(pm[k] >> 62 & 1)) { // neither present nor swapped: zeros
          graph.rec.skipped_bytes += b - a;
          continue;
        }
      }
      read_words(a, b);
      *bytes += b - a;
    }
  }
}

// The first readable mapping (sorted, merged) that ends after a; graph.nm when none does.
static size_t map_after(uintptr_t a) { return ending_after(graph.maps, graph.nm, sizeof *graph.maps, a); }

static int readable(uintptr_t lo, uintptr_t hi) {
  size_t k = map_after(lo);
  return k < graph.nm && lo >= graph.maps[k].lo && hi <= graph.maps[k].hi;
}

// Reads node i's memory, where it is mapped readable.
static void scan_node(size_t i) {
  const node_t *n = &graph.v[i];
  uintptr_t hi = n->lo + n->size;
  for (size_t k = map_after(n->lo); k < graph.nm && graph.maps[k].lo < hi; k++) {
    uintptr_t a = graph.maps[k].lo > n->lo ? graph.maps[k].lo : n->lo;
    uintptr_t b = graph.maps[k].hi < hi ? graph.maps[k].hi : hi;
    scan(a, b, &graph.rec.block_bytes);
  }
}

static void drain(int clique) {
  while (graph.sn) {
    size_t i = graph.stk[--graph.sn];
    if (!clique) graph.phase = graph.v[i].state == ST_REACHABLE ? PH_DEFINITE : PH_POSSIBLE;
    scan_node(i);
  }
}

// Reads [lo, hi) as roots, less the holes and the nodes (both sorted, disjoint).
static void scan_root(uintptr_t lo, uintptr_t hi) {
  size_t h = 0, k = 0;
  { // the first hole and node ending after lo
    h = ending_after(graph.holes, graph.nh, sizeof *graph.holes, lo);
    size_t a = 0, b = graph.n;
    while (a < b) {
      size_t m = (a + b) / 2;
      if (graph.v[m].lo + extent(&graph.v[m]) <= lo) a = m + 1;
      else b = m;
    }
    k = a;
  }
  uintptr_t p = lo;
  while (p < hi) {
    uintptr_t next = hi, skip_to = hi;
    if (h < graph.nh && graph.holes[h].lo < next) next = graph.holes[h].lo, skip_to = graph.holes[h].hi;
    if (k < graph.n && graph.v[k].lo < next) next = graph.v[k].lo, skip_to = graph.v[k].lo + extent(&graph.v[k]);
    if (next > p) {
      graph.phase = PH_ROOT;
      scan(p, next < hi ? next : hi, &graph.rec.root_bytes);
    }
    if (skip_to > p) p = skip_to;
    while (h < graph.nh && graph.holes[h].hi <= p) h++;
    while (k < graph.n && graph.v[k].lo + extent(&graph.v[k]) <= p) k++;
    if (next >= hi) break;
  }
}

// ---------------------------------------------------------------- holding the threads

static void stop_world(pid_t self) {
  nd_stop_world(self);
  graph.thr = nd_stop_threads(&graph.nt);
}

static void let_go(uint64_t t0) {
  graph.rec.ns += nd_os_mono_ns() - t0;
  nd_stop_let_go();
}

// ---------------------------------------------------------------- the mappings

static int read_maps(void) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  graph.tlen = 0;
  for (;;) {
    if (grow((void **)&graph.text, &graph.tcap, 1, graph.tlen + 65536)) {
      syscall(SYS_close, fd);
      return -1;
    }
    long n = syscall(SYS_read, fd, graph.text + graph.tlen, graph.tcap - graph.tlen - 1);
    if (n <= 0) break;
    graph.tlen += (size_t)n;
  }
  syscall(SYS_close, fd);
  graph.text[graph.tlen] = 0;
  return 0;
}

typedef struct map_line {
  uintptr_t lo, hi;
  char perms[5];
  const char *path; // "" for none, up to its newline
} map_line_t;

static const char *parse_line(const char *c, map_line_t *m) {
  m->lo = (uintptr_t)nd_os_hex(&c);
  if (*c == '-') c++;
  m->hi = (uintptr_t)nd_os_hex(&c);
  for (int i = 0; i < 4; i++) m->perms[i] = *c ? *++c : 0;
  m->perms[4] = 0;
  for (int field = 0; field < 3 && *c && *c != '\n'; field++) { // offset, device, inode
    while (*c && *c != ' ' && *c != '\n') c++;
    while (*c == ' ') c++;
  }
  while (*c && *c != ' ' && *c != '\n') c++; // the inode
  while (*c == ' ') c++;
  m->path = c;
  while (*c && *c != '\n') c++;
  return *c ? c + 1 : c;
}

static int path_is(const char *p, const char *s) {
  size_t n = strlen(s);
  return strncmp(p, s, n) == 0 && (p[n] == '\n' || p[n] == 0);
}

// Which mappings are roots: private, readable and writable, not device files (a GPU driver's
// windows), nor the kernel's ([vvar]: never writable anyway).
static int is_root_map(const map_line_t *m) {
  if (m->perms[0] != 'r' || m->perms[1] != 'w' || m->perms[3] != 'p') return 0;
  if (strncmp(m->path, "/dev/", 5) == 0) return 0;
  if (m->path[0] == '[' && !path_is(m->path, "[heap]") && !path_is(m->path, "[stack]") &&
      strncmp(m->path, "[anon:", 6) != 0)
    return 0;
  return 1;
}

static int segments(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  uintptr_t me = (uintptr_t)ctx;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz) mine = 1;
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W)) continue;
    uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
    uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
    if (mine && graph.nself < 8) graph.self_seg[graph.nself++] = (range_t){lo, hi};
    if (!grow((void **)&graph.elf, &graph.ecap, sizeof *graph.elf, graph.nelf + 1)) graph.elf[graph.nelf++] = (range_t){lo, hi};
  }
  return 0;
}

// glibc's own memory around the heap nodes, where it can be told apart: a chunk's size word
// (before the block) says mmapped (its own mapping, from prev_size before it) or of another arena
// than the main one (its heap: the GLIBC_HEAP_MAX-aligned range holding it, whose heap_info gives
// its size). Blocks of ndmem's workspaces are in ndmem's arenas and have no chunk header.
static void glibc_regions(const uintptr_t (*own)[2], size_t nown, int complete) {
  uintptr_t last_heap = 0;
  for (size_t i = 0; i < graph.n; i++) {
    node_t *n = &graph.v[i];
    if (!is_heap(n) || n->lo < 16 || (n->lo & 15)) continue;
    int ours = 0;
    for (size_t k = 0; k < nown && !ours; k++) ours = n->lo >= own[k][0] && n->lo < own[k][1];
    if (ours || !readable(n->lo - 16, n->lo)) continue;
    uint64_t sz = *(const uint64_t *)(n->lo - 8), csz = sz & ~(uint64_t)7;
    if (csz < n->size + 8 || csz > (1ull << 46)) continue; // not a glibc chunk
    n->chunk = 1;
    n->next = n->lo - 16 + csz;
    if (!complete || (n->lo >= graph.heap_lo && n->lo < graph.heap_hi)) continue;
    if (sz & 2) { // mmapped
      uint64_t prev = *(const uint64_t *)(n->lo - 16);
      uintptr_t start = n->lo - 16 - prev;
      if (((start | (n->lo - 16 + csz)) & 4095) == 0 && prev < 65536) add_hole(start, n->lo - 16 + csz);
    } else if (sz & 4) { // a non-main arena's heap
      uintptr_t h = n->lo & ~(uintptr_t)(GLIBC_HEAP_MAX - 1);
      if (h == last_heap || !readable(h, h + 32)) continue;
      uint64_t hsize = ((const uint64_t *)h)[2]; // heap_info: ar_ptr, prev, size
      if (hsize > GLIBC_HEAP_MAX || n->lo + n->size > h + hsize) continue;
      add_hole(h, h + GLIBC_HEAP_MAX);
      last_heap = h;
    }
  }
}

// ---------------------------------------------------------------- ended threads

// A word of the program's memory (a descriptor's), where it is mapped readable: 0 or -1.
static int peek(uintptr_t a, uint64_t *v) {
  if ((a & 7) || !readable(a, a + 8)) return -1;
  if (!graph.careful) {
    *v = *(const uint64_t *)a;
    return 0;
  }
  struct iovec l = {v, 8}, r = {(void *)a, 8};
  return syscall(SYS_process_vm_readv, graph.pid, &l, 1ul, &r, 1ul, 0ul) == 8 ? 0 : -1;
}

// The stacks of threads that ended (threads.h): glibc keeps them mapped for the next threads,
// and what an ended thread left on its stack, in its static TLS and its descriptor (its return
// value, its thread-specific values) is dead, as memcheck finds after glibc's own release of
// them at exit. Each record's range is skipped where its thread is none of the process's, no
// live thread's stack pointer lies in it (a thread glibc started on it since, not through the
// wrapper), and it still holds that thread's descriptor: on x86-64 the descriptor begins with
// its own address twice (tcbhead_t's tcb and self), which a mapping made there since would not
// hold. Elsewhere the check cannot be made and ended threads' stacks stay roots. The thread
// vector the descriptor points to (glibc's, freed when the stack is reused or released) is
// held by glibc's cache: it is reached from there, not lost (nd_reach's hold). An ended thread
// nobody joined yet (threads.c's `released`) keeps its return value for the join: its
// descriptor stays a root, and only what lies below it (its stack, its static TLS) is skipped.
static void ended_stacks(uintptr_t self_sp) {
  size_t n;
  const nd_thread_rec_t *v = nd_threads_stopped(&n);
  if (!v) return;
  for (size_t i = 0; i < graph.nt; i++) // a live thread whose stack pointer is unknown: no check
    if (graph.thr[i].state != ND_THR_GONE && !graph.thr[i].sp) return;
  for (size_t k = 0; k < n; k++) {
    const nd_thread_rec_t *r = &v[k];
    // ndmem's own threads are not among the stopped ones, and run on.
    int live = r->tid == graph.self || nd_os_is_own_thread(r->tid) ||
               (self_sp >= r->lo && self_sp < r->hi);
    for (size_t i = 0; i < graph.nt && !live; i++) {
      const nd_thr_t *t = &graph.thr[i];
      if (t->state == ND_THR_GONE) continue;
      live = t->tid == r->tid || (t->sp >= r->lo && t->sp < r->hi);
    }
    if (live || r->hi <= r->lo || !readable(r->lo, r->hi)) continue;
#if defined(__x86_64__)
    uint64_t tcb, self, dtv;
    if (r->self < r->lo || r->self + 24 > r->hi || peek(r->self, &tcb) || peek(r->self + 16, &self) ||
        tcb != r->self || self != r->self)
      continue;
    // Not joined yet (nor detached): a join may still take its return value from the
    // descriptor, which is read as a root (its thread vector then too); below it all is dead.
    uintptr_t hi = r->released ? r->hi : r->self;
    if (r->released && peek(r->self + 8, &dtv) == 0 && dtv &&
        !grow((void **)&graph.dtv, &graph.dcap, sizeof *graph.dtv, graph.ndtv + 1))
      graph.dtv[graph.ndtv++] = (uintptr_t)dtv;
#else
    continue;
#endif
    add_hole(r->lo, hi);
    graph.rec.ended_threads++;
    graph.rec.ended_bytes += hi - r->lo;
  }
}

// The node holding address a, reached from a root whatever the offset (a thread vector: glibc
// points one word past its start). In the roots' phase.
static void hold(uintptr_t a) {
  size_t i = a - graph.min < graph.span ? find(a) : SIZE_MAX;
  if (i != SIZE_MAX) mark(i, graph.v[i].lo);
}

// ---------------------------------------------------------------- the scan

// A file's mapping is a root only where it is a loaded object's writable segment (its .data; a
// data file mapped privately may end before its last page, and reading there raises SIGBUS).
static int elf_data(uintptr_t lo, uintptr_t hi) {
  for (size_t i = 0; i < graph.nelf; i++)
    if (lo < graph.elf[i].hi && hi > graph.elf[i].lo) return 1;
  return 0;
}

// A file mapped privately and writable (not a loaded object's data): only the pages the program
// wrote are its memory (/proc/self/pagemap: present and no longer the file's page, or swapped),
// read as roots; the others are the file's contents, and past the file's end a read would raise
// SIGBUS. The JVM's class-data archive is such a mapping, its pages holding pointers to blocks.
static void written_pages(uintptr_t lo, uintptr_t hi) {
  if (graph.pm_fd < 0) return;
  const uintptr_t pg = 4096;
  uint64_t pm[512];
  for (uintptr_t w = lo; w < hi;) {
    size_t np = (hi - w) / pg < 512 ? (hi - w) / pg : 512;
    if (!np || syscall(SYS_pread64, graph.pm_fd, pm, np * 8, (w / pg) * 8) != (long)(np * 8)) return;
    for (size_t k = 0; k < np; k++)
      if ((pm[k] >> 63 & 1 && !(pm[k] >> 61 & 1)) || pm[k] >> 62 & 1)
        scan_root(w + k * pg, w + (k + 1) * pg);
    w += np * pg;
  }
}

static void mark_from_roots(uintptr_t self_sp, int complete) {
  for (const char *c = graph.text; *c;) {
    map_line_t m;
    c = parse_line(c, &m);
    if (m.perms[0] == 'r' && !grow((void **)&graph.maps, &graph.mcap, sizeof *graph.maps, graph.nm + 1))
      graph.maps[graph.nm++] = (range_t){m.lo, m.hi};
    if (path_is(m.path, "[heap]")) graph.heap_lo = m.lo, graph.heap_hi = m.hi;
    // The thread stacks: nothing below a stack pointer (less the red zone) is read.
    // (A stopped thread may have been in a leaf function using its red zone; the exiting thread
    // is in a call, and what lies below its bound is dead.)
    uintptr_t low = UINTPTR_MAX;
    if (self_sp >= m.lo && self_sp < m.hi) low = self_sp;
    for (size_t i = 0; i < graph.nt; i++) {
      uintptr_t sp = graph.thr[i].sp - RED_ZONE;
      if (graph.thr[i].sp >= m.lo && graph.thr[i].sp < m.hi && sp < low) low = sp;
    }
    if (low != UINTPTR_MAX && low > m.lo) add_hole(m.lo, low);
  }
  if (graph.oom || sort_ranges(graph.maps, &graph.nm)) return;
  ended_stacks(self_sp);
  // ndmem's own memory.
  size_t nown = 0;
  int busy, lost;
  const uintptr_t(*own)[2] = nd_os_own(&nown, &busy, &lost);
  for (size_t i = 0; i < nown; i++) add_hole(own[i][0], own[i][1]);
  for (size_t i = 0; i < graph.nself; i++) add_hole(graph.self_seg[i].lo, graph.self_seg[i].hi);
  add_hole((uintptr_t)&nd_tls, (uintptr_t)(&nd_tls + 1));
  for (size_t i = 0; i < graph.nt; i++)
    if (graph.thr[i].tls) add_hole(graph.thr[i].tls, graph.thr[i].tls + sizeof(nd_tls_t));
  if (complete && graph.heap_hi) add_hole(graph.heap_lo, graph.heap_hi); // the allocator's: never the program's
  if (nd_allocstat_kind() == ND_ALLOCATOR_GLIBC) {
    glibc_regions(own, nown, complete);
    graph.rec.flags |= ND_SCAN_ALLOCATOR_KNOWN;
  }
  uintptr_t tlo, thi; // the threads' saved registers
  nd_stop_table(&tlo, &thi);
  add_hole(tlo, thi);
  // The scan's own buffers (one mapped from here on is not in the maps read: never a root).
  for (size_t i = 0; i < graph.nbufs; i++) add_hole(graph.bufs[i].lo, graph.bufs[i].hi);
  if (graph.oom || sort_ranges(graph.holes, &graph.nh)) return;
  for (const char *c = graph.text; *c;) {
    map_line_t m;
    c = parse_line(c, &m);
    if (!is_root_map(&m)) continue;
    if (m.path[0] == '/' && !elf_data(m.lo, m.hi)) {
      written_pages(m.lo, m.hi);
      continue;
    }
    // An int in a loaded object's image is a constant of its build (CPython's deep-frozen code
    // objects hold hundreds): never an address, but one that may fall in a heap below 4 GiB.
    uint64_t py_long = graph.py_long;
    if (m.path[0] == '/') graph.py_long = 0;
    scan_root(m.lo, m.hi);
    graph.py_long = py_long;
  }
  graph.phase = PH_ROOT;
  for (size_t i = 0; i < graph.ndtv; i++) hold(graph.dtv[i]);
  nd_threads_starting(hit_word); // a thread's argument before it started: the program's root
  for (size_t i = 0; i < graph.nt; i++)
    if (graph.thr[i].state == ND_THR_HELD || graph.thr[i].state == ND_THR_LET_GO) {
      for (int k = 0; k < ND_STOP_REGS; k++) hit(graph.thr[i].regs[k]);
      graph.rec.root_bytes += sizeof graph.thr[i].regs;
    }
}

// The frames of the exiting thread from its call of exit (or _exit, _Exit) down are the exit's
// own: the program's data there is dead, as after a return, and what the exit path saved of the
// caller's registers libunwind restores in the caller's frame. The caller's stack pointer (0:
// no such call found: this frame is the bound) and those registers, the roots of this thread.
#define EXIT_REGS 8
static uint64_t exit_regs[EXIT_REGS];
static uintptr_t exit_caller_walk(void);
static uintptr_t exit_caller(void) {
  // libunwind's signal masking skipped where it may be (stacks/unwind.h); no bound found where
  // the fork gate is closed (a child whose parent forked mid-unwind).
  if (nd_unw_begin() != 0) return 0;
  uintptr_t sp = exit_caller_walk();
  nd_unw_end();
  return sp;
}
static uintptr_t exit_caller_walk(void) {
  unw_context_t uc;
  unw_cursor_t c;
  if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0) return 0;
  uintptr_t found = 0;
  for (int depth = 0; depth < 128 && unw_step(&c) > 0; depth++) {
    unw_word_t ip;
    Dl_info di;
    if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || !dladdr((void *)(ip - 1), &di) || !di.dli_sname)
      continue;
    if (strcmp(di.dli_sname, "exit") && strcmp(di.dli_sname, "_exit") && strcmp(di.dli_sname, "_Exit"))
      continue;
    unw_cursor_t caller = c;
    unw_word_t sp;
    if (unw_step(&caller) <= 0 || unw_get_reg(&caller, UNW_REG_SP, &sp) != 0) break;
    found = sp; // the outermost such call (an exit handler that calls _exit is inside it)
#if defined(__x86_64__)
    static const int regs[] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                               UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};
    memset(exit_regs, 0, sizeof exit_regs);
    for (int k = 0; k < 6; k++) {
      unw_word_t v;
      if (unw_get_reg(&caller, regs[k], &v) == 0) exit_regs[k] = v;
    }
#endif
  }
  return found;
}

// This thread's stack is read from this frame up: the caller's frame, where its callee-saved
// registers were stored, and every frame of the exit above it.
static __attribute__((noinline)) void classify(int complete, uintptr_t caller_sp) {
  uintptr_t self_sp = caller_sp ? caller_sp : (uintptr_t)__builtin_frame_address(0);
  mark_from_roots(self_sp, complete);
  if (caller_sp) {
    graph.phase = PH_ROOT;
    for (int k = 0; k < EXIT_REGS; k++) hit(exit_regs[k]);
  }
  if (graph.oom) return;
  drain(0);
  graph.phase = PH_CLIQUE;
  for (size_t i = 0; i < graph.n; i++) {
    if (graph.v[i].state != ST_UNREACHED) continue;
    graph.v[i].state = ST_LEADER;
    graph.leader = i;
    push(i);
    drain(1);
  }
}

// ndmem's own mappings are not being changed by a stopped thread.
static int own_table_quiet(void) {
  size_t n;
  int busy, lost;
  nd_os_own(&n, &busy, &lost);
  return !busy;
}

static unsigned reach_of(const node_t *n) {
  switch (n->state) {
  case ST_REACHABLE: return ND_REACH_REACHABLE;
  case ST_POSSIBLE: return ND_REACH_POSSIBLE;
  case ST_INDIRECT: return ND_REACH_INDIRECT;
  case ST_LEADER: return ND_REACH_LOST;
  default: return ND_REACH_NONE;
  }
}

int nd_reach_scan(int how, nd_rec_scan_t *rec) {
  memset(&graph.rec, 0, sizeof graph.rec);
  graph.rec.mono_ns = nd_os_mono_ns();
  graph.pm_fd = -1;
  graph.done = graph.held = 0;
  if (!nd_cfg.leak_scan) graph.rec.status = ND_SCAN_OFF;
  else if ((how != ND_EXIT_NORMAL && how != ND_EXIT_UNDERSCORE) || nd_finish_inside) // (shim.h): no scan
    graph.rec.status = ND_SCAN_NOT_AT_END;
  if (graph.rec.status != ND_SCAN_DONE) goto out;
  pid_t self = nd_os_gettid();
  graph.self = self;
  {
    size_t n;
    int busy, lost;
    nd_os_own(&n, &busy, &lost);
    if (lost) { // a table that overflowed never recovers: no point stopping anyone
      graph.rec.status = ND_SCAN_OWN_UNKNOWN;
      goto out;
    }
  }
  graph.nself = graph.nelf = 0;
  dl_iterate_phdr(segments, (void *)(uintptr_t)nd_reach_scan); // before the stop: the loader's lock
  int st = nd_stop_setup();
  if (st) {
    graph.rec.status = st == -1 ? ND_SCAN_NO_MEMORY : ND_SCAN_NO_SIGNAL;
    goto out;
  }
  // out of the program's range (its stdout may be closed: the lowest free number is 1)
  graph.pm_fd = nd_os_fd_high((int)syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC), 0);
  __builtin_unwind_init(); // this thread's callee-saved registers: on its stack, read as a root
  uintptr_t caller_sp = exit_caller(); // before the stop: dladdr takes the loader's lock
  graph.py_long = (uintptr_t)nd_py_long_type(&graph.py_minor);
  for (;;) {
    graph.rec.tries++;
    uint64_t t0 = nd_os_mono_ns();
    stop_world(self);
    graph.n = graph.nh = graph.nm = graph.sn = graph.ncont = graph.ndtv = graph.nr = graph.ng = 0;
    graph.rec.ended_threads = graph.rec.reserved_maps = 0;
    graph.rec.ended_bytes = 0;
    graph.los = graph.top = NULL;
    graph.oom = 0;
    int64_t *c = graph.rec.live_count, *b = graph.rec.live_bytes;
    int ok = own_table_quiet() && nd_counters_live_stopped(NDMEM_KIND_HEAP, &c[0], &b[0]) == 0 &&
             nd_counters_live_stopped(NDMEM_KIND_MMAP, &c[1], &b[1]) == 0 &&
             nd_blocks_each_stopped(node_block, NULL) == 0 &&
             nd_mmap_each_live_stopped(node_region, NULL) == 0 &&
             nd_mmap_each_reserved_stopped(node_resv, NULL) == 0 &&
             nd_cuda_each_live_stopped(node_device, NULL) == 0;
    if (ok && read_maps() != 0) {
      let_go(t0);
      graph.rec.status = ND_SCAN_NO_MAPS;
      goto out;
    }
    if (ok) {
      uint64_t heap_nodes = 0;
      for (size_t i = 0; i < graph.n; i++) heap_nodes += is_heap(&graph.v[i]);
      int64_t heap_live = c[0];
      graph.rec.untracked_blocks = heap_live > (int64_t)heap_nodes ? (uint64_t)(heap_live - (int64_t)heap_nodes) : 0;
      // A thread that did not stop is read from where the kernel shows it waits; it may be
      // inside ndmem with a block counted and not yet in the table: then the allocator's memory
      // is read as roots too.
      for (size_t i = 0; i < graph.nt; i++) {
        nd_thr_t *t = &graph.thr[i];
        graph.rec.threads += t->state != ND_THR_GONE;
        // Not held: asked and never caught, blocking the signal, or caught inside ndmem at the
        // last ask (it runs on).
        if (t->state != ND_THR_HELD && t->state != ND_THR_GONE) {
          graph.rec.unheld++;
          t->sp = nd_stop_waiting_sp(t->tid);
        }
      }
      graph.careful = graph.rec.unheld != 0;
      graph.pid = nd_os_getpid();
      int complete = heap_live == (int64_t)heap_nodes && !graph.rec.unheld;
      if (complete) graph.rec.flags |= ND_SCAN_COMPLETE;
      if (sort_nodes() == 0) {
        make_groups();
        for (size_t i = 0; i < graph.ncont && complete; i++)
          if (graph.cont[i].from != ND_REACH_FROM_DEVICE)
            add_hole(graph.cont[i].lo, graph.cont[i].lo + extent(&graph.cont[i]));
        classify(complete, caller_sp);
      } else {
        graph.oom = 1;
      }
    }
    if (ok && !graph.oom) { // held until nd_reach_release: the trace's blocks are these
      graph.held = 1;
      graph.t0 = t0;
      break;
    }
    let_go(t0);
    if (ok) break;
    if (graph.rec.tries >= 20) {
      graph.rec.status = ND_SCAN_BUSY;
      goto out;
    }
    nd_os_sleep_ms(1);
  }
  if (graph.oom) {
    graph.rec.status = ND_SCAN_NO_MEMORY;
    goto out;
  }
  graph.rec.blocks = graph.n;
  graph.done = 1;
out:
  if (graph.pm_fd >= 0) syscall(SYS_close, graph.pm_fd);
  graph.pm_fd = -1;
  if (graph.held) graph.rec.ns = nd_os_mono_ns() - graph.t0; // so far: the records are written stopped too
  *rec = graph.rec;
  return graph.done;
}

void nd_reach_each(void (*fn)(void *ctx, const nd_reach_block_t *b), void *ctx) {
  for (size_t i = 0; graph.done && i < graph.n; i++) {
    const node_t *n = &graph.v[i];
    nd_reach_block_t b = {n->lo, n->size, n->born, n->cycle, n->site, n->from, reach_of(n)};
    fn(ctx, &b);
  }
  for (size_t i = 0; graph.done && i < graph.ncont; i++) {
    const node_t *n = &graph.cont[i];
    nd_reach_block_t b = {n->lo, n->size, n->born, n->cycle, n->site, n->from, ND_REACH_NONE};
    fn(ctx, &b);
  }
}

void nd_reach_release(void) {
  if (graph.held) let_go(graph.t0);
  graph.held = 0;
}
