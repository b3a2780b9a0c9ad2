// SPDX-License-Identifier: MIT
// test_path_norm: the lexical normal form of a source path (symbolize.c, nd_sym_path_norm), which
// diff and merge compare Python frames by: the same script named two ways is one file.
#include "../../check.h"
#include "analyse/symbolize.h"

static void is(const char *path, const char *want) {
  char out[64];
  CHECK_STR(nd_sym_path_norm(out, sizeof out, path), want);
}

int main(void) {
  is("train.py", "train.py");
  is("run1/../train.py", "train.py");
  is("./train.py", "train.py");
  is("/proj/run1/../train.py", "/proj/train.py");
  is("/proj//src/./model.py", "/proj/src/model.py");
  is("a/b/../../c/d.py", "c/d.py");
  is("../x.py", "../x.py");
  is("../../x.py", "../../x.py");
  is("a/../../x.py", "../x.py");
  is("../a/../x.py", "../x.py");
  is("/../x.py", "/x.py");
  is("/", "/");
  is("/..", "/");
  is(".", ".");
  is("a/..", ".");
  is("a/", "a");
  is("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>");
  is("<string>", "<string>");
  // too long for the buffer: as it is, cut
  char out[8];
  CHECK_STR(nd_sym_path_norm(out, sizeof out, "abcdefghij/../k"), "abcdefg");
  return CHECK_DONE();
}
