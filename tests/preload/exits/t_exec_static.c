// SPDX-License-Identifier: MIT
// t_exec_static: linked statically (no loader, so no LD_PRELOAD): exits with the status it is
// given, for t_exec.sh's exec of a program the shim cannot follow.
#include <stdlib.h>

int main(int argc, char **argv) { return argc > 1 ? atoi(argv[1]) : 0; }
