// SPDX-License-Identifier: MIT
// suppress.h: leak suppressions, as LeakSanitizer and heaptrack read them. A file holds one rule
// per line, `leak:PATTERN`; `#` starts a comment line; blank lines are skipped. PATTERN is
// matched against each frame's function name (demangled and mangled, each also without a symbol
// version such as "@@GLIBC_2.34"), source file path and module path: `*` matches any run of
// characters, a leading `^` and a trailing `$` anchor the match at the start and end of the
// name; without anchors PATTERN matches anywhere in it. A rule suppresses a stack when it
// matches any of its frames; a Python frame (trace version 7) offers its qualified name as the
// function and its file, and has no module. Built-in rules (nd_supp_builtin) name well-known
// lifetime allocations of the C and C++ runtimes (see the table in suppress.c, with the stack
// each was observed with); they match frames more narrowly than a file's rule can, and never a
// Python frame.
#ifndef ND_SUPPRESS_H
#define ND_SUPPRESS_H

#include "analyse/symbolize.h"

#include <stddef.h>

// One function of a stack as the matcher sees it; NULL where unknown. A recorded frame whose
// call sits in inlined code gives several: the inlined function first, then each function it was
// inlined into (nd_supp_views), as LeakSanitizer and eu-addr2line -i list them.
typedef struct nd_frame_view {
  const char *function; // demangled where it could be ("ns::Foo::bar(int)")
  const char *mangled;  // the linkage name `function` came from ("_ZN2ns3Foo3barEi"), or NULL
  const char *file;     // source file path
  const char *module;   // path of the executable or shared object
  bool python;          // a Python frame: function is its qualified name, module NULL
} nd_frame_view_t;

typedef struct nd_supp_rule {
  size_t index;       // 0, 1, ... in the order rules were added: for per-rule counts
  const char *name;   // a built-in's name ("libstdc++-eh-pool"), or "FILE:LINE" of a file's rule
  const char *text;   // "leak:PATTERN" as written, or "builtin:NAME"
  const char *reason; // a built-in's one-line reason; NULL for a file's rule
} nd_supp_rule_t;

typedef struct nd_supp nd_supp_t;

// An empty set of rules; NULL when out of memory.
nd_supp_t *nd_supp_new(void);
void nd_supp_free(nd_supp_t *s);

// Adds the built-in rules. 0, or -1 when out of memory.
int nd_supp_builtin(nd_supp_t *s);

// Adds the rules of a suppressions file. 0; or -1 with a one-line message in err (no newline):
// "FILE:LINE: expected 'leak:PATTERN'" for a line that is not a rule, a comment or blank,
// "FILE: REASON" for a file that cannot be read; rules read before an error are kept.
int nd_supp_load(nd_supp_t *s, const char *path, char *err, size_t errlen);

// Adds one line as a file would hold it (a rule, a comment or a blank line); `where` names it in
// a rule's name and in errors ("FILE:LINE"). 0, or -1 with the message in err.
int nd_supp_add_line(nd_supp_t *s, const char *line, const char *where, char *err,
                     size_t errlen);

// The first rule, in the order added, that matches the stack frames[0, n) (innermost first), or
// NULL.
const nd_supp_rule_t *nd_supp_match(const nd_supp_t *s, const nd_frame_view_t *frames, size_t n);

// The rules added so far, by index.
size_t nd_supp_count(const nd_supp_t *s);
const nd_supp_rule_t *nd_supp_rule(const nd_supp_t *s, size_t index);

// The views of one symbolized frame (symbolize.h) into out[0, cap): the function the call is in,
// then those it was inlined into. Returns how many there are (1 + f->ninlined), which may be more
// than cap; only cap are written.
size_t nd_supp_views(const nd_frame_t *f, nd_frame_view_t *out, size_t cap);

// Whether `pattern` (the text after "leak:") matches `str`, as above. NULL never matches.
bool nd_supp_pattern_match(const char *pattern, const char *str);

#endif
