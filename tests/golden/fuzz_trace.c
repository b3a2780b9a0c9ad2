// SPDX-License-Identifier: MIT
// fuzz_trace: the reader-robustness test. It derives truncated and garbled variants of stored
// traces (fixed PRNG seed) and checks that ndmemreport exits 0, 1 or 2 on each (3 with
// --fail-on-leak: unchecked), with no sanitizer report, one "ndmemreport: " line for 2, one or two
// "unchecked" lines for 3, and TRUNCATED exactly for a cut inside a record. Built
// as fuzz_trace it runs the ndmemreport-asan executable per input (a sample: a process start
// under ASan costs ~20 ms); as fuzz_inproc (-DFUZZ_INPROC) it calls nd_report_main() in-process
// on every truncation length and tens of thousands of variants. Usage: see main().
#include "trace_format.h"
#include "fuzz_verdict.h"
#ifdef FUZZ_INPROC
#include "ndmemreport.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_JOBS 8
#define SAMPLED_BOUNDS 16 // record boundaries cut around per trace when sampling
#define SAMPLED_STEPS 32  // at most about so many STEP-th lengths per trace when sampling

typedef struct job {
  pid_t pid;
  char desc[200];
  int expect;    // -1: 0, 1 or 2; 0: 0 or 1 (a valid prefix); 2: exactly 2
  int truncated; // -1: not checked; 0/1: a text report must say complete / TRUNCATED
  bool fail_on_leak; // its arguments hold --fail-on-leak: 1 and 3 (unchecked) are verdicts
  char *data;    // the input (freed after the check), NULL for fixed paths
  size_t len;
} job_t;

static const char *report, *dir;
static job_t jobs[MAX_JOBS];
static int njobs = 1, failures, runs, launches;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) { // xorshift64*
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}
static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 1 >= cap) {
      cap = cap ? cap * 2 : 65536;
      char *p = realloc(buf, cap);
      if (!p) abort();
      buf = p;
    }
    size_t k = fread(buf + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0) break;
  }
  fclose(f);
  buf[n] = 0;
  *len = n;
  return buf;
}

static void spit(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) {
    fprintf(stderr, "fuzz_trace: cannot write %s\n", path);
    exit(1);
  }
}

static void slot_path(char *out, size_t n, int slot, const char *what) {
  snprintf(out, n, "%s/%s%d", dir, what, slot);
}

static void fail(const job_t *j, const char *err, size_t elen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: %s: ", j->desc);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (j->data && failures < 20) { // keep the input for reproduction
    char p[4096];
    snprintf(p, sizeof p, "%s/fail%d.trace", dir, failures);
    spit(p, j->data, j->len);
    fprintf(stderr, "; input kept as %s", p);
  }
  if (err && elen) fprintf(stderr, "\n  stderr: %.*s", (int)(elen > 2000 ? 2000 : elen), err);
  fputc('\n', stderr);
  failures++;
}

// Checks one run: `rc` its exit status (-1: killed), `err`/`out` its output (NUL-terminated).
static void check(job_t *j, int rc, const char *err, size_t elen, const char *out) {
  runs++;
  const char *nl = memchr(err, '\n', elen);
  if (rc < 0)
    fail(j, err, elen, "killed by a signal");
  else if (strstr(err, "Sanitizer") || strstr(err, "runtime error") || strstr(err, "==ERROR"))
    fail(j, err, elen, "sanitizer report (exit %d)", rc);
  else if (rc != 0 && rc != 2 && !((rc == 1 || rc == 3) && j->fail_on_leak))
    fail(j, err, elen, "exit status %d", rc);
  else if (j->expect == 2 && rc != 2)
    fail(j, err, elen, "exit %d, want 2", rc);
  else if (j->expect == 0 && rc == 2)
    fail(j, err, elen, "a valid prefix was rejected");
  else if (rc == 2 && (!nl || nl != err + elen - 1 || strncmp(err, "ndmemreport: ", 13)))
    fail(j, err, elen, "exit 2 without exactly one 'ndmemreport: ' line");
  else if (rc == 3 && !unchecked_lines(err, elen))
    fail(j, err, elen, "exit 3 without one or two 'ndmemreport: ...: unchecked: ' lines");
  else if (rc != 2 && rc != 3 && elen)
    fail(j, err, elen, "exit %d with output on stderr", rc);
  else if (j->truncated >= 0 && rc != 2 && (strstr(out, "TRUNCATED") != NULL) != j->truncated)
    fail(j, err, elen, "report %s TRUNCATED", j->truncated ? "does not say" : "says");
  free(j->data);
  j->data = NULL;
  j->pid = 0;
}

#ifdef FUZZ_INPROC
static const char *current = "(none)";

static void on_death(void) { fprintf(stderr, "fuzz_inproc: died reading: %s\n", current); }

void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

static void run_inproc(job_t *j, int argc, char **argv) {
  char *out = NULL, *err = NULL;
  size_t olen = 0, elen = 0;
  FILE *o = open_memstream(&out, &olen), *e = open_memstream(&err, &elen);
  if (!o || !e) abort();
  current = j->desc;
  char cur[4096];
  snprintf(cur, sizeof cur, "%s/current", dir);
  spit(cur, j->desc, strlen(j->desc));
  int rc = nd_report_main(argc, argv, o, e);
  fclose(o);
  fclose(e);
  check(j, rc, err, elen, out);
  free(out);
  free(err);
}
#else
static void reap_one(int slot, int status) {
  char e[4096], o[4096];
  slot_path(e, sizeof e, slot, "err");
  slot_path(o, sizeof o, slot, "out");
  size_t elen = 0, olen = 0;
  char *err = slurp(e, &elen), *out = slurp(o, &olen);
  if (!err || !out) {
    fail(&jobs[slot], NULL, 0, "no output files");
    jobs[slot].pid = 0;
  } else {
    check(&jobs[slot], WIFEXITED(status) ? WEXITSTATUS(status) : -1, err, elen, out);
  }
  free(err);
  free(out);
}

// Waits for one child (or all); returns a free slot.
static int reap(bool all) {
  int freed = 0;
  for (;;) {
    bool busy = false;
    for (int i = 0; i < njobs; i++) busy |= jobs[i].pid != 0;
    if (!busy) return freed;
    int status;
    pid_t p = waitpid(-1, &status, 0);
    if (p < 0) {
      if (errno == EINTR) continue;
      perror("fuzz_trace: waitpid");
      exit(1);
    }
    for (int i = 0; i < njobs; i++)
      if (jobs[i].pid == p) {
        reap_one(i, status);
        freed = i;
        if (!all) return i;
      }
  }
}
#endif

// Runs ndmemreport with `args` (NULL-terminated, without argv[0]) on input `data` (owned, may be
// NULL), whose file path replaces a "@" argument.
static void launch(const char *desc, int expect, int truncated, char *data, size_t len,
                   const char *const *args) {
  int slot = 0;
#ifndef FUZZ_INPROC
  slot = -1;
  for (int i = 0; i < njobs; i++)
    if (!jobs[i].pid) slot = i;
  if (slot < 0) slot = reap(false);
#endif
  job_t *j = &jobs[slot];
  snprintf(j->desc, sizeof j->desc, "%s", desc);
  j->expect = expect;
  j->truncated = truncated;
  j->fail_on_leak = false;
  for (const char *const *a = args; *a; a++) j->fail_on_leak |= !strcmp(*a, "--fail-on-leak");
  j->data = data;
  j->len = len;
  char in[4096];
  slot_path(in, sizeof in, slot, "in");
  if (data) spit(in, data, len);
  const char *argv[16];
  int n = 0;
  argv[n++] = report;
  for (; *args && n < 15; args++) argv[n++] = strcmp(*args, "@") ? *args : in;
  argv[n] = NULL;
  launches++;
#ifdef FUZZ_INPROC
  run_inproc(j, n, (char **)argv);
#else
  char e[4096], o[4096];
  slot_path(e, sizeof e, slot, "err");
  slot_path(o, sizeof o, slot, "out");
  pid_t p = fork();
  if (p < 0) {
    perror("fuzz_trace: fork");
    exit(1);
  }
  if (p == 0) {
    // LeakSanitizer costs a stop-the-world scan per run: check leaks on every 8th run only.
    setenv("ASAN_OPTIONS", launches % 8 ? "exitcode=86:detect_leaks=0"
                                        : "exitcode=86:detect_leaks=1", 1);
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(127);
    execv(report, (char *const *)argv);
    _exit(127);
  }
  j->pid = p;
#endif
}

static void finish(void) {
#ifndef FUZZ_INPROC
  reap(true);
#endif
}

// Record boundaries of a valid trace: offsets where a record starts, and its end.
static size_t boundaries(const char *d, size_t len, size_t *out, size_t max, uint32_t *hdr) {
  nd_trace_header_t h;
  if (len < sizeof h) return 0;
  memcpy(&h, d, sizeof h);
  *hdr = h.header_size;
  size_t n = 0, off = h.header_size;
  while (off + sizeof(nd_rec_t) <= len && n < max) {
    out[n++] = off;
    nd_rec_t r;
    memcpy(&r, d + off, sizeof r);
    off += sizeof r + r.size;
  }
  if (off <= len && n < max) out[n++] = off;
  return n;
}

static const char *const variants[][6] = {
    {"@", NULL},
    {"--format", "json", "@", NULL},
    {"--fail-on-leak", "@", NULL},
    {"--brief", "--no-symbols", "@", NULL},
    {"--format=json", "--top", "1", "@", NULL},
    {"--workspaces", "--top", "2", "@", NULL},
    {"--workspaces", "--format", "json", "--brief", "@", NULL},
    {"--limits", "--top", "1", "@", NULL},
    {"--limits", "--format", "json", "@", NULL},
    {"--brief", "--format", "json", "@", NULL},
};
#define NVARIANTS (sizeof variants / sizeof *variants)

static void fuzz_trace(const char *path, size_t step, size_t garbles) {
  size_t len;
  char *base = slurp(path, &len);
  if (!base || len < sizeof(nd_trace_header_t)) {
    fprintf(stderr, "fuzz_trace: cannot read a trace from %s\n", path);
    exit(1);
  }
  static size_t bound[1 << 16];
  uint32_t hdr = 0;
  size_t nb = boundaries(base, len, bound, 1 << 16, &hdr);
  // Truncation lengths: the first 16 bytes, every STEP-th, all around the header's end, and
  // around every record boundary: -9..-8, -2..+2, +7..+9 (cuts inside a record header, at the
  // boundary, just into a payload). A process each (STEP > 1 samples): only -1..+1 around at
  // most SAMPLED_BOUNDS boundaries spread over the trace, and STEP widened to keep about
  // SAMPLED_STEPS lengths.
  char *want = calloc(len + 1, 1);
  static const int around[] = {-1, 0, 1, -9, -8, -2, 2, 7, 8, 9};
#ifdef FUZZ_INPROC
  bool sampling = false; // in-process: every boundary, and every STEP-th length between them
#else
  bool sampling = step > 1;
#endif
  size_t naround = sampling ? 3 : sizeof around / sizeof *around;
  size_t bstride = sampling ? nb / SAMPLED_BOUNDS + 1 : 1;
  if (sampling && len / SAMPLED_STEPS > step) step = len / SAMPLED_STEPS | 1;
  for (size_t l = 0; l < len; l++)
    want[l] = l < 16 || l % step == 0 || (l + 2 >= hdr && l <= hdr);
  for (size_t i = 0; i < nb; i += bstride)
    for (size_t k = 0; k < naround; k++) {
      long l = (long)bound[i] + around[k];
      if (l >= 0 && (size_t)l < len) want[l] = 1;
    }
  size_t ntrunc = 0;
  for (size_t l = 0; l < len; l++) {
    if (!want[l]) continue;
    bool at_bound = false;
    for (size_t i = 0; i < nb; i++) at_bound |= bound[i] == l;
    char desc[200];
    snprintf(desc, sizeof desc, "%s cut to %zu bytes", path, l);
    char *d = malloc(l ? l : 1);
    memcpy(d, base, l);
    const char *const *args = variants[ntrunc % 5 == 4 ? 3 : ntrunc % 5 == 2 ? 2 : 0];
    launch(desc, l < hdr ? 2 : 0, l < hdr ? -1 : !at_bound, d, l, args);
    ntrunc++;
  }
  free(want);

  static const uint64_t magic_vals[] = {
      0, 1, 7, 8, 47, 48, 129, 0x7f, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
      ND_TRACE_MAX_RECORD, ND_TRACE_MAX_RECORD + 1, UINT64_MAX, UINT64_MAX / 2,
      0x8000000000000000ull};
  for (size_t g = 0; g < garbles; g++) {
    size_t n = len;
    char *d = malloc(len * 2 + 64);
    memcpy(d, base, len);
    int kind = (int)below(6);
    size_t pos = below(len);
    if (kind == 0) { // 1-4 bit flips anywhere
      int k = 1 + (int)below(4);
      for (int i = 0; i < k; i++) d[below(len)] ^= (char)(1u << below(8));
    } else if (kind == 1) { // random bytes
      int k = 1 + (int)below(8);
      for (int i = 0; i < k; i++) d[below(len)] = (char)next();
    } else if (kind == 2 || kind == 3) { // a boundary value into a record header, or anywhere
      if (nb && kind == 2) pos = bound[below(nb)] + below(24);
      uint64_t v = magic_vals[below(sizeof magic_vals / sizeof *magic_vals)];
      size_t w = below(2) ? 4 : below(2) ? 8 : 2;
      if (pos + w <= len) memcpy(d + pos, &v, w);
    } else if (kind == 4) { // splice: copy a chunk of the trace over another place
      size_t from = below(len), k = 1 + below(256);
      if (from + k > len) k = len - from;
      if (pos + k > len) k = len - pos;
      memmove(d + pos, base + from, k);
    } else { // insert or delete a chunk (shifts every later record)
      size_t k = 1 + below(64);
      if (below(2) && pos + k <= len) {
        memmove(d + pos, d + pos + k, len - pos - k);
        n = len - k;
      } else {
        memmove(d + pos + k, d + pos, len - pos);
        for (size_t i = 0; i < k; i++) d[pos + i] = (char)next();
        n = len + k;
      }
    }
    if (below(8) == 0) n = below(n + 1); // and sometimes truncate as well
    char desc[200];
    snprintf(desc, sizeof desc, "%s garble #%zu (kind %d at %zu, %zu bytes)", path, g, kind, pos,
             n);
    launch(desc, -1, -1, d, n, variants[g % NVARIANTS]);
  }
  finish();
  free(base);
  fprintf(stderr, "fuzz_trace: %s: %zu truncations, %zu garbled variants\n", path, ntrunc,
          garbles);
}

// STEP: truncate at every STEP-th length besides those around the header's end and every record
// boundary (1: every length). GARBLES: garbled variants per trace. WORKDIR: scratch files, kept
// when something fails (a sanitizer abort in fuzz_inproc leaves the input being read as in0).
int main(int argc, char **argv) {
#ifdef FUZZ_INPROC
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_death);
  report = "ndmemreport";
  int a = 1;
#else
  report = argv[1];
  int a = 2;
#endif
  if (argc < a + 4) {
    fprintf(stderr, "usage: fuzz_trace NDMEMREPORT WORKDIR STEP GARBLES TRACE...\n"
                    "       fuzz_inproc WORKDIR STEP GARBLES TRACE...\n");
    return 2;
  }
  size_t step = strtoul(argv[a + 1], NULL, 10), garbles = strtoul(argv[a + 2], NULL, 10);
  if (!step) step = 1;
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/fuzz.XXXXXX", argv[a]);
  dir = mkdtemp(tmpl);
  if (!dir) {
    perror("fuzz_trace: mkdtemp");
    return 1;
  }
#ifdef FUZZ_INPROC
  // UBSan does not run death callbacks: the input being read is always on disk.
  fprintf(stderr, "fuzz_inproc: after a sanitizer abort, %s/in0 is the input being read and "
                  "%s/current says what it is\n", dir, dir);
#endif
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  njobs = cpus < 1 ? 1 : cpus > MAX_JOBS ? MAX_JOBS : (int)cpus;
  // A sanitizer finding must not look like exit 1 or 2 (ASAN_OPTIONS is set per run, see
  // launch); UBSan must stop at the first one.
  setenv("UBSAN_OPTIONS", "halt_on_error=1:exitcode=87:print_stacktrace=1", 1);
  setenv("LSAN_OPTIONS", "exitcode=88", 1);

  // Files that are not traces, and bad usage.
  char p[4096];
  snprintf(p, sizeof p, "%s/empty", dir);
  spit(p, "", 0);
  launch("an empty file", 2, -1, NULL, 0, (const char *const[]){p, NULL});
  finish();
  launch("/bin/sh", 2, -1, NULL, 0, (const char *const[]){"/bin/sh", NULL});
  launch("a nonexistent path", 2, -1, NULL, 0,
         (const char *const[]){"/nonexistent/ndmem.trace", NULL});
  launch("a directory", 2, -1, NULL, 0, (const char *const[]){dir, NULL});
  launch("no arguments", 2, -1, NULL, 0, (const char *const[]){NULL});
  launch("an unknown option", 2, -1, NULL, 0, (const char *const[]){"--bogus", p, NULL});
  launch("--top abc", 2, -1, NULL, 0, (const char *const[]){"--top", "abc", p, NULL});
  launch("--format xml", 2, -1, NULL, 0, (const char *const[]){"--format", "xml", p, NULL});
  launch("two files", 2, -1, NULL, 0, (const char *const[]){p, p, NULL});
  finish();

  for (int i = a + 3; i < argc; i++) fuzz_trace(argv[i], step, garbles);
  fprintf(stderr, "fuzz_trace: %d runs, %d failures\n", runs, failures);
  if (!failures) {
    for (int i = 0; i < njobs; i++) {
      const char *w[] = {"in", "out", "err"};
      for (int k = 0; k < 3; k++) {
        slot_path(p, sizeof p, i, w[k]);
        unlink(p);
      }
    }
    snprintf(p, sizeof p, "%s/empty", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/current", dir);
    unlink(p);
    rmdir(dir);
  } else {
    fprintf(stderr, "fuzz_trace: inputs and outputs are in %s\n", dir);
  }
  return failures ? 1 : 0;
}
