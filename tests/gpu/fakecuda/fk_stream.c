// SPDX-License-Identifier: MIT
// fk_stream.c: the driver double's streams and events. Work queued on a stream runs later, in
// order, on a worker thread of the stream's own, as a GPU runs it: a kernel stand-in sleeps its
// delay, then reads and writes device memory; a copy or memset touches memory when its turn
// comes; a stream-ordered free releases its block then. So a program (or a shim) that reuses
// memory while queued work may still use it sees the corruption a GPU would give it.
//
// The ordering rules are CUDA's: work on one stream runs in issue order; the legacy default
// stream (NULL, CU_STREAM_LEGACY) waits for all earlier work of the blocking streams of its
// device, and blocking streams (cuStreamCreate flags 0, per-thread default streams) wait for
// earlier legacy work; non-blocking streams (CU_STREAM_NON_BLOCKING) wait for nothing implicit.
// An event is the point of its stream where it was recorded; cuStreamWaitEvent makes a stream
// wait for it. Nothing here frees a stream: a destroyed one finishes its work and is marked
// dead, so an event or a dependency naming it stays valid.
#include "fk_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct fk_dep {
  struct fk_stream *st;
  uint64_t seq;
} fk_dep_t;

typedef struct fk_op {
  struct fk_op *next;
  size_t bytes; // of this op's own mapping
  uint64_t seq;
  int kind;
  uintptr_t dst, src;
  size_t n;
  uint64_t arg;
  unsigned delay_us;
  unsigned ndeps;
  fk_dep_t deps[]; // what must have run first (other streams' points)
} fk_op_t;

typedef struct fk_stream {
  struct fk_stream *all; // every stream ever made (never freed)
  int dev;
  int legacy, blocking, live;
  pthread_t worker;
  int started;
  fk_op_t *head, *tail;
  uint64_t issued, done; // ops queued so far, ops run so far (seq of the last)
} fk_stream_t;

typedef struct fk_event {
  struct fk_event *all;
  int live;
  fk_stream_t *st; // where it was last recorded (NULL: never: complete)
  uint64_t seq;
} fk_event_t;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static fk_stream_t *streams;                 // all, under q_lock
static fk_stream_t *legacy_of[16];           // per device
static fk_event_t *events;
static __thread fk_stream_t *per_thread[16]; // the calling thread's default stream per device
static unsigned long long faults;

static int done_dep(const fk_dep_t *d) { return d->st->done >= d->seq; }

static int ready_op(const fk_op_t *op) {
  for (unsigned i = 0; i < op->ndeps; i++)
    if (!done_dep(&op->deps[i])) return 0;
  return 1;
}

static void sleep_us(unsigned us) {
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Runs one op (no lock held but the memory lock around the checks and the access, so a block
// is not released under it; a kernel's delay comes first, unlocked).
static void run_op(fk_op_t *op) {
  if (op->kind == FK_OP_ADD || op->kind == FK_OP_FILL) sleep_us(op->delay_us);
  fk_mem_lock();
  int ok = 1;
  switch (op->kind) {
  case FK_OP_MARK: break;
  case FK_OP_COPY: { // either side may be host memory the double does not own (pageable)
    int dst_dev = fk_device_can(op->dst, op->n, 1), src_dev = fk_device_can(op->src, op->n, 0);
    ok = dst_dev || src_dev;
    if (ok) memmove((void *)op->dst, (const void *)op->src, op->n);
    break;
  }
  case FK_OP_SET:
    ok = fk_device_can(op->dst, op->n, 1);
    if (ok) memset((void *)op->dst, (int)op->arg, op->n);
    break;
  case FK_OP_ADD: { // float dst[i] = src[i] + arg
    size_t bytes = op->n * sizeof(float);
    ok = fk_device_can(op->dst, bytes, 1) && fk_device_can(op->src, bytes, 0);
    float a = (float)op->arg;
    for (size_t i = 0; ok && i < op->n; i++) ((float *)op->dst)[i] = ((const float *)op->src)[i] + a;
    break;
  }
  case FK_OP_FILL: { // uint32_t dst[i] = arg
    ok = fk_device_can(op->dst, op->n * 4, 1);
    for (size_t i = 0; ok && i < op->n; i++) ((uint32_t *)op->dst)[i] = (uint32_t)op->arg;
    break;
  }
  case FK_OP_FREE: ok = fk_release_block(op->dst) == 0; break;
  default: ok = 0; break;
  }
  if (!ok) __atomic_fetch_add(&faults, 1, __ATOMIC_RELAXED);
  fk_mem_unlock();
}

// An op's memory is mapped by a raw system call: it is made in the program's call and released
// on the stream's worker thread, and a shim in front of the double must see neither (a driver's
// own bookkeeping is not the program's memory).
static fk_op_t *op_new(unsigned ndeps) {
  size_t bytes = sizeof(fk_op_t) + ndeps * sizeof(fk_dep_t);
  long p = syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == -1) return NULL;
  fk_op_t *op = (fk_op_t *)p;
  op->bytes = bytes;
  return op;
}

static void op_free(fk_op_t *op) { syscall(SYS_munmap, op, op->bytes); }

static void *worker(void *arg) {
  fk_stream_t *st = arg;
  pthread_mutex_lock(&q_lock);
  for (;;) {
    while (!st->head || !ready_op(st->head)) pthread_cond_wait(&q_cond, &q_lock);
    fk_op_t *op = st->head;
    pthread_mutex_unlock(&q_lock);
    run_op(op);
    pthread_mutex_lock(&q_lock);
    st->head = op->next;
    if (!st->head) st->tail = NULL;
    st->done = op->seq;
    op_free(op);
    pthread_cond_broadcast(&q_cond);
  }
  return NULL;
}

static fk_stream_t *stream_new(int dev, int legacy, int blocking) { // q_lock held
  fk_stream_t *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->dev = dev;
  st->legacy = legacy;
  st->blocking = blocking;
  st->live = 1;
  st->all = streams;
  streams = st;
  return st;
}

nd_cu_result fk_stream_get(nd_cu_stream s, int ptsz, fk_stream_t **out) {
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  if (s == NULL || s == FK_CU_STREAM_LEGACY || s == FK_CU_STREAM_PER_THREAD) {
    struct fk_ctx *c = fk_current();
    if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
    int d = fk_ctx_device(c);
    int own = s == FK_CU_STREAM_PER_THREAD || (s == NULL && ptsz);
    pthread_mutex_lock(&q_lock);
    fk_stream_t **slot = own ? &per_thread[d] : &legacy_of[d];
    if (!*slot) *slot = stream_new(d, !own, 1);
    *out = *slot;
    pthread_mutex_unlock(&q_lock);
    return *out ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&q_lock);
  fk_stream_t *st = streams;
  while (st && (st != (fk_stream_t *)s || !st->live)) st = st->all;
  pthread_mutex_unlock(&q_lock);
  if (!st) return FK_CUDA_ERROR_INVALID_HANDLE;
  *out = st;
  return ND_CUDA_SUCCESS;
}

int fk_stream_device(const fk_stream_t *st) { return st->dev; }

nd_cu_result fk_enqueue(fk_stream_t *st, int kind, uintptr_t dst, uintptr_t src, size_t n,
                        uint64_t arg, unsigned delay_us, uint64_t *seq) {
  pthread_mutex_lock(&q_lock);
  // The implicit dependencies: legacy work waits for the blocking streams' earlier work, a
  // blocking stream's for the legacy stream's.
  unsigned ndeps = 0;
  fk_stream_t *lg = legacy_of[st->dev];
  if (st->legacy) {
    for (fk_stream_t *o = streams; o; o = o->all)
      if (o != st && o->dev == st->dev && o->blocking && o->issued > o->done) ndeps++;
  } else if (st->blocking && lg && lg->issued > lg->done) {
    ndeps = 1;
  }
  fk_op_t *op = op_new(ndeps + 1); // + 1: an event wait
  if (!op) {
    pthread_mutex_unlock(&q_lock);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (st->legacy) {
    for (fk_stream_t *o = streams; o; o = o->all)
      if (o != st && o->dev == st->dev && o->blocking && o->issued > o->done)
        op->deps[op->ndeps++] = (fk_dep_t){o, o->issued};
  } else if (ndeps) {
    op->deps[op->ndeps++] = (fk_dep_t){lg, lg->issued};
  }
  if (kind == FK_OP_MARK && src) { // cuStreamWaitEvent: src is the event
    fk_event_t *ev = (fk_event_t *)src;
    if (ev->st) op->deps[op->ndeps++] = (fk_dep_t){ev->st, ev->seq};
    src = 0;
  }
  op->kind = kind;
  op->dst = dst;
  op->src = src;
  op->n = n;
  op->arg = arg;
  op->delay_us = delay_us;
  op->seq = ++st->issued;
  if (st->tail) st->tail->next = op;
  else st->head = op;
  st->tail = op;
  if (seq) *seq = op->seq;
  if (!st->started) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    st->started = pthread_create(&st->worker, &a, worker, st) == 0;
    pthread_attr_destroy(&a);
  }
  pthread_cond_broadcast(&q_cond);
  pthread_mutex_unlock(&q_lock);
  return st->started ? ND_CUDA_SUCCESS : ND_CUDA_ERROR_OUT_OF_MEMORY;
}

void fk_wait(fk_stream_t *st, uint64_t seq) {
  pthread_mutex_lock(&q_lock);
  while (st->done < seq) pthread_cond_wait(&q_cond, &q_lock);
  pthread_mutex_unlock(&q_lock);
}

void fk_sync_device(int dev) {
  pthread_mutex_lock(&q_lock);
  for (fk_stream_t *st = streams; st; st = st->all) {
    if (st->dev != dev) continue;
    uint64_t want = st->issued;
    while (st->done < want) pthread_cond_wait(&q_cond, &q_lock);
  }
  pthread_mutex_unlock(&q_lock);
}

// A fork child has none of its parent's threads: queued work is dropped (a CUDA context is not
// usable in a fork child either) and each stream gets a new worker when next used.
void fk_streams_atfork_prepare(void) { pthread_mutex_lock(&q_lock); }
void fk_streams_atfork_parent(void) { pthread_mutex_unlock(&q_lock); }
void fk_streams_atfork_child(void) {
  pthread_mutex_init(&q_lock, NULL);
  pthread_cond_init(&q_cond, NULL);
  for (fk_stream_t *st = streams; st; st = st->all) {
    st->started = 0;
    st->head = st->tail = NULL; // leaked in the child: the ops may be mid-run in the parent
    st->done = st->issued;
  }
}

// ---------------------------------------------------------------- the driver API

nd_cu_result cuStreamCreateWithPriority(nd_cu_stream *stream, unsigned int flags, int priority) {
  (void)priority;
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  struct fk_ctx *c = fk_current();
  if (!c) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!stream || flags > FK_CU_STREAM_NON_BLOCKING) return ND_CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&q_lock);
  fk_stream_t *st = stream_new(fk_ctx_device(c), 0, flags == 0);
  pthread_mutex_unlock(&q_lock);
  if (!st) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  *stream = st;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuStreamCreate(nd_cu_stream *stream, unsigned int flags) {
  return cuStreamCreateWithPriority(stream, flags, 0);
}

// Returns at once; work already queued still runs (as cuStreamDestroy's).
nd_cu_result cuStreamDestroy_v2(nd_cu_stream stream) {
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  if (stream == NULL || stream == FK_CU_STREAM_LEGACY || stream == FK_CU_STREAM_PER_THREAD)
    return FK_CUDA_ERROR_INVALID_HANDLE;
  fk_stream_t *st;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&q_lock);
  st->live = 0;
  pthread_mutex_unlock(&q_lock);
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuStreamSynchronize(nd_cu_stream stream) {
  fk_count_call(FKC_STREAM_SYNC);
  fk_stream_t *st;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&q_lock);
  uint64_t want = st->issued;
  pthread_mutex_unlock(&q_lock);
  fk_wait(st, want);
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuStreamQuery(nd_cu_stream stream) {
  fk_stream_t *st;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&q_lock);
  int idle = st->done == st->issued;
  pthread_mutex_unlock(&q_lock);
  return idle ? ND_CUDA_SUCCESS : FK_CUDA_ERROR_NOT_READY;
}

// The double never captures: every stream answers "not capturing".
nd_cu_result cuStreamIsCapturing(nd_cu_stream stream, int *status) {
  fk_stream_t *st;
  if (!status) return ND_CUDA_ERROR_INVALID_VALUE;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc == ND_CUDA_SUCCESS) *status = 0;
  return rc;
}

static fk_event_t *event_of(nd_cu_event e) { // q_lock held
  fk_event_t *ev = events;
  while (ev && (ev != (fk_event_t *)e || !ev->live)) ev = ev->all;
  return ev;
}

nd_cu_result cuEventCreate(nd_cu_event *event, unsigned int flags) {
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  if (!fk_current()) return ND_CUDA_ERROR_INVALID_CONTEXT;
  if (!event || flags > 0xf) return ND_CUDA_ERROR_INVALID_VALUE;
  fk_event_t *ev = calloc(1, sizeof *ev);
  if (!ev) return ND_CUDA_ERROR_OUT_OF_MEMORY;
  ev->live = 1;
  pthread_mutex_lock(&q_lock);
  ev->all = events;
  events = ev;
  pthread_mutex_unlock(&q_lock);
  *event = ev;
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuEventDestroy_v2(nd_cu_event event) {
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&q_lock);
  fk_event_t *ev = event_of(event);
  if (ev) ev->live = 0;
  pthread_mutex_unlock(&q_lock);
  return ev ? ND_CUDA_SUCCESS : FK_CUDA_ERROR_INVALID_HANDLE;
}

// The stream and the live event a call names (cuEventRecord, cuStreamWaitEvent).
static nd_cu_result stream_and_event(nd_cu_stream stream, int ptsz, nd_cu_event event,
                                     fk_stream_t **st, fk_event_t **ev) {
  nd_cu_result rc = fk_stream_get(stream, ptsz, st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&q_lock);
  *ev = event_of(event);
  pthread_mutex_unlock(&q_lock);
  return *ev ? ND_CUDA_SUCCESS : FK_CUDA_ERROR_INVALID_HANDLE;
}

static nd_cu_result event_record(nd_cu_event event, nd_cu_stream stream, int ptsz) {
  fk_count_call(FKC_EVENT_RECORD);
  fk_stream_t *st;
  fk_event_t *ev;
  nd_cu_result rc = stream_and_event(stream, ptsz, event, &st, &ev);
  if (rc != ND_CUDA_SUCCESS) return rc;
  uint64_t seq;
  rc = fk_enqueue(st, FK_OP_MARK, 0, 0, 0, 0, 0, &seq);
  if (rc != ND_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&q_lock);
  ev->st = st;
  ev->seq = seq;
  pthread_mutex_unlock(&q_lock);
  return ND_CUDA_SUCCESS;
}

nd_cu_result cuEventRecord(nd_cu_event event, nd_cu_stream stream) {
  return event_record(event, stream, 0);
}
nd_cu_result cuEventRecord_ptsz(nd_cu_event event, nd_cu_stream stream) {
  return event_record(event, stream, 1);
}

nd_cu_result cuEventQuery(nd_cu_event event) {
  fk_count_call(FKC_EVENT_QUERY);
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&q_lock);
  fk_event_t *ev = event_of(event);
  int done = ev && (!ev->st || ev->st->done >= ev->seq);
  pthread_mutex_unlock(&q_lock);
  return !ev ? FK_CUDA_ERROR_INVALID_HANDLE : done ? ND_CUDA_SUCCESS : FK_CUDA_ERROR_NOT_READY;
}

nd_cu_result cuEventSynchronize(nd_cu_event event) {
  fk_count_call(FKC_EVENT_SYNC);
  if (!fk_ready_now()) return ND_CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&q_lock);
  fk_event_t *ev = event_of(event);
  fk_stream_t *st = ev ? ev->st : NULL;
  uint64_t seq = ev ? ev->seq : 0;
  pthread_mutex_unlock(&q_lock);
  if (!ev) return FK_CUDA_ERROR_INVALID_HANDLE;
  if (st) fk_wait(st, seq);
  return ND_CUDA_SUCCESS;
}

static nd_cu_result stream_wait_event(nd_cu_stream stream, nd_cu_event event, unsigned flags,
                                      int ptsz) {
  fk_count_call(FKC_STREAM_WAIT_EVENT);
  if (flags != 0) return ND_CUDA_ERROR_INVALID_VALUE;
  fk_stream_t *st;
  fk_event_t *ev;
  nd_cu_result rc = stream_and_event(stream, ptsz, event, &st, &ev);
  if (rc != ND_CUDA_SUCCESS) return rc;
  return fk_enqueue(st, FK_OP_MARK, 0, (uintptr_t)ev, 0, 0, 0, NULL);
}

nd_cu_result cuStreamWaitEvent(nd_cu_stream stream, nd_cu_event event, unsigned int flags) {
  return stream_wait_event(stream, event, flags, 0);
}
nd_cu_result cuStreamWaitEvent_ptsz(nd_cu_stream stream, nd_cu_event event, unsigned int flags) {
  return stream_wait_event(stream, event, flags, 1);
}

// ---------------------------------------------------------------- kernels (the double's own)

int fakecuda_launch(nd_cu_stream stream, int kernel, unsigned long long dst, unsigned long long src,
                    size_t n, unsigned long long arg, unsigned delay_us) {
  if (kernel != FAKECUDA_ADD && kernel != FAKECUDA_FILL) return ND_CUDA_ERROR_INVALID_VALUE;
  fk_stream_t *st;
  nd_cu_result rc = fk_stream_get(stream, 0, &st);
  if (rc != ND_CUDA_SUCCESS) return rc;
  return fk_enqueue(st, kernel == FAKECUDA_ADD ? FK_OP_ADD : FK_OP_FILL, (uintptr_t)dst,
                    (uintptr_t)src, n, arg, delay_us, NULL);
}

unsigned long long fakecuda_faults(void) { return __atomic_load_n(&faults, __ATOMIC_RELAXED); }
