// SPDX-License-Identifier: MIT
// test_textwrap: the 80-column stream of the text report (report/render/textwrap.c) breaks each kind of
// report line where its reader expects, continues it under its value, leaves lines that fit and
// raw text (frames) alone, never cuts a word wider than the line, and writes an unended last
// line as it is.
#include "../../check.h"
#include "render/textwrap.h"

// `in` written through the stream (raw between the markers "<raw>" and "</raw>"); the result.
static char *wrapped(const char *in) {
  static char *buf;
  size_t len = 0;
  free(buf);
  buf = NULL;
  FILE *mem = open_memstream(&buf, &len);
  nd_wrap_t *w = NULL;
  FILE *f = nd_wrap_open(mem, &w);
  CHECK(f != NULL && w != NULL);
  for (const char *p = in; *p;) {
    if (!strncmp(p, "<raw>", 5) || !strncmp(p, "</raw>", 6)) {
      bool on = p[1] == 'r';
      nd_wrap_raw(f, w, on);
      p += on ? 5 : 6;
      continue;
    }
    fputc(*p++, f);
  }
  fclose(f);
  fclose(mem);
  return buf;
}

int main(void) {
  // fits: as it is
  CHECK_STR(wrapped("  exit        normal (END record)\n"), "  exit        normal (END record)\n");
  // a summary line: after "; ", under the value; a number and its exact value stay together
  CHECK_STR(wrapped("  heap        peak 28.23 MiB (29606488 B); live at exit 1.28 MiB (1342984 B) "
                    "in 705 blocks; 25254 allocated, 24549 released\n"),
            "  heap        peak 28.23 MiB (29606488 B);\n"
            "              live at exit 1.28 MiB (1342984 B) in 705 blocks;\n"
            "              25254 allocated, 24549 released\n");
  // a heading: under its text; before a parenthesis rather than inside it
  CHECK_STR(wrapped("== limit breaches: 6 breaches, 4 logged (the 1st, 2nd, 4th, 8th, ... of each "
                    "limit)\n"),
            "== limit breaches: 6 breaches, 4 logged\n"
            "   (the 1st, 2nd, 4th, 8th, ... of each limit)\n");
  // an entry and its detail line: at the detail indent, and two further in
  CHECK_STR(wrapped("#1   [train] on thread 4350: 2 escapes, 128.00 KiB (131072 B); first born in "
                    "cycle 11, first seen in cycle 12  [stack 5]\n"
                    "      ND4J: allocated 4.00 MiB (4194304 B) / external (spilled) 640.00 KiB "
                    "(655360 B) / external (pinned) 0 B\n"),
            "#1   [train] on thread 4350: 2 escapes, 128.00 KiB (131072 B);\n"
            "      first born in cycle 11, first seen in cycle 12  [stack 5]\n"
            "      ND4J: allocated 4.00 MiB (4194304 B)\n"
            "        / external (spilled) 640.00 KiB (655360 B) / external (pinned) 0 B\n");
  // a label of two words
  CHECK_STR(wrapped("  physical reads    1234 and a great many more words that go on past the "
                    "eightieth column\n"),
            "  physical reads    1234 and a great many more words that go on past the\n"
            "                    eightieth column\n");
  // raw text (frames) passes whole, then wrapping resumes
  const char *frame = "      #0  std::vector<int, std::allocator<int> >::push_back(int const&) "
                      "(/usr/include/c++/12/bits/stl_vector.h:1287)\n";
  char in[1024], want[1024];
  snprintf(in, sizeof in, "<raw>%s</raw>== a heading that is long enough to be broken once it "
                          "passes the eightieth column\n", frame);
  snprintf(want, sizeof want, "%s== a heading that is long enough to be broken once it passes "
                              "the eightieth\n   column\n", frame);
  CHECK_STR(wrapped(in), want);
  // a word wider than the line: never cut, broken after
  CHECK_STR(wrapped("  process     pid 1 on host: /a/very/long/path/to/an/executable/that/is/"
                    "longer/than/eighty/columns/by/itself/train --flag\n"),
            "  process     pid 1 on host:\n"
            "              /a/very/long/path/to/an/executable/that/is/longer/than/eighty/columns/"
            "by/itself/train\n"
            "              --flag\n");
  // an unended last line: as it is
  CHECK_STR(wrapped("no newline at the end, and long enough to pass the eightieth column of the "
                    "line"),
            "no newline at the end, and long enough to pass the eightieth column of the line");
  for (const char *w = wrapped("  heap        peak 28.23 MiB (29606488 B); live at exit "
                               "1.28 MiB (1342984 B) in 705 blocks; 25254 allocated\n");
       *w;) {
    const char *nl = strchr(w, '\n');
    CHECK(nl && nl - w <= ND_WRAP_WIDTH);
    w = nl ? nl + 1 : w + strlen(w);
  }
  return CHECK_DONE();
}
