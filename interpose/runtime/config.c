// SPDX-License-Identifier: MIT
// config.c: the NDMEM_* table and its parsers (see config.h). Runs inside the first intercepted
// call, before any allocator is usable: no allocation, no stdio, no locale.
#include "runtime/config.h"

#include "common/fmt.h"
#include "common/os.h"
#include "runtime/sysmem.h"
#include "common/trace_format.h"

__extension__ typedef unsigned __int128 nd_u128;

#include <stddef.h>
#include <unistd.h>

#define OPT(name, type, field, def, min, max, doc)                                               \
  { name, type, offsetof(nd_config_t, field), def, min, max, NULL, doc }
#define SOPT(name, field, sdef, doc) { name, ND_OPT_STRING, offsetof(nd_config_t, field), 0, 0, 0, sdef, doc }
#define LOPT(name, field, def, doc)                                                             \
  { name, ND_OPT_LIMIT, offsetof(nd_config_t, field), def, def < 0 ? -1 : 0, INT64_MAX, NULL, doc }
#define COPT(name, field, def, words, doc) { name, ND_OPT_CHOICE, offsetof(nd_config_t, field), def, 0, 0, words, doc }

const nd_option_t nd_options[] = {
    OPT("NDMEM_ENABLED", ND_OPT_BOOL, enabled, 1, 0, 1,
        "0 turns accounting off: every hook forwards to the next allocator"),
    OPT("NDMEM_SUMMARY", ND_OPT_INT, summary, 1, 0, 2,
        "summary on stderr at the end of the process the user started: 0 none, 1 totals, 2 "
        "totals and one row per thread"),
    OPT("NDMEM_SUMMARY_CHILDREN", ND_OPT_BOOL, summary_children, 0, 0, 1,
        "1: children (fork, or exec'd by a process under ndmem) print their summaries too; "
        "0: only the process the user started"),
    OPT("NDMEM_FOLLOW_FORK", ND_OPT_BOOL, follow_fork, 1, 0, 1,
        "1: a fork child keeps its own accounting and trace; 0: the child is not accounted"),
    OPT("NDMEM_TRACE", ND_OPT_BOOL, trace, 1, 0, 1,
        "write a trace (stacks, sites, leaks) for ndmemreport; 0: counters and summary only"),
    SOPT("NDMEM_OUTPUT", output, "ndmem.%p.trace",
         "trace path; %p pid, %h host name, %r rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
         "PMIX_RANK, SLURM_PROCID; 0 when unknown), %% a %"),
    SOPT("NDMEM_RUN_LOG", run_log, "",
         "an absolute path of an existing file, which every process appends a line to: its "
         "trace's path, or why it has none (ndmem run sets it to learn every trace of its run); "
         "empty: none"),
    SOPT("NDMEM_METRICS", metrics, "",
         "Prometheus text file written at each trace flush (node_exporter's textfile collector); "
         "same patterns as NDMEM_OUTPUT; empty: none"),
    OPT("NDMEM_DEPTH", ND_OPT_INT, depth, 32, 1, 128, "frames captured per allocation stack"),
    OPT("NDMEM_TRACK_MIN", ND_OPT_SIZE, track_min, 8192, 0, INT64_MAX,
        "blocks of at least this size are tracked exactly (stack, size, time); 0 tracks all"),
    OPT("NDMEM_SAMPLE", ND_OPT_SIZE, sample, 512 * 1024, 0, INT64_MAX,
        "smaller blocks are sampled, one per this many bytes on average; 0 samples none"),
    OPT("NDMEM_FLUSH_MS", ND_OPT_INT, flush_ms, 1000, 10, 60000,
        "the trace is flushed at least this often (milliseconds; the first flushes sooner: "
        "after 100 ms, then doubling) and at exit"),
    OPT("NDMEM_COMPRESS", ND_OPT_BOOL, compress, 1, 0, 1,
        "1: the trace's records are compressed (zstd, level 1); 0: written as they are"),
    OPT("NDMEM_GROWTH_CYCLES", ND_OPT_INT, growth_cycles, 20, 0, 1000000000,
        "a site whose lowest live bytes keep rising for this many cycles (flush windows when "
        "no cycle is found) is named on stderr and in the trace while the job runs; 0: never"),
    OPT("NDMEM_LEAK_SCAN", ND_OPT_BOOL, leak_scan, 1, 0, 1,
        "at exit and _exit, class the live tracked blocks by reachability (definitely, "
        "indirectly, possibly lost, still reachable) with the other threads held still; 0: no "
        "scan (blocks are then only live at exit)"),
    OPT("NDMEM_PYTHON", ND_OPT_BOOL, python, 1, 0, 1,
        "CPython 3.10 to 3.14: the Python frames (function, file, line) of each tracked block "
        "in its stack, in place of the interpreter's; 0: native frames only"),
    OPT("NDMEM_PY_DEPTH", ND_OPT_INT, py_depth, 64, 1, ND_PY_DEPTH_MAX,
        "Python frames kept per allocation stack, innermost first, whatever NDMEM_DEPTH cut of "
        "the native frames around them"),
    OPT("NDMEM_REPLAY", ND_OPT_BOOL, replay, 1, 0, 1,
        "a stack seen again at the same stack pointer is replayed once its saved return addresses "
        "(and Python frames) are checked, instead of unwound (x86-64); 0: every stack unwound"),
    OPT("NDMEM_WORKSPACES", ND_OPT_BOOL, workspaces, 1, 0, 1,
        "route learned cyclic allocations into planned per-thread workspaces; 0: account only"),
    OPT("NDMEM_WS_MIN", ND_OPT_SIZE, ws_min, 64 * 1024, 1, INT64_MAX,
        "allocations of at least this size take part in workspaces"),
    COPT("NDMEM_WS_LEARNING", ws_learning, 1, "none|first_loop|over_time",
         "none: fixed arena of NDMEM_WS_INITIAL_SIZE; first_loop: plan from the first cycle; "
         "over_time: from NDMEM_WS_CYCLES cycles"),
    OPT("NDMEM_WS_CYCLES", ND_OPT_INT, ws_cycles, 3, 1, 1000, "cycles learned with over_time"),
    COPT("NDMEM_WS_ALLOCATION", ws_allocation, 1, "strict|overallocate",
         "strict: the arena is the plan; overallocate: plus NDMEM_WS_OVERALLOCATE of it"),
    { "NDMEM_WS_OVERALLOCATE", ND_OPT_FRACTION, offsetof(nd_config_t, ws_overallocate), 300000, 0,
      100000000, NULL, "extra arena, as a fraction of the plan (0.3 = 30 %)" },
    COPT("NDMEM_WS_SPILL", ws_spill, 0, "external|reallocate|fail",
         "an allocation the plan cannot serve: external (the heap), reallocate (and re-plan "
         "larger), fail (NULL, ENOMEM)"),
    COPT("NDMEM_WS_RESET", ws_reset, 0, "block_left|endofbuffer",
         "block_left: planned offsets, reset every cycle; endofbuffer: a circular arena"),
    COPT("NDMEM_WS_LOCATION", ws_location, 0, "ram|mmap",
         "ram: anonymous memory; mmap: an unlinked file in NDMEM_WS_MMAP_DIR"),
    SOPT("NDMEM_WS_MMAP_DIR", ws_mmap_dir, "/tmp", "folder for arena files with location mmap"),
    OPT("NDMEM_WS_INITIAL_SIZE", ND_OPT_SIZE, ws_initial_size, 0, 0, INT64_MAX,
        "arena size before (or, with learning none, instead of) learning"),
    OPT("NDMEM_WS_MIN_SIZE", ND_OPT_SIZE, ws_min_size, 0, 0, INT64_MAX, "smallest arena"),
    OPT("NDMEM_WS_MAX_SIZE", ND_OPT_SIZE, ws_max_size, 0, 0, INT64_MAX,
        "largest arena (0: unlimited); what does not fit is served externally"),
    OPT("NDMEM_WS_GUARD", ND_OPT_BOOL, ws_guard, 0, 0, 1,
        "debug: finished generations are made inaccessible; a stale pointer faults and is named"),
    LOPT("NDMEM_MAX_BYTES", max_bytes, 0,
         "limit on tracked host bytes (heap usable sizes, anonymous mmaps, workspace arenas): "
         "8G, 512m, 1.5g, 1073741824, 75% (of RAM or the cgroup limit, the smaller); 0: none"),
    LOPT("NDMEM_MAX_PHYSICAL_BYTES", max_physical_bytes, 0,
         "limit on anonymous resident memory (resident - shared; file pages do not count); "
         "same forms; 0: none"),
    COPT("NDMEM_MAX_BYTES_MAPPINGS", max_bytes_mappings, 0, "touched|whole",
         "how an anonymous mapping of 4 MiB or more counts towards NDMEM_MAX_BYTES: touched (its "
         "pages written or read, resident; a reserved buffer never used counts nothing) or whole "
         "(its size); smaller mappings count whole"),
    { "NDMEM_MAX_DEVICE_BYTES", ND_OPT_DEVICE_LIMIT, offsetof(nd_config_t, max_device), 0, 0, 0,
      NULL,
      "limit on CUDA device memory (cuMemAlloc, stream-ordered and cuMemCreate allocations) of "
      "every device; NDMEM_MAX_DEVICE_BYTES_<i> for device i alone: 8G, 512m, 75% (of the "
      "device's memory); over it an allocation fails with CUDA_ERROR_OUT_OF_MEMORY and "
      "cuMemGetInfo reports the limit as the device's size; 0: none" },
    { "NDMEM_DEVICE_WS", ND_OPT_DEVICE_STRING, offsetof(nd_config_t, device_ws), 0, 0, 0, "off",
      "device workspaces for every device (NDMEM_DEVICE_WS_<i>: device i alone): off, on, or a "
      "policy list such as learning=over_time,cycles=3,sync=ordered (keys: learning, cycles, "
      "allocation, overallocate, spill, reset, initial_size, min_size, max_size, min, sync)" },
    COPT("NDMEM_ON_DEVICE_LIMIT", on_device_limit, 0, "limit|host",
         "an allocation over a device limit, or refused by a full device: limit (NDMEM_ON_LIMIT "
         "decides), host (served from page-locked host memory the device reads and writes over "
         "the bus; the program runs on, slower)"),
    OPT("NDMEM_TORCH_TENSORS", ND_OPT_BOOL, torch_tensors, 0, 0, 1,
        "set by `ndmem run --torch-tensors`, which set PYTORCH_CUDA_ALLOC_CONF=backend:"
        "cudaMallocAsync: the report says that PyTorch's device sites are its tensors"),
    COPT("NDMEM_ON_LIMIT", on_limit, 0, "fail|warn|abort",
         "over a limit after relief: fail (NULL/MAP_FAILED, ENOMEM), warn (allow; logged once "
         "per doubling), abort (write the trace and summary, then SIGABRT)"),
    SOPT("NDMEM_LIMIT_REFUSE", limit_refuse, "",
         "objects whose requests over a limit may be refused, beside the tensor runtimes' "
         "allocators (libc10.so*, _multiarray_umath*, libpython3*, a python* executable; "
         "libc10_cuda.so* for device memory): a comma-separated list of file names or globs (* "
         "?), a path where it has a '/', %exe for the main executable, * for every object; "
         "-NAME takes an object out, a built-in one too. Requests from elsewhere are admitted "
         "within NDMEM_LIMIT_SLACK"),
    { "NDMEM_LIMIT_SLACK", ND_OPT_SLACK, offsetof(nd_config_t, limit_slack), ND_SLACK_AUTO, 0, 0,
      NULL,
      "how far requests a limit admits (from code that cannot take a refusal) may take the total "
      "past the limit: a size, a percentage of the limit, or auto (the larger of 64 MiB and 10 %); "
      "a request that would go further is refused; 0: every request over a limit is refused" },
    OPT("NDMEM_LIMIT_LARGE", ND_OPT_SIZE, limit_large, 64ll << 20, 0, INT64_MAX,
        "a request of at least this many bytes over a limit may be refused wherever it comes "
        "from; 0: every request"),
    OPT("NDMEM_LIMIT_RETRY_MS", ND_OPT_INT, limit_retry_ms, 2000, 0, 3600000,
        "with NDMEM_ON_LIMIT=fail, a thread that retries the same refused request (function, "
        "size, call site) for this long (milliseconds; 16 tries at least) cannot go on: the "
        "process is stopped as abort does; 0: never"),
    OPT("NDMEM_LIMITS_STRICT", ND_OPT_BOOL, limits_strict, 0, 0, 1,
        "1: a limit that cannot be read stops the process before it starts (exit status 2); 0: "
        "it runs without that limit and says so"),
    OPT("NDMEM_CONFIG_STRICT", ND_OPT_INT, config_strict, 0, 0, 2,
        "1: any NDMEM_* variable that is not a setting, or a value that cannot be read, stops "
        "the process before it starts (exit status 2); 2: the same, and a process whose "
        "settings all read ends there (exit status 0): `ndmem run` checks the settings of a "
        "run so before it runs the command; 0: a default is used for what cannot be read, "
        "said in one line"),
    LOPT("NDMEM_WARN_AT", warn_at, -1,
         "watermark on anonymous resident memory: crossing it writes a snapshot of live memory "
         "by site to the trace; auto: 90% of the cgroup limit when there is one; 0: none"),
    OPT("NDMEM_LIMIT_STEP", ND_OPT_SIZE, limit_step, 0, 0, INT64_MAX,
        "resident memory is re-read after this many bytes allocated (0: 1/64 of the physical "
        "limit or watermark, 1m to 64m)"),
    OPT("NDMEM_LIMIT_POLL_MS", ND_OPT_INT, limit_poll_ms, 100, 0, 60000,
        "resident memory is also read this often (milliseconds) by a thread; 0: only on "
        "allocation"),
    SOPT("NDMEM_TEST_CGROUP_DIR", test_cgroup_dir, "",
         "test only: read the cgroup memory limit from this directory"),
    SOPT("NDMEM_TEST_STATM", test_statm, "", "test only: read resident memory from this file"),
    OPT("NDMEM_TEST_DEVICE_WS_UNFENCED", ND_OPT_BOOL, test_dws_unfenced, 0, 0, 1,
        "test only: device workspaces reuse memory without waiting for the work that used it (a "
        "broken ndmem, to show that the tests catch it)"),
};
const size_t nd_options_count = sizeof nd_options / sizeof nd_options[0];
_Static_assert(sizeof nd_options / sizeof nd_options[0] <= 64, "nd_config_t.given has a bit per option");

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int ieq(const char *a, const char *b) {
  while (*a && *b && lower((unsigned char)*a) == lower((unsigned char)*b)) a++, b++;
  return *a == 0 && *b == 0;
}

int nd_parse_bool(const char *s, int64_t *out) {
  static const char *yes[] = {"1", "yes", "true", "on"}, *no[] = {"0", "no", "false", "off"};
  for (int i = 0; i < 4; i++) {
    if (ieq(s, yes[i])) return *out = 1, 0;
    if (ieq(s, no[i])) return *out = 0, 0;
  }
  return -1;
}

int nd_parse_int(const char *s, int64_t *out) {
  int neg = 0;
  uint64_t v = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (!*s) return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (UINT64_C(1) << 62)) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (v > (uint64_t)INT64_MAX) return -1;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

int nd_parse_fraction(const char *s, int64_t *ppm) {
  int64_t v;
  // the size parser reads "0.3" with a million as the base of a '%'-less multiplier
  char buf[64];
  size_t n = 0;
  while (s[n] && n + 2 < sizeof buf) buf[n] = s[n], n++;
  if (s[n] || !n) return -1;
  for (size_t i = 0; i < n; i++)
    if ((buf[i] < '0' || buf[i] > '9') && buf[i] != '.') return -1;
  buf[n] = '%';
  buf[n + 1] = 0;
  if (nd_parse_size(buf, 100000000, &v) != 0) return -1; // x% of 1e8 = x * 1e6
  *ppm = v;
  return 0;
}

int nd_parse_choice(const char *s, const char *words, int64_t *index) {
  for (int64_t i = 0; *words; i++) {
    const char *a = s, *w = words;
    while (*a && *w && *w != '|' && lower((unsigned char)*a) == lower((unsigned char)*w)) a++, w++;
    if (!*a && (!*w || *w == '|')) return *index = i, 0;
    while (*words && *words != '|') words++;
    if (*words == '|') words++;
  }
  return -1;
}

int nd_parse_limit(const char *s, uint64_t base, int allow_auto, int64_t *out) {
  if (ieq(s, "off") || ieq(s, "none") || (s[0] == '0' && !s[1])) return *out = 0, 0;
  if (allow_auto && ieq(s, "auto")) return *out = -1, 0;
  int64_t v;
  if (nd_parse_size(s, base, &v) != 0 || v <= 0) return -1;
  *out = v;
  return 0;
}

uint64_t nd_config_auto_warn(uint64_t cgroup_bytes) { return cgroup_bytes / 10 * 9; }

int nd_parse_slack(const char *s, int64_t *out) {
  if (ieq(s, "auto")) return *out = ND_SLACK_AUTO, 0;
  size_t n = 0;
  while (s[n]) n++;
  int64_t v;
  if (n > 1 && s[n - 1] == '%') { // parts per million of the limit
    if (nd_parse_size(s, 1000000, &v) != 0 || v > 10 * 1000000) return -1;
    return *out = -v, 0;
  }
  if (nd_parse_size(s, 0, &v) != 0) return -1;
  return *out = v, 0;
}

int64_t nd_config_slack_bytes(int64_t setting, int64_t limit) {
  if (limit <= 0) return 0;
  if (setting >= 0) return setting;
  int64_t ppm = setting == ND_SLACK_AUTO ? ND_SLACK_AUTO_PPM : -setting;
  int64_t v = (int64_t)((nd_u128)limit * (uint64_t)ppm / 1000000);
  return setting == ND_SLACK_AUTO && v < ND_SLACK_AUTO_MIN ? ND_SLACK_AUTO_MIN : v;
}

static int has_prefix(const char *s, const char *p, const char **rest);
int nd_parse_device_limit(const char *s, int64_t *out, int *frac) {
  size_t n = 0;
  while (s[n]) n++;
  *frac = n > 1 && s[n - 1] == '%';
  if (!*frac) return nd_parse_limit(s, 0, 0, out);
  int64_t v;
  // '%' of 2^40: the fraction in units of 2^-40
  if (nd_parse_size(s, 1ull << 40, &v) != 0 || v <= 0 || v > (1ll << 40)) return -1;
  *out = v;
  return 0;
}

// NDMEM_MAX_DEVICE_BYTES=V or NDMEM_MAX_DEVICE_BYTES_<i>=V (i < ND_CONFIG_DEVICES): the device's
// index (ND_CONFIG_DEVICES: every device) and *value, or -1 when the name is not one of them.
static int device_limit_name(const char *entry, const char *name, const char **value) {
  const char *rest;
  if (!has_prefix(entry, name, &rest)) return -1;
  if (*rest == '=') return *value = rest + 1, ND_CONFIG_DEVICES;
  if (*rest != '_' || rest[1] < '0' || rest[1] > '9') return -1;
  int i = 0;
  for (rest++; *rest >= '0' && *rest <= '9' && i < 100; rest++) i = i * 10 + (*rest - '0');
  if (*rest != '=' || i >= ND_CONFIG_DEVICES) return -1;
  return *value = rest + 1, i;
}

static int has_prefix(const char *s, const char *p, const char **rest) {
  while (*p && *s == *p) s++, p++;
  if (*p) return 0;
  *rest = s;
  return 1;
}

// Copies s into a config string field; -1 (nothing copied) when it does not fit.
static int set_string(char *dst, const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  if (n >= ND_CONFIG_PATH_MAX) return -1;
  for (size_t i = 0; i <= n; i++) dst[i] = s[i];
  return 0;
}

// One line for a value that cannot be used: what it should have been (or, for a well-formed size
// outside the option's range, out_of_range -1 below or 1 above it) and the default used instead.
static void warn_bad(const nd_option_t *o, const char *value, int out_of_range,
                     nd_config_warn_fn warn, void *ctx) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: ");
  nd_buf_str(&b, o->name);
  nd_buf_str(&b, "='");
  nd_buf_strn(&b, value, 64);
  if (out_of_range && o->type == ND_OPT_SIZE) {
    nd_buf_str(&b, out_of_range < 0 ? "' is below the minimum " : "' is above the maximum ");
    nd_buf_i64(&b, out_of_range < 0 ? o->min : o->max);
    nd_buf_str(&b, " B");
  } else {
    nd_buf_str(&b, "' is not ");
  }
  switch (out_of_range && o->type == ND_OPT_SIZE ? -1 : (int)o->type) {
  case ND_OPT_BOOL: nd_buf_str(&b, "a boolean (0/1, yes/no, true/false, on/off)"); break;
  case ND_OPT_INT:
    nd_buf_str(&b, "an integer in ");
    nd_buf_i64(&b, o->min);
    nd_buf_str(&b, "..");
    nd_buf_i64(&b, o->max);
    break;
  case ND_OPT_SIZE: nd_buf_str(&b, "a size (e.g. 1073741824, 512m, 1.5g)"); break;
  case ND_OPT_LIMIT:
    nd_buf_str(&b, "a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75%");
    nd_buf_str(&b, o->min < 0 ? ", auto or off)" : " or off)");
    break;
  case ND_OPT_CHOICE:
    nd_buf_str(&b, "one of ");
    for (const char *w = o->sdef; *w; w++) nd_buf_char(&b, *w == '|' ? '/' : *w);
    break;
  case ND_OPT_FRACTION: nd_buf_str(&b, "a fraction (e.g. 0.3)"); break;
  case ND_OPT_SLACK: nd_buf_str(&b, "a slack (e.g. 64m, 10% of the limit, auto or 0)"); break;
  case ND_OPT_STRING: {
    int pattern = o->offset == offsetof(nd_config_t, output) ||
                  o->offset == offsetof(nd_config_t, metrics);
    int list = o->offset == offsetof(nd_config_t, limit_refuse);
    nd_buf_str(&b, pattern ? "a path pattern (at most "
                   : list  ? "a list of object names (at most "
                           : "a path (at most ");
    nd_buf_u64(&b, ND_CONFIG_PATH_MAX - 1);
    nd_buf_str(&b, pattern ? " bytes; %p %h %r %%)" : " bytes)");
    break;
  }
  default: break;
  }
  nd_buf_str(&b, "; using ");
  if (o->type == ND_OPT_LIMIT) {
    nd_buf_str(&b, o->def < 0 ? "auto" : "none (the limit is off)");
  } else if (o->type == ND_OPT_SLACK) {
    nd_buf_str(&b, "auto");
  } else if (o->type == ND_OPT_STRING) {
    nd_buf_str(&b, o->sdef[0] ? o->sdef : "none (unset)");
  } else if (o->type == ND_OPT_CHOICE) {
    const char *w = o->sdef;
    for (int64_t i = 0; i < o->def; i++) {
      while (*w && *w != '|') w++;
      if (*w) w++;
    }
    while (*w && *w != '|') nd_buf_char(&b, *w++);
  } else if (o->type == ND_OPT_FRACTION) {
    nd_buf_i64(&b, o->def / 1000000);
    nd_buf_char(&b, '.');
    nd_buf_u64_pad(&b, (uint64_t)(o->def % 1000000) / 100000, 0);
  } else {
    nd_buf_i64(&b, o->def);
  }
  warn(nd_buf_cstr(&b), ctx);
}

static int load_env(nd_config_t *cfg, char *const *envp, nd_config_warn_fn warn, void *ctx);

static int given(const nd_config_t *cfg, const char *name) {
  for (size_t i = 0; i < nd_options_count; i++)
    if ((cfg->given >> i & 1) && ieq(nd_options[i].name, name)) return 1;
  return 0;
}

// Settings that cannot take effect because of another one: one line each, naming what decides.
// (Limits and their reading settings may still take effect later, through ndmem_limit_set;
// NDMEM_ENABLED=0 is the off switch and silences everything, as its users expect.)
static int check_effects(const nd_config_t *cfg, nd_config_warn_fn warn, void *ctx) {
  int n = 0;
  nd_buf_t b;
  struct {
    int off;
    const char *because;
    const char *names;
  } groups[] = {
      {cfg->enabled && !cfg->trace, "NDMEM_TRACE=0 (no trace is written)",
       "NDMEM_OUTPUT NDMEM_DEPTH NDMEM_TRACK_MIN NDMEM_SAMPLE NDMEM_FLUSH_MS NDMEM_COMPRESS"},
      {cfg->enabled && !cfg->summary, "NDMEM_SUMMARY=0 (no summary is printed)",
       "NDMEM_SUMMARY_CHILDREN"},
      {cfg->enabled && !cfg->workspaces, "NDMEM_WORKSPACES=0 (no workspace is made)",
       "NDMEM_WS_MIN NDMEM_WS_LEARNING NDMEM_WS_CYCLES NDMEM_WS_ALLOCATION NDMEM_WS_OVERALLOCATE "
       "NDMEM_WS_SPILL NDMEM_WS_RESET NDMEM_WS_LOCATION NDMEM_WS_MMAP_DIR NDMEM_WS_INITIAL_SIZE "
       "NDMEM_WS_MIN_SIZE NDMEM_WS_MAX_SIZE NDMEM_WS_GUARD"},
      {cfg->enabled && cfg->workspaces && cfg->ws_learning != 2,
       "NDMEM_WS_LEARNING is not over_time (only over_time learns over several cycles)",
       "NDMEM_WS_CYCLES"},
      {cfg->enabled && cfg->workspaces && cfg->ws_allocation == 0 && cfg->ws_reset == 0,
       "NDMEM_WS_ALLOCATION=strict (the arena is the plan, nothing more)", "NDMEM_WS_OVERALLOCATE"},
      {cfg->enabled && cfg->workspaces && cfg->ws_location == 0,
       "NDMEM_WS_LOCATION=ram (arenas are anonymous memory)", "NDMEM_WS_MMAP_DIR"},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    if (!groups[g].off) continue;
    for (const char *p = groups[g].names; *p;) {
      char name[48];
      size_t k = 0;
      while (*p && *p != ' ' && k + 1 < sizeof name) name[k++] = *p++;
      name[k] = 0;
      while (*p == ' ') p++;
      if (!given(cfg, name)) continue;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: ");
      nd_buf_str(&b, name);
      nd_buf_str(&b, " has no effect: ");
      nd_buf_str(&b, groups[g].because);
      warn(nd_buf_cstr(&b), ctx);
      n++;
    }
  }
  return n;
}

static uint64_t percent_base(nd_config_t *cfg, char *const *envp);

// A host limit above what the process can ever hold (RAM, or the cgroup memory limit where that is
// smaller: 150% is one): kept as given, but it is never reached before the memory runs out (the
// kernel's OOM killer stops the job first), so it is said, in one line, as a value that cannot be
// used is. Not a bad value: NDMEM_CONFIG_STRICT does not stop the job for it.
static void warn_unreachable(nd_config_t *cfg, const nd_option_t *opt, const char *value, int64_t v,
                             char *const *envp, nd_config_warn_fn warn, void *ctx) {
  uint64_t base = percent_base(cfg, envp);
  if (v <= 0 || base <= 1 || (uint64_t)v <= base) return; // off, auto, or RAM unknown
  int cgroup = cfg->cgroup_bytes && cfg->cgroup_bytes < cfg->ram_bytes;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: ");
  nd_buf_str(&b, opt->name);
  nd_buf_str(&b, "='");
  nd_buf_strn(&b, value, 64);
  nd_buf_str(&b, "' is ");
  nd_buf_bytes(&b, v);
  nd_buf_str(&b, " (");
  nd_buf_i64(&b, v);
  nd_buf_str(&b, cgroup ? " B), more than the cgroup memory limit " : " B), more than the RAM ");
  nd_buf_ubytes(&b, base);
  nd_buf_str(&b, " (");
  nd_buf_u64(&b, base);
  nd_buf_str(&b, " B): it is never reached before memory runs out; kept as given");
  warn(nd_buf_cstr(&b), ctx);
}

// What a '%' limit is relative to: the smaller of RAM and the cgroup limit, read once. The
// test-only cgroup directory is taken from the environment first, wherever it stands in it.
static uint64_t percent_base(nd_config_t *cfg, char *const *envp) {
  if (!cfg->ram_bytes) {
    const char *dir = NULL, *rest;
    for (char *const *e = envp; e && *e; e++)
      if (has_prefix(*e, "NDMEM_TEST_CGROUP_DIR=", &rest)) dir = rest;
    cfg->ram_bytes = nd_os_phys_bytes();
    cfg->cgroup_bytes = nd_cgroup_limit(dir);
    if (!cfg->ram_bytes) cfg->ram_bytes = 1; // unknown: '%' still means something
  }
  uint64_t b = cfg->ram_bytes;
  return cfg->cgroup_bytes && cfg->cgroup_bytes < b ? cfg->cgroup_bytes : b;
}

int nd_config_load(nd_config_t *cfg, char *const *envp, int secure, nd_config_warn_fn warn,
                   void *ctx) {
  int warnings = 0;
  for (size_t i = 0; i < nd_options_count; i++) {
    const nd_option_t *o = &nd_options[i];
    if (o->type == ND_OPT_STRING) set_string((char *)cfg + o->offset, o->sdef);
    else if (o->type != ND_OPT_DEVICE_STRING) *(int64_t *)((char *)cfg + o->offset) = o->def;
  }
  cfg->ram_bytes = cfg->cgroup_bytes = 0;
  cfg->given = 0;
  for (int i = 0; i <= ND_CONFIG_DEVICES; i++) {
    cfg->max_device[i] = 0;
    cfg->device_ws[i][0] = 0;
  }
  set_string(cfg->device_ws[ND_CONFIG_DEVICES], "off");
  cfg->device_ws_given = 0;
  cfg->max_device_frac = cfg->max_device_given = 0;
  cfg->unread_limits = 0;
  warnings = load_env(cfg, secure ? NULL : envp, warn, ctx);
  cfg->bad_values = (uint32_t)warnings;
  warnings += check_effects(cfg, warn, ctx);
  if (cfg->warn_at < 0) { // auto: 90 % of the cgroup limit, when there is one
    percent_base(cfg, secure ? NULL : envp);
    cfg->warn_at = (int64_t)nd_config_auto_warn(cfg->cgroup_bytes);
  }
  return warnings;
}

// NDMEM_* variables that are not the shim's settings but are documented elsewhere: the `ndmem`
// wrapper's (NDMEM_LIB, the library it preloads) and the test and benchmark drivers'
// (NDMEM_TEST_PYTHON, the interpreter with numpy they use). They are skipped without a remark.
static const char *const not_settings[] = {"NDMEM_LIB", "NDMEM_TEST_PYTHON"};

static int load_env(nd_config_t *cfg, char *const *envp, nd_config_warn_fn warn, void *ctx) {
  int warnings = 0;
  if (!envp) return 0;
  char *const *envp0 = envp;
  for (; *envp; envp++) {
    const char *rest;
    if (!has_prefix(*envp, "NDMEM_", &rest)) continue;
    const nd_option_t *opt = NULL;
    const char *value = NULL;
    int device = -1;
    for (size_t i = 0; i < nd_options_count && !opt; i++) {
      if (nd_options[i].type == ND_OPT_DEVICE_LIMIT || nd_options[i].type == ND_OPT_DEVICE_STRING) {
        if ((device = device_limit_name(*envp, nd_options[i].name, &value)) >= 0) opt = &nd_options[i];
      } else if (has_prefix(*envp, nd_options[i].name, &rest) && *rest == '=') {
        opt = &nd_options[i];
        value = rest + 1;
      }
    }
    if (opt) cfg->given |= 1ull << (opt - nd_options);
    int other = 0; // another tool's variable
    for (size_t i = 0; !opt && i < sizeof not_settings / sizeof *not_settings; i++)
      other |= has_prefix(*envp, not_settings[i], &rest) && *rest == '=';
    if (other) continue;
    if (!opt) {
      nd_buf_t b;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: ");
      const char *e = *envp;
      while (*e && *e != '=') nd_buf_char(&b, *e++);
      nd_buf_str(&b, " is not a known setting; ignored (see ndmem(1): `man ndmem`)");
      warn(nd_buf_cstr(&b), ctx);
      warnings++;
      continue;
    }
    if (opt->type == ND_OPT_STRING) {
      char probe[ND_CONFIG_PATH_MAX + 256];
      // Path patterns are expanded here once so a bad one is said at start-up; the others are plain
      // paths. An empty NDMEM_METRICS (off) or NDMEM_LIMIT_REFUSE (no more objects) is its
      // default, not a bad value.
      int metrics = opt->offset == offsetof(nd_config_t, metrics);
      int pattern = metrics || opt->offset == offsetof(nd_config_t, output);
      int empty_ok = metrics || opt->offset == offsetof(nd_config_t, limit_refuse);
      if ((!*value && !empty_ok) || set_string((char *)cfg + opt->offset, value) != 0 ||
          (pattern && nd_config_expand_path(probe, sizeof probe, value, envp0) != 0)) {
        set_string((char *)cfg + opt->offset, opt->sdef);
        warn_bad(opt, value, 0, warn, ctx);
        cfg->given &= ~(1ull << (opt - nd_options)); // said once: not again as "no effect"
        warnings++;
      }
      continue;
    }
    if (opt->type == ND_OPT_DEVICE_STRING) { // read by its module; here only its length
      size_t n = 0;
      while (value[n]) n++;
      if (!n || n >= ND_CONFIG_DEVICE_WS_MAX) {
        nd_buf_t b;
        nd_buf_reset(&b);
        nd_buf_str(&b, "ndmem: ");
        const char *e = *envp;
        while (*e && *e != '=') nd_buf_char(&b, *e++);
        nd_buf_str(&b, n ? "='...' is longer than " : "='' is empty; ");
        if (n) {
          nd_buf_u64(&b, ND_CONFIG_DEVICE_WS_MAX - 1);
          nd_buf_str(&b, " bytes; ");
        }
        nd_buf_str(&b, "using ");
        nd_buf_str(&b, device < ND_CONFIG_DEVICES ? "NDMEM_DEVICE_WS's setting" : opt->sdef);
        warn(nd_buf_cstr(&b), ctx);
        warnings++;
        continue;
      }
      char *dst = cfg->device_ws[device];
      for (size_t i = 0; i <= n; i++) dst[i] = value[i];
      if (device < ND_CONFIG_DEVICES) cfg->device_ws_given |= 1u << device;
      continue;
    }
    int64_t v = 0;
    if (opt->type == ND_OPT_DEVICE_LIMIT) {
      int frac = 0;
      if (nd_parse_device_limit(value, &v, &frac) != 0) {
        nd_buf_t b;
        nd_buf_reset(&b);
        nd_buf_str(&b, "ndmem: ");
        const char *e = *envp;
        while (*e && *e != '=') nd_buf_char(&b, *e++);
        nd_buf_str(&b, "='");
        nd_buf_strn(&b, value, 64);
        nd_buf_str(&b, "' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% of the device or "
                       "off); using none (the limit is off)");
        warn(nd_buf_cstr(&b), ctx);
        cfg->unread_limits |= ND_UNREAD_DEVICE;
        warnings++;
        continue;
      }
      cfg->max_device[device] = v;
      uint32_t bit = 1u << device;
      cfg->max_device_frac = frac ? cfg->max_device_frac | bit : cfg->max_device_frac & ~bit;
      if (device < ND_CONFIG_DEVICES) cfg->max_device_given |= bit;
      continue;
    }
    if (opt->type == ND_OPT_LIMIT) {
      if (nd_parse_limit(value, percent_base(cfg, envp0), opt->min < 0, &v) != 0) {
        warn_bad(opt, value, 0, warn, ctx);
        cfg->given &= ~(1ull << (opt - nd_options)); // said once: not again as "no effect"
        if (opt->offset == offsetof(nd_config_t, max_bytes)) cfg->unread_limits |= ND_UNREAD_BYTES;
        if (opt->offset == offsetof(nd_config_t, max_physical_bytes))
          cfg->unread_limits |= ND_UNREAD_PHYSICAL;
        warnings++;
      } else {
        *(int64_t *)((char *)cfg + opt->offset) = v;
        warn_unreachable(cfg, opt, value, v, envp0, warn, ctx);
      }
      continue;
    }
    int rc = opt->type == ND_OPT_BOOL       ? nd_parse_bool(value, &v)
             : opt->type == ND_OPT_INT      ? nd_parse_int(value, &v)
             : opt->type == ND_OPT_CHOICE   ? nd_parse_choice(value, opt->sdef, &v)
             : opt->type == ND_OPT_FRACTION ? nd_parse_fraction(value, &v)
             : opt->type == ND_OPT_SLACK    ? nd_parse_slack(value, &v)
                                            : nd_parse_size(value, 0, &v);
    int ranged = opt->type != ND_OPT_CHOICE && opt->type != ND_OPT_SLACK;
    if (rc != 0 || (ranged && (v < opt->min || v > opt->max))) {
      warn_bad(opt, value, rc != 0 ? 0 : v < opt->min ? -1 : 1, warn, ctx);
      cfg->given &= ~(1ull << (opt - nd_options));
      warnings++;
      continue;
    }
    *(int64_t *)((char *)cfg + opt->offset) = v;
  }
  return warnings;
}

// A host name or rank comes from outside (RANK=../x): it becomes one file-name-safe component.
// Bytes other than [A-Za-z0-9._-] become '_', a value of dots only ('.', '..') becomes '_'s, and
// at most 64 bytes are kept, so an expansion can never leave the folder the pattern names.
static void put_component(nd_buf_t *b, const char *v, const char *empty) {
  if (!v || !*v) v = empty;
  int dots = 1;
  size_t n = 0;
  for (; v[n] && n < 64; n++) dots &= v[n] == '.';
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '_' || (c == '.' && !dots);
    nd_buf_char(b, ok ? c : '_');
  }
}

// The launchers' variables by family, in the order they are believed: torch.distributed's first
// (a torch job started by srun or mpirun has its own RANK beside theirs), then Open MPI's, MPICH
// Hydra's PMI (Hydra also sets MPI_LOCALRANKID and MPI_LOCALNRANKS), PMIx's (OpenPMIx launchers
// such as prte; Open MPI sets it too, to the same value) and Slurm's. The first family whose rank
// variable is set and not empty gives every field; NULL: that family has no such variable.
static const char *const rank_families[ND_RANK_FROM_MAX + 1][4] = {
    [ND_RANK_FROM_TORCH] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE="},
    [ND_RANK_FROM_OMPI] = {"OMPI_COMM_WORLD_RANK=", "OMPI_COMM_WORLD_SIZE=",
                           "OMPI_COMM_WORLD_LOCAL_RANK=", "OMPI_COMM_WORLD_LOCAL_SIZE="},
    [ND_RANK_FROM_PMI] = {"PMI_RANK=", "PMI_SIZE=", "MPI_LOCALRANKID=", "MPI_LOCALNRANKS="},
    [ND_RANK_FROM_PMIX] = {"PMIX_RANK=", NULL, NULL, NULL},
    [ND_RANK_FROM_SLURM] = {"SLURM_PROCID=", "SLURM_NTASKS=", "SLURM_LOCALID=", NULL},
};

static const char *env_value(char *const *envp, const char *name) {
  const char *v = NULL;
  for (char *const *e = envp; name && e && *e; e++)
    if (has_prefix(*e, name, &v)) return v;
  return NULL;
}

// A plain non-negative decimal integer that fits int32_t ("007" is 7), else -1: a sign, a space,
// a suffix or an empty value is not a rank ("0x1", "-1", "1 ", "2k"), and reads as unknown rather
// than as whatever its digits would make.
static int32_t plain_int(const char *v) {
  if (!v || !*v) return -1;
  int64_t n = 0;
  for (; *v; v++) {
    if (*v < '0' || *v > '9') return -1;
    n = n * 10 + (*v - '0');
    if (n > INT32_MAX) return -1;
  }
  return (int32_t)n;
}

void nd_config_rank(char *const *envp, nd_rank_t *out) {
  *out = (nd_rank_t){-1, -1, -1, -1, ND_RANK_FROM_NONE};
  for (uint32_t f = 1; f <= ND_RANK_FROM_MAX; f++) {
    const char *rank = env_value(envp, rank_families[f][0]);
    if (!rank || !*rank) continue; // an empty variable is no more than an unset one
    const char *const *v = rank_families[f];
    out->from = f;
    out->rank = plain_int(rank);
    out->world_size = plain_int(env_value(envp, v[1]));
    out->local_rank = plain_int(env_value(envp, v[2]));
    out->local_world_size = plain_int(env_value(envp, v[3]));
    if (out->world_size == 0) out->world_size = -1; // a world of no process is no size
    if (out->local_world_size == 0) out->local_world_size = -1;
    return;
  }
}

// NDMEM_OUTPUT: %p pid, %h host name, %r rank (nd_config_rank: RANK, OMPI_COMM_WORLD_RANK,
// PMI_RANK, PMIX_RANK, SLURM_PROCID; 0 when unknown), %% a percent sign; %h is made file-name safe
// (put_component). Returns -1 for an unknown conversion or a result too long for cap.
int nd_config_expand_path(char *out, size_t cap, const char *pat, char *const *envp) {
  nd_buf_t b;
  nd_buf_reset(&b);
  for (const char *p = pat; *p; p++) {
    if (*p != '%') {
      nd_buf_char(&b, *p);
      continue;
    }
    switch (*++p) {
    case 'p': nd_buf_u64(&b, (uint64_t)nd_os_getpid()); break;
    case 'h': {
      char host[256];
      if (gethostname(host, sizeof host) != 0) host[0] = 0;
      host[sizeof host - 1] = 0;
      put_component(&b, host, "unknown");
      break;
    }
    case 'r': { // digits only, so already file-name safe
      nd_rank_t r;
      nd_config_rank(envp, &r);
      nd_buf_u64(&b, r.rank >= 0 ? (uint64_t)r.rank : 0);
      break;
    }
    case '%': nd_buf_char(&b, '%'); break;
    default: return -1; // a lone or unknown % conversion
    }
  }
  if (b.len >= cap || b.len >= sizeof b.data - 1) return -1;
  for (size_t i = 0; i < b.len; i++) out[i] = b.data[i];
  out[b.len] = 0;
  return 0;
}

