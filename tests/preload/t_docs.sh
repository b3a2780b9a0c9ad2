#!/bin/sh
# SPDX-License-Identifier: MIT
# t_docs: every NDMEM_* variable in the configuration table is documented in README.md's table
# and listed by `ndmem --help`.
# usage: t_docs.sh TEST_CONFIG README NDMEM_TOOL
fail=0
help=$("$3" --help)
for v in $("$1" --list); do
  grep -q "^| \`$v\`" "$2" || { echo "README.md's table lacks $v" >&2; fail=1; }
  echo "$help" | grep -q "$v" || { echo "ndmem --help lacks $v" >&2; fail=1; }
done
exit $fail
