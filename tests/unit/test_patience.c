// SPDX-License-Identifier: MIT
// test_patience: how long a thread writing its last words (a fatal signal, _exit) waits for a lock
// (interpose/common/os.c). A holder that keeps working (its progress count moves) is waited for past the
// patience, to the end of its work: the last words then hold the lock alone. A holder that stops
// working is given up on after the patience, while it still holds the lock. Without last words,
// the lock is simply taken.
#include "../check.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static uint64_t progress;
static int holding, released; // atomic
static uint64_t hold_ns;      // how long the holder keeps the lock
static int works;             // whether it counts its work meanwhile

static void nap_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  __atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
  uint64_t end = nd_os_mono_ns() + hold_ns;
  while (nd_os_mono_ns() < end) {
    if (works) __atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
    nap_ms(5);
  }
  __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&m);
  return NULL;
}

// Starts a holder, waits for it to hold the lock, then asks for the lock with last words; the
// time the ask took. *got: whether the holder had let go when the ask returned.
static uint64_t ask(uint64_t hold, int working, const uint64_t *count, int *got) {
  pthread_t th;
  hold_ns = hold;
  works = working;
  holding = released = 0;
  CHECK(pthread_create(&th, NULL, holder, NULL) == 0);
  while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE)) nap_ms(1);
  nd_os_last_words = 1;
  uint64_t t0 = nd_os_mono_ns();
  nd_os_mutex_lock_working(&m, count);
  uint64_t took = nd_os_mono_ns() - t0;
  nd_os_last_words = 0;
  *got = __atomic_load_n(&released, __ATOMIC_ACQUIRE);
  if (*got) {
    CHECK_EQ(pthread_mutex_trylock(&m), EBUSY); // this thread holds it now
    pthread_mutex_unlock(&m);
  }
  pthread_join(th, NULL);
  return took;
}

int main(void) {
  int got;
  // A holder that works for three patiences: waited for; the lock is ours when the ask returns.
  ask(3 * ND_OS_LOCK_PATIENCE_NS, 1, &progress, &got);
  CHECK_EQ(got, 1);

  // The same holder, idle: given up on after the patience, still holding the lock.
  uint64_t took = ask(5 * ND_OS_LOCK_PATIENCE_NS, 0, &progress, &got);
  CHECK_EQ(got, 0);
  CHECK(took >= ND_OS_LOCK_PATIENCE_NS);

  // Working, but the ask counts no progress (nd_os_mutex_lock): the patience alone.
  took = ask(5 * ND_OS_LOCK_PATIENCE_NS, 1, NULL, &got);
  CHECK_EQ(got, 0);
  CHECK(took >= ND_OS_LOCK_PATIENCE_NS);

  // Without last words: taken once free, however long that takes.
  hold_ns = 2 * ND_OS_LOCK_PATIENCE_NS;
  works = 0;
  holding = released = 0;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, holder, NULL) == 0);
  while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE)) nap_ms(1);
  nd_os_mutex_lock_working(&m, &progress);
  CHECK_EQ(__atomic_load_n(&released, __ATOMIC_ACQUIRE), 1);
  pthread_mutex_unlock(&m);
  pthread_join(th, NULL);
  return CHECK_DONE();
}
