// SPDX-License-Identifier: MIT
// facts.c: what every format says of a trace alike (analyse.h): the name tables of the trace's
// enums (kinds, functions, limits, actions, allocators, Python states), and the predicates the
// renderers and commands all ask (leaks known, limits or devices recorded, the limit a snapshot
// was taken for, PyTorch's allocator, whether CUPTI agrees with the hooks) and the sums they share.
#include "analyse/analyse.h"

#include <stdlib.h>
#include <string.h>

const char *const nd_rep_kind_names[ND_TRACE_KINDS] = {
    "heap",     "mmap",     "pinned",   "managed",  "device0",  "device1",  "device2",
    "device3",  "device4",  "device5",  "device6",  "device7",  "device8",  "device9",
    "device10", "device11", "device12", "device13", "device14", "device15"};
const char *const nd_rep_fn_names[ND_TRACE_FNS] = {
    "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
    "valloc", "pvalloc", "free",   "free_sized",   "free_aligned_sized", "mmap", "munmap",
    "mremap"};
const char *const nd_rep_fb_names[4] = {"bootstrap", "synthesized", "late-thread",
                                        "untracked-free"};
// Limits by their JavaCPP names in text, snake case in JSON; actions by NDMEM_ON_LIMIT's values.
const char *const nd_rep_limit_names[ND_LIMIT_DEVICE + 1] = {"maxBytes", "maxPhysicalBytes",
                                                              "maxDeviceBytes"};
const char *const nd_rep_limit_keys[ND_LIMIT_DEVICE + 1] = {"max_bytes", "max_physical_bytes",
                                                             "max_device_bytes"};
const char *nd_rep_base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

const char *const nd_rep_cuda_fn_names[ND_CUDA_FN_USED] = {ND_CUDA_FN_NAMES};
const char *const nd_rep_dev_class_names[ND_DEV_CLASSES] = {"cuMemAlloc", "stream-ordered",
                                                            "cuMemCreate"};
const char *const nd_rep_action_names[4] = {"fail", "warn", "abort", "host"};

uint64_t nd_rep_site_live(const nd_rec_site_t *s) {
  return s->alloc_bytes > s->free_bytes ? s->alloc_bytes - s->free_bytes : 0;
}

uint64_t nd_rep_sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

// A sampled estimate of live bytes of `kind` held to the most that the exact counters show the
// kind ever held, its peak: *most when that lowered it.
static uint64_t peak_cap(const nd_trace_t *t, uint16_t kind, uint64_t v, bool est, bool *most) {
  int64_t peak = kind < ND_TRACE_KINDS ? t->counters.kind[kind].peak_bytes : 0;
  *most = est && t->have_counters && peak >= 0 && v > (uint64_t)peak;
  return *most ? (uint64_t)peak : v;
}

nd_rep_growth_t nd_rep_growth(const nd_trace_t *t, const nd_rec_growth_t *g) {
  nd_rep_growth_t x = {.est = g->flags & ND_SITE_SAMPLED};
  x.base = peak_cap(t, g->kind, g->base_bytes, x.est, &x.most_base);
  x.lowest = peak_cap(t, g->kind, g->floor_bytes, x.est, &x.most_floor);
  return x;
}

// ---------------------------------------------------------------- Python frames

long nd_rep_py_innermost(const nd_trace_t *t, const nd_stack_t *s) {
  const uint64_t *ips = nd_stack_frames(t, s);
  for (size_t i = 0; i < s->depth; i++)
    if (nd_trace_is_pyframe(t, ips[i])) return (long)i;
  return -1;
}

bool nd_rep_py_library(const char *file) {
  return !file || !strncmp(file, "<frozen ", 8) || strstr(file, "/site-packages/") ||
         strstr(file, "/dist-packages/") || strstr(file, "/lib/python3.") ||
         strstr(file, "/lib/pypy");
}

bool nd_rep_python_only(const report_t *r, const nd_stack_t *s) {
  return r->o->python_only && nd_rep_py_innermost(r->t, s) >= 0;
}

// ---------------------------------------------------------------- names and sums

const char *const nd_rep_allocator_names[ND_ALLOCATOR_MAX + 1] = {"an unknown allocator",
                                                                  "glibc malloc", "jemalloc"};
const char *const nd_rep_allocator_keys[ND_ALLOCATOR_MAX + 1] = {"unknown", "glibc", "jemalloc"};

// Entries of a list shown: --top (0: all, as --frames 0 is every frame), 5 with --brief.
size_t nd_rep_list_len(const report_t *r, size_t n) {
  size_t top = r->o->brief ? 5 : r->o->top;
  return top && top < n ? top : n;
}

// Escape records seen, kept or not.
uint64_t nd_rep_esc_records(const nd_trace_t *t) {
  return nd_rep_sat_add(t->nescapes, t->escapes_dropped);
}

const char *const nd_rep_py_states[ND_PY_LAYOUT_DIFFERS + 1] = {"none", "on", "unsupported", "off",
                                                                 "free-threaded", "layout-differs"};

// ---------------------------------------------------------------- limits: shared by text and JSON

// Any record of limits: the LIMITS record is written with the totals, so a trace cut short may
// hold breaches and snapshots without one.
bool nd_rep_has_limits(const nd_trace_t *t) {
  return t->have_limits || t->nbreaches || t->breaches_dropped || t->snap_records ||
         t->have_admitted || t->have_refusal;
}

// ---------------------------------------------------------------- admissions (version 16)

const char *const nd_rep_why_keys[ND_REP_WHY] = {"runtime", "named", "large", "past_slack"};
static const char *const why_words[ND_REP_WHY] = {
    "from a tensor runtime's allocator", "from an object NDMEM_LIMIT_REFUSE names",
    "a large request (NDMEM_LIMIT_LARGE)",
    "admitting it would have passed the limit's slack (NDMEM_LIMIT_SLACK)"};

const char *nd_rep_breach_why(const nd_rec_breach_t *b, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < ND_REP_WHY; i++)
    if (b->flags & (ND_BREACH_RUNTIME << i)) {
      int k = snprintf(buf + at, n - at, "%s%s", at ? "; " : "", why_words[i]);
      if (k < 0 || (size_t)k >= n - at) break;
      at += (size_t)k;
    }
  return buf;
}

const char *nd_rep_admit_limit_name(const nd_trace_t *t, int slot, char *buf, size_t n) {
  const nd_rec_admitted_t *a = &t->admitted[slot];
  if (a->limit != ND_LIMIT_DEVICE) return nd_rep_limit_names[a->limit];
  snprintf(buf, n, "maxDeviceBytes (device %u)", a->device);
  return buf;
}

uint64_t nd_rep_admitted_total(const nd_trace_t *t) {
  uint64_t n = 0;
  for (int s = 0; s < ND_TRACE_ADMIT_SLOTS; s++)
    if (t->have_admitted >> s & 1) n = nd_rep_sat_add(n, t->admitted[s].admitted);
  return n;
}

static const nd_trace_t *order_trace; // qsort has no context argument
static int by_bytes(const void *a, const void *b) {
  const nd_rec_admit_site_t *x = &order_trace->admit_sites[*(const size_t *)a].rec;
  const nd_rec_admit_site_t *y = &order_trace->admit_sites[*(const size_t *)b].rec;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  if (x->admitted != y->admitted) return x->admitted < y->admitted ? 1 : -1;
  return x->ip < y->ip ? -1 : x->ip > y->ip;
}

int nd_rep_admit_order(const nd_trace_t *t, int slot, size_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  for (size_t i = 0; i < t->nadmit_sites; i++)
    if (nd_admit_slot(t->admit_sites[i].rec.limit, t->admit_sites[i].rec.device) == slot) (*n)++;
  if (!*n) return 0;
  size_t *v = malloc(*n * sizeof *v), k = 0;
  if (!v) return -1;
  for (size_t i = 0; i < t->nadmit_sites; i++)
    if (nd_admit_slot(t->admit_sites[i].rec.limit, t->admit_sites[i].rec.device) == slot) v[k++] = i;
  order_trace = t;
  qsort(v, k, sizeof *v, by_bytes);
  *out = v;
  return 0;
}

const char *nd_rep_breach_fn(const nd_rec_breach_t *b) {
  return b->limit == ND_LIMIT_DEVICE ? nd_rep_cuda_fn_names[b->fn] : nd_rep_fn_names[b->fn];
}

// A device whose limit is `bytes`, or -1.
static int device_limited_at(const nd_trace_t *t, uint64_t bytes) {
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if ((t->have_device >> d & 1) && t->devices[d].limit_bytes == bytes) return d;
  return -1;
}

bool nd_rep_has_devices(const nd_trace_t *t) { return t->have_device || t->have_cuda; }

const char *const nd_rep_dws_modes[5] = {ND_DWS_MODE_NAMES};
const char *const nd_rep_dws_syncs[2] = {"free", "ordered"};
const char *const nd_rep_dws_streams[3] = {"one stream", "several streams", "non-blocking streams"};

// PyTorch's CUDA library among the modules: the job used PyTorch on a GPU.
static bool torch_cuda_loaded(const nd_trace_t *t) {
  for (size_t i = 0; i < t->nmods; i++)
    if (t->mods[i].path && strstr(t->mods[i].path, "libtorch_cuda")) return true;
  return false;
}

int nd_rep_torch(const nd_trace_t *t) {
  if (!t->have_cuda || !t->has.device_ws) return ND_REP_TORCH_NONE;
  uint64_t c = t->cuda.torch_conf;
  if (c & ND_TORCH_CONF_ASYNC) return ND_REP_TORCH_ASYNC;
  return (c & ND_TORCH_CONF_SET) || torch_cuda_loaded(t) ? ND_REP_TORCH_NATIVE : ND_REP_TORCH_NONE;
}

const char *nd_rep_torch_text(const nd_trace_t *t) {
  uint64_t c = t->have_cuda ? t->cuda.torch_conf : 0;
  switch (nd_rep_torch(t)) {
  case ND_REP_TORCH_ASYNC:
    return c & ND_TORCH_CONF_BY_NDMEM
               ? "PyTorch: backend:cudaMallocAsync (set by ndmem run --torch-tensors): device "
                 "sites are its tensors by Python line"
               : "PyTorch: backend:cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF): device sites are "
                 "its tensors by Python line";
  case ND_REP_TORCH_NATIVE:
    return c & ND_TORCH_CONF_EXPANDABLE
               ? "PyTorch: its caching allocator, expandable segments: device sites are its "
                 "segments, not tensors (ndmem run --torch-tensors shows tensors)"
               : "PyTorch: its caching allocator: device sites are its segments, not tensors "
                 "(ndmem run --torch-tensors shows tensors)";
  default: return NULL;
  }
}

bool nd_rep_device_limited(const nd_trace_t *t) {
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if ((t->have_device >> d & 1) && (t->devices[d].limit_bytes || t->devices[d].breaches)) return true;
  return false;
}

// Whether what was live at the end is a leak: the program ended on its own (exit, a return from
// main, _exit). A fatal signal or NDMEM_ON_LIMIT=abort ends it before it could free anything.
bool nd_rep_leaks_known(const nd_trace_t *t) {
  return t->ended &&
         !(t->have_exit && (t->exit.how == ND_EXIT_SIGNAL || t->exit.how == ND_EXIT_LIMIT_ABORT));
}

bool nd_rep_aborted(const nd_trace_t *t) {
  return t->have_limits && (t->limits.flags & ND_LIMITS_ABORTED);
}

// Percentages of memory ("75%") are of RAM or of the cgroup's limit, whichever is smaller.
bool nd_rep_pct_of_cgroup(const nd_rec_limits_t *l) {
  return l->cgroup_bytes && (!l->ram_bytes || l->cgroup_bytes < l->ram_bytes);
}

// The limit a breach snapshot was taken for, by its threshold; -1 when it cannot be told.
int nd_rep_snap_limit(const nd_trace_t *t, const nd_rec_snapshot_t *s) {
  const nd_rec_limits_t *l = &t->limits;
  if (s->reason != ND_SNAP_BREACH || !s->threshold) return -1;
  bool b = t->have_limits && s->threshold == l->max_bytes;
  bool p = t->have_limits && s->threshold == l->max_physical_bytes;
  bool d = device_limited_at(t, s->threshold) >= 0;
  if (b + p + d != 1) return -1;
  return b ? ND_LIMIT_BYTES : p ? ND_LIMIT_PHYSICAL : ND_LIMIT_DEVICE;
}

uint64_t nd_rep_since_start(const nd_trace_t *t, uint64_t ns) {
  return ns > t->hdr.start_mono_ns ? ns - t->hdr.start_mono_ns : 0;
}

// The live bytes of a snapshot's kept sites; *est: some are estimates.
uint64_t nd_rep_snap_live(const nd_snapshot_t *s, bool *est) {
  uint64_t sum = 0;
  *est = false;
  for (size_t i = 0; i < s->nsites; i++) {
    sum = nd_rep_sat_add(sum, s->sites[i].rec.live_bytes);
    if (s->sites[i].rec.flags & ND_SITE_SAMPLED) *est = true;
  }
  return sum;
}

// CUPTI's records against the hooks': cuMemAlloc/cuMemAllocPitch against CUPTI's device memory
// outside pools (with cuMemCreate's physical allocations too, where CUPTI's records include
// them: whether they do is the driver's choice), stream-ordered allocations against pool-served
// ones.
static bool same_class(const nd_rec_dev_class_t *a, const nd_rec_dev_class_t *b) {
  return a->allocs == b->allocs && a->alloc_bytes == b->alloc_bytes && a->frees == b->frees &&
         a->free_bytes == b->free_bytes;
}

bool nd_rep_cupti_differs(const nd_rec_device_t *d, char *why, size_t n) {
  if (!(d->flags & ND_DEV_CUPTI)) return false;
  const nd_rec_dev_class_t *h = &d->cls[ND_DEV_PLAIN], *a = &d->cls[ND_DEV_ASYNC];
  const nd_rec_dev_class_t *v = &d->cls[ND_DEV_VMM];
  const nd_rec_dev_class_t *c = &d->cupti, *p = &d->cupti_pool;
  nd_rec_dev_class_t hv = {h->allocs + v->allocs, h->frees + v->frees,
                           h->alloc_bytes + v->alloc_bytes, h->free_bytes + v->free_bytes};
  if (!same_class(h, c) && !same_class(&hv, c)) {
    snprintf(why, n,
             "device memory: hooks %llu allocations of %llu B, %llu frees of %llu B; CUPTI %llu of "
             "%llu B, %llu of %llu B",
             (unsigned long long)h->allocs, (unsigned long long)h->alloc_bytes,
             (unsigned long long)h->frees, (unsigned long long)h->free_bytes,
             (unsigned long long)c->allocs, (unsigned long long)c->alloc_bytes,
             (unsigned long long)c->frees, (unsigned long long)c->free_bytes);
    return true;
  }
  if (a->allocs != p->allocs || a->alloc_bytes != p->alloc_bytes) {
    snprintf(why, n,
             "stream-ordered: hooks %llu allocations of %llu B; CUPTI %llu of %llu B",
             (unsigned long long)a->allocs, (unsigned long long)a->alloc_bytes,
             (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes);
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- the end and what it followed

bool nd_rep_exit_status(const nd_trace_t *t, int *status) {
  if (!t->have_exit || !(t->exit.how == ND_EXIT_UNDERSCORE ||
                         (t->exit.how == ND_EXIT_NORMAL && (t->exit.flags & ND_EXIT_STATUS))))
    return false;
  *status = t->exit.code;
  return true;
}

bool nd_rep_exec_end(const nd_trace_t *t) { return t->have_exec && !t->ended; }

bool nd_rep_end_after_refusal(const nd_trace_t *t, uint64_t *since_ns) {
  if (!t->have_refusal) return false;
  uint64_t end;
  bool clean = true;
  int status;
  if (t->ended && t->have_exit) {
    end = t->exit.mono_ns;
    clean = t->exit.how != ND_EXIT_SIGNAL && t->exit.how != ND_EXIT_LIMIT_ABORT &&
            !(nd_rep_exit_status(t, &status) && status != 0);
  } else if (t->ended) {
    end = t->end.mono_ns;
  } else if (nd_rep_exec_end(t)) {
    end = t->exec.mono_ns;
  } else {
    return false;
  }
  *since_ns = end > t->refusal.mono_ns ? end - t->refusal.mono_ns : 0;
  return !clean || *since_ns <= ND_REFUSAL_NEAR_NS;
}

const char *nd_rep_refusal_fn(const nd_rec_refusal_t *r) {
  return r->limit == ND_LIMIT_DEVICE ? nd_rep_cuda_fn_names[r->fn] : nd_rep_fn_names[r->fn];
}

const char *const nd_rep_exec_why[ND_EXEC_FOLLOW_MAX + 1] = {
    "followed: the program runs under ndmem",
    "not followed: its environment does not preload libndmem",
    "not followed: a statically linked program",
    "not followed: set-user-ID, the loader ignores LD_PRELOAD",
    "not followed: another ELF class or machine",
    "not followed, as far as can be told: the program could not be read"};
const char *const nd_rep_exec_keys[ND_EXEC_FOLLOW_MAX + 1] = {
    "followed", "no_preload", "static", "set_id", "foreign", "unknown"};
