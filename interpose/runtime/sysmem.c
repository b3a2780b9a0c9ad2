// SPDX-License-Identifier: MIT
// sysmem.c: the cgroup memory limit and anonymous resident memory (see sysmem.h).
// The cgroup directory is found the way container runtimes' JVMs find it: the process's path in
// /proc/self/cgroup, made relative to its hierarchy's mount root from /proc/self/mountinfo (inside
// a cgroup namespace the root is the cgroup itself). The limit is the smallest one on the way up
// to the mount point, because a parent's limit binds its children too.
#include "runtime/sysmem.h"
#include "runtime/module.h"

#include "common/os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define LINE_MAX_ND 1024

typedef int (*line_fn)(const char *line, void *ctx); // nonzero stops

// Calls fn for each line of the file (longer lines are cut at LINE_MAX_ND - 1). -1: no file.
static int each_line(const char *path, line_fn fn, void *ctx) {
  int saved = errno;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    errno = saved;
    return -1;
  }
  char chunk[2048], line[LINE_MAX_ND];
  size_t len = 0;
  int stop = 0;
  ssize_t n;
  while (!stop && (n = read(fd, chunk, sizeof chunk)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (ssize_t i = 0; i < n && !stop; i++) {
      if (chunk[i] == '\n') {
        line[len] = 0;
        stop = fn(line, ctx);
        len = 0;
      } else if (len + 1 < sizeof line) {
        line[len++] = chunk[i];
      }
    }
  }
  if (!stop && len) {
    line[len] = 0;
    fn(line, ctx);
  }
  close(fd);
  errno = saved;
  return 0;
}

static void copy(char *dst, size_t cap, const char *src, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

// ---------------------------------------------------------------- /proc/self/cgroup

typedef struct {
  char v1[LINE_MAX_ND], v2[LINE_MAX_ND];
  int have_v1, have_v2;
} cg_paths_t;

static int has_item(const char *list, size_t n, const char *item) {
  size_t k = strlen(item);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && list[j] != ',') j++;
    if (j - i == k && memcmp(list + i, item, k) == 0) return 1;
    i = j + 1;
  }
  return 0;
}

static int cgroup_line(const char *line, void *ctx) {
  cg_paths_t *c = ctx;
  const char *a = strchr(line, ':');
  const char *b = a ? strchr(a + 1, ':') : NULL;
  if (!b) return 0;
  if (a == line + 1 && line[0] == '0' && b == a + 1) {
    copy(c->v2, sizeof c->v2, b + 1, strlen(b + 1));
    c->have_v2 = 1;
  } else if (has_item(a + 1, (size_t)(b - a - 1), "memory")) {
    copy(c->v1, sizeof c->v1, b + 1, strlen(b + 1));
    c->have_v1 = 1;
  }
  return 0;
}

// ---------------------------------------------------------------- /proc/self/mountinfo

typedef struct {
  char root1[LINE_MAX_ND], mount1[LINE_MAX_ND], root2[LINE_MAX_ND], mount2[LINE_MAX_ND];
  int have1, have2;
} cg_mounts_t;

// The n-th space-separated field of line (0-based): its start and length; NULL when absent.
static const char *field(const char *line, int n, size_t *len) {
  const char *p = line;
  for (int i = 0;; i++) {
    while (*p == ' ') p++;
    if (!*p) return NULL;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (i == n) {
      *len = (size_t)(e - p);
      return p;
    }
    p = e;
  }
}

static int mount_line(const char *line, void *ctx) {
  cg_mounts_t *m = ctx;
  // id parent major:minor root mount-point options [optional fields...] - fstype source superopts
  const char *sep = strstr(line, " - ");
  if (!sep) return 0;
  size_t flen = 0, olen = 0, rlen = 0, mlen = 0;
  const char *fs = field(sep + 3, 0, &flen), *opts = field(sep + 3, 2, &olen);
  const char *root = field(line, 3, &rlen), *mnt = field(line, 4, &mlen);
  if (!fs || !root || !mnt) return 0;
  if (flen == 7 && memcmp(fs, "cgroup2", 7) == 0 && !m->have2) {
    copy(m->root2, sizeof m->root2, root, rlen);
    copy(m->mount2, sizeof m->mount2, mnt, mlen);
    m->have2 = 1;
  } else if (flen == 6 && memcmp(fs, "cgroup", 6) == 0 && opts && has_item(opts, olen, "memory") &&
             !m->have1) {
    copy(m->root1, sizeof m->root1, root, rlen);
    copy(m->mount1, sizeof m->mount1, mnt, mlen);
    m->have1 = 1;
  }
  return 0;
}

// mount + the part of path below root (root "/" : all of it; path outside root: the mount itself,
// as inside a cgroup namespace).
static void join(char *dir, size_t cap, const char *mount, const char *root, const char *path) {
  size_t rl = strlen(root);
  const char *rel = "";
  if (strcmp(root, "/") == 0) rel = path;
  else if (strncmp(path, root, rl) == 0 && (path[rl] == '/' || !path[rl])) rel = path + rl;
  size_t ml = strlen(mount);
  copy(dir, cap, mount, ml);
  size_t used = strlen(dir);
  if (strcmp(rel, "/") != 0) copy(dir + used, cap - used, rel, strlen(rel));
}

int nd_cgroup_locate(const char *proc_cgroup, const char *mountinfo, char *dir, char *mount,
                     size_t cap, int *v1) {
  static cg_paths_t c; // ~4 KiB: static, not on a hooked caller's stack (run once, at start)
  static cg_mounts_t m;
  memset(&c, 0, sizeof c);
  memset(&m, 0, sizeof m);
  if (each_line(proc_cgroup, cgroup_line, &c) != 0 || each_line(mountinfo, mount_line, &m) != 0)
    return -1;
  if (c.have_v1 && m.have1) {
    join(dir, cap, m.mount1, m.root1, c.v1);
    copy(mount, cap, m.mount1, strlen(m.mount1));
    *v1 = 1;
    return 0;
  }
  if (c.have_v2 && m.have2) {
    join(dir, cap, m.mount2, m.root2, c.v2);
    copy(mount, cap, m.mount2, strlen(m.mount2));
    *v1 = 0;
    return 0;
  }
  return -1;
}

// ---------------------------------------------------------------- limits

static int read_small(const char *path, char *buf, size_t cap) {
  int saved = errno;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    errno = saved;
    return -1;
  }
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  errno = saved;
  if (n <= 0) return -1;
  buf[n] = 0;
  return 0;
}

// "max", "unlimited" and v1's page-rounded 2^63-1 are no limit (0).
static uint64_t parse_limit(const char *s) {
  uint64_t v = 0;
  int digits = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (!digits || (*s && *s != '\n')) return 0;
  return v >= (UINT64_C(1) << 62) ? 0 : v;
}

static uint64_t dir_limit(const char *dir, int v1) {
  char path[LINE_MAX_ND + 32], buf[64];
  size_t n = strlen(dir);
  if (n + 24 >= sizeof path) return 0;
  memcpy(path, dir, n);
  const char *file = v1 ? "/memory.limit_in_bytes" : "/memory.max";
  memcpy(path + n, file, strlen(file) + 1);
  return read_small(path, buf, sizeof buf) == 0 ? parse_limit(buf) : 0;
}

uint64_t nd_cgroup_walk(const char *dir, const char *mount, int v1) {
  char d[LINE_MAX_ND];
  copy(d, sizeof d, dir, strlen(dir));
  size_t ml = strlen(mount), n = strlen(d);
  uint64_t best = 0;
  for (;;) {
    uint64_t v = dir_limit(d, v1);
    if (v && (!best || v < best)) best = v;
    if (n <= ml) break;
    while (n > ml && d[n - 1] != '/') n--; // up one level
    if (n > ml) n--;                       // drop the slash
    d[n] = 0;
  }
  return best;
}

uint64_t nd_cgroup_limit(const char *dir_override) {
  if (dir_override && dir_override[0]) {
    uint64_t v = dir_limit(dir_override, 0);
    return v ? v : dir_limit(dir_override, 1);
  }
  static char dir[LINE_MAX_ND], mount[LINE_MAX_ND];
  int v1;
  if (nd_cgroup_locate("/proc/self/cgroup", "/proc/self/mountinfo", dir, mount, sizeof dir, &v1) != 0)
    return 0;
  return nd_cgroup_walk(dir, mount, v1);
}

// ---------------------------------------------------------------- statm

int nd_statm_parse(const char *s, uint64_t page, uint64_t *bytes) {
  uint64_t f[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++) {
    while (*s == ' ') s++;
    if (*s < '0' || *s > '9') return -1;
    while (*s >= '0' && *s <= '9') {
      if (f[i] > UINT64_MAX / 16) return -1;
      f[i] = f[i] * 10 + (uint64_t)(*s++ - '0');
    }
  }
  *bytes = f[1] > f[2] ? (f[1] - f[2]) * page : 0;
  return 0;
}

int nd_statm_anon(int fd, uint64_t *bytes) {
  char buf[160];
  int saved = errno;
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  errno = saved;
  if (n <= 0) return -1;
  buf[n] = 0;
  return nd_statm_parse(buf, nd_os_page_size(), bytes);
}

// A /proc/self file's descriptor kept in *kept, above the program's range: opened at the first
// call by whichever thread comes first (one keeps its descriptor). Where it would lie in the
// program's range (no room above its limit) it is not kept: *once is set and the caller closes it
// after its read (common/os.h). Called between nd_os_fd_enter and nd_os_fd_leave. errno kept.
static int kept_open(int *kept, const char *path, int raise_ok, int *once) {
  int fd = __atomic_load_n(kept, __ATOMIC_ACQUIRE);
  *once = 0;
  if (fd >= 0) return fd;
  int saved = errno;
  int mine = open(path, O_RDONLY | O_CLOEXEC);
  if (mine >= 0) mine = nd_os_fd_high(mine, raise_ok);
  if (mine >= 0 && nd_os_fd_in_range(mine)) {
    *once = 1;
  } else if (mine >= 0 &&
             !__atomic_compare_exchange_n(kept, &fd, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    close(mine); // another thread's came first: fd is now that one
    mine = fd;
  } else if (mine >= 0) {
    nd_os_fd_own(kept);
  }
  errno = saved;
  return mine;
}

static void once_done(int fd, int once) {
  if (!once) return;
  int saved = errno;
  close(fd);
  errno = saved;
}

static int self_fd = -1;

void nd_statm_self_open(int raise_ok) {
  int once;
  nd_os_fd_enter();
  int fd = kept_open(&self_fd, "/proc/self/statm", raise_ok, &once);
  once_done(fd, once);
  nd_os_fd_leave();
}

// The highest reading of any of ndmem's (atomic): the flushes', the trims', the limit checks'.
static uint64_t anon_peak;

void nd_statm_seen(uint64_t v) {
  uint64_t p = __atomic_load_n(&anon_peak, __ATOMIC_RELAXED);
  while (v > p &&
         !__atomic_compare_exchange_n(&anon_peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

uint64_t nd_statm_peak(void) { return __atomic_load_n(&anon_peak, __ATOMIC_RELAXED); }

int nd_statm_self(uint64_t *bytes) {
  int once;
  nd_os_fd_enter();
  int fd = kept_open(&self_fd, "/proc/self/statm", 0, &once);
  int rc = fd < 0 || nd_statm_anon(fd, bytes) != 0 ? -1 : 0;
  once_done(fd, once);
  nd_os_fd_leave();
  if (rc == 0) nd_statm_seen(*bytes);
  return rc;
}

int nd_stat_threads_parse(const char *s) {
  const char *p = strrchr(s, ')'); // the command name may hold spaces and parentheses
  if (!p || p[1] != ' ' || !p[2]) return -1;
  int zombie = p[2] == 'Z'; // field 3, the main thread's state: it ended (pthread_exit)
  for (int field = 2; p && field < 20; field++) p = strchr(p + 1, ' ');
  if (!p || p[1] < '0' || p[1] > '9') return -1;
  long n = 0;
  for (p++; *p >= '0' && *p <= '9' && n < 1000000000; p++) n = n * 10 + (*p - '0');
  return (int)n - zombie;
}

static int stat_fd = -1;
int nd_threads_self(void) {
  int once;
  nd_os_fd_enter();
  int fd = kept_open(&stat_fd, "/proc/self/stat", 0, &once), saved = errno;
  char buf[1024];
  ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
  once_done(fd, once);
  nd_os_fd_leave();
  errno = saved;
  if (n <= 0) return -1;
  buf[n] = 0;
  return nd_stat_threads_parse(buf);
}

// ---------------------------------------------------------------- status

// "Name:   1234 kB" lines, the five wanted found by their names.
int nd_status_parse(const char *s, nd_status_mem_t *m) {
  static const char *const names[5] = {"VmRSS:", "VmHWM:", "RssAnon:", "RssFile:", "RssShmem:"};
  uint64_t *out[5] = {&m->rss, &m->hwm, &m->anon, &m->file, &m->shmem};
  unsigned found = 0;
  for (const char *line = s; *line; ) {
    for (int i = 0; i < 5; i++) {
      size_t n = strlen(names[i]);
      if (strncmp(line, names[i], n)) continue;
      const char *p = line + n;
      while (*p == ' ' || *p == '\t') p++;
      if (*p < '0' || *p > '9') return -1;
      uint64_t v = 0;
      while (*p >= '0' && *p <= '9') {
        if (v > UINT64_MAX / 16) return -1;
        v = v * 10 + (uint64_t)(*p++ - '0');
      }
      if (strncmp(p, " kB", 3)) return -1;
      *out[i] = v * 1024;
      found |= 1u << i;
    }
    const char *nl = strchr(line, '\n');
    if (!nl) break;
    line = nl + 1;
  }
  return found == 31 ? 0 : -1;
}

static int status_fd = -1;
int nd_status_self(nd_status_mem_t *m) {
  int once;
  nd_os_fd_enter();
  int fd = kept_open(&status_fd, "/proc/self/status", 0, &once), saved = errno;
  char buf[4096]; // ~1.5 KB on 6.x kernels
  ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
  once_done(fd, once);
  nd_os_fd_leave();
  errno = saved;
  if (n <= 0) return -1;
  buf[n] = 0;
  return nd_status_parse(buf, m);
}

uint64_t nd_maxrss_self(void) {
  struct rusage ru;
  int saved = errno;
  int rc = getrusage(RUSAGE_SELF, &ru);
  errno = saved;
  return rc == 0 && ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
}

static void close_kept(int *kept) {
  int fd = __atomic_exchange_n(kept, -1, __ATOMIC_ACQ_REL);
  if (fd >= 0) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
}

static void atfork_child(struct nd_tls *t) {
  (void)t;
  close_kept(&self_fd);
  close_kept(&stat_fd);
  close_kept(&status_fd);
}

// Before anything reads resident memory again in a fork child: the descriptors are the parent's.
ND_MODULE(nd_sysmem_module) = {.name = "sysmem", .rank = 25, .atfork_child = atfork_child};
