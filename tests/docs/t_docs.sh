#!/bin/sh
# SPDX-License-Identifier: MIT
# t_docs: every NDMEM_* variable the shim reads has its row in docs/configuration.md's table and
# is named in ndmem(1)'s source, docs/ndmem.1.md (its ENVIRONMENT section).
# usage: t_docs.sh TEST_CONFIG CONFIGURATION_MD NDMEM_1_MD
fail=0
for v in $("$1" --list); do
  grep -q "^| \`$v\`" "$2" || { echo "docs/configuration.md's table lacks $v" >&2; fail=1; }
  grep -q "\`$v\`" "$3" || { echo "docs/ndmem.1.md lacks $v" >&2; fail=1; }
done
exit $fail
