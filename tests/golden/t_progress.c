// SPDX-License-Identifier: MIT
// t_progress: the progress bar every ndmemreport command shows while it reads a trace
// (nd_rep_read_trace, load.c). On a terminal (a pseudo-terminal here) with the size
// threshold at 0: bar lines naming the file with rising percentages, then the line cleared. Not
// on a file, nor on the terminal for a trace under the threshold. A trace that cannot be read:
// exit status 2 and one line naming it. ndmemreport, diff and merge pass ND_PROGRESS_MIN
// (256 MiB), a size a test does not write: that they call this function is what the code shows.
// usage: t_progress TRACE (over 4 MiB, named progress.trace: gen_trace many-escapes writes one)
#include "cmd/cmd.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

static int fail;
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "FAIL line %d: ", __LINE__);                                                 \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      fail = 1;                                                                                    \
    }                                                                                              \
  } while (0)

// What the terminal received: everything readable from the pty's master within 0.2 s of quiet.
static size_t drain(int master, char *buf, size_t cap) {
  size_t n = 0;
  struct pollfd p = {.fd = master, .events = POLLIN};
  while (n + 1 < cap && poll(&p, 1, 200) > 0) {
    ssize_t k = read(master, buf + n, cap - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  buf[n] = 0;
  return n;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fputs("usage: t_progress TRACE\n", stderr);
    return 2;
  }
  const char *trace = argv[1];
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) || unlockpt(master)) {
    perror("t_progress: posix_openpt");
    return 77; // no pseudo-terminal here: skipped
  }
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  FILE *tty = slave >= 0 ? fdopen(slave, "w") : NULL;
  if (!tty) {
    perror("t_progress: the pty's slave");
    return 77;
  }
  struct termios tio; // raw: the bytes written are the bytes read (no "\n" -> "\r\n")
  if (!tcgetattr(slave, &tio)) {
    cfmakeraw(&tio);
    tcsetattr(slave, TCSANOW, &tio);
  }
  static char buf[1 << 16];
  static nd_trace_t t0; // nd_trace_read sets it up; nd_trace_free releases what it holds
  nd_trace_t *t = &t0;

  // A terminal, every size: bar lines naming the file, percentages rising, then the line cleared.
  CHECK(nd_rep_read_trace(t, trace, tty, 0) == 0, "read %s", trace);
  nd_trace_free(t);
  fflush(tty);
  size_t n = drain(master, buf, sizeof buf);
  const char *head = "\rndmemreport: reading progress.trace [";
  CHECK(n > 4 && !strcmp(buf + n - 4, "\r\033[K"), "cleared at the end: '%s'", buf);
  if (n > 4) buf[n - 4] = 0;
  int bars = 0, last = -1;
  for (char *p = buf; *p; bars++) {
    CHECK(!strncmp(p, head, strlen(head)), "a bar line: '%s'", p);
    char *q = strchr(p + 1, '\r');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    CHECK(len == strlen(head) + 30 + 6 && p[len - 1] == '%', "the line's length: '%.*s'",
          (int)len, p);
    int pct = atoi(p + len - 4);
    CHECK(pct > last && pct <= 100, "%d%% after %d%%", pct, last);
    last = pct;
    p += len;
  }
  CHECK(bars >= 1, "%d bar lines", bars); // the trace is over ND_BUF_SIZE (4 MiB): a 2nd read
  CHECK(!strchr(buf, '\n'), "a bar writes no newline");

  // A terminal, the trace under the threshold: nothing.
  struct stat st;
  CHECK(!stat(trace, &st), "stat");
  CHECK(nd_rep_read_trace(t, trace, tty, (uint64_t)st.st_size + 1) == 0, "read");
  nd_trace_free(t);
  fflush(tty);
  CHECK(drain(master, buf, sizeof buf) == 0, "a bar under the threshold: '%s'", buf);

  // Not a terminal: nothing, whatever the size.
  FILE *file = tmpfile();
  CHECK(file && nd_rep_read_trace(t, trace, file, 0) == 0, "read");
  nd_trace_free(t);
  CHECK(file && ftell(file) == 0, "a bar on a file (%ld bytes)", file ? ftell(file) : -1L);

  // A trace that cannot be read: 2, one line naming it (and no bar left behind).
  CHECK(nd_rep_read_trace(t, "/nonexistent/x.trace", tty, 0) == 2, "a missing trace");
  nd_trace_free(t);
  fflush(tty);
  drain(master, buf, sizeof buf);
  CHECK(!strncmp(buf, "ndmemreport: /nonexistent/x.trace: ", 35) && !strchr(buf, '\r') &&
            strchr(buf, '\n') == buf + strlen(buf) - 1,
        "the error line: '%s'", buf);
  fclose(tty);
  if (file) fclose(file);
  close(master);
  return fail;
}
