#!/bin/sh
# SPDX-License-Identifier: MIT
# t_py_edge: the Python records' edge cases (trace version 7), on traces gen_trace writes at test
# time. Each malformed one (a PYCODE record in a version 6 trace, a STACK naming a code object no
# PYCODE record defined before it, an id written twice, a string over ND_PYCODE_MAX_STR, lengths
# that do not add up to the record, a record shorter than its struct, a PYTHON state out of range
# or a PYTHON record one byte short) must give exit status 2 and exactly the expected error. The
# largest PYCODE record and frame line are read; suppression rules match Python frames; bit 63
# of a version 6 frame is an address.
# usage: t_py_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# after the header and a FLUSH, the first bad record is at offset 424; a PYCODE record of "f" and
# "/a.py" is 30 bytes with its header, so the record after it is at 454
bad bad-py-v6 424 'PYCODE record in a version 6 trace (version 7 introduced it)'
bad bad-py-code 454 'STACK names unknown Python code 9'
bad bad-py-late 424 'STACK names unknown Python code 9'
bad bad-py-dup 454 'PYCODE 9 written twice'
bad bad-py-qualname 424 'PYCODE qualname length 1025 above the maximum 1024'
bad bad-py-filename 424 'PYCODE filename length 4294967295 above the maximum 1024'
bad bad-py-lengths 424 'PYCODE string lengths 5 + 5 do not match its record size 25'
bad bad-py-short 424 'PYCODE record size 12 impossible (at least 16)'
bad bad-py-state 424 'PYTHON state 4 out of range'
bad bad-py-python-size 424 'PYTHON record size 47 impossible (48)'

# Both strings of the largest size (1024 bytes each: a qualname of 'q's, a path of '/' and 'f's),
# code id UINT32_MAX, line ND_PYFRAME_LINE_MAX.
"$gen" py-max max.trace || { no "gen_trace py-max"; exit 1; }
q=$(printf '%01024d' 0 | tr 0 q) f=/$(printf '%01023d' 0 | tr 0 f)
for only in "" --python-only; do
  "$report" $only --top 1 max.trace >out 2>err
  rc=$?
  [ $rc = 0 ] || no "py-max $only: exit status $rc"
  [ ! -s err ] || no "py-max $only: stderr: $(cat err)"
  # the stack's frame and the Python lines section's location, both whole
  [ "$(grep -cxF "      #0  $q ($f:16777215)" out)" -ge 2 ] ||
    no "py-max $only: the frame and the Python line"
  grep -qxF '  python      3.12.0a1: Python frames in the stacks of 1 of 1 tracked allocation' out ||
    no "py-max $only: the python line"
done
"$report" --format json max.trace >out 2>err || no "py-max: JSON exit status $?"
grep -qF "{\"python\": true, \"function\": \"$q\", \"file\": \"$f\", \"line\": 16777215}" out ||
  no "py-max: the JSON frame"
grep -qF '"python": {"state": "on", "version": "3.12.0a1", "version_hex": 51118241, ' out ||
  no "py-max: the JSON python record"

# Suppressions match a Python frame's function (its qualified name) and file: the leak at
# load_table (data.py:15) is suppressed either way, and a rule naming Trainer.step takes the
# 32 KiB left by stack 5, whose Python frames stand between native ones.
"$gen" python py.trace || { no "gen_trace python"; exit 1; }
for rule in 'leak:^load_table$' 'leak:/app/data.py'; do
  printf '%s\n' "$rule" >rules.supp
  "$report" --brief --suppressions rules.supp py.trace >out 2>err
  rc=$?
  [ $rc = 0 ] || no "$rule: exit status $rc"
  grep -qx '== suppressed: 3.00 MiB (3145728 B) in 3 blocks from 1 stack' out ||
    no "$rule: stack 3 not suppressed"
  grep -qx "   rules.supp:1: 3.00 MiB (3145728 B) in 3 blocks from 1 stack" out ||
    no "$rule: the rule's line"
done
printf 'leak:Trainer.step\n' >rules.supp
"$report" --format json --suppressions rules.supp py.trace >out 2>err || no "Trainer.step: exit $?"
grep -qF '"class": "suppressed", "stack_id": 5,' out || no "Trainer.step: stack 5 not suppressed"
grep -qF '"class": "live_at_exit", "stack_id": 3,' out || no "Trainer.step: stack 3 suppressed"

# Version 6: bit 63 is part of an address, and the report has no Python keys.
"$gen" py-v6-bit63 v6.trace || { no "gen_trace py-v6-bit63"; exit 1; }
"$report" --python-only v6.trace >out 2>err
rc=$?
[ $rc = 0 ] || no "py-v6-bit63: exit status $rc"
grep -qx '      #0  0x8000000000001234' out || no "py-v6-bit63: the frame as an address"
if grep -q '^  python ' out; then no "py-v6-bit63: a python line"; fi
"$report" --format json v6.trace >out 2>err || no "py-v6-bit63: JSON exit status $?"
grep -qF '{"ip": "0x8000000000001234", "module": null, "offset": null, "function": null' out ||
  no "py-v6-bit63: the JSON frame"
if grep -q '"python' out; then no "py-v6-bit63: Python keys in a version 6 report"; fi
exit $fail
