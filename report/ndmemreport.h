// SPDX-License-Identifier: MIT
// ndmemreport.h: the whole ndmemreport program as a function, so that a test harness can run it
// in-process on thousands of inputs (the robustness test under ASan/UBSan) without paying for a
// process start each time. ndmemreport.c's main() only calls it (unless ND_REPORT_NO_MAIN).
#ifndef ND_NDMEMREPORT_H
#define ND_NDMEMREPORT_H

#include <stdio.h>

// Runs ndmemreport with argv (argv[0] is the program name), writing the report to `out` and
// diagnostics to `err`. Returns the exit status: 0, 1 (--fail-on-leak and a leak), 2 (bad usage,
// a malformed or unreadable trace), 3 (--fail-on-leak, no leak found, but heap blocks live at
// exit had no record: unchecked). Keeps no state between calls.
int nd_report_main(int argc, char **argv, FILE *out, FILE *err);

#endif
