// SPDX-License-Identifier: MIT
// sysmem.h: how much memory the process may have and how much it holds, as the kernel sees it:
// physical RAM, the cgroup memory limit, and anonymous resident memory (/proc/self/statm).
// Raw open/read only: no allocation, safe inside the first intercepted call.
#ifndef ND_SYSMEM_H
#define ND_SYSMEM_H

#include <stddef.h>
#include <stdint.h>

// The process's memory cgroup directory, from /proc/self/cgroup and /proc/self/mountinfo (paths
// given for tests). The v1 memory controller wins where both hierarchies are mounted (hybrid
// systems keep memory on v1). Fills dir (the cgroup), mount (its hierarchy's mount point) and
// *v1; 0, or -1 when there is no memory cgroup to be found.
int nd_cgroup_locate(const char *proc_cgroup, const char *mountinfo, char *dir, char *mount,
                     size_t cap, int *v1);

// The tightest memory limit on the way from dir up to mount (v2 memory.max, v1
// memory.limit_in_bytes); "max" and v1's "unlimited" (>= 2^62) are no limit. 0: none.
uint64_t nd_cgroup_walk(const char *dir, const char *mount, int v1);

// The process's cgroup memory limit (0: none). With dir_override (test-only: NDMEM_TEST_CGROUP_DIR)
// that directory is read alone, as memory.max or memory.limit_in_bytes.
uint64_t nd_cgroup_limit(const char *dir_override);

// Anonymous resident bytes (resident - shared pages, as JavaCPP's physicalBytes) read from an
// open statm file descriptor with pread; 0 on success, -1 when it cannot be read or parsed.
int nd_statm_anon(int fd, uint64_t *bytes);
// Parses a statm line ("size resident shared ..." in pages).
int nd_statm_parse(const char *s, uint64_t page, uint64_t *bytes);
// This process's anonymous resident bytes, from one /proc/self/statm descriptor kept open above the
// program's range, opened at start-up (nd_statm_self_open) or at the first call (by whichever
// thread comes first; one keeps its descriptor): the trace's RESIDENT readings and the workspaces' trims (ws/trim.c) share it. A pread
// per call, errno kept: callable on a hook's path. 0, or -1 when it cannot be read.
int nd_statm_self(uint64_t *bytes);
// The highest anonymous resident memory any reading saw: nd_statm_self's, and those the limit
// checks report with nd_statm_seen (they read their own descriptor). One peak for the LIMITS
// record and the summary, never below a flush's RESIDENT reading. A fork child keeps its parent's.
void nd_statm_seen(uint64_t v);
uint64_t nd_statm_peak(void);
// Opens that descriptor now unless it is open; raise_ok as nd_os_fd_high's (at start-up only: it
// may then go above the soft limit, out of any scan a program makes).
void nd_statm_self_open(int raise_ok);
// A fork child: /proc/self named the parent when the descriptor was opened; the next call opens it
// again.
// The kernel's account of this process's resident memory (/proc/self/status, a descriptor kept
// as statm's): VmRSS, VmHWM and VmRSS's parts RssAnon, RssFile, RssShmem, in bytes. 0, or -1 when
// it cannot be read or lacks a field (a kernel before 4.5 has no Rss* lines). errno kept.
typedef struct nd_status_mem {
  uint64_t rss, hwm, anon, file, shmem;
} nd_status_mem_t;
int nd_status_self(nd_status_mem_t *m);
// The same out of a /proc/PID/status text (NUL-terminated).
int nd_status_parse(const char *s, nd_status_mem_t *m);
// getrusage(RUSAGE_SELF)'s ru_maxrss in bytes: the process's peak, an exec's earlier images
// included (what wait4 and /usr/bin/time report); 0 when it cannot be had.
uint64_t nd_maxrss_self(void);
// The threads of this process still running (/proc/self/stat's num_threads, less the main thread
// where it ended before the others: it stays a zombie until they do), from a descriptor kept open
// above the program's range as statm's is (opened at the first call, again in a fork child); -1
// when it cannot be read. errno kept.
int nd_threads_self(void);
// The same out of a /proc/PID/stat line (state, field 3; num_threads, field 20); -1 without them.
int nd_stat_threads_parse(const char *s);

#endif
