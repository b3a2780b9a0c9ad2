// SPDX-License-Identifier: MIT
// cupti.c: libndmem_cupti.so, ndmem's CUPTI injection library. The CUDA driver dlopens it at
// cuInit when CUDA_INJECTION64_PATH names it (`ndmem run --cupti`) and calls InitializeInjection,
// its only export. It asks CUPTI for memory activity records (MEMORY2, MEMORY_POOL), folds them
// per device (cupti_fold.c) and hands the totals to the shim's ndmem_cupti_update after every
// buffer and at exit: CUPTI sees what the hooks cannot (pool reservations, trims). Without the
// shim it hands nothing. It never writes to stdout; to stderr, one line at most, on an error.
#include "cupti_fold.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// One activity buffer. A MEMORY2 record (CUpti_ActivityMemory4) is 128 bytes: this holds ~8000.
// CUPTI returns a buffer when it is full or, with the flush period below, every second.
#define BUFFER_BYTES ((size_t)1 << 20)

// Totals arrive while the job runs at this period (ms), not only when a buffer fills or at exit.
#define FLUSH_PERIOD_MS 1000

typedef int (*update_fn)(const ndmem_cupti_device_t *);

static atomic_int initialized; // InitializeInjection ran (the driver may call it again)
static atomic_int spoke;       // the one stderr line was written
static pid_t owner;            // the process that set CUPTI up: a fork child hands nothing over
static update_fn update;       // the shim's ndmem_cupti_update, NULL without the shim
static CUpti_SubscriberHandle subscriber;

// The fold and the hand-over under one lock: buffers complete on CUPTI's worker thread and, at
// exit, on the thread flushing; handing over under the lock keeps a newer total from being
// replaced by an older one. Never held across a CUPTI call that can complete buffers.
static pthread_mutex_t fold_lock = PTHREAD_MUTEX_INITIALIZER;
static nd_cupti_fold_t fold;

// The single line ndmem-cupti may write: the first one said wins, every later one is dropped. A
// fixed buffer and write(2): no stdio state of the program is touched.
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  if (atomic_exchange(&spoke, 1)) return;
  char line[320];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) {
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  }
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w; // nowhere to report a failed report
}

static const char *result_name(CUptiResult r) {
  const char *s = NULL;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
  return s;
}

// ---- activity buffers
// From raw mmap/munmap system calls, not libc's: under the shim, libc's mmap is hooked and these
// buffers would be charged to the program as its own anonymous memory.

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  void *p = (void *)syscall(SYS_mmap, NULL, BUFFER_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, (off_t)0);
  if (p == MAP_FAILED) {
    // CUPTI drops the records it had no room for and counts them: they arrive as `dropped`.
    *buffer = NULL;
    *size = 0;
  } else {
    *buffer = p; // page-aligned: CUPTI wants 8
    *size = BUFFER_BYTES;
  }
  *max_records = 0; // as many as fit
}

// Caller holds fold_lock.
static void hand_over_locked(void) {
  // A fork child has a copy of the parent's totals and none of CUPTI's threads: what it handed
  // over would be the parent's, into the child's trace.
  if (!update || getpid() != owner) return;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    if (!cupti_fold_active(&fold, d)) continue;
    ndmem_cupti_device_t v;
    cupti_fold_device(&fold, d, &v);
    (void)update(&v); // a shim that refuses (accounting off, older struct) has said so itself
  }
}

// The context and stream arguments have been NULL and 0 since CUDA 6 (one global queue).
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  pthread_mutex_lock(&fold_lock);
  CUpti_Activity *rec = NULL;
  // Stops at the end (CUPTI_ERROR_MAX_LIMIT_REACHED) or at an incomplete record, which a forced
  // flush may deliver (CUPTI_ERROR_INVALID_KIND): what follows it in this buffer is not read.
  while (buffer && valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    cupti_fold_record(&fold, rec);
  // The count is reset by each read: adding every reading gives the total.
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
    cupti_fold_dropped(&fold, dropped);
  hand_over_locked();
  pthread_mutex_unlock(&fold_lock);
  if (buffer) syscall(SYS_munmap, buffer, BUFFER_BYTES); // only ours come back
}

// ---- exit

static void at_exit(void) {
  // In a fork child CUPTI's worker thread does not exist, and fold_lock may have been copied
  // held: touch neither.
  if (getpid() != owner) return;
  // Every buffer, incomplete records included, goes through buffer_completed before this
  // returns (NVIDIA's injection sample flushes from atexit the same way). Hazard: atexit runs
  // handlers in reverse order of registration, and the CUDA runtime's own teardown may come
  // before or after this one; records of contexts it already destroyed are expected to have
  // been delivered by then, which only a run on a GPU can confirm.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&fold_lock);
  hand_over_locked();
  pthread_mutex_unlock(&fold_lock);
}

// CUPTI's notice of a fatal error of its own: tracing stops, the program goes on.
static void CUPTIAPI on_state(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *cbdata) {
  (void)userdata;
  if (domain != CUPTI_CB_DOMAIN_STATE || cbid != CUPTI_CBID_STATE_FATAL_ERROR || !cbdata) return;
  const CUpti_StateData *s = cbdata;
  const char *msg = s->notification.message; // may be NULL
  say("ndmem-cupti: CUPTI stopped: %s%s%s; device totals end here\n",
      result_name(s->notification.result), msg ? ": " : "", msg ? msg : "");
}

// ---- entry point

// Claims CUPTI for ndmem. CUPTI takes one subscriber at a time, and a second client's
// cuptiActivityRegisterCallbacks would silently take our records: another tool already attached
// (Nsight Systems, Nsight Compute, cuda-gdb, compute-sanitizer) makes this fail, and while ndmem
// holds it, a tool started later from inside the program (torch.profiler's Kineto) is refused.
static CUptiResult claim(char *other, size_t other_size) {
  other[0] = '\0';
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
  CUpti_SubscriberParams params;
  memset(&params, 0, sizeof params);
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "ndmem";
  params.oldSubscriberName = other; // who holds it, when it is taken
  params.oldSubscriberSize = other_size;
  return cuptiSubscribe_v2(&subscriber, on_state, NULL, &params);
#else
  (void)other_size;
  return cuptiSubscribe(&subscriber, on_state, NULL);
#endif
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  // The return value: 1 tells the driver the injection is done. ndmem returns 1 on every path,
  // failures included: CUDA carries on without the CUPTI view, never because of it.
  if (atomic_exchange(&initialized, 1)) {
    say("ndmem-cupti: InitializeInjection called again; the first call's setup stays\n");
    return 1;
  }
  owner = getpid();
  cupti_fold_init(&fold);

  char other[72]; // CUPTI asks for at least CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN (64)
  CUptiResult r = claim(other, sizeof other - 1);
  other[sizeof other - 1] = '\0';
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    say("ndmem-cupti: CUPTI is in use by another tool%s%s; no CUPTI view of device memory\n",
        other[0] ? ": " : "", other);
    return 1;
  }
  if (r != CUPTI_SUCCESS) {
    say("ndmem-cupti: cuptiSubscribe: %s; no CUPTI view of device memory\n", result_name(r));
    return 1;
  }
  // Failure only loses the fatal-error line.
  (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);

  // One queue for the process instead of one per thread (CUPTI 13's default, cupti_activity.h):
  // per-thread buffers complete in any order, so a block freed on one thread could be read
  // before its allocation on another; the release would look unmatched and the allocation stay
  // live for good. Memory records are few: the shared queue's contention does not matter. Must
  // precede the callbacks and the enables. If CUPTI refuses it, the fold's stamp check still
  // orders pool sizes, not releases.
  uint8_t per_thread = 0;
  size_t attr_size = sizeof per_thread;
  (void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &attr_size,
                                  &per_thread);

  const char *step = "cuptiActivityRegisterCallbacks";
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r == CUPTI_SUCCESS) {
    step = "cuptiActivityEnable(MEMORY2)";
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
  }
  if (r != CUPTI_SUCCESS) {
    say("ndmem-cupti: %s: %s; no CUPTI view of device memory\n", step, result_name(r));
    cuptiUnsubscribe(subscriber); // leave CUPTI to whoever comes next
    return 1;
  }
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
  if (r != CUPTI_SUCCESS)
    // Allocation records still report each pool's size as it serves them; only creation,
    // destruction and trims go unseen.
    say("ndmem-cupti: cuptiActivityEnable(MEMORY_POOL): %s; pool totals from allocations only\n",
        result_name(r));
  // Without a period, buffers come back only when full or at exit. A CUPTI that lacks it
  // (CUPTI_ERROR_NOT_SUPPORTED) leaves totals for the exit; not worth the line.
  (void)cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);

  // The shim, when LD_PRELOADed, is in the global scope. Looked up once: it cannot arrive later
  // (a shim dlopened after start-up would have missed the program's allocations anyway).
  void *sym = dlsym(RTLD_DEFAULT, "ndmem_cupti_update");
  memcpy(&update, &sym, sizeof update); // object to function pointer, without the cast ISO C lacks

  if (atexit(at_exit) != 0)
    say("ndmem-cupti: atexit failed; totals reach ndmem while the job runs only\n");
  return 1;
}
