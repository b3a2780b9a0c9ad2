#!/bin/sh
# SPDX-License-Identifier: MIT
# Prints the first Python interpreter that can import MODULE (default numpy): $NDMEM_TEST_PYTHON,
# then Debian's /usr/bin/python3 (python3-numpy with OpenBLAS and python3-torch live there), then
# python3 on PATH. Exits 1 with a message naming what was tried when none can.
# usage: find-python.sh [MODULE]
module=${1:-numpy}
for py in ${NDMEM_TEST_PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$py" ] && [ -x "$py" ] || continue
  if "$py" -c "import $module" >/dev/null 2>&1; then echo "$py"; exit 0; fi
done
echo "no Python interpreter with $module found (tried \$NDMEM_TEST_PYTHON, /usr/bin/python3, python3 on PATH); on Debian: apt-get install python3-$module" >&2
exit 1
