// SPDX-License-Identifier: MIT
// config.h: NDMEM_* settings, read once from the environment without allocating.
// One table (config.c) names every variable, its type, default and range; docs/configuration.md
// and ndmem(1) document each of them and a test checks that they do. A bad value costs one
// stderr line and the default; the job always runs on.
#ifndef ND_CONFIG_H
#define ND_CONFIG_H

#include "common/fmt.h" // nd_parse_size

#include <stddef.h>
#include <stdint.h>

#define ND_CONFIG_PATH_MAX 512
#define ND_CONFIG_DEVICES 16 // NDMEM_MAX_DEVICES
#define ND_CONFIG_DEVICE_WS_MAX 256 // NDMEM_DEVICE_WS[_<i>]: bytes of one policy list, NUL included

#define ND_PY_DEPTH_MAX 112 // NDMEM_PY_DEPTH's bound: a stack (sites.h) holds at most 249 frames

typedef struct nd_config {
  int64_t enabled;     // NDMEM_ENABLED: 0 makes every hook a plain forward
  int64_t summary;     // NDMEM_SUMMARY: 0 none, 1 totals at exit, 2 totals and per-thread rows
  int64_t summary_children; // NDMEM_SUMMARY_CHILDREN: fork and exec children print theirs too
  int64_t follow_fork; // NDMEM_FOLLOW_FORK: 0 stops accounting in fork children
  int64_t trace;       // NDMEM_TRACE: write a trace for ndmemreport
  int64_t depth;       // NDMEM_DEPTH: frames per stack
  int64_t track_min;   // NDMEM_TRACK_MIN: blocks this large or larger are tracked exactly
  int64_t sample;      // NDMEM_SAMPLE: mean bytes between samples of smaller blocks (0: none)
  int64_t flush_ms;    // NDMEM_FLUSH_MS: trace flush interval
  int64_t compress;    // NDMEM_COMPRESS: the trace's records as one zstd stream
  int64_t growth_cycles; // NDMEM_GROWTH_CYCLES: a site growing this long is reported (0: never)
  int64_t leak_scan;   // NDMEM_LEAK_SCAN: the reachability scan at exit (reach.c)
  int64_t python;      // NDMEM_PYTHON: Python frames in the stacks of tracked blocks
  int64_t py_depth;    // NDMEM_PY_DEPTH: Python frames per stack, beside NDMEM_DEPTH's native ones
  int64_t replay;      // NDMEM_REPLAY: repeated stacks replayed once their slots are checked
  int64_t workspaces;  // NDMEM_WORKSPACES: route learned cyclic allocations into workspaces
  int64_t ws_min;      // NDMEM_WS_MIN: blocks this large or larger are routed
  int64_t ws_learning; // NDMEM_WS_LEARNING: enum ws_learning
  int64_t ws_cycles;   // NDMEM_WS_CYCLES: cycles learned with over_time
  int64_t ws_allocation;   // NDMEM_WS_ALLOCATION: enum ws_allocation
  int64_t ws_overallocate; // NDMEM_WS_OVERALLOCATE: parts per million (300000 = 0.3)
  int64_t ws_spill;    // NDMEM_WS_SPILL: enum ws_spill
  int64_t ws_reset;    // NDMEM_WS_RESET: enum ws_reset
  int64_t ws_location; // NDMEM_WS_LOCATION: enum ws_location
  int64_t ws_initial_size, ws_min_size, ws_max_size; // NDMEM_WS_INITIAL_SIZE, _MIN_SIZE, _MAX_SIZE
  int64_t ws_guard;    // NDMEM_WS_GUARD: make finished generations inaccessible
  int64_t max_bytes;          // NDMEM_MAX_BYTES: tracked host bytes (0: no limit)
  int64_t max_physical_bytes; // NDMEM_MAX_PHYSICAL_BYTES: anonymous resident bytes (0: no limit)
  int64_t max_bytes_mappings; // NDMEM_MAX_BYTES_MAPPINGS: enum nd_mappings_count (touched|whole)
  int64_t on_limit;           // NDMEM_ON_LIMIT: enum nd_limit_action (fail|warn|abort)
  int64_t limit_slack;        // NDMEM_LIMIT_SLACK: bytes (>= 0), a fraction of the limit in parts
                              // per million (negative: -ppm), or ND_SLACK_AUTO
  int64_t limit_large;        // NDMEM_LIMIT_LARGE: a request this large may always be refused
  int64_t limit_retry_ms;     // NDMEM_LIMIT_RETRY_MS: a refused request retried this long is a
                              // loop the program cannot leave (0: never decided)
  int64_t limits_strict;      // NDMEM_LIMITS_STRICT: a limit that cannot be read stops the process
  int64_t config_strict;      // NDMEM_CONFIG_STRICT: any bad setting stops the process
  int64_t warn_at;            // NDMEM_WARN_AT: watermark (0: none; after loading never -1/auto)
  int64_t limit_step;         // NDMEM_LIMIT_STEP: allocation between physical readings (0: auto)
  int64_t limit_poll_ms;      // NDMEM_LIMIT_POLL_MS: physical readings by time (0: none)
  // NDMEM_MAX_DEVICE_BYTES (index ND_CONFIG_DEVICES: every device) and NDMEM_MAX_DEVICE_BYTES_<i>:
  // bytes, or where bit i of max_device_frac is set a fraction of the device's memory in units of
  // 2^-40 (known only once the driver runs); 0: none. max_device_given: bit i, device i was named.
  int64_t max_device[ND_CONFIG_DEVICES + 1];
  uint32_t max_device_frac, max_device_given;
  // NDMEM_DEVICE_WS (index ND_CONFIG_DEVICES: every device) and NDMEM_DEVICE_WS_<i>: device
  // workspaces, "off", "on" or a policy list (interpose/device/dws.c reads it). device_ws_given:
  // bit i, device i was named.
  char device_ws[ND_CONFIG_DEVICES + 1][ND_CONFIG_DEVICE_WS_MAX];
  uint32_t device_ws_given;
  int64_t on_device_limit;    // NDMEM_ON_DEVICE_LIMIT: enum nd_on_device_limit
  int64_t test_dws_unfenced;  // NDMEM_TEST_DEVICE_WS_UNFENCED: test only, no reuse fences
  int64_t torch_tensors;      // NDMEM_TORCH_TENSORS: ndmem run --torch-tensors set PyTorch's
                              // CUDA allocator to backend:cudaMallocAsync
  char output[ND_CONFIG_PATH_MAX];    // NDMEM_OUTPUT: trace path pattern (%p %h %r %%)
  char metrics[ND_CONFIG_PATH_MAX];   // NDMEM_METRICS: Prometheus text file pattern ("": none)
  char run_log[ND_CONFIG_PATH_MAX];   // NDMEM_RUN_LOG: the run's list of traces ("": none)
  char ws_mmap_dir[ND_CONFIG_PATH_MAX]; // NDMEM_WS_MMAP_DIR: where location=mmap puts arena files
  char test_cgroup_dir[ND_CONFIG_PATH_MAX]; // NDMEM_TEST_CGROUP_DIR: test-only cgroup directory
  char test_statm[ND_CONFIG_PATH_MAX];      // NDMEM_TEST_STATM: test-only statm file
  char limit_refuse[ND_CONFIG_PATH_MAX];    // NDMEM_LIMIT_REFUSE: objects whose requests a limit
                                            // may refuse, beside the built-in ones
  // Not settings: which variables the environment named (bit i: nd_options[i]), and what '%'
  // limits are relative to, found while loading.
  uint64_t given;
  uint32_t unread_limits; // the limits that were asked for but could not be read (ND_UNREAD_*)
  uint32_t bad_values;    // NDMEM_* variables that are no setting, or values that are not one
  uint64_t ram_bytes;    // physical RAM
  uint64_t cgroup_bytes; // the process's cgroup memory limit (0: none)
} nd_config_t;

// NDMEM_MAX_BYTES_MAPPINGS: how an anonymous mapping of ND_TOUCH_MIN bytes or more counts towards
// maxBytes: by its pages touched (resident), or whole. Smaller ones always count whole.
enum nd_mappings_count { ND_MAPPINGS_TOUCHED = 0, ND_MAPPINGS_WHOLE = 1 };
#define ND_TOUCH_MIN (4u << 20)
// NDMEM_ON_DEVICE_LIMIT: what an allocation over a device limit (or refused by a full device)
// gets: what NDMEM_ON_LIMIT says, or page-locked host memory the device reaches.
enum nd_on_device_limit { ND_ON_DEVICE_LIMIT_LIMIT = 0, ND_ON_DEVICE_LIMIT_HOST = 1 };
// nd_config_t.unread_limits: a limit variable was given a value that is not a limit.
enum { ND_UNREAD_BYTES = 1, ND_UNREAD_PHYSICAL = 2, ND_UNREAD_DEVICE = 4 };

typedef enum nd_opt_type {
  ND_OPT_BOOL,
  ND_OPT_INT,
  ND_OPT_SIZE,
  ND_OPT_STRING,
  ND_OPT_CHOICE,  // one of the '|'-separated words in `sdef`; stored as its index
  ND_OPT_FRACTION, // a decimal like 0.3; stored in parts per million
  ND_OPT_DEVICE_LIMIT, // NDMEM_MAX_DEVICE_BYTES[_<i>]: a size or a '%' of the device's memory
  ND_OPT_DEVICE_STRING, // NDMEM_DEVICE_WS[_<i>]: a string per device, read by its module
  ND_OPT_SLACK,    // NDMEM_LIMIT_SLACK: auto, a size, or a percentage of the limit (nd_parse_slack)
  ND_OPT_LIMIT     // a size, or a percentage of the memory the process may have (the smaller of
                   // RAM and its cgroup limit); 0/off/none: no limit; min -1 also allows "auto"
} nd_opt_type_t;

typedef struct nd_option {
  const char *name;
  nd_opt_type_t type;
  size_t offset; // into nd_config_t: an int64_t, or a char[ND_CONFIG_PATH_MAX] for strings
  int64_t def, min, max;
  const char *sdef; // default of a string option; the words of a choice
  const char *doc;
} nd_option_t;

extern const nd_option_t nd_options[];
extern const size_t nd_options_count;

// Receives one finished line (no newline) per problem found while loading.
typedef void (*nd_config_warn_fn)(const char *line, void *ctx);

// Fills cfg with defaults, then applies NDMEM_* entries of envp unless `secure` (AT_SECURE
// processes ignore the environment). Returns the number of warnings emitted.
int nd_config_load(nd_config_t *cfg, char *const *envp, int secure, nd_config_warn_fn warn,
                   void *ctx);

// Parsers, exposed for tests and for later settings. Each returns 0 on success, -1 on a bad value.
int nd_parse_bool(const char *s, int64_t *out);
int nd_parse_int(const char *s, int64_t *out);
int nd_parse_fraction(const char *s, int64_t *ppm); // "0.3" -> 300000
int nd_parse_choice(const char *s, const char *words, int64_t *index); // words "a|b|c"
// Sizes (nd_parse_size): in common/fmt.h, which ndmemreport's size options share.

// A limit value: as nd_parse_size with `base` for '%', "0"/"off"/"none" (0), and with allow_auto
// "auto" (-1). 0, or -1 on a bad value (including a '%' when base is 0, or a value of 0 bytes
// written any other way than 0).
int nd_parse_limit(const char *s, uint64_t base, int allow_auto, int64_t *out);
// NDMEM_LIMIT_SLACK: "auto" (ND_SLACK_AUTO), a size (bytes, >= 0), or "P%" of the limit (returned
// as -ppm, at most 1000 %). 0, or -1 on a bad value.
#define ND_SLACK_AUTO INT64_MIN
int nd_parse_slack(const char *s, int64_t *out);
// A slack setting in bytes for a limit of `limit` bytes: auto is the larger of ND_SLACK_AUTO_MIN
// and ND_SLACK_AUTO_PPM of the limit.
#define ND_SLACK_AUTO_MIN (64ll << 20)
#define ND_SLACK_AUTO_PPM 100000
int64_t nd_config_slack_bytes(int64_t setting, int64_t limit);

// A device limit: a size, "0"/"off"/"none", or "P%" of the device's memory, returned as a fraction
// in units of 2^-40 with *frac set (at most 100 %). 0, or -1 on a bad value.
int nd_parse_device_limit(const char *s, int64_t *out, int *frac);
// The default watermark for NDMEM_WARN_AT=auto: 90 % of the cgroup limit, or 0 without one.
uint64_t nd_config_auto_warn(uint64_t cgroup_bytes);

// Expands an NDMEM_OUTPUT pattern (see config.c). 0, or -1 when it is malformed or too long.
int nd_config_expand_path(char *out, size_t cap, const char *pattern, char *const *envp);

// Where the process stands in its job, from the launcher's variables in `envp` (config.c has the
// order): the one reading behind NDMEM_OUTPUT's %r and the trace header's rank fields, so the
// two cannot disagree. -1: unknown (not set, or not a plain non-negative integer).
typedef struct nd_rank {
  int32_t rank, world_size, local_rank, local_world_size;
  uint32_t from; // enum nd_rank_from (trace_format.h): the variable the rank was read from
} nd_rank_t;
void nd_config_rank(char *const *envp, nd_rank_t *out);

#endif
