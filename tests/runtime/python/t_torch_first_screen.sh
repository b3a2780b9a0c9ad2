#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_first_screen: the text report of a PyTorch job (torch_mnist.py) names the program's own
# line first. Every entry of the top sites (by peak and by total), of the program's Python lines
# and of the limits section (breaches, snapshot sites) whose stack holds a frame of the script
# shows the script's innermost such file:line within its first 2 lines (the header and the
# line under it); the program's Python lines come before the libraries' (text and JSON), and
# autograd's backward, a library line, is placed at the script's BACKWARD line. A breach's
# header may wrap at 80 columns: its first lines run to "-> what was done". The job runs twice
# (about 3 s each): without a limit, and under --max-bytes=100m --on-limit=warn (crossed in the
# training loop, by every allocation after). Skips (77) without an interpreter that imports
# torch.
# usage: t_torch_first_screen.sh NDMEM NDMEMREPORT SCRIPT
set -u
tool=$1 rep=$2 script=$3
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
for run in plain limit; do
  opts=
  [ "$run" = limit ] && opts="--max-bytes=100m --on-limit=warn"
  # shellcheck disable=SC2086 # opts: words
  "$tool" run --no-summary --no-report $opts --output="$tmp/$run.trace" -- "$py" "$script" \
    >"$tmp/$run.out" 2>"$tmp/$run.err" || { echo "the $run job failed" >&2; cat "$tmp/$run.err" >&2; exit 1; }
  # --frames 0: every frame, so that the test sees which entries hold a frame of the script
  "$rep" --frames 0 "$tmp/$run.trace" >"$tmp/$run.txt" || { echo "ndmemreport failed" >&2; exit 1; }
done
"$rep" --format json "$tmp/plain.trace" >"$tmp/plain.json" || { echo "ndmemreport failed" >&2; exit 1; }
"$py" - "$script" "$tmp" <<'PY'
import json, os, re, sys
script, tmp = sys.argv[1:3]
base = os.path.basename(script)
mark = lambda m: next(i for i, l in enumerate(open(script), 1) if "# " + m in l)
backward = mark("BACKWARD")
bad = []
frame = re.compile(r"^      #\d+ +.*\((?P<file>[^()]*%s):(?P<line>\d+)\)$" % re.escape(base))

def sections(text):
    """{header: [entry lines...]}: the report's sections, each a list of entries (lists of lines)."""
    out, cur = {}, None
    for l in text.split("\n"):
        if l.startswith("== "):
            cur = out.setdefault(l, [])
        elif cur is not None and re.match(r"#\d+ ", l):
            cur.append([l])
        elif cur is not None and cur and l.startswith(" "):
            cur[-1].append(l)
    return out

def innermost(entry):
    """The script's innermost line in an entry's stack (its first frame of the script), or None."""
    for l in entry:
        m = frame.match(l)
        if m and os.path.realpath(m.group("file")) == os.path.realpath(script):
            return int(m.group("line"))
    return None

def check(name, entries, by_stack):
    n = 0
    for e in entries:
        st = re.search(r"\[stack (\d+)\]", e[0])
        line = innermost(e) or (by_stack.get(st.group(1)) if st else None)
        if line is None:
            continue
        n += 1
        want = "%s:%d" % (base, line)
        # a breach's first line may wrap at 80 columns: its header ends at "-> what was done"
        head = next((i for i, l in enumerate(e) if " -> " in l or l.endswith(" ->")), 0)
        head += " -> " not in e[head] and head + 1 < len(e) and e[head].endswith(" ->")
        if not any(re.search(r"\b%s\b" % re.escape(want), l) for l in e[:head + 2]):
            bad.append("%s: entry %r names %s after its first 2 lines:\n%s"
                       % (name, e[0], want, "\n".join(e[:4])))
    return n

for run in ("plain", "limit"):
    text = open(os.path.join(tmp, run + ".txt")).read()
    secs = sections(text)
    by_stack = {}
    for h, es in secs.items():
        for e in es:
            st = re.search(r"\[stack (\d+)\]", e[0])
            if st and innermost(e) is not None:
                by_stack[st.group(1)] = innermost(e)
    wanted = ["allocation sites by peak", "allocation sites by total", "Python lines of the program"]
    if run == "limit":
        wanted += ["limit breaches", "snapshot"]
    for w in wanted:
        hs = [h for h in secs if w in h]
        if not hs:
            bad.append("%s: no section %r" % (run, w))
            continue
        if sum(check("%s %s" % (run, h), secs[h], by_stack) for h in hs) == 0:
            bad.append("%s: no entry of %r holds a frame of %s" % (run, w, base))
    # the program's lines before the libraries'; backward placed at BACKWARD
    own = text.find("Python lines of the program")
    lib = text.find("Python lines in libraries")
    if not 0 <= own < lib:
        bad.append("%s: the program's Python lines (at %d) not before the libraries' (at %d)"
                   % (run, own, lib))
    if run == "plain":
        libs = next((es for h, es in secs.items() if "Python lines in libraries" in h), [])
        bw = [e for e in libs if re.search(r"#0  backward \(.*/torch/autograd/__init__.py:\d+\)", e[2] if len(e) > 2 else "")]
        want = "      at %s:%d, in backward (__init__.py:" % (base, backward)
        if len(bw) != 1 or not bw[0][1].startswith(want):
            bad.append("plain: autograd's backward not placed %r: %r" % (want, bw))
d = json.load(open(os.path.join(tmp, "plain.json")))
rows = d["python_lines"]["top"]
flags = [r.get("program") for r in rows]
if None in flags or flags != sorted(flags, reverse=True) or True not in flags or False not in flags:
    bad.append("JSON: python_lines not the program's first, then the libraries': %r" % flags)
mine = [r for r in rows if r.get("program") and os.path.realpath(r["file"]) == os.path.realpath(script)]
if not any(r["line"] == backward for r in mine):
    bad.append("JSON: no program line %s:%d: %r" % (base, backward, [(r["file"], r["line"]) for r in mine]))
for b in bad:
    print("FAIL:", b, file=sys.stderr)
if not bad:
    print("ok: %s's lines lead the top sites, the Python lines and the limits section" % base)
sys.exit(1 if bad else 0)
PY
