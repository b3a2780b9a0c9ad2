// SPDX-License-Identifier: MIT
// t_libc_locks: the libc and loader functions that allocate while they hold a lock of their own,
// each called over and over from several threads at once (and from the main thread), so that a
// hook that waits for a lock its caller holds, or that a thread holds while waiting for the
// hook's, hangs here. One scenario per run (argv[1]); it prints "ok NAME" and exits 0. t_libc_locks.sh
// runs every scenario under every tracking mode, with the replay on and off, under a watchdog.
//
//   getattr    pthread_getattr_np (the thread's own lock around a realloc of its cpuset; the main
//              thread's reads /proc/self/maps with stdio under it)
//   phdr       dl_iterate_phdr callbacks that allocate (the loader's list lock)
//   dlopen     dlopen/dlsym/dladdr/dlerror/dlclose of a library whose constructor allocates (the
//              loader's lock, its TLS lock)
//   backtrace  backtrace, which loads libgcc_s once (a once-lock around dlopen), and
//              backtrace_symbols
//   stdio      a stream locked by flockfile around writes that grow an open_memstream buffer,
//              and fopen/getline/fclose (the stream's lock, the list of streams' lock)
//   nss        getpwnam, getgrgid, getaddrinfo("localhost") (NSS's lock around loading its modules)
//   locale     setlocale, newlocale/duplocale/freelocale, iconv_open (the locale lock, gconv's lock)
//   exitfns    atexit/__cxa_atexit registrations that grow glibc's list (its lock around a calloc),
//              pthread_atfork registrations (the fork handlers' lock around a realloc); the
//              handlers allocate when they run
//   tlsdtor    thread-local destructors and key destructors that allocate, as threads end
//   tz         tzset/localtime_r with TZ changing (the time zone lock around reading the zone file)
//   fork       fork while other threads allocate; the child allocates, then exits
//   threads    threads created and joined while others allocate (the stack cache's lock)
//   c11        C11 threads (thrd_create: glibc's own pthread_create, not the hooked one) and
//              timer threads (SIGEV_THREAD, made inside libc): threads whose stack ndmem learns
//              no other way
//   syslog     vsyslog (its lock around an open_memstream) and popen/pclose (the list of
//              pipes' lock)
//   exit       exit while the other threads still allocate (the exit handlers' and stdio's
//              locks, ndmem's last flush)
#include <dlfcn.h>
#include <execinfo.h>
#include <grp.h>
#include <iconv.h>
#include <link.h>
#include <locale.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <threads.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
static int rounds = 200;
static const char *libpath;

// Blocks of several sizes (a large one is tracked at every setting), freed again (through a
// volatile pointer: the compiler may not drop the pair).
static void churn(int i) {
  static const size_t sizes[] = {24, 200, 4000, 70000};
  void *volatile p = malloc(sizes[i & 3]);
  free(p);
  if ((i & 7) == 0) {
    void *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) munmap(m, 65536);
  }
}

// ---------------------------------------------------------------- scenarios

static void s_getattr(int i) {
  pthread_attr_t a;
  if (pthread_getattr_np(pthread_self(), &a) != 0) abort();
  void *addr;
  size_t size;
  if (pthread_attr_getstack(&a, &addr, &size) != 0 || size == 0) abort();
  pthread_attr_destroy(&a);
  churn(i);
}

static int phdr_cb(struct dl_phdr_info *info, size_t n, void *arg) {
  (void)n;
  int *k = arg;
  char *copy = strdup(info->dlpi_name ? info->dlpi_name : "");
  void *volatile big = malloc(20000 + (size_t)(*k & 7) * 1000);
  free(big);
  free(copy);
  churn((*k)++);
  return 0;
}
static void s_phdr(int i) { dl_iterate_phdr(phdr_cb, &i); }

static void s_dlopen(int i) {
  void *h = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", libpath, dlerror());
    abort();
  }
  void *(*alloc)(size_t) = (__extension__(void *(*)(size_t))dlsym(h, "dlo_alloc"));
  void (*release)(void *) = (__extension__(void (*)(void *))dlsym(h, "dlo_free"));
  if (!alloc || !release) abort();
  release(alloc(100 + (size_t)i));
  if (dlsym(h, "no_such_symbol_here")) abort(); // the message dlerror keeps is allocated
  (void)dlerror();
  Dl_info info;
  dladdr(__extension__(void *)alloc, &info);
  dlclose(h);
  churn(i);
}

static void s_backtrace(int i) {
  void *ips[32];
  int n = backtrace(ips, 32);
  char **names = backtrace_symbols(ips, n);
  free(names);
  churn(i);
}

static void s_stdio(int i) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) abort();
  flockfile(m);
  for (int k = 0; k < 64; k++) fprintf(m, "line %d of round %d, to make the buffer grow\n", k, i);
  funlockfile(m);
  fclose(m);
  free(buf);
  FILE *f = fopen("/proc/self/maps", "r");
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    flockfile(f);
    while (getline(&line, &cap, f) > 0) {
    }
    funlockfile(f);
    free(line);
    fclose(f);
  }
  churn(i);
}

static void s_nss(int i) {
  struct passwd *pw = getpwnam("root");
  if (!pw) abort();
  struct group *gr = getgrgid(0);
  (void)gr;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo("localhost", "80", &hints, &res) == 0) freeaddrinfo(res);
  churn(i);
}

static void s_locale(int i) {
  // The global locale is changed by the main thread only (setlocale is not thread-safe); the
  // others make and drop locale objects.
  if (gettid() == getpid()) setlocale(LC_ALL, (i & 1) ? "C.UTF-8" : "C");
  locale_t l = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
  if (l) {
    locale_t d = duplocale(l);
    if (d) freelocale(d);
    freelocale(l);
  }
  iconv_t cd = iconv_open("UTF-16", "ISO-8859-1");
  if (cd != (iconv_t)-1) iconv_close(cd);
  churn(i);
}

static void exit_fn(void) {
  void *volatile p = malloc(3000);
  free(p);
}
static void cxa_fn(void *arg) { free(arg); }
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern void *__dso_handle;
static void fork_fn(void) {
  void *volatile p = malloc(100);
  free(p);
}
static void s_exitfns(int i) {
  if ((i & 15) == 0) atexit(exit_fn);
  __cxa_atexit(cxa_fn, malloc(40), __dso_handle);
  if ((i & 31) == 0) pthread_atfork(fork_fn, fork_fn, fork_fn);
  churn(i);
}

static pthread_key_t key;
static __thread char *tls_block;
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *arg, void *dso);
static void key_dtor(void *p) {
  free(p);
  void *volatile q = malloc(5000);
  free(q);
}
static void tls_dtor(void *p) {
  (void)p;
  free(tls_block);
  tls_block = malloc(100); // a destructor that allocates again
  free(tls_block);
}
static void *tls_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  tls_block = malloc(64);
  __cxa_thread_atexit_impl(tls_dtor, NULL, __dso_handle);
  pthread_setspecific(key, malloc(200));
  churn(i);
  return NULL;
}
static void s_tlsdtor(int i) {
  pthread_t t;
  if (pthread_create(&t, NULL, tls_thread, (void *)(intptr_t)i) != 0) abort();
  pthread_join(t, NULL);
}

static void s_tz(int i) {
  if (gettid() == getpid()) setenv("TZ", (i & 1) ? "Europe/Paris" : "America/New_York", 1);
  tzset();
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%c %Z", &tm);
  churn(i);
}

static void s_fork(int i) {
  // Only the main thread forks; the others allocate meanwhile (their own scenario is churn).
  if (gettid() != getpid()) {
    churn(i);
    return;
  }
  if (i % 8) return;
  pid_t pid = fork();
  if (pid < 0) abort();
  if (pid == 0) {
    for (int k = 0; k < 50; k++) churn(k);
    char *s = strdup("child");
    free(s);
    exit(0);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) abort();
}

static void *noop_thread(void *arg) {
  churn((int)(intptr_t)arg);
  return NULL;
}
static void s_threads(int i) {
  pthread_t t;
  if (pthread_create(&t, NULL, noop_thread, (void *)(intptr_t)i) != 0) abort();
  pthread_join(t, NULL);
  churn(i);
}

static int c11_thread(void *arg) {
  churn((int)(intptr_t)arg);
  return 0;
}
static void timer_fn(union sigval v) { churn(v.sival_int); }
static void s_c11(int i) {
  thrd_t t;
  if (thrd_create(&t, c11_thread, (void *)(intptr_t)i) != thrd_success) abort();
  thrd_join(t, NULL);
  if (i % 8 == 0) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = timer_fn;
    ev.sigev_value.sival_int = i;
    timer_t tm;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0) {
      struct itimerspec its = {{0, 0}, {0, 100000}};
      timer_settime(tm, 0, &its, NULL);
      struct timespec ns = {0, 300000};
      nanosleep(&ns, NULL);
      timer_delete(tm);
    }
  }
  churn(i);
}

static void s_syslog(int i) {
  // LOG_PERROR would write to stderr; without a syslog daemon the message goes nowhere.
  syslog(LOG_DEBUG, "round %d: a message long enough to be formatted into a buffer of its own", i);
  if (i % 8 == 0) {
    FILE *p = popen("true", "r");
    if (p) pclose(p);
  }
  churn(i);
}

static volatile int exiting;
static void s_exit(int i) {
  if (gettid() != getpid()) {
    for (int k = 0; !exiting || k < 1000; k++) churn(i + k); // until well after exit began
    return;
  }
  churn(i);
  if (i == rounds - 1) {
    printf("ok exit\n");
    fflush(stdout);
    exiting = 1;
    exit(0); // the other threads still allocate
  }
}

// ---------------------------------------------------------------- driver

static const struct {
  const char *name;
  void (*fn)(int);
  int rounds_div; // costly scenarios run fewer rounds
} scenarios[] = {
    {"getattr", s_getattr, 1},  {"phdr", s_phdr, 4},     {"dlopen", s_dlopen, 4},
    {"backtrace", s_backtrace, 1}, {"stdio", s_stdio, 4}, {"nss", s_nss, 8},
    {"locale", s_locale, 4},    {"exitfns", s_exitfns, 1}, {"tlsdtor", s_tlsdtor, 2},
    {"tz", s_tz, 4},            {"fork", s_fork, 1},     {"threads", s_threads, 2},
    {"c11", s_c11, 4},          {"syslog", s_syslog, 4}, {"exit", s_exit, 1},
};
static int which = -1;

static void *worker(void *arg) {
  (void)arg;
  int n = rounds / scenarios[which].rounds_div;
  for (int i = 0; i < n; i++) scenarios[which].fn(i);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCENARIO [LIBDLO] [ROUNDS]\n", argv[0]);
    return 2;
  }
  for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++)
    if (strcmp(argv[1], scenarios[i].name) == 0) which = (int)i;
  if (which < 0) {
    fprintf(stderr, "no scenario %s\n", argv[1]);
    return 2;
  }
  libpath = argc > 2 ? argv[2] : "libdlo.so";
  if (argc > 3) rounds = atoi(argv[3]);
  pthread_key_create(&key, key_dtor);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) abort();
  worker(NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("ok %s\n", argv[1]);
  return 0;
}
