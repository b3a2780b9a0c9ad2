#!/bin/sh
# SPDX-License-Identifier: MIT
# t_hostile_json: diff's and merge's JSON stay valid whatever a trace names. gen_trace's hostile
# trace names a host, a module and a Python function and file with a quote, a backslash, control
# characters and bytes that are not UTF-8, and is read under a file name holding the same kinds
# of bytes. Each document must parse as strict UTF-8 JSON, keep the quote, the backslash and the
# control characters (merge's frames are the names as they are; diff's, like the text report's,
# have control characters as spaces) and show each byte that is not UTF-8 as U+FFFD; merge's
# "stack_key" must be the key the single-trace JSON report prints for that stack. Their text
# output holds no control byte but the newline.
# usage: t_hostile_json.sh NDMEMREPORT GEN_TRACE PYTHON3 DIFF_A_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"
python=$3 diff_a=$4

"$gen" hostile h.trace || { no "gen_trace hostile"; exit 1; }
name=$(printf 'q"b\\s\001x\377.trace')
cp h.trace "$name" || { no "cp to a hostile name"; exit 1; }

# diff: the hostile trace as B (its site only in B, its frames shown), then as A
"$report" diff --format json "$diff_a" "$name" >diff.json 2>err
rc=$?
[ $rc = 0 ] || no "diff: exit status $rc"
[ ! -s err ] || no "diff: stderr: $(cat err)"
"$python" - diff.json <<'PY' || no "diff: the JSON"
import json, sys
with open(sys.argv[1], encoding="utf-8", errors="strict") as f:
    d = json.load(f)
H = "q\"b\\s t c d e\ufffdf\ufffd(g\ufffd\ufffdh\ufffd\ufffdi\ufffd\ufffd\ufffd"
assert d["b"]["file"] == "q\"b\\s\x01x\ufffd.trace", d["b"]
s = [x for x in d["sites"] if x["a"] is None]
assert len(s) == 1, s
assert s[0]["frames"] == ["/nonexistent/lib/we\"ird\\" + H + ".so+0x100",
                          "fn" + H + " (/nonexistent/app/" + H + ".py:12)"], s[0]["frames"]
PY
"$report" diff --format json "$name" "$diff_a" >diff2.json 2>err || no "diff (as A): exit status $?"
"$python" -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))
assert d["a"]["file"] == "q\"b\\s\x01x\ufffd.trace", d["a"]
' diff2.json || no "diff (as A): the JSON"

# merge: the same trace under both names, one site of two ranks
"$report" merge --format json "$name" h.trace >merge.json 2>err
rc=$?
[ $rc = 0 ] || no "merge: exit status $rc"
[ ! -s err ] || no "merge: stderr: $(cat err)"
"$report" --format json h.trace >report.json 2>err || no "report: exit status $?"
"$python" - merge.json report.json <<'PY' || no "merge: the JSON"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))
r = json.load(open(sys.argv[2], encoding="utf-8", errors="strict"))
H = "q\"b\\s\nt\tc\x01d\x7fe\ufffdf\ufffd(g\ufffd\ufffdh\ufffd\ufffdi\ufffd\ufffd\ufffd"
# one pid, one host: the processes in the order of their files' names
assert [x["trace"] for x in d["processes"]] == ["h.trace", "q\"b\\s\x01x\ufffd.trace"], d["processes"]
assert [x["host"] for x in d["processes"]] == ["h\"o\\st\x01\ufffd"] * 2, d["processes"]
assert len(d["sites"]) == 1 and d["sites"][0]["per_rank"] == [1048576, 1048576], d["sites"]
s = d["sites"][0]
assert s["frames"] == ["we\"ird\\" + H + ".so+0x100",
                       "py fn" + H + " (/nonexistent/app/" + H + ".py:12)"], s["frames"]
text = open(sys.argv[2], encoding="utf-8").read()
assert '"stack_key": "%s"' % s["stack_key"] in text, s["stack_key"]
PY

# The text of both: no control byte but the newline (a hostile name must not drive the terminal)
"$report" merge "$name" h.trace >merge.txt 2>err || no "merge (text): exit status $?"
"$report" diff "$diff_a" "$name" >diff.txt 2>err || no "diff (text): exit status $?"
for f in merge.txt diff.txt; do
  "$python" -c '
import sys
b = open(sys.argv[1], "rb").read()
bad = sorted({c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f})
assert b and not bad, "control bytes %r" % bad
' $f || no "$f: control bytes in the text"
done

exit $fail
